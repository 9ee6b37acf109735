#!/usr/bin/env bats
# Tokens never go back (spool-layout.md, "Tokens"): one counter for the
# spool, whatever is lost (a sidecar, the audit logs, power), through a
# purge and a new cycle of the same ID, a restore from a copy taken
# earlier, and an upgrade from format 1.  And a purge leaves meta/ with
# only the jobs that exist.

load helpers

T=1796026336000

# claim_one ID: claim (the oldest due job is ID) and print its token.
claim_one() {
	local line
	line=$(at_ms "$T" spool-claim --owner w:1) || return 1
	[ "$(cut -f1 <<<"$line")" = "$1" ] || { echo "claimed $line" >&2; return 1; }
	cut -f2 <<<"$line"
}

# cycle ID: enqueue, claim and finish ok; print the token.
cycle() {
	local tok
	at_ms "$T" spool-enqueue --id "$1" <<<"payload of $1" >/dev/null
	tok=$(claim_one "$1") || return 1
	at_ms "$T" spool-finish "$1" "$tok" ok >/dev/null
	echo "$tok"
}

@test "tokens come from one counter: they rise across IDs, one flush a block" {
	equals "$(cat "$SPOOL_DIR/format")" 2
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1 last=0 boot=-"
	for id in a b c; do at_ms "$T" spool-enqueue --id $id <<<x >/dev/null; done
	run -0 at_ms "$T" spool-claim -n 3 --owner w:1
	equals "$(cut -f2 <<<"$output" | tr '\n' ' ')" "1 2 3 "
	boot=$(cat /proc/sys/kernel/random/boot_id)
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=3 boot=$boot"
	# A reboot (a new boot ID) trusts nothing but next: a new block.
	at_ms "$T" spool-finish a 1 retry --delay 0 >/dev/null
	run -0 env SPOOL_TEST_BOOT_ID=after-reboot SPOOL_TEST_NOW=$T spool-claim --owner w:1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'a\t1025')"
	equals "$(cat "$SPOOL_DIR/tokens")" "next=2049 last=1025 boot=after-reboot"
	fsck_clean
}

@test "a purge removes the sidecar; the same ID enqueued again gets higher tokens" {
	t1=$(cycle j1)
	run -0 --separate-stderr at_ms $((T + 1)) spool-purge done --older-than 0
	equals "$output" j1
	[ ! -e "$SPOOL_DIR/meta/j1" ]
	[ ! -e "$SPOOL_DIR/done/j1" ]
	equals "$(audit_events | tail -1)" "purge j1 $t1 1 1 - - - -"
	t2=$(cycle j1)
	[ "$t2" -gt "$t1" ]
	fsck_clean
}

@test "an emptied sidecar, repaired: the ID's tokens still rise" {
	t1=$(cycle j7)
	: >"$SPOOL_DIR/meta/j7"
	run -0 spool-fsck --repair
	run -0 spool-fsck
	equals "$output" ""
	t2=$(cycle j7)
	[ "$t2" -gt "$t1" ]
}

@test "audit logs rotated away and sidecars purged: tokens still rise" {
	for i in 1 2 3; do t=$(cycle j$i); done
	rm "$SPOOL_DIR"/audit/*.log
	at_ms $((T + 1)) spool-purge done --older-than 0 >/dev/null
	equals "$(ls "$SPOOL_DIR/meta")" ""
	t2=$(cycle j1)
	[ "$t2" -gt "$t" ]
}

@test "a restore from a copy taken earlier: --restored jumps past every token since" {
	at_ms "$T" spool-enqueue --id parked <<<x >/dev/null
	at_ms "$T" spool-claim --owner w:1 >/dev/null
	at_ms "$T" spool-finish --class invalid-input parked 1 permanent >/dev/null
	at_ms "$T" spool-enqueue --id held <<<x >/dev/null
	at_ms "$T" spool-claim --owner w:1 --lease 1h >/dev/null
	cp -a "$SPOOL_DIR" "$BATS_TEST_TMPDIR/backup"
	# Life goes on after the backup: tokens up to $last are handed out.
	for i in 1 2 3 4 5; do last=$(cycle after-$i); done
	equals "$last" 7
	rm -rf "$SPOOL_DIR"
	cp -a "$BATS_TEST_TMPDIR/backup" "$SPOOL_DIR"
	run -0 --separate-stderr at_ms $((T + 5)) spool-fsck --restored
	equals "$stderr" ""
	diff -u - <(sort <<<"$output") <<EOF
held: leased when the backup was taken: its outcome since is unknown (marked: reconcile before a redrive)
parked: parked when the backup was taken: its outcome since is unknown (marked: reconcile before a redrive)
tokens: restored from a backup: tokens start again at $((1025 + (1 << 48))) (fixed)
EOF
	fsck_clean
	equals "$(last_rec held ev se until)" "$(printf 'ev=restore\nse=1\nuntil=%s' $((T + 5)))"
	equals "$(last_rec parked ev se reason)" "$(printf 'ev=restore\nse=1\nreason=permanent')"
	# The held lease ended at the restore: it is taken over, above them all.
	run -0 at_ms $((T + 6)) spool-claim --owner w:2
	tok=$(cut -f2 <<<"$output")
	equals "$(cut -f1,3 <<<"$output")" "$(printf 'held\t2')"
	[ "$tok" -eq $((1025 + (1 << 48))) ]
	# The parked job's outcome since the backup is unknown: reconcile first.
	run -1 --separate-stderr spool-redrive --by ops --note INC-1 parked
	equals "$stderr" "spool-redrive: parked: its side effect may have happened: reconcile it, then redrive with --reconciled"
	# Without --restored the copy would hand out 3..7 again: the copy
	# still says next=1025 with no trusted last, so only a new block
	# protects it, and the next block is the same one.
	equals "$(cat "$BATS_TEST_TMPDIR/backup/tokens")" "next=1025 last=2 boot=$(cat /proc/sys/kernel/random/boot_id)"
}

@test "--restored is for a spool of format 2, and not with --repair" {
	run -100 --separate-stderr spool-fsck --restored --repair
	equals "$stderr" "usage: spool-fsck [-d DIR] [--repair | --restored] [--verify]"
	echo 1 >"$SPOOL_DIR/format"
	before=$(snapshot)
	run -100 --separate-stderr spool-fsck --restored
	equals "$stderr" "spool-fsck: --restored: a spool of format 1 counts tokens per job: run spool-init --upgrade first"
	equals "$(snapshot)" "$before"
}

@test "a lost or garbled tokens file: claims stop, spool-fsck --repair makes it again above all" {
	t1=$(cycle j1)
	at_ms "$T" spool-enqueue --id j2 <<<x >/dev/null
	rm "$SPOOL_DIR/tokens"
	run -111 --separate-stderr at_ms "$T" spool-claim
	equals "$stderr" "spool-claim: Structure needs cleaning"
	run -1 spool-fsck
	equals "$output" "tokens: the token counter is missing or damaged"
	# spool-init completes a spool, but never starts its counter again.
	spool-init
	[ ! -e "$SPOOL_DIR/tokens" ]
	run -0 spool-fsck --repair
	equals "$output" "tokens: the token counter is missing or damaged (made again above every token the spool names, as after a restore)"
	# from= at next: which older tokens were counted per ID is not known.
	equals "$(cat "$SPOOL_DIR/tokens")" "next=$((t1 + 1 + (1 << 48))) last=$((t1 + (1 << 48))) boot=- from=$((t1 + 1 + (1 << 48)))"
	echo garbage >"$SPOOL_DIR/tokens"
	run -0 spool-fsck --repair
	run -0 at_ms "$T" spool-claim --owner w:1
	[ "$(cut -f2 <<<"$output")" -gt $((1 << 48)) ]
	fsck_clean
}

@test "a token above the counter's next is found, and --repair raises next" {
	t1=$(cycle j1)
	printf 'next=1 last=0 boot=-\n' >"$SPOOL_DIR/tokens"
	run -1 spool-fsck
	equals "$output" "tokens: token $t1 is named, but the counter says every token is below 1"
	run -0 spool-fsck --repair
	equals "$output" "tokens: token $t1 is named, but the counter says every token is below 1 (raised)"
	fsck_clean
	t2=$(cycle j1)
	[ "$t2" -gt "$t1" ]
}

# lossy CMD...: run CMD, then lose what no sync of tokens covered, as a
# writeback that failed, or a file server, loses it with the host up (the
# boot ID stays).  strace sees whether tokens was synced after its last
# write; if not, tokens goes back to what the last sync left.
lossy() {
	local trace="$BATS_TEST_TMPDIR/trace" rc=0 last
	[ -e "$BATS_TEST_TMPDIR/tokens.synced" ] ||
		cp "$SPOOL_DIR/tokens" "$BATS_TEST_TMPDIR/tokens.synced"
	# LeakSanitizer cannot work under ptrace: leaks are not this test's.
	SPOOL_TEST_NO_URING=1 \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    strace -f -qq -y -o "$trace" \
	    -e trace=write,pwrite64,ftruncate,fsync,fdatasync "$@" || rc=$?
	last=$(grep -E '^[0-9]+ +(write|pwrite64|ftruncate|fsync|fdatasync)\([0-9]+</.*/tokens>' \
	    "$trace" | tail -1 | sed -E 's/^[0-9]+ +([a-z0-9]+)\(.*/\1/')
	case $last in
	fsync | fdatasync | '') cp "$SPOOL_DIR/tokens" "$BATS_TEST_TMPDIR/tokens.synced" ;;
	*) cp "$BATS_TEST_TMPDIR/tokens.synced" "$SPOOL_DIR/tokens" ;;
	esac
	return $rc
}

@test "lossy loses a write of tokens that no sync covered" {
	at_ms "$T" spool-enqueue --id a <<<x >/dev/null
	boot=$(cat /proc/sys/kernel/random/boot_id)
	printf 'next=1025 last=1 boot=%s\n' "$boot" >"$SPOOL_DIR/tokens"
	cp "$SPOOL_DIR/tokens" "$BATS_TEST_TMPDIR/tokens.synced"
	lossy sh -c 'printf "next=1025 last=7 boot=x\n" >"$SPOOL_DIR/tokens"'
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=1 boot=$boot"
	lossy sh -c 'printf "next=1025 last=7 boot=x\n" >"$SPOOL_DIR/tokens" && sync "$SPOOL_DIR/tokens"'
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=7 boot=x"
}

@test "a write of the counter lost with the host up: no token is handed out again" {
	at_ms $((T - 300)) spool-enqueue --id a <<<x >/dev/null
	at_ms $((T - 200)) spool-enqueue --id b <<<x >/dev/null
	at_ms $((T - 100)) spool-enqueue --id c <<<x >/dev/null
	boot=$(cat /proc/sys/kernel/random/boot_id)
	run -0 lossy env SPOOL_TEST_NOW=$T spool-claim --owner w:1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'a\t1')"
	run -0 lossy env SPOOL_TEST_NOW=$T spool-claim --owner w:1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'b\t2')"
	# The claim's one wait synced last: the loss took nothing back.
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=2 boot=$boot"
	run -0 lossy env SPOOL_TEST_NOW=$T spool-claim --owner w:1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'c\t3')"
	fsck_clean
}

@test "the claim's sync of tokens fails: no lease handed out, and no host trusts last" {
	at_ms $((T - 200)) spool-enqueue --id a <<<x >/dev/null
	at_ms $((T - 100)) spool-enqueue --id b <<<x >/dev/null
	equals "$(claim_one a)" 1
	run -111 --separate-stderr shimmed SPOOL_TEST_NOW=$T \
	    SHIM_ROOT="$SPOOL_DIR/tokens" SHIM_FAMILY=fsync SHIM_NTH=1 \
	    SHIM_ERRNO=EIO spool-claim --owner w:1
	equals "$output" ""
	equals "$stderr" "spool-claim: Input/output error"
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=1024 boot=-"
	# b's lease is durable, but no one was given it: it expires.
	equals "$(ls "$SPOOL_DIR/leased")" "$(printf 'a,1\nb,2')"
	at_ms "$T" spool-enqueue --id c <<<x >/dev/null
	equals "$(claim_one c)" 1025
	fsck_clean
}

@test "a lost last below a token the spool names: spool-fsck reports it, --repair distrusts it" {
	for id in a b; do at_ms "$T" spool-enqueue --id $id <<<x >/dev/null; done
	boot=$(cat /proc/sys/kernel/random/boot_id)
	at_ms "$T" spool-claim -n 2 --owner w:1 >/dev/null
	# As an older version left it: last=2 was never synced, and lost.
	printf 'next=1025 last=1 boot=%s\n' "$boot" >"$SPOOL_DIR/tokens"
	run -1 spool-fsck
	equals "$output" "tokens: the counter's last token, 1, is below token 2, which the spool names: a write of it was lost"
	run -0 spool-fsck --repair
	equals "$output" "tokens: the counter's last token, 1, is below token 2, which the spool names: a write of it was lost (no host trusts it now)"
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=1024 boot=-"
	fsck_clean
	at_ms "$T" spool-enqueue --id c <<<x >/dev/null
	run -0 at_ms "$T" spool-claim --owner w:1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'c\t1025')"
}

@test "two leases that share a token, and two claims in the audit log: spool-fsck reports both" {
	at_ms $((T - 200)) spool-enqueue --id a <<<x >/dev/null
	at_ms $((T - 100)) spool-enqueue --id b <<<x >/dev/null
	boot=$(cat /proc/sys/kernel/random/boot_id)
	at_ms "$T" spool-claim -n 2 --owner w:1 >/dev/null
	at_ms "$T" spool-enqueue --id c <<<x >/dev/null
	# As a lost write let an older version do: c gets b's token, 2.
	printf 'next=1025 last=1 boot=%s\n' "$boot" >"$SPOOL_DIR/tokens"
	run -0 at_ms $((T + 1)) spool-claim --owner w:2
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'c\t2')"
	equals "$(ls "$SPOOL_DIR/leased")" "$(printf 'a,1\nb,2\nc,2')"
	run -1 spool-fsck
	equals "$output" "leased: b and c hold token 2, handed out twice: spool-cancel all but one, then spool-redrive them
audit: token 2 was handed out twice: to b at 2026-11-30T08:12:16.000Z and to c at 2026-11-30T08:12:16.001Z; check what each holder did under it"
	# --repair cannot take a lease back; it trusts last no more.
	run -1 spool-fsck --repair
	equals "$output" "leased: b and c hold token 2, handed out twice: spool-cancel all but one, then spool-redrive them
audit: token 2 was handed out twice: to b at 2026-11-30T08:12:16.000Z and to c at 2026-11-30T08:12:16.001Z; check what each holder did under it"
	equals "$(cat "$SPOOL_DIR/tokens")" "next=1025 last=1024 boot=-"
	# The operator's way out: cancel one and redrive it.
	at_ms $((T + 2)) spool-cancel --by ops --note T-9 c >/dev/null
	at_ms $((T + 2)) spool-redrive --by ops --note T-9 --reconciled c >/dev/null
	run -0 at_ms $((T + 3)) spool-claim --owner w:3
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'c\t1025')"
	# The leases are put right; the history keeps its record of it.
	run -1 spool-fsck
	equals "$output" "audit: token 2 was handed out twice: to b at 2026-11-30T08:12:16.000Z and to c at 2026-11-30T08:12:16.001Z; check what each holder did under it"
}

@test "an upgraded spool: equal tokens of format 1 in the audit log are no fault" {
	rm -rf "$SPOOL_DIR"
	tar -C "${SPOOL_DIR%/*}" -xzf "$BATS_TEST_DIRNAME/fixtures/format1-spool.tar.gz"
	run -0 spool-init --upgrade
	grep -q ' from=' "$SPOOL_DIR/tokens"
	run -0 spool-fsck
	equals "$output" ""
}

@test "a purge killed before it synced meta/, and a sidecar a power cut kept" {
	cycle j1 >/dev/null
	run -137 env SPOOL_TEST_CRASH=purge-forgotten spool-purge done --older-than 0
	[ ! -e "$SPOOL_DIR/meta/j1" ]
	[ ! -e "$SPOOL_DIR/done/j1" ]
	equals "$(audit_events | tail -1 | cut -d' ' -f1,2)" "purge j1"
	fsck_clean
	# A sidecar that ends in its purge, as a power cut might bring back
	# (the purge was logged before its sidecar went).
	printf '%s\n' "t=$T ev=enqueue at=new:$T tok=0 att=0 cyc=1 max=5 dl=$((T + 1000)) ttl=1000 created=$T" \
	    "t=$T ev=purge at=absent tok=1 att=0 cyc=1 max=5 dl=$((T + 1000)) ttl=1000 created=$T" \
	    >"$SPOOL_DIR/meta/ghost"
	# Its lines, which the purge made durable before it removed the sidecar.
	printf '%s\n' "2026-11-30T08:12:16.000Z enqueue ghost 0 0 1 - - - - testhost:1" \
	    "2026-11-30T08:12:16.000Z purge ghost 1 0 1 - - - - testhost:1" \
	    >>"$SPOOL_DIR/audit/testhost.log"
	run -1 spool-fsck
	equals "$output" "ghost: purged, but its sidecar is still in meta/"
	run -0 spool-fsck --repair
	equals "$output" "ghost: purged, but its sidecar is still in meta/ (removed)"
	[ ! -e "$SPOOL_DIR/meta/ghost" ]
	fsck_clean
}

@test "a process waiting on a sidecar's lock that a purge removes opens the name again" {
	t1=$(cycle j1)
	exec 9<"$SPOOL_DIR/meta/j1"
	flock 9
	at_ms "$T" spool-enqueue --id j1 <<<"second cycle" >"$BATS_TEST_TMPDIR/out" 9<&- &
	pid=$!
	# Wait until the enqueue is blocked on the lock we hold.
	lock_waiter "$SPOOL_DIR/meta/j1"
	# As a purge would: the name goes while the lock is held.
	mv "$SPOOL_DIR/meta/j1" "$BATS_TEST_TMPDIR/old-sidecar"
	cp "$BATS_TEST_TMPDIR/old-sidecar" "$BATS_TEST_TMPDIR/old-copy"
	exec 9<&-
	wait "$pid"
	equals "$(cat "$BATS_TEST_TMPDIR/out")" j1
	# Nothing was appended to the file nobody will read again.
	cmp "$BATS_TEST_TMPDIR/old-sidecar" "$BATS_TEST_TMPDIR/old-copy"
	equals "$(wc -l <"$SPOOL_DIR/meta/j1")" 1
	equals "$(last_rec j1 ev cyc)" "$(printf 'ev=enqueue\ncyc=1')"
}

@test "a purge of 1,000 finished jobs leaves meta/ with only the jobs that exist" {
	mkdir "$BATS_TEST_TMPDIR/p"
	for i in $(seq 1 1000); do echo "$i" >"$BATS_TEST_TMPDIR/p/$i"; done
	(cd "$BATS_TEST_TMPDIR/p" && printf '%s\0' * | xargs -0 -n 250 env SPOOL_TEST_NOW=$T \
	    "$BATS_TEST_DIRNAME/bin/spool-enqueue") >/dev/null
	for k in 1 2 3 4; do
		at_ms "$T" spool-claim -n 250 --owner w:1 | cut -f1,2 |
		    sed 's/$/ ok/' | at_ms "$T" spool-finish - >/dev/null
	done
	for id in live-1 live-2; do at_ms "$T" spool-enqueue --id $id <<<x >/dev/null; done
	equals "$(ls "$SPOOL_DIR/meta" | wc -l)" 1002
	equals "$(ls "$SPOOL_DIR/done" | wc -l)" 1000
	run -0 --separate-stderr at_ms $((T + 1)) spool-purge done --older-than 0
	equals "${#lines[@]}" 1000
	equals "$(ls "$SPOOL_DIR/meta")" "$(printf 'live-1\nlive-2')"
	fsck_clean
}

# The fixture: a spool of format 1 made by the version before format 2
# (tests/fixtures/README.md): done-1 purged (its sidecar kept, as format 1
# does), dead-1 parked, busy-1 leased with token 6, purged-1 done, new-1
# queued.
old_spool() {
	rm -rf "$SPOOL_DIR"
	mkdir "$BATS_TEST_TMPDIR/old"
	tar -C "$BATS_TEST_TMPDIR/old" -xzf "$BATS_TEST_DIRNAME/fixtures/format1-spool.tar.gz"
	mv "$BATS_TEST_TMPDIR/old/spool" "$SPOOL_DIR"
}

@test "a spool of format 1 is worked as format 1: tokens per ID, sidecars kept" {
	old_spool
	export SPOOL_HOST=oldhost
	fsck_clean
	run -0 at_ms $((T + 3600100)) spool-claim -n 2 --owner w:3
	diff -u - <(cut -f1,2 <<<"$output" | sort) <<EOF
$(printf 'busy-1\t7')
$(printf 'new-1\t1')
EOF
	[ ! -e "$SPOOL_DIR/tokens" ]
	at_ms $((T + 3600100)) spool-finish new-1 1 ok >/dev/null
	at_ms $((T + 3600200)) spool-purge done --older-than 0 >/dev/null
	equals "$(last_rec new-1 ev)" "ev=purge"
	equals "$(cat "$SPOOL_DIR/format")" 1
	fsck_clean
}

@test "spool-init --upgrade: format 2, the counter above every token held, purged sidecars gone" {
	old_spool
	export SPOOL_HOST=oldhost
	run -0 --separate-stderr spool-init --upgrade
	equals "$output$stderr" ""
	equals "$(cat "$SPOOL_DIR/format")" 2
	equals "$(cat "$SPOOL_DIR/tokens")" "next=$((7 + (1 << 20))) last=$((6 + (1 << 20))) boot=- from=$((7 + (1 << 20)))"
	# done-1's sidecar, kept by format 1 after its purge, is gone.
	equals "$(ls "$SPOOL_DIR/meta")" "$(printf 'busy-1\ndead-1\nnew-1\npurged-1')"
	run -0 spool-init --upgrade	# again: nothing to do
	fsck_clean
	run -0 at_ms $((T + 3600100)) spool-claim -n 2 --owner w:3
	diff -u - <(cut -f1,2 <<<"$output" | sort) <<EOF
$(printf 'busy-1\t%s' $((7 + (1 << 20))))
$(printf 'new-1\t%s' $((8 + (1 << 20))))
EOF
	# A purge now removes sidecars, and the ID's next cycle is above.
	at_ms $((T + 3600100)) spool-finish new-1 $((8 + (1 << 20))) ok >/dev/null
	at_ms $((T + 3600200)) spool-purge done --older-than 0 >/dev/null
	equals "$(ls "$SPOOL_DIR/meta")" "$(printf 'busy-1\ndead-1')"
	fsck_clean
	run -100 --separate-stderr spool-init --upgrade --group root
	equals "$stderr" "usage: spool-init [-d DIR] [--group GROUP | --upgrade]"
}
