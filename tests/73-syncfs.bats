#!/usr/bin/env bats
# config syncfs=yes (spool(7), FILES; spool-layout.md, "One syncfs for a
# large wait"): a wait of 64 syncs or more is one syncfs(2) of the spool's
# file system, a smaller one is as without the key, a failed syncfs fails
# every sync of its wait, and a value other than yes or no is refused.
# The syncs are read with strace, the waits made by threads
# (SPOOL_TEST_NO_URING=1), as strace sees none that io_uring makes.

load helpers

setup_file() {
	make -s -C "$BATS_TEST_DIRNAME/.." tests/shim/faultshim.so >&2
}

# N payload files p1..pN in the test's directory.
payloads() {
	local i
	for i in $(seq "$1"); do
		echo "payload $i" >"$BATS_TEST_TMPDIR/p$i"
	done
}

# The syncs a command makes on the spool, one line each kind and path,
# counted: IDs, the payloads' temporary names and the buckets made alike
# (TOP, MID, LEAF).  The command's status and output go to
# $BATS_TEST_TMPDIR/st, out and err.
syncs() {
	local t=$BATS_TEST_TMPDIR/trace
	SPOOL_TEST_NO_URING=1 ASAN_OPTIONS=detect_leaks=0 strace -f -qq -yy \
	    -e trace=fsync,fdatasync,syncfs -o "$t" "$@" \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" </dev/null
	echo $? >"$BATS_TEST_TMPDIR/st"
	sed -n 's/^[0-9]* *\(fsync\|fdatasync\|syncfs\)([0-9]*<\([^>]*\)>.*/\1 \2/p' \
	    "$t" | sed "s|$SPOOL_DIR|S|; s|S/meta/.*|S/meta/ID|;
	    s|S/tmp/.*,.*|S/tmp/ID|; s|S/new/[0-9a-f]*/[0-9a-f]*/[0-9a-f]*$|S/new/LEAF|;
	    s|S/new/[0-9a-f]*/[0-9a-f]*$|S/new/MID|; s|S/new/[0-9a-f][0-9a-f]*$|S/new/TOP|" |
	    LC_ALL=C sort | uniq -c | sed 's/^ *//'
}

@test "syncfs=yes: a batch enqueue of 256 is one syncfs, then the log and the bucket path" {
	export SPOOL_TEST_NOW=1700000000000
	payloads 256
	spool-enqueue --id j0 </dev/null >/dev/null
	echo syncfs=yes >>"$SPOOL_DIR/config"
	out=$(syncs spool-enqueue "$BATS_TEST_TMPDIR"/p*)
	equals "$out" "1 fdatasync S/audit/testhost.log
1 fsync S/new
1 fsync S/new/LEAF
1 fsync S/new/MID
1 fsync S/new/TOP
1 syncfs S"
	equals "$(cat "$BATS_TEST_TMPDIR/st")" 0
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	equals "$(grep -cE '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$' \
	    "$BATS_TEST_TMPDIR/out")" 256
	equals "$(wc -l <"$BATS_TEST_TMPDIR/out")" 256
	equals "$(ids_in new | wc -l)" 257
	fsck_clean
	# The same batch without the key: a sync for each file.
	sed -i '/^syncfs=/d' "$SPOOL_DIR/config"
	out=$(syncs spool-enqueue "$BATS_TEST_TMPDIR"/p*)
	equals "$out" "1 fdatasync S/audit/testhost.log
256 fdatasync S/meta/ID
256 fdatasync S/tmp/ID
1 fsync S/meta
1 fsync S/new
1 fsync S/new/LEAF
1 fsync S/new/MID
1 fsync S/new/TOP
1 fsync S/tmp"
	equals "$(cat "$BATS_TEST_TMPDIR/st")" 0
	equals "$(ids_in new | wc -l)" 513
	fsck_clean
}

@test "syncfs=yes: a wait of fewer than 64 syncs is as without the key" {
	local on off
	export SPOOL_TEST_NOW=1700000000000
	payloads 31
	spool-enqueue --id j0 </dev/null >/dev/null
	echo syncfs=yes >>"$SPOOL_DIR/config"
	# 30 jobs: 30 payloads, 30 records, tmp/ and meta/: 62 in a wait.
	on=$(syncs spool-enqueue "$BATS_TEST_TMPDIR"/p{1..30})
	equals "$(cat "$BATS_TEST_TMPDIR/st")" 0
	equals "$on" "1 fdatasync S/audit/testhost.log
30 fdatasync S/meta/ID
30 fdatasync S/tmp/ID
1 fsync S/meta
1 fsync S/new
1 fsync S/new/LEAF
1 fsync S/new/MID
1 fsync S/new/TOP
1 fsync S/tmp"
	sed -i 's/^syncfs=yes$/syncfs=no/' "$SPOOL_DIR/config"
	off=$(syncs spool-enqueue "$BATS_TEST_TMPDIR"/p{1..30})
	equals "$off" "$on"
	# 31 jobs: 64 in a wait, the first that is one syncfs.
	sed -i 's/^syncfs=no$/syncfs=yes/' "$SPOOL_DIR/config"
	on=$(syncs spool-enqueue "$BATS_TEST_TMPDIR"/p{1..31})
	equals "$on" "1 fdatasync S/audit/testhost.log
1 fsync S/new
1 fsync S/new/LEAF
1 fsync S/new/MID
1 fsync S/new/TOP
1 syncfs S"
	equals "$(ids_in new | wc -l)" 92
	fsck_clean
}

@test "syncfs=yes: a claim of 100 is one syncfs for its first 64, syncs for the rest" {
	export SPOOL_TEST_NOW=1700000000000
	payloads 100
	spool-enqueue "$BATS_TEST_TMPDIR"/p* >/dev/null
	echo syncfs=yes >>"$SPOOL_DIR/config"
	out=$(syncs spool-claim -n 100)
	equals "$(cat "$BATS_TEST_TMPDIR/st")" 0
	equals "$(wc -l <"$BATS_TEST_TMPDIR/out")" 100
	# The block of tokens reserved; 64 records, the log and leased/ in
	# one syncfs; then 36 records, tokens, the log and leased/
	# (spool-layout.md, "fsyncs per transition").
	equals "$out" "1 fdatasync S/audit/testhost.log
36 fdatasync S/meta/ID
2 fdatasync S/tokens
1 fsync S/leased
1 syncfs S"
	equals "$(ids_in leased | wc -l)" 100
	fsck_clean
}

@test "syncfs=yes: a failed syncfs fails every job of its wait, 111" {
	local shim=$BATS_TEST_DIRNAME/shim/faultshim.so f
	export SPOOL_TEST_NOW=1700000000000
	payloads 256
	spool-enqueue --id j0 </dev/null >/dev/null
	echo syncfs=yes >>"$SPOOL_DIR/config"
	run -111 --separate-stderr env SPOOL_TEST_NO_URING=1 \
	    ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
	    SHIM_ROOT="$SPOOL_DIR" SHIM_FAMILY=fsync SHIM_NTH=1 SHIM_ERRNO=EIO \
	    SHIM_COUNT="$BATS_TEST_TMPDIR/count" LD_PRELOAD="$shim" \
	    spool-enqueue "$BATS_TEST_TMPDIR"/p*
	equals "$output" ""
	grep -qx "fired fsync 1 EIO syncfs $(realpath "$SPOOL_DIR")" \
	    "$BATS_TEST_TMPDIR/count"
	grep -qx 'fsync 1' "$BATS_TEST_TMPDIR/count"
	equals "${#stderr_lines[@]}" 256
	for f in "$BATS_TEST_TMPDIR"/p*; do
		printf 'spool-enqueue: %s: Input/output error\n' "$f"
	done | LC_ALL=C sort >"$BATS_TEST_TMPDIR/want"
	equals "$(printf '%s\n' "$stderr" | LC_ALL=C sort)" \
	    "$(cat "$BATS_TEST_TMPDIR/want")"
	# Nothing was published; the records left are void (spool-layout.md,
	# "Crashes"), which spool-fsck reports and --repair removes.
	equals "$(ids_in new)" j0
	run -1 spool-fsck
	equals "${#lines[@]}" 256
	equals "$(printf '%s\n' "${lines[@]}" | grep -cv ': its last transition was cut short before its move$')" 0
	spool-fsck --repair >/dev/null
	fsck_clean
	equals "$(ids_in new)" j0
	# A claim whose one wait fails fails whole, in one line.
	spool-enqueue "$BATS_TEST_TMPDIR"/p{1..99} >/dev/null
	run -111 --separate-stderr env SPOOL_TEST_NO_URING=1 \
	    ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
	    SHIM_ROOT="$SPOOL_DIR" SHIM_FAMILY=fsync SHIM_NTH=2 SHIM_ERRNO=EIO \
	    SHIM_COUNT="$BATS_TEST_TMPDIR/count2" LD_PRELOAD="$shim" \
	    spool-claim -n 100
	equals "$output" ""
	equals "$stderr" "spool-claim: Input/output error"
	grep -qx "fired fsync 2 EIO syncfs $(realpath "$SPOOL_DIR")" \
	    "$BATS_TEST_TMPDIR/count2"
	fsck_clean
}

@test "syncfs: a value other than yes or no is refused, 100" {
	local v
	for v in maybe 1 1s YES ''; do
		sed -i '/^syncfs=/d' "$SPOOL_DIR/config"
		echo "syncfs=$v" >>"$SPOOL_DIR/config"
		run -100 --separate-stderr spool-enqueue --id j1 </dev/null
		equals "$output" ""
		equals "$stderr" "spool-enqueue: $SPOOL_DIR/config:12: syncfs=$v: not yes or no (see spool(7), FILES)"
		[ ! -e "$SPOOL_DIR/meta/j1" ]
	done
	for v in yes no; do
		sed -i '/^syncfs=/d' "$SPOOL_DIR/config"
		echo "syncfs=$v" >>"$SPOOL_DIR/config"
		run -0 spool-enqueue --id "j$v" </dev/null
		equals "$output" "j$v"
	done
}

@test "syncfs=yes where a syncfs may not reach the disk: refused, 100, the spool untouched" {
	local msg="config syncfs=yes needs the whole spool on one local disk file system, one host and Linux 5.17 or later (see spool-layout.md, One syncfs for a large wait)"
	# Several hosts: a client's syncfs need not reach the server's disk.
	printf 'multi-host=yes\nskew=1s\nsyncfs=yes\n' >>"$SPOOL_DIR/config"
	snapshot >"$BATS_TEST_TMPDIR/before"
	run -100 --separate-stderr spool-enqueue --id j1 </dev/null
	equals "$output" ""
	equals "$stderr" "spool-enqueue: $SPOOL_DIR: $msg"
	diff -u "$BATS_TEST_TMPDIR/before" <(snapshot)
	# A file system that is no local disk's (tmpfs).
	equals "$(stat -f -c %T /dev/shm)" tmpfs
	local shm
	shm=$(mktemp -d /dev/shm/spool-test.XXXXXX)
	spool-init -d "$shm/s"
	echo syncfs=yes >>"$shm/s/config"
	run -100 --separate-stderr spool-claim -d "$shm/s"
	equals "$stderr" "spool-claim: $shm/s: $msg"
	run -100 --separate-stderr spool-fsck -d "$shm/s"
	equals "$stderr" "spool-fsck: $shm/s: $msg"
	equals "$(find "$shm/s/meta" "$shm/s/audit" -mindepth 1)" ""
	rm -rf "$shm"
}
