#!/usr/bin/env bats
# Durability: a killed process leaves the page cache intact, so no kill test
# catches a missing fsync.  Instead, record each command's system calls with
# strace and check their order (tests/durability.awk): data fdatasync'd
# before its name is published, sidecar record before the move (or, out of
# new/ or leased/, before the end, with the move's other syncs), directories
# fsync'd after the last move into them, audit line fdatasync'd last.

load helpers

# strace sees no sync that io_uring makes: threads make them here.
export SPOOL_TEST_NO_URING=1

# traced CMD...: run CMD under strace; fail on any breach of the order, or
# if the command moved nothing (a check of nothing proves nothing).
traced() {
	local trace="$BATS_TEST_TMPDIR/trace" out rc=0
	# LeakSanitizer cannot run under ptrace; leaks are checked elsewhere.
	ASAN_OPTIONS=detect_leaks=0 strace -f -y -o "$trace" \
	    -e trace=write,pwrite64,fdatasync,fsync,renameat2,renameat,linkat,unlinkat,mkdirat \
	    "$@" >"$BATS_TEST_TMPDIR/stdout" || rc=$?
	[ "$rc" -eq 0 ] || { echo "$* exited $rc" >&2; return 1; }
	out=$(awk -f "$BATS_TEST_DIRNAME/durability.awk" "$trace")
	[ "$(tail -1 <<<"$out")" != "checked 0 moves" ] || { echo "$*: no move" >&2; return 1; }
	[ "$(wc -l <<<"$out")" -eq 1 ] || { echo "$*:" >&2; echo "$out" >&2; return 1; }
}

@test "the checker itself catches a missing directory fsync and a late data sync" {
	cat >"$BATS_TEST_TMPDIR/bad" <<'EOF'
write(5</s/tmp/j1,9.1>, "x", 1) = 1
write(6</s/meta/j1>, "t=1 ev=enqueue", 14) = 14
fdatasync(6</s/meta/j1>) = 0
renameat2(4</s/tmp>, "j1,9.1", 7</s/new/a/b/c>, "j1,1", RENAME_NOREPLACE) = 0
fdatasync(5</s/tmp/j1,9.1>) = 0
write(8</s/audit/h.log>, "line\n", 5) = 5
fdatasync(8</s/audit/h.log>) = 0
EOF
	run -0 awk -f "$BATS_TEST_DIRNAME/durability.awk" "$BATS_TEST_TMPDIR/bad"
	diff -u - <(sort <<<"$output") <<'EOF'
/s/new/a/b/c: moved into but not fsync'd after
checked 1 moves
line 4: /s/tmp/j1,9.1 moved before its data was fdatasync'd
EOF
}

@test "the checker catches a move out of leased/ whose record is never synced" {
	cat >"$BATS_TEST_TMPDIR/bad" <<'EOF'
write(6</s/meta/j1>, "t=2 ev=ok", 9) = 9
renameat2(4</s/leased>, "j1,1", 7</s/done>, "j1", RENAME_NOREPLACE) = 0
write(8</s/audit/h.log>, "line\n", 5) = 5
fsync(7</s/done>) = 0
fdatasync(8</s/audit/h.log>) = 0
EOF
	run -0 awk -f "$BATS_TEST_DIRNAME/durability.awk" "$BATS_TEST_TMPDIR/bad"
	diff -u - <(sort <<<"$output") <<'EOF'
checked 1 moves
j1: its sidecar record not fdatasync'd after its last write
EOF
}

@test "enqueue, one job and a batch, first cycle and a new cycle" {
	printf a >"$BATS_TEST_TMPDIR/a"
	printf b >"$BATS_TEST_TMPDIR/b"
	traced spool-enqueue --id j1 "$BATS_TEST_TMPDIR/a"
	traced spool-enqueue "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	traced spool-enqueue --delay 1h --id later "$BATS_TEST_TMPDIR/b"
	spool-claim -n 3 >/dev/null
	spool-finish j1 "$(lease_token j1)" ok >/dev/null
	traced spool-enqueue --id j1 "$BATS_TEST_TMPDIR/b"
}

@test "claim, reclaim, and a park met by a claim" {
	now=$(date +%s%3N)
	# j1 a second older, so that the first claim takes it, not short.
	SPOOL_TEST_NOW=$((now - 1000)) spool-enqueue --id j1 </dev/null >/dev/null
	spool-enqueue --id short --deadline 1s </dev/null >/dev/null
	traced spool-claim --lease 1s
	SPOOL_TEST_NOW=$((now + 5000)) traced spool-claim -n 2
	grep -q ' ev=park .*reason=deadline' "$SPOOL_DIR/meta/short"
	# The park took no token: the reclaim of j1 takes the next, 2.
	diff -u - <(last_rec j1 ev tok prev cls) <<'EOF'
ev=claim
tok=2
prev=1
cls=lease-expired
EOF
}

@test "finish with every outcome, one at a time and as a batch" {
	local i
	for i in 1 2 3 4 5 6; do spool-enqueue --id j$i </dev/null >/dev/null; done
	spool-claim -n 6 >/dev/null
	traced spool-finish j1 "$(lease_token j1)" ok
	traced spool-finish --delay 0 j2 "$(lease_token j2)" retry
	traced spool-finish j3 "$(lease_token j3)" permanent
	traced spool-finish j4 "$(lease_token j4)" release
	traced spool-finish - <<<"j5 $(lease_token j5) ok
j6 $(lease_token j6) permanent"
}

@test "renew, and redrive of several jobs" {
	spool-enqueue --id j1 </dev/null >/dev/null
	spool-enqueue --id j2 </dev/null >/dev/null
	spool-claim -n 2 >/dev/null
	spool-finish j1 "$(lease_token j1)" permanent >/dev/null
	spool-finish j2 "$(lease_token j2)" permanent >/dev/null
	traced spool-redrive --by ops --note INC-1 j1 j2
	spool-claim >/dev/null
	id=$(ls "$SPOOL_DIR/leased" | cut -d, -f1)
	# renew moves nothing: check its record and audit line by hand, both
	# written, then both synced side by side (threads: -f)
	ASAN_OPTIONS=detect_leaks=0 strace -f -y -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=write,pwrite64,fdatasync \
	    spool-renew "$id" "$(lease_token "$id")"
	run -0 sed -n 's/^[0-9]* *\([a-z0-9]*\)([0-9]*<[^>]*\/\([a-z]*\)\/[^>]*>.*/\1 \2/p' \
	    "$BATS_TEST_TMPDIR/trace"
	diff -u - <(head -2 <<<"$output"; tail -n +3 <<<"$output" | sort) <<'EOF'
pwrite64 meta
write audit
fdatasync audit
fdatasync meta
EOF
}

@test "the fallback move (no RENAME_NOREPLACE) keeps the same order" {
	export SPOOL_TEST_NOREPLACE=off
	traced spool-enqueue --id j1 </dev/null
	traced spool-claim
	traced spool-finish j1 1 permanent
	traced spool-redrive --by ops --note INC-1 j1
}
