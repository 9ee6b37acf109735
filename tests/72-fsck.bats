#!/usr/bin/env bats
# spool-fsck: every violation it looks for is found, reported in one line,
# repaired where spool-layout.md says how, and the spool is then clean.

load helpers

# a spool with a job in each state
populate() {
	local i t
	# j1, j2, j3 in leaf buckets of their own (16 ms each), so that the
	# claim gives them tokens 1, 2, 3: a claim takes the jobs of one leaf
	# in no set order; j4 comes after
	t=$((${SPOOL_TEST_NOW:-$(date +%s%3N)} - 1000))
	for i in 1 2 3; do
		SPOOL_TEST_NOW=$((t + 100 * i)) spool-enqueue --id j$i <<<"payload $i" >/dev/null
	done
	spool-claim -n 3 --owner w >/dev/null
	spool-enqueue --id j4 <<<"payload 4" >/dev/null
	spool-finish j1 "$(lease_token j1)" ok >/dev/null
	spool-finish j2 "$(lease_token j2)" permanent >/dev/null
}

# check_repair EXPECTED: spool-fsck reports EXPECTED lines (exit 1), then
# --repair reports them with what it did, then the spool is clean.
@test "a consistent spool is clean, and fsck changes nothing" {
	populate
	before=$(snapshot)
	fsck_clean
	equals "$(snapshot)" "$before"
}

@test "a claim cut short after its record: marked void" {
	populate
	SPOOL_TEST_CRASH=claim-recorded spool-claim --owner w >/dev/null 2>&1 || true
	run -1 spool-fsck
	equals "$output" "j4: its last transition was cut short before its move"
	run -0 spool-fsck --repair
	equals "$output" "j4: its last transition was cut short before its move (marked void)"
	fsck_clean
	# j1 to j3 took tokens 1 to 3; the claim that died burnt 4.
	equals "$(tail -1 "$SPOOL_DIR/meta/j4" | cut -d' ' -f2,3)" "ev=void tok=4"
}

@test "a finish cut short before its audit line: the line is appended" {
	populate
	SPOOL_TEST_CRASH=finish-moved spool-finish j3 "$(lease_token j3)" ok >/dev/null 2>&1 || true
	run -1 spool-fsck
	[[ $output =~ ^j3:\ no\ audit\ line\ for\ its\ ok\ at\ [0-9]+\ ms$ ]]
	run -0 spool-fsck --repair
	[[ $output == *"(appended)" ]]
	fsck_clean
	equals "$(audit_events | tail -1)" "ok j3 3 1 1 w - - -"
}

@test "a job's file in two states: the one its sidecar does not name is quarantined" {
	populate
	cp "$SPOOL_DIR/done/j1" "$SPOOL_DIR/dead/j1"
	run -1 spool-fsck
	equals "$output" "dead/j1: a second file of job j1, whose sidecar puts it at done/j1"
	run -0 spool-fsck --repair
	fsck_clean
	equals "$(state_of j1)" done
	equals "$(cat "$SPOOL_DIR"/quarantine/dead_j1,*)" "payload 1"
}

@test "a lease file renamed by hand: put back where its sidecar says" {
	populate
	mv "$SPOOL_DIR/leased/j3,3" "$SPOOL_DIR/leased/j3,7"
	run -1 spool-fsck
	equals "$output" "j3: moved by hand from leased/ to leased/j3,7: spool-fsck --repair puts it back"
	run -0 spool-fsck --repair
	equals "$output" "j3: moved by hand from leased/ to leased/j3,7: put back"
	fsck_clean
	equals "$(ls "$SPOOL_DIR/leased")" "j3,3"
}

@test "one file under two names that are not its place (a power cut split two renames): one is put back" {
	local old lease
	populate
	spool-enqueue --id j5 <<<"payload 5" >/dev/null
	old=$(cd "$SPOOL_DIR" && find new -name 'j5,*')
	spool-claim -n 2 --owner w >/dev/null
	lease=j5,$(lease_token j5)
	# The claim's old name comes back; the finish's move is kept, its
	# record lost: the one file at new/ and done/, none at leased/.
	ln "$SPOOL_DIR/leased/$lease" "$SPOOL_DIR/$old"
	mv "$SPOOL_DIR/leased/$lease" "$SPOOL_DIR/done/j5"
	run -1 spool-fsck
	equals "$output" "j5: its one file is under 2 names (a power cut split its renames): spool-fsck --repair keeps $old
j5: its file is still at $old, where it was before its last transition (claim) moved it to leased/ (a power cut lost the move, or a person undid it): spool-fsck --repair makes the move again"
	run -0 spool-fsck --repair
	equals "$output" "j5: its one file is under 2 names (a power cut split its renames): kept $old
j5: its file is still at $old, where it was before its last transition (claim) moved it to leased/ (a power cut lost the move, or a person undid it): the move made again"
	fsck_clean
	equals "$(state_of j5)" leased
	[ ! -e "$SPOOL_DIR/done/j5" ]
	[ -z "$(cd "$SPOOL_DIR" && find new -name 'j5,*')" ]
	equals "$(cat "$SPOOL_DIR/leased/$lease")" "payload 5"
	# Two files, not one: a person chooses.
	cp "$SPOOL_DIR/leased/$lease" "$SPOOL_DIR/done/j5"
	mv "$SPOOL_DIR/leased/$lease" "$SPOOL_DIR/dead/j5"
	run -1 spool-fsck
	equals "$output" "j5: its file is missing from leased/, and 2 files of its name are elsewhere: move the right one back to leased/$lease, then spool-fsck --repair"
}

@test "a file with no sidecar, a stray name, and junk at each level" {
	populate
	echo orphan >"$SPOOL_DIR/dead/nobody"
	echo junk >"$SPOOL_DIR/leased/not a lease"
	echo junk >"$SPOOL_DIR/new/j9"
	run -1 spool-fsck
	diff -u - <(sort <<<"$output") <<'EOT'
dead/nobody: a file no job owns (no sidecar, and no audit line of ID nobody): to make it a job, spool-enqueue --id nobody FILE
leased/not a lease: not a job's name
new/j9: a file no job owns (no sidecar, and no audit line of ID j9): to make it a job, spool-enqueue --id j9 FILE
EOT
	run -0 spool-fsck --repair
	fsck_clean
	[ "$(ls "$SPOOL_DIR/quarantine" | wc -l)" -eq 3 ]
}

@test "an NFS client's silly-renamed files are left alone, with --repair too" {
	populate
	# A file removed while a process on an NFS client had it open: the
	# client renames it .nfs and hex digits until the last close.
	for d in new leased done dead meta; do
		echo held >"$SPOOL_DIR/$d/.nfs000000000012345600000001"
	done
	bucket=$(cd "$SPOOL_DIR" && find new -mindepth 1 -type d | head -n 1)
	echo held >"$SPOOL_DIR/$bucket/.nfs00000000001234560000000a"
	# Not hex after .nfs: a stray as any other.
	echo junk >"$SPOOL_DIR/leased/.nfsnotours"
	before=$(snapshot)
	run -1 spool-fsck
	equals "$output" "leased/.nfsnotours: not a job's name"
	equals "$(snapshot)" "$before"
	run -0 spool-fsck --repair
	equals "$output" "leased/.nfsnotours: not a job's name (quarantined)"
	fsck_clean
	for d in new leased done dead meta "$bucket"; do
		[ -e "$SPOOL_DIR/$d/.nfs000000000012345600000001" ] ||
		    [ -e "$SPOOL_DIR/$d/.nfs00000000001234560000000a" ] ||
		    { echo "$d: its .nfs file was moved" >&2; return 1; }
	done
	[ -z "$(find "$SPOOL_DIR/quarantine" -name '.nfs0*')" ]
}

@test "a tmp/ file of a dead enqueue is removed; a live one is left" {
	populate
	echo x >"$SPOOL_DIR/tmp/j9,999999999.1"
	sleep 1000 &
	live=$!
	echo y >"$SPOOL_DIR/tmp/j8,$live.1"
	run -1 spool-fsck
	equals "$output" "tmp: j9,999999999.1: left by an interrupted enqueue, never published"
	run -0 spool-fsck --repair
	[ ! -e "$SPOOL_DIR/tmp/j9,999999999.1" ]
	[ -e "$SPOOL_DIR/tmp/j8,$live.1" ]
	fsck_clean
	kill "$live"
}

@test "every repair of a cut-short move says what it removed, in the words of the check" {
	T=1796025600000
	at_ms $T spool-enqueue --id c1 <<<"one" >/dev/null
	at_ms $((T + 1000)) spool-claim --owner w >/dev/null
	at_ms $((T + 2000)) spool-finish c1 1 ok >/dev/null
	# A claim made as link and unlink, killed between the two.
	at_ms $((T + 3000)) spool-enqueue --id m1 <<<"two" >/dev/null
	old=$(path_of m1)
	old=${old#"$SPOOL_DIR/"}
	run -137 env SPOOL_TEST_NOREPLACE=off SPOOL_TEST_CRASH=move-linked SPOOL_TEST_NOW=$((T + 4000)) spool-claim --owner w
	# A new cycle of the done ID, killed before it removed the old file.
	run -137 env SPOOL_TEST_CRASH=enqueue-synced SPOOL_TEST_NOW=$((T + 5000)) spool-enqueue --id c1 <<<"three"
	# spool-init's copy of config, its process gone.
	echo x >"$SPOOL_DIR/tmp/config,999999999"
	run -1 spool-fsck
	equals "$output" "$(printf '%s\n' \
	    "done/c1: the previous cycle's file of job c1, left by an interrupted new cycle" \
	    "c1: no audit line for its enqueue at $((T + 5000)) ms" \
	    "$old: a second name of job m1's file, left by a move cut short" \
	    "m1: no audit line for its claim at $((T + 4000)) ms" \
	    "tmp: config,999999999: left by an interrupted write of config, never put in place")"
	run -0 spool-fsck --repair
	equals "$output" "$(printf '%s\n' \
	    "done/c1: the previous cycle's file of job c1, left by an interrupted new cycle (removed)" \
	    "c1: no audit line for its enqueue at $((T + 5000)) ms (appended)" \
	    "$old: a second name of job m1's file, left by a move cut short (removed)" \
	    "m1: no audit line for its claim at $((T + 4000)) ms (appended)" \
	    "tmp: config,999999999: left by an interrupted write of config, never put in place (removed)")"
	fsck_clean
	equals "$(ids_in new)" c1
	equals "$(ids_in leased)" m1
	equals "$(ls "$SPOOL_DIR/tmp")" ""
	equals "$(audit_events | grep -c '^supersede c1 1 ')" 1
	check_invariants
}

@test "a token in the audit log above the counter's next: --repair raises it" {
	populate
	# Below the counter's next, but above its last: that claim's host
	# would hand out tokens 4 to 9 again.
	echo "2026-11-30T08:00:00.000Z claim j4 9 1 1 w - - - h:1" >>"$SPOOL_DIR/audit/testhost.log"
	run -1 spool-fsck
	equals "$output" "tokens: the counter's last token, 3, is below token 9, which the spool names: a write of it was lost"
	echo "2026-11-30T08:00:00.001Z claim j4 2000 1 1 w - - - h:1" >>"$SPOOL_DIR/audit/testhost.log"
	run -1 spool-fsck
	equals "$output" "tokens: token 2000 is named, but the counter says every token is below 1025"
	run -0 spool-fsck --repair
	equals "$output" "tokens: token 2000 is named, but the counter says every token is below 1025 (raised)"
	fsck_clean
	equals "$(cat "$SPOOL_DIR/tokens")" "next=2001 last=2000 boot=-"
	run -0 spool-claim --owner w
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j4\t2001')"
}

@test "format 1: a token in the audit log above the sidecar's is reported, left to a person" {
	populate
	echo 1 >"$SPOOL_DIR/format"
	echo "2026-11-30T08:00:00.000Z claim j4 9 1 1 w - - - h:1" >>"$SPOOL_DIR/audit/testhost.log"
	run -1 spool-fsck
	equals "$output" "j4: the audit log names token 9, above the sidecar's highest, 0"
	run -1 spool-fsck --repair
}

@test "a corrupt sidecar, a file nowhere, and a stray name at the top" {
	populate
	echo 'garbage' >>"$SPOOL_DIR/meta/j1"
	rm "$SPOOL_DIR/dead/j2"
	touch "$SPOOL_DIR/extra"
	run -1 spool-fsck
	diff -u - <(echo "$output") <<'EOT'
extra: note: not part of a spool (left alone)
j1: sidecar meta/j1 is not a readable record log: spool-fsck --repair moves it to quarantine/ and makes it again
j2: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET j2
EOT
	run -1 spool-fsck --repair
	[ -e "$SPOOL_DIR/extra" ]
}

@test "bad usage, not a spool" {
	run -100 --separate-stderr spool-fsck --bogus
	equals "$stderr" "usage: spool-fsck [-d DIR] [--repair | --restored] [--verify]"
	run -100 --separate-stderr spool-fsck -d "$BATS_TEST_TMPDIR"
	[[ $stderr == *"not a spool"* ]]
}

@test "audit lines in a rotated log since removed are not missing; a crash's are" {
	SPOOL_TEST_NOW=1796025600000 populate
	mv "$SPOOL_DIR/audit/testhost.log" "$SPOOL_DIR/audit/testhost.log-20261130"
	SPOOL_TEST_NOW=1796025601000 spool-finish j3 "$(lease_token j3)" ok >/dev/null
	# Rotated and still there: read as any log.
	fsck_clean
	# Rotated and removed, as logrotate's "rotate N" does.
	rm "$SPOOL_DIR/audit/testhost.log-20261130"
	fsck_clean
	# A line lost by a crash after the oldest line kept is still missing.
	SPOOL_TEST_NOW=1796025602000 spool-enqueue --id j5 </dev/null >/dev/null
	SPOOL_TEST_NOW=1796025602000 spool-claim --owner w -n 2 >/dev/null
	SPOOL_TEST_NOW=1796025603000 SPOOL_TEST_CRASH=finish-moved \
	    spool-finish j5 "$(lease_token j5)" ok >/dev/null 2>&1 || true
	run -1 spool-fsck
	equals "$output" "j5: no audit line for its ok at 1796025603000 ms"
	run -0 spool-fsck --repair
	fsck_clean
}
