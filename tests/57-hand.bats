#!/usr/bin/env bats
# Hand edits, as a person on call makes them with mv, cp, rm, an editor,
# chmod (spool(7), EDITING THE SPOOL BY HAND).  Each ends the same way: no
# payload lost (its bytes compared), every job reachable or recorded as
# removed, spool-fsck clean after --repair (and after the person's command
# where one is needed), the audit log saying what was adopted, and
# spool-stat --crit 'damaged>0' critical from the edit until it is settled
# (but for a copy, which spool-stat, reading no payload, does not see:
# spool-stat(1) says so).

load helpers

BATS_TEST_TIMEOUT=60

T=1796026336000

eval "helpers_$(declare -f setup)"

setup() {
	helpers_setup
	export SPOOL_TEST_NOW=$T
	PAY=$BATS_TEST_TMPDIR/payloads
	mkdir "$PAY"
	WPID= NB=
}

# Nothing a test started outlives it, even when it fails half-way.
teardown() {
	[ -z "$WPID" ] || kill -KILL -- "-$WPID" 2>/dev/null || true
	[ -z "$NB" ] || rm -rf "$NB"
}

# enq ID...: enqueue each ID with bytes of its own (a NUL and a byte above
# 127 among them), kept in $PAY/ID to compare.
enq() {
	local id
	for id; do
		printf 'payload of %s\n\0\377\n' "$id" >"$PAY/$id"
		spool-enqueue --id "$id" "$PAY/$id" >/dev/null
	done
}

# park ID...: enqueue, claim and finish each as permanent: in dead/.  One
# at a time, so that the first gets the lowest token: jobs of one 16 ms
# slot come in directory order, not in the order given (spool(7),
# Ordering).
park() {
	local id
	for id; do
		enq "$id"
		[ "$(spool-claim --owner w | cut -f1)" = "$id" ]
	done
	for id; do
		spool-finish "$id" "$(lease_token "$id")" permanent >/dev/null
	done
	[ "$(ids_in dead | grep -c .)" -ge $# ]
}

# same ID [FILE]: FILE (by default the job's own) holds ID's bytes.
same() {
	cmp "$PAY/$1" "${2:-$(path_of "$1")}"
}

# The highest token handed out so far.
last_token() {
	sed 's/.* last=\([0-9]*\) .*/\1/' "$SPOOL_DIR/tokens"
}

# damaged N: spool-stat --crit 'damaged>0' sees N damaged jobs.
damaged() {
	if [ "$1" -eq 0 ]; then
		run -0 spool-stat --crit 'damaged>0'
		equals "$output" "SPOOL OK - damaged=0 | damaged=0"
	else
		run -2 spool-stat --crit 'damaged>0'
		equals "$output" "SPOOL CRITICAL - damaged=$1 (>0) | damaged=$1"
	fi
}

# The audit lines appended since the mark the last call of mark left.
mark() { AUDIT_MARK=$(audit_events | wc -l); }
since_mark() { audit_events | tail -n +$((AUDIT_MARK + 1)); }

# The one message every command gives about a damaged job.
damaged_msg() {
	echo "$1: $2: damaged job: its file or its sidecar is not where it should be: spool-fsck --repair settles it or says how; a file removed on purpose is recorded with spool-purge --missing --by WHO --note TICKET $2 (spool(7), EDITING THE SPOOL BY HAND)"
}

@test "mv dead/ID new/: adopted as a redrive by hand; the next claim gets it, with a token above all before" {
	park m1 m2
	last=$(last_token)
	mv "$SPOOL_DIR/dead/m1" "$SPOOL_DIR/new/"
	damaged 1
	# Not claimable until adopted: a claim takes only files its record names.
	run -1 spool-claim --owner w
	run -1 spool-fsck
	equals "$output" "m1: moved by hand from dead/ to new/m1: spool-fsck --repair adopts it as a redrive"
	mark
	run -0 spool-fsck --repair
	equals "$output" "m1: moved by hand from dead/ to new/m1: adopted as a redrive by hand"
	equals "$(since_mark)" "redrive m1 1 0 2 hand - - -"
	equals "$(last_rec m1 ev by)" "$(printf 'ev=redrive\nby=hand')"
	fsck_clean
	damaged 0
	equals "$(spool-stat --json | jq .hand_edits)" 1
	run -0 spool-claim --owner w
	equals "$(cut -f1,3 <<<"$output")" "$(printf 'm1\t1')"
	[ "$(cut -f2 <<<"$output")" -gt "$last" ]
	same m1
	same m2
	fsck_clean
}

@test "mv dead/ID done/: adopted as a drop by hand" {
	park m1
	mv "$SPOOL_DIR/dead/m1" "$SPOOL_DIR/done/"
	damaged 1
	run -1 spool-fsck
	equals "$output" "m1: moved by hand from dead/ to done/m1: spool-fsck --repair adopts it as a drop"
	mark
	run -0 spool-fsck --repair
	equals "$output" "m1: moved by hand from dead/ to done/m1: adopted as a drop by hand"
	equals "$(since_mark)" "drop m1 1 1 1 hand permanent - -"
	fsck_clean
	damaged 0
	run -0 spool-show m1
	equals "$(grep -E '^(state|disposition)' <<<"$output")" "$(printf 'state        done\ndisposition  dropped')"
	same m1
}

@test "a job moved by hand is listed where it is, damaged, with what settles it" {
	park m1 m2 m3
	mv "$SPOOL_DIR/dead/m1" "$SPOOL_DIR/new/"
	mv "$SPOOL_DIR/dead/m2" "$SPOOL_DIR/done/"
	run -100 --separate-stderr spool-ls new
	equals "$output" m1
	equals "$stderr" "$(damaged_msg spool-ls m1)"
	run -100 --separate-stderr spool-ls -l new dead done
	equals "$output" "$(cat <<'EOF'
new:
ID  DELIV  DISP     DUE  CLASS  AGE  CYC  BY  NOTE  DETAIL
m1  #1     damaged  now  -      0ms  1    -   -     its record says dead/; spool-fsck --repair settles it

dead:
ID  DELIV  DISP    SE  REASON     CLASS  AGE  CYC  BY  NOTE  DETAIL
m3  #1     parked  -   permanent  -      0ms  1    -   -     -

done:
ID  DELIV  DISP     AGE  CYC  BY  NOTE  DETAIL
m2  #1     damaged  0ms  1    -   -     its record says dead/; spool-fsck --repair settles it
EOF
)"
	equals "$stderr" "$(damaged_msg spool-ls m1; damaged_msg spool-ls m2)"
	run -100 --separate-stderr spool-ls --json done
	equals "$(jq -c '[.id, .state, .damaged, .damage]' <<<"$output")" '["m2","dead",true,"its file is not where its last record says"]'
	run -0 spool-fsck --repair
	# Adopted; and a copy beside a job's own file is a second file, not
	# listed: in done/, or at the top of new/.
	cp "$SPOOL_DIR/dead/m3" "$SPOOL_DIR/done/"
	cp "$(path_of m1)" "$SPOOL_DIR/new/"
	run -0 --separate-stderr spool-ls new done dead
	equals "$output" "$(printf '%s\n' m1 m2 m3)"
	equals "$stderr" ""
}

@test "mv done/ID back to its lease's name: the finish's move made again, as after a power cut" {
	local tok
	enq q1
	spool-claim --owner w >/dev/null
	tok=$(lease_token q1)
	spool-finish q1 "$tok" ok
	mv "$SPOOL_DIR/done/q1" "$SPOOL_DIR/leased/q1,$tok"
	# Commands take the finish as not made (spool-layout.md, "Crashes").
	damaged 0
	run -0 spool-show q1
	equals "$(grep '^state' <<<"$output")" "state        leased"
	run -1 spool-fsck
	equals "$output" "q1: its file is still at leased/q1,$tok, where it was before its last transition (ok) moved it to done/ (a power cut lost the move, or a person undid it): spool-fsck --repair makes the move again"
	mark
	run -0 spool-fsck --repair
	equals "$output" "q1: its file is still at leased/q1,$tok, where it was before its last transition (ok) moved it to done/ (a power cut lost the move, or a person undid it): the move made again"
	equals "$(since_mark)" ""
	fsck_clean
	damaged 0
	same q1 "$SPOOL_DIR/done/q1"
}

@test "mv into leased/: put back where the record says, reported, nothing adopted" {
	park m1
	enq q1
	mv "$SPOOL_DIR/dead/m1" "$SPOOL_DIR/leased/"
	mv "$(path_of q1)" "$SPOOL_DIR/leased/q1,99"
	damaged 2
	run -1 spool-fsck
	diff -u - <(echo "$output") <<'EOT'
m1: moved by hand from dead/ to leased/m1: spool-fsck --repair puts it back
q1: moved by hand from new/ to leased/q1,99: spool-fsck --repair puts it back
EOT
	mark
	run -0 spool-fsck --repair
	diff -u - <(echo "$output") <<'EOT'
m1: moved by hand from dead/ to leased/m1: put back
q1: moved by hand from new/ to leased/q1,99: put back
EOT
	equals "$(since_mark)" ""
	fsck_clean
	damaged 0
	equals "$(state_of m1)" dead
	equals "$(state_of q1)" new
	equals "$(ids_in leased)" ""
	same m1
	same q1
	run -0 spool-claim --owner w
	equals "$(cut -f1 <<<"$output")" q1
}

@test "mv into new/ at any level but its leaf: adopted as a redrive, filed in its bucket" {
	park m1 m2 m3
	top=$(find "$SPOOL_DIR/new" -mindepth 1 -maxdepth 1 -type d | head -n 1)
	leaf=$(find "$SPOOL_DIR/new" -mindepth 3 -type d | head -n 1)
	mv "$SPOOL_DIR/dead/m1" "$top/"
	mv "$SPOOL_DIR/dead/m2" "$leaf/"
	mv "$SPOOL_DIR/dead/m3" "$leaf/m3,5"
	damaged 3
	run -1 spool-fsck
	diff -u - <(echo "$output") <<EOT
m1: moved by hand from dead/ to ${top#"$SPOOL_DIR/"}/m1: spool-fsck --repair adopts it as a redrive
m2: moved by hand from dead/ to ${leaf#"$SPOOL_DIR/"}/m2: spool-fsck --repair adopts it as a redrive
m3: moved by hand from dead/ to ${leaf#"$SPOOL_DIR/"}/m3,5: spool-fsck --repair adopts it as a redrive
EOT
	mark
	run -0 spool-fsck --repair
	# Each keeps the token of its last claim (taken in no set order).
	diff -u - <(since_mark | cut -d' ' -f1,2,4- | sort) <<'EOT'
redrive m1 0 2 hand - - -
redrive m2 0 2 hand - - -
redrive m3 0 2 hand - - -
EOT
	fsck_clean
	damaged 0
	for id in m1 m2 m3; do
		equals "$(path_of "$id")" "$SPOOL_DIR/new/$(printf '%08x/%03x/%03x' $((T >> 28)) $(((T >> 16) & 0xfff)) $(((T >> 4) & 0xfff)))/$id,$T"
		same "$id"
	done
	run -0 spool-claim --owner w -n 3
	equals "$(cut -f1 <<<"$output" | sort | paste -sd' ')" "m1 m2 m3"
}

@test "a job flagged for reconciliation moved dead/ to new/: back to dead/, reported, never redriven" {
	enq s1
	spool-claim --owner w >/dev/null
	spool-finish --class unknown-side-effect s1 "$(lease_token s1)" retry >/dev/null
	equals "$(last_rec s1 ev se)" "$(printf 'ev=park\nse=1')"
	mv "$SPOOL_DIR/dead/s1" "$SPOOL_DIR/new/"
	damaged 1
	run -1 spool-fsck
	equals "$output" "s1: moved by hand from dead/ to new/s1: spool-fsck --repair puts it back; its side effect may have happened: reconcile it, then spool-redrive --reconciled"
	mark
	run -0 spool-fsck --repair
	equals "$output" "s1: moved by hand from dead/ to new/s1: put back; its side effect may have happened: reconcile it, then spool-redrive --reconciled"
	equals "$(since_mark)" ""
	fsck_clean
	damaged 0
	equals "$(state_of s1)" dead
	run -1 spool-claim --owner w
	run -1 --separate-stderr spool-redrive --by ann --note T-1 s1
	equals "$stderr" "spool-redrive: s1: its side effect may have happened: reconcile it, then redrive with --reconciled"
	run -0 spool-redrive --by ann --note T-1 --reconciled s1
	equals "$(audit_events | tail -n 1)" "redrive s1 1 0 2 ann - - T-1"
	same s1
}

@test "rm dead/ID: damaged, every message names spool-purge --missing; once recorded, the ID is enqueued again above every token" {
	park m1 m2
	last=$(last_token)
	rm "$SPOOL_DIR/dead/m2"
	damaged 1
	for cmd in "spool-show m2" "spool-redrive --by a --note b m2" \
	    "spool-drop --by a --note b m2" "spool-cancel --by a --note b m2" \
	    "spool-purge --by a --note b dead m2"; do
		run -100 --separate-stderr $cmd
		equals "$stderr" "$(damaged_msg "${cmd%% *}" m2)"
	done
	run -100 --separate-stderr spool-enqueue --id m2 "$PAY/m2"
	equals "$stderr" "$(damaged_msg spool-enqueue m2)"
	# spool-show shows it all the same, with what is wrong, and its
	# history: on-call needs it most then.
	run -100 --separate-stderr spool-show m2
	equals "$(sed -n 1,4p <<<"$output")" "$(printf '%s\n' 'id           m2' \
	    'damaged      its file is not where its last record says' \
	    'state        dead' 'disposition  parked')"
	equals "$(grep -c '^[^ ]*  park  ' <<<"$output")" 1
	equals "$(sed -n '/^CYC/,/^$/p' <<<"$output" | wc -l)" 3
	run -100 --separate-stderr spool-show --json m2
	equals "$(jq -c '[.state, .damaged, .damage]' <<<"$output")" '["dead",true,"its file is not where its last record says"]'
	mode=$(stat -c %a "$SPOOL_DIR/dead/m1")
	chmod 000 "$SPOOL_DIR/dead/m1"
	run -100 --separate-stderr spool-show m1
	equals "${lines[1]}" "damaged      its file may not be read: a hand took its mode away"
	chmod "$mode" "$SPOOL_DIR/dead/m1"
	run -1 spool-fsck
	equals "$output" "m2: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET m2"
	before=$(snapshot)
	run -1 spool-fsck --repair
	equals "$output" "m2: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET m2"
	equals "$(snapshot)" "$before"
	damaged 1
	mark
	run -0 --separate-stderr spool-purge --missing --by ann --note T-2 - <<<m2
	equals "$output" m2
	equals "$(since_mark)" "purge m2 2 1 1 ann permanent - T-2"
	[ ! -e "$SPOOL_DIR/meta/m2" ]
	fsck_clean
	damaged 0
	# The ID is free again, and its tokens go on above every one issued.
	spool-enqueue --id m2 "$PAY/m2" >/dev/null
	run -0 spool-claim --owner w
	equals "$(cut -f1,3 <<<"$output")" "$(printf 'm2\t1')"
	[ "$(cut -f2 <<<"$output")" -gt "$last" ]
	same m2
	same m1
}

@test "rm of a queued job's file in new/: damaged, claims pass over it, recorded by spool-purge --missing" {
	enq q1 q2
	rm "$(path_of q1)"
	damaged 1
	run -0 spool-claim --owner w -n 2
	equals "$(cut -f1 <<<"$output")" q2
	run -1 spool-fsck
	equals "$output" "q1: its file is missing from new/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET q1"
	run -1 spool-fsck --repair
	mark
	run -0 spool-purge --missing --by ann --note T-3 q1
	equals "$(since_mark)" "purge q1 0 0 1 ann - - T-3"
	fsck_clean
	damaged 0
	run -1 --separate-stderr spool-show q1
	equals "$stderr" "spool-show: q1: no such job"
	same q2
}

@test ": > meta/ID: the sidecar is made again, the payload kept, tokens never go back" {
	park d1
	enq l1
	spool-claim --owner w >/dev/null
	enq q1
	last=$(last_token)
	q1=$(path_of q1)
	q1=${q1#"$SPOOL_DIR/"}
	for id in q1 l1 d1; do
		: >"$SPOOL_DIR/meta/$id"
	done
	damaged 3
	run -1 spool-fsck
	diff -u - <(echo "$output") <<EOT
dead/d1: a job file whose sidecar is lost or empty: spool-fsck --repair makes it again
leased/l1,$last: a job file whose sidecar is lost or empty: spool-fsck --repair makes it again
$q1: a job file whose sidecar is lost or empty: spool-fsck --repair makes it again
EOT
	mark
	run -0 spool-fsck --repair
	diff -u - <(echo "$output") <<EOT
dead/d1: a job file whose sidecar is lost or empty: made again from the file and the audit log (rebuilt)
leased/l1,$last: a job file whose sidecar is lost or empty: made again from the file and the audit log (rebuilt)
$q1: a job file whose sidecar is lost or empty: made again from the file and the audit log (rebuilt)
EOT
	diff -u - <(since_mark) <<EOT
rebuild d1 1 1 1 - permanent - -
rebuild l1 $last 1 1 w - - -
rebuild q1 0 0 1 - - - -
EOT
	fsck_clean
	damaged 0
	# The payload's size and checksum are taken again from the file.
	equals "$(last_rec q1 payload se)" "$(printf 'payload=%s:%s\nse=' "$(wc -c <"$PAY/q1")" "$(xxh_of "$PAY/q1")")"
	# Outcomes since are unknown: leased and parked jobs are flagged.
	equals "$(last_rec l1 se until)" "$(printf 'se=1\nuntil=%s' "$T")"
	equals "$(last_rec d1 se)" se=1
	for id in q1 l1 d1; do same "$id"; done
	# The lease ended at once; both claims take tokens above all before.
	run -0 spool-claim --owner w2 -n 2
	equals "$(cut -f1 <<<"$output" | sort | paste -sd' ')" "l1 q1"
	[ "$(cut -f2 <<<"$output" | sort -n | head -n 1)" -gt "$last" ]
	run -0 spool-redrive --by ann --note T-4 --reconciled d1
	fsck_clean
}

@test "a garbled sidecar: kept in quarantine/, made again, the payload kept" {
	park d1 d2
	last=$(last_token)
	cp "$SPOOL_DIR/meta/d1" "$BATS_TEST_TMPDIR/d1.meta"
	echo 'half a line, then garbage' >>"$SPOOL_DIR/meta/d1"
	damaged 1
	run -100 --separate-stderr spool-redrive --by ann --note T-5 d1
	equals "$stderr" "$(damaged_msg spool-redrive d1)"
	run -1 spool-fsck
	equals "$output" "d1: sidecar meta/d1 is not a readable record log: spool-fsck --repair moves it to quarantine/ and makes it again"
	mark
	run -0 spool-fsck --repair
	diff -u - <(echo "$output") <<'EOT'
d1: sidecar meta/d1 is not a readable record log (quarantined)
dead/d1: a job file whose sidecar is lost or empty: made again from the file and the audit log (rebuilt)
EOT
	equals "$(since_mark)" "rebuild d1 1 1 1 - permanent - -"
	# What was garbled is kept for a person to read.
	diff -u <(cat "$BATS_TEST_TMPDIR/d1.meta"; echo 'half a line, then garbage') "$SPOOL_DIR/quarantine/meta_d1,$T"
	fsck_clean
	damaged 0
	same d1
	same d2
	run -0 spool-redrive --by ann --note T-5 --reconciled d1
	run -0 spool-claim --owner w
	equals "$(cut -f1 <<<"$output")" d1
	[ "$(cut -f2 <<<"$output")" -gt "$last" ]
}

@test "a file no job owns, dropped in new/ and dead/: reported with its command, quarantined, made a job by spool-enqueue" {
	park d1
	printf 'from a ticket\n' >"$SPOOL_DIR/dead/x1"
	printf 'resend this\n' >"$SPOOL_DIR/new/x2"
	cp "$SPOOL_DIR/dead/x1" "$SPOOL_DIR/new/x2" "$BATS_TEST_TMPDIR/"
	damaged 2
	run -1 spool-fsck
	diff -u - <(echo "$output") <<'EOT'
dead/x1: a file no job owns (no sidecar, and no audit line of ID x1): to make it a job, spool-enqueue --id x1 FILE
new/x2: a file no job owns (no sidecar, and no audit line of ID x2): to make it a job, spool-enqueue --id x2 FILE
EOT
	mark
	run -0 spool-fsck --repair
	diff -u - <(echo "$output") <<'EOT'
dead/x1: a file no job owns (no sidecar, and no audit line of ID x1) (quarantined): to make it a job, spool-enqueue --id x1 FILE
new/x2: a file no job owns (no sidecar, and no audit line of ID x2) (quarantined): to make it a job, spool-enqueue --id x2 FILE
EOT
	equals "$(since_mark)" ""
	# Its name says where it was.
	equals "$(ls "$SPOOL_DIR/quarantine")" "$(printf 'dead_x1,%s\nnew_x2,%s' "$T" "$T")"
	fsck_clean
	damaged 0
	equals "$(spool-stat --json | jq .quarantined)" 2
	run -0 spool-enqueue --id x2 "$SPOOL_DIR/quarantine/new_x2,$T"
	rm "$SPOOL_DIR/quarantine/new_x2,$T"
	cmp "$BATS_TEST_TMPDIR/x2" "$(path_of x2)"
	cmp "$BATS_TEST_TMPDIR/x1" "$SPOOL_DIR/quarantine/dead_x1,$T"
	equals "$(audit_events | tail -n 1)" "enqueue x2 0 0 1 - - - -"
	same d1
	fsck_clean
}

@test "cp instead of mv: the copy goes to quarantine/, the job stays where it was" {
	park d1 d2
	cp "$SPOOL_DIR/dead/d1" "$SPOOL_DIR/new/"
	cp "$SPOOL_DIR/dead/d2" "$SPOOL_DIR/done/"
	run -1 spool-fsck
	diff -u - <(echo "$output") <<'EOT'
new/d1: a second file of job d1, whose sidecar puts it at dead/d1
done/d2: a second file of job d2, whose sidecar puts it at dead/d2
EOT
	mark
	run -0 spool-fsck --repair
	equals "$(since_mark)" ""
	fsck_clean
	damaged 0
	equals "$(state_of d1)" dead
	equals "$(state_of d2)" dead
	same d1
	same d2
	same d1 "$SPOOL_DIR/quarantine/new_d1,$T"
	same d2 "$SPOOL_DIR/quarantine/done_d2,$T"
}

@test "an editor's save by rename over dead/ID: found by size, redrive refused until --edited, which records the new bytes" {
	park d1
	printf 'payload of d1, mended\n' >"$SPOOL_DIR/dead/.d1.swp"
	mv "$SPOOL_DIR/dead/.d1.swp" "$SPOOL_DIR/dead/d1"
	cp "$SPOOL_DIR/dead/d1" "$PAY/d1"
	run -1 spool-fsck
	equals "$output" "d1: its payload is 22 bytes, its record says 17: changed by hand, or torn; check it, then spool-redrive --edited or spool-drop"
	before=$(snapshot)
	damaged 1
	run -1 spool-fsck --repair
	equals "$(snapshot)" "$before"
	damaged 1
	run -1 --separate-stderr spool-redrive --by ann --note T-6 d1
	equals "$stderr" "spool-redrive: d1: its payload is not the one enqueued (changed by hand?): check it, then redrive with --edited to send it as it is"
	equals "$(snapshot)" "$before"
	mark
	run -0 spool-redrive --by ann --note T-6 --edited d1
	equals "$(since_mark)" "redrive d1 1 0 2 ann - - T-6"
	equals "$(last_rec d1 payload by note)" "$(printf 'payload=22:%s\nby=ann\nnote=T-6' "$(xxh_of "$PAY/d1")")"
	fsck_clean
	spool-fsck --verify
	damaged 0
	same d1
}

@test "chmod 000 on job files, as an unprivileged user: refused, passed over by claims, given its mode back" {
	# Root reads any file whatever its mode: the spool is nobody's.
	if [ "$(id -u)" = 0 ]; then
		# Out of bats's own directories, which nobody may not enter.
		NB=$(mktemp -d /tmp/spool-57.XXXXXX)
		chmod 755 "$NB"
		rm -rf "$SPOOL_DIR"
		PAY=$NB/payloads
		mkdir "$PAY" "$NB/nb"
		chown nobody "$NB/nb" "$PAY"
		export SPOOL_DIR=$NB/nb/spool
		as() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
		as spool-init
	else
		as() { "$@"; }
	fi
	as bash -c "$(declare -f enq park lease_token ids_in); PAY=$PAY; park d1; enq q1 q2"
	[ "$(id -u)" != 0 ] || [ "$(stat -c %U "$SPOOL_DIR/dead/d1")" = nobody ]
	chmod 000 "$SPOOL_DIR/dead/d1" "$(path_of q1)"
	run -2 as spool-stat --crit 'damaged>0'
	equals "$output" "SPOOL CRITICAL - damaged=2 (>0) | damaged=2"
	run -0 as spool-claim --owner w -n 2
	equals "$(cut -f1 <<<"$output")" q2
	run -100 --separate-stderr as spool-redrive --by ann --note T-7 d1
	equals "$stderr" "$(damaged_msg spool-redrive d1)"
	run -1 as spool-fsck
	diff -u - <(echo "$output") <<'EOT'
d1: its file cannot be read (its mode was changed?): give it back mode 0444 (0440 in a group spool)
q1: its file cannot be read (its mode was changed?): give it back mode 0444 (0440 in a group spool)
EOT
	mark
	run -0 as spool-fsck --repair
	diff -u - <(echo "$output") <<'EOT'
d1: its file cannot be read (its mode was changed?) (made readable again)
q1: its file cannot be read (its mode was changed?) (made readable again)
EOT
	equals "$(since_mark)" ""
	run -0 as spool-fsck
	equals "$output" ""
	equals "$(stat -c %a "$SPOOL_DIR/dead/d1" "$(path_of q1)")" "$(printf '444\n444')"
	for id in d1 q1 q2; do same "$id"; done
	run -0 as spool-redrive --by ann --note T-7 d1
	run -0 as spool-claim --owner w -n 2
	equals "$(cut -f1 <<<"$output" | sort | paste -sd' ')" "d1 q1"
}

@test "a job file replaced by a directory or a symlink: refused; the thing is quarantined, never followed; the file put back" {
	park d1 d2
	mv "$SPOOL_DIR/dead/d1" "$BATS_TEST_TMPDIR/d1.saved"
	mkdir "$SPOOL_DIR/dead/d1"
	mv "$SPOOL_DIR/dead/d2" "$BATS_TEST_TMPDIR/d2.saved"
	ln -s "$BATS_TEST_TMPDIR/d2.saved" "$SPOOL_DIR/dead/d2"
	damaged 2
	for id in d1 d2; do
		run -100 --separate-stderr spool-redrive --by ann --note T-8 "$id"
		equals "$stderr" "$(damaged_msg spool-redrive "$id")"
	done
	run -1 spool-fsck
	diff -u - <(LC_ALL=C sort <<<"$output") <<'EOT'
d1: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET d1
d2: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET d2
dead/d1: not a job's name
dead/d2: not a job's name
EOT
	run -1 spool-fsck --repair
	diff -u - <(LC_ALL=C sort <<<"$output") <<'EOT'
d1: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET d1
d2: its file is missing from dead/: if it was removed on purpose, record that with spool-purge --missing --by WHO --note TICKET d2
dead/d1: not a job's name (quarantined)
dead/d2: not a job's name (quarantined)
EOT
	[ -d "$SPOOL_DIR/quarantine/dead_d1,$T" ]
	equals "$(readlink "$SPOOL_DIR/quarantine/dead_d2,$T")" "$BATS_TEST_TMPDIR/d2.saved"
	same d2 "$BATS_TEST_TMPDIR/d2.saved"
	# The person puts the files back.
	mv "$BATS_TEST_TMPDIR/d1.saved" "$SPOOL_DIR/dead/d1"
	mv "$BATS_TEST_TMPDIR/d2.saved" "$SPOOL_DIR/dead/d2"
	fsck_clean
	damaged 0
	same d1
	same d2
	run -0 spool-redrive --by ann --note T-8 d1 d2
}

@test "two edits to one job: moved and its payload edited; moved and its sidecar emptied" {
	park m1 m2
	last=$(last_token)
	printf 'edited\n' >"$SPOOL_DIR/dead/.m1"
	mv "$SPOOL_DIR/dead/.m1" "$SPOOL_DIR/dead/m1"
	cp "$SPOOL_DIR/dead/m1" "$PAY/m1"
	mv "$SPOOL_DIR/dead/m1" "$SPOOL_DIR/new/"
	mv "$SPOOL_DIR/dead/m2" "$SPOOL_DIR/new/"
	: >"$SPOOL_DIR/meta/m2"
	damaged 2
	run -1 spool-fsck
	diff -u - <(echo "$output") <<'EOT'
m1: moved by hand from dead/ to new/m1: spool-fsck --repair puts it back; its payload is not the one enqueued: check it, then spool-redrive --edited
new/m2: a file of job m2, whose sidecar is lost or empty, where no job's file can be: to make it the job, spool-enqueue --id m2 FILE
EOT
	mark
	run -0 spool-fsck --repair
	diff -u - <(echo "$output") <<EOT
m1: moved by hand from dead/ to new/m1: put back; its payload is not the one enqueued: check it, then spool-redrive --edited
new/m2: a file of job m2, whose sidecar is lost or empty, where no job's file can be (quarantined): to make it the job, spool-enqueue --id m2 FILE
EOT
	equals "$(since_mark)" ""
	# The edited payload is a person's to judge.
	run -1 spool-fsck
	equals "$output" "m1: its payload is 7 bytes, its record says 17: changed by hand, or torn; check it, then spool-redrive --edited or spool-drop"
	run -0 spool-redrive --by ann --note T-9 --edited m1
	run -0 spool-enqueue --id m2 "$SPOOL_DIR/quarantine/new_m2,$T"
	rm "$SPOOL_DIR/quarantine/new_m2,$T"
	fsck_clean
	damaged 0
	same m1
	same m2
	# The emptied sidecar began again at cycle 1; its tokens did not.
	equals "$(since_mark)" "$(printf 'redrive m1 1 0 2 ann - - T-9\nenqueue m2 0 0 1 - - - -')"
	run -0 spool-claim --owner w -n 2
	[ "$(cut -f2 <<<"$output" | sort -n | head -n 1)" -gt "$last" ]
}

@test "a hand edit racing spool-run -j 4: adopted while workers run, every payload delivered once, as enqueued" {
	unset SPOOL_TEST_NOW
	park d1
	H=$BATS_TEST_TMPDIR/handler
	OUT=$BATS_TEST_TMPDIR/out
	mkdir "$OUT"
	mkfifo "$BATS_TEST_TMPDIR/started" "$BATS_TEST_TMPDIR/gate"
	cat >"$H" <<EOH
#!/bin/sh
cat >"$OUT/\$SPOOL_JOB_ID.\$SPOOL_TOKEN"
if [ "\$SPOOL_JOB_ID" = q1 ]; then
	echo q1 >"$BATS_TEST_TMPDIR/started"
	read -r _ <"$BATS_TEST_TMPDIR/gate"
fi
EOH
	chmod +x "$H"
	enq q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 q11 q12
	exec {ev}<>"$BATS_TEST_TMPDIR/started"
	# In a session of its own, so that teardown can end it and its
	# handlers if the test fails half-way.
	setsid spool-run -j 4 --max-jobs 13 --owner w1 -- "$H" >"$BATS_TEST_TMPDIR/run.out" 2>&1 {ev}<&- &
	WPID=$!
	read -r -t 20 -u "$ev" started
	equals "$started" q1
	# q1's handler holds its lease while the job is moved and adopted.
	mv "$SPOOL_DIR/dead/d1" "$SPOOL_DIR/new/"
	run -0 spool-fsck --repair
	equals "$output" "d1: moved by hand from dead/ to new/d1: adopted as a redrive by hand"
	echo go >"$BATS_TEST_TMPDIR/gate"
	exec {ev}<&-
	wait "$WPID"
	WPID=
	equals "$(ids_in done | paste -sd' ')" "$(printf '%s\n' d1 q{1..12} | LC_ALL=C sort | paste -sd' ')"
	# Each delivered once, with the bytes enqueued.
	[ "$(ls "$OUT" | wc -l)" -eq 13 ]
	for id in d1 q{1..12}; do
		same "$id" "$OUT/$id".*
		same "$id"
	done
	[ "$(audit_events | grep -c ' hand ')" -eq 1 ]
	grep -q '^redrive d1 1 0 2 hand - - -$' <(audit_events)
	fsck_clean
	damaged 0
}

# Two jobs, a1 and j2, leased; spool-fsck --repair in the background,
# having read the log, waits for a1's lock, which the test holds until
# fsck_released, which then expects fsck to have found nothing.
fsck_behind_a1() {
	enq a1 j2
	spool-claim --owner w -n 2 >/dev/null
	exec {lk}<"$SPOOL_DIR/meta/a1"
	flock -x "$lk"
	spool-fsck --repair >"$BATS_TEST_TMPDIR/fsck.out" 2>&1 {lk}<&- &
	fpid=$!
	end=$((SECONDS + 20))
	until grep -q -- "-> FLOCK .* $fpid " /proc/locks; do
		[ "$SECONDS" -lt "$end" ] || { kill "$fpid"; false; }
	done
}

fsck_released() {
	exec {lk}<&-
	wait "$fpid"
	equals "$(cat "$BATS_TEST_TMPDIR/fsck.out")" ""
}

@test "spool-fsck --repair beside a command that logs a move after fsck read the log: no second audit line" {
	fsck_behind_a1
	# Meanwhile j2 is finished: its line is logged after fsck's reading.
	spool-finish j2 "$(lease_token j2)" ok >/dev/null
	fsck_released
	[ "$(audit_events | grep -c '^ok j2 ')" -eq 1 ]
	fsck_clean
	same j2
}

@test "spool-fsck --repair beside a copy-and-truncate rotation of the log that regrows past where fsck read: no line missed" {
	local i log="$SPOOL_DIR/audit/testhost.log"
	fsck_behind_a1
	# Rotated by copy and truncate; j2's line is then the log's first,
	# and the log grows past its size when fsck read it.
	cp "$log" "$log.1"
	: >"$log"
	spool-finish j2 "$(lease_token j2)" ok >/dev/null
	for i in 1 2 3 4 5 6; do
		spool-enqueue --id "x$i" </dev/null >/dev/null
	done
	[ "$(stat -c %s "$log")" -gt "$(stat -c %s "$log.1")" ]
	fsck_released
	[ "$(cat "$log" "$log.1" | grep -c ' ok j2 ')" -eq 1 ]
	fsck_clean
	same j2
}

@test "spool-show of a job whose sidecar cannot be read: its ID, what is wrong, its audit lines; 100" {
	enq g1
	echo garbage >>"$SPOOL_DIR/meta/g1"
	run -100 --separate-stderr spool-show g1
	# The time and the writer's PID are this run's.
	equals "$(sed -E 's/^2[0-9T:.-]{22}Z /YYYY-MM-DDTHH:MM:SS.mmmZ /; s/testhost:[0-9]+$/testhost:PID/' <<<"$output")" \
	    "$(printf '%s\n' 'id           g1' \
	    'damaged      its sidecar has a record that cannot be read' '' \
	    'TIME                      EVENT    TOKEN  ATTEMPT  CYCLE  ACTOR  REASON  CLASS  PREV  NOTE  WRITER' \
	    'YYYY-MM-DDTHH:MM:SS.mmmZ  enqueue  0      0        1      -      -       -      -     -     testhost:PID')"
	equals "$stderr" "$(damaged_msg spool-show g1)"
	run -100 --separate-stderr spool-show --json g1
	equals "$(jq -c '[.id, .damaged, .damage]' <<<"$output")" '["g1",true,"its sidecar has a record that cannot be read"]'
}
