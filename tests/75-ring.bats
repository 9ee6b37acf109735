#!/usr/bin/env bats
# The syncs of one wait through io_uring (spool-layout.md, "Transitions"),
# which the fault shim and strace cannot see: the ring's own hooks fail
# its k-th sync (SPOOL_TEST_RING_FAIL) and log each (SPOOL_TEST_RING_LOG),
# against spool(7), "Success is durable", and EXIT STATUS; and where the
# kernel refuses io_uring, threads make the same syncs.

load helpers

# The kernel must let this test make a ring: else the ring path is not
# what is tested here (and the commands use threads, tested elsewhere).
ring_allowed() {
	local v
	v=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null) || v=0
	[ "$v" = 0 ] || { echo "kernel.io_uring_disabled=$v: no ring to test" >&2; return 1; }
}

# state NAME: j1 where the command under test finds it.
state() {
	local T=1796026336000
	printf 'payload one\n' >"$BATS_TEST_TMPDIR/p1"
	case $1 in
	none) ;;
	queued) SPOOL_TEST_NOW=$T spool-enqueue --id j1 "$BATS_TEST_TMPDIR/p1" >/dev/null ;;
	leased) state queued && SPOOL_TEST_NOW=$T spool-claim --lease 1h >/dev/null ;;
	parked) state leased && SPOOL_TEST_NOW=$T spool-finish j1 1 permanent >/dev/null ;;
	esac
}

# ring_case STATE FROM TO CMD...: CMD from STATE once plainly, counting the
# syncs its ring makes; then from STATE again, with each of them failed in
# turn: exit 111, one line on stderr naming the command, and after
# spool-fsck --repair a clean spool with j1 once, where it was or where
# it was going, its payload whole.  Prints how many syncs were failed.
ring_case() {
	local st=$1 from=$2 to=$3 k n rc where
	shift 3
	local cmd=$1
	cp -a "$SPOOL_DIR" "$BATS_TEST_TMPDIR/empty"
	state "$st"
	cp -a "$SPOOL_DIR" "$BATS_TEST_TMPDIR/start"
	rm -f "$BATS_TEST_TMPDIR/log"
	SPOOL_TEST_NOW=1796026337000 SPOOL_TEST_RING_LOG="$BATS_TEST_TMPDIR/log" \
	    "$@" </dev/null >/dev/null
	n=$(grep -c '^sync 0$' "$BATS_TEST_TMPDIR/log")
	[ "$n" -ge 2 ] || { echo "$cmd: $n syncs through the ring" >&2; return 1; }
	for ((k = 1; k <= n; k++)); do
		rm -rf "$SPOOL_DIR" "$BATS_TEST_TMPDIR/log"
		cp -a "$BATS_TEST_TMPDIR/start" "$SPOOL_DIR"
		rc=0
		SPOOL_TEST_NOW=1796026337000 SPOOL_TEST_RING_FAIL=$k \
		    SPOOL_TEST_RING_LOG="$BATS_TEST_TMPDIR/log" \
		    "$@" </dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/err" || rc=$?
		[ "$rc" -eq 111 ] || { echo "$cmd, ring sync $k failed: exit $rc" >&2; return 1; }
		grep -qx 'sync -5' "$BATS_TEST_TMPDIR/log" ||
		    { echo "$cmd, ring sync $k: the injection did not fire" >&2; return 1; }
		[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -eq 1 ] && grep -q "^$cmd: " "$BATS_TEST_TMPDIR/err" ||
		    { echo "$cmd, ring sync $k: stderr: $(cat "$BATS_TEST_TMPDIR/err")" >&2; return 1; }
		spool-fsck --repair >/dev/null
		fsck_clean
		check_invariants
		where=$(state_of j1 2>/dev/null) || where=absent
		[ "$where" = "$from" ] || [ "$where" = "$to" ] ||
		    { echo "$cmd, ring sync $k: j1 is $where, not $from or $to" >&2; return 1; }
		[ "$where" = absent ] || cmp -s "$(path_of j1)" "$BATS_TEST_TMPDIR/p1" ||
		    { echo "$cmd, ring sync $k: j1's payload changed" >&2; return 1; }
	done
	rm -rf "$SPOOL_DIR" "$BATS_TEST_TMPDIR/start"
	mv "$BATS_TEST_TMPDIR/empty" "$SPOOL_DIR"
	echo "$cmd $n"
}

@test "each sync a wait makes through the ring, failed in turn: exit 111, nothing lost" {
	ring_allowed
	out=$(ring_case none absent new spool-enqueue --id j1 "$BATS_TEST_TMPDIR/p1")
	equals "$out" "spool-enqueue 9"
	out=$(ring_case queued new leased spool-claim --lease 1h)
	equals "$out" "spool-claim 3"
	out=$(ring_case leased leased done spool-finish j1 1 ok)
	equals "$out" "spool-finish 3"
	out=$(ring_case leased leased new spool-finish j1 1 retry --delay 0)
	equals "$out" "spool-finish 6"
	out=$(ring_case queued new dead spool-cancel --by ops --note T-1 j1)
	equals "$out" "spool-cancel 3"
	out=$(ring_case parked dead new spool-redrive --by ops --note T-1 j1)
	equals "$out" "spool-redrive 5"
	out=$(ring_case leased leased leased spool-renew j1 1)
	equals "$out" "spool-renew 2"
}

@test "where the kernel refuses io_uring, threads make the same syncs" {
	[ "$(id -u)" = 0 ] || skip "needs root to set kernel.io_uring_disabled"
	ring_allowed
	printf 'payload one\n' >"$BATS_TEST_TMPDIR/p1"
	# 1: a process without CAP_SYS_ADMIN may not make a ring.  The
	# command runs without it; the files running beside this one keep
	# their rings, which 2 would refuse to every process.
	sysctl -q kernel.io_uring_disabled=1
	run setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin \
	    env ASAN_OPTIONS=detect_leaks=0 SPOOL_TEST_RING_LOG="$BATS_TEST_TMPDIR/log" \
	    strace -f -qq \
	    -e trace=clone3,io_uring_setup -o "$BATS_TEST_TMPDIR/trace" \
	    spool-enqueue --id j1 "$BATS_TEST_TMPDIR/p1"
	sysctl -q kernel.io_uring_disabled=0
	[ "$status" -eq 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/log" ]
	grep -q 'io_uring_setup(.*= -1 EPERM' "$BATS_TEST_TMPDIR/trace"
	grep -q '^[0-9]* *clone3(' "$BATS_TEST_TMPDIR/trace"
	equals "$(state_of j1)" new
	fsck_clean
}

@test "a command's one or two waits start threads; a handle makes its ring at its third" {
	ring_allowed
	printf 'payload one\n' >"$BATS_TEST_TMPDIR/p1"
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq \
	    -e trace=clone3,io_uring_setup -o "$BATS_TEST_TMPDIR/trace" \
	    spool-enqueue --id j1 "$BATS_TEST_TMPDIR/p1" >/dev/null
	[ "$(grep -c 'io_uring_setup(' "$BATS_TEST_TMPDIR/trace")" -eq 0 ]
	grep -q '^[0-9]* *clone3(' "$BATS_TEST_TMPDIR/trace"
	equals "$(state_of j1)" new
	# 300 files: two calls of the library (256 files at most each), each
	# waiting twice; the ring from the third wait on.
	mkdir "$BATS_TEST_TMPDIR/many"
	for i in $(seq 300); do echo "$i" >"$BATS_TEST_TMPDIR/many/p$i"; done
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq \
	    -e trace=io_uring_setup -o "$BATS_TEST_TMPDIR/trace" \
	    spool-enqueue "$BATS_TEST_TMPDIR"/many/* >"$BATS_TEST_TMPDIR/ids"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/ids")" -eq 300 ]
	[ "$(grep -c 'io_uring_setup(.*) = [0-9]' "$BATS_TEST_TMPDIR/trace")" -eq 1 ]
	fsck_clean
}
