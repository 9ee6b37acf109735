#!/usr/bin/env bats
# The disk reserve: below the free space or the free inodes kept in config,
# enqueue is refused as a temporary failure, while claim, finish, redrive
# and drop go on, so that the spool's own jobs never stop the drain.  The
# spool holds its reserve in reserve/, so that the drain goes on when
# another program fills the file system to its last block and inode: on
# the tmpfs, and on an ext4 image of 4 KiB blocks.  The spool is on a
# tmpfs of 4 MB and 200 inodes, which only root can mount.  spool-init
# warns on a file system smaller than the reserve.

load helpers

setup() {
	trace_test_only
	if [ "$(id -u)" -ne 0 ]; then
		if [ "${CI:-}" = true ]; then
			echo "68-reserve.bats needs root in CI: it mounts a size-limited tmpfs" >&2
			return 1
		fi
		skip "not root: the reserve test mounts a tmpfs (in CI, with CI=true, this fails instead)"
	fi
	export PATH="$BATS_TEST_DIRNAME/bin:$PATH"
	export SPOOL_HOST=testhost
	unset SPOOL_TEST_CRASH SPOOL_TEST_NOW SPOOL_TEST_NOREPLACE
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir "$MNT"
	mount -t tmpfs -o size=4m,nr_inodes=200 tmpfs "$MNT" ||
	    { echo "cannot mount a tmpfs on $MNT" >&2; return 1; }
	export SPOOL_DIR=$MNT/spool
	spool-init
	printf 'reserve=1M\nreserve-inodes=50\n' >"$SPOOL_DIR/config"
}

teardown() {
	if [ -n "${EXT4:-}" ] && mountpoint -q "$EXT4"; then
		umount "$EXT4"
	fi
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
}

# fill_space: leave 512 KB free, half the reserve.
fill_space() {
	local avail
	avail=$(stat -f -c '%a * %S' "$MNT")
	head -c $(($avail - 512 * 1024)) /dev/zero >"$MNT/filler"
	[ $(($(stat -f -c '%a * %S' "$MNT"))) -lt $((1024 * 1024)) ]
}

# fill_inodes: leave 40 inodes free, fewer than the reserve of 50.
fill_inodes() {
	local k
	mkdir "$MNT/fill"
	for k in $(seq 1 $(($(stat -f -c %d "$MNT") - 40))); do
		: >"$MNT/fill/$k"
	done
	[ "$(stat -f -c %d "$MNT")" -lt 50 ]
}

# The refusal, with the figures: "512K free, reserve 1.0M", "39 inodes
# free, reserve 50".
reserve_re() {
	printf '%s' "^spool-enqueue: free space is below the spool's reserve: $1 \\(see reserve and reserve-inodes in spool\\(7\\)\\)\$"
}

# Jobs a and b parked, c and d queued.  (Jobs due in the same millisecond
# may be claimed in any order, so c and d come after the claim.)
jobs() {
	local id
	for id in a b; do
		spool-enqueue --id $id <<<"job $id" >/dev/null
	done
	spool-claim -n 2 --owner w1 | cut -f1,2 | sed 's/\t/ /; s/$/ permanent/' |
	    spool-finish - >/dev/null
	for id in c d; do
		spool-enqueue --id $id <<<"job $id" >/dev/null
	done
	diff -u - <(ids_in dead) <<EOT
a
b
EOT
}

@test "below the free space reserve: enqueue refused (111), the drain goes on" {
	jobs
	run -0 spool-enqueue --id e <<<"job e"
	fill_space
	before=$(snapshot)
	run -111 --separate-stderr spool-enqueue --id f <<<"job f"
	equals "$output" ""
	[[ $stderr =~ $(reserve_re '[0-9]+K free, reserve 1.0M') ]]
	equals "$(snapshot)" "$before"
	[ ! -e "$SPOOL_DIR/meta/f" ]
	run -0 spool-claim --owner w2 -n 3
	equals "$(cut -f1 <<<"$output" | LC_ALL=C sort | tr '\n' ' ')" "c d e "
	run -0 spool-finish - <<<"$(cut -f1,2 <<<"$output" | sed 's/\t/ /; s/$/ ok/')"
	run -0 spool-redrive --by ops --note INC-1 a
	run -0 spool-drop --by ops --note INC-1 b
	run -0 spool-claim --owner w2
	equals "$(cut -f1,3 <<<"$output")" "$(printf 'a\t1')"
	run -0 spool-finish a "$(lease_token a)" ok
	diff -u - <(ids_in done) <<EOT
a
b
c
d
e
EOT
	check_invariants
	rm "$MNT/filler"
	run -0 spool-enqueue --id f <<<"job f"
}

@test "below the inode reserve: enqueue refused (111), the drain goes on" {
	jobs
	fill_inodes
	before=$(snapshot)
	run -111 --separate-stderr spool-enqueue --id f <<<"job f"
	equals "$output" ""
	[[ $stderr =~ $(reserve_re '[0-9]+ inodes free, reserve 50') ]]
	equals "$(snapshot)" "$before"
	run -0 spool-claim --owner w2 -n 2
	run -0 spool-finish - <<<"$(cut -f1,2 <<<"$output" | sed 's/\t/ /; s/$/ ok/')"
	run -0 spool-redrive --by ops --note INC-1 a
	run -0 spool-drop --by ops --note INC-1 b
	diff -u - <(ids_in done) <<EOT
b
c
d
EOT
	equals "$(ids_in new)" a
	rm -r "$MNT/fill"
	run -0 spool-enqueue --id f <<<"job f"
}

@test "spool-init on a file system smaller than the reserve warns, with the figures" {
	run -0 --separate-stderr spool-init -d "$MNT/small"
	equals "$output" ""
	# The figures as they are after the init, 1024 to a K.
	free=$(awk -v n=$(($(stat -f -c '%a * %S' "$MNT"))) 'BEGIN {
	    u = 0; while (n >= 1024 && u < 6) { n /= 1024; u++ }
	    if (u == 0) printf "%d", n
	    else printf (n < 10 ? "%.1f%s" : "%.0f%s"), n, substr("KMGTPE", u, 1) }')
	inodes=$(stat -f -c %d "$MNT")
	equals "$stderr" "spool-init: warning: $MNT/small: $free free, reserve 16M; $inodes inodes free, reserve 1000: enqueues will be refused until it has more room; lower reserve and reserve-inodes in $MNT/small/config to use it as it is (see spool(7))"
	# A second init leaves the spool as it is, and says nothing.
	run -0 --separate-stderr spool-init -d "$MNT/small"
	equals "$output$stderr" ""
	# Lowered, the spool takes jobs.
	printf 'reserve=1M\nreserve-inodes=50\n' >"$MNT/small/config"
	run -0 spool-enqueue -d "$MNT/small" --id j1 <<<"job"
}

# fill_all DIR: another program takes every inode and every block of the
# file system DIR is on: its byte filler's file first, then one empty
# file an inode until none is left, then bytes until none is left.
fill_all() {
	local k=0
	: >"$1/filler"
	mkdir "$1/fill"
	while : 2>/dev/null >"$1/fill/$k"; do k=$((k + 1)); done
	head -c 1G /dev/zero 2>/dev/null >>"$1/filler" || true
	equals "$(stat -f -c '%a free blocks, %d free inodes' "$1")" \
	    "0 free blocks, 0 free inodes"
}

# The reserve's inode files and its bytes, on one line.
reserve_held() {
	printf '%s %s\n' "$(find "$SPOOL_DIR/reserve" -type f ! -name space |
	    wc -l)" "$(stat -c %s "$SPOOL_DIR/reserve/space")"
}

# drain_when_full DIR: with the file system full, every transition but
# enqueue goes on, by the reserve; enqueue is refused with the figures.
# Then, with room again, the next enqueue makes the reserve whole.
drain_when_full() {
	local id t
	for id in j1 j2 j3 j4 j5 j6 p; do
		spool-enqueue --id $id <<<"job $id" >/dev/null
	done
	equals "$(reserve_held)" "16 1048576"
	spool-claim --owner w1 -n 7 >/dev/null
	spool-finish p "$(lease_token p)" permanent >/dev/null
	spool-finish j6 "$(lease_token j6)" release >/dev/null
	fill_all "$1"
	before=$(snapshot)
	run -111 --separate-stderr spool-enqueue --id e <<<"job e"
	equals "$output" ""
	equals "$stderr" "spool-enqueue: free space is below the spool's reserve: 0 free, reserve 1.0M; 0 inodes free, reserve 50 (see reserve and reserve-inodes in spool(7))"
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr spool-pause --by ops --note T-1
	equals "$output$stderr" ""
	run -0 --separate-stderr spool-resume --by ops --note T-1
	equals "$output$stderr" ""
	t=$(lease_token j1)
	run -0 --separate-stderr spool-renew j1 "$t"
	equals "$output$stderr" ""
	run -0 --separate-stderr spool-finish j1 "$t" ok
	equals "$output$stderr" j1
	# A retry a day away makes new buckets in new/: inodes.
	run -0 --separate-stderr spool-finish --class transient --delay 1d \
	    j2 "$(lease_token j2)" retry
	equals "$output$stderr" j2
	run -0 --separate-stderr spool-finish j3 "$(lease_token j3)" release
	equals "$output$stderr" j3
	run -0 --separate-stderr spool-finish --class invalid-input j4 \
	    "$(lease_token j4)" permanent
	equals "$output$stderr" j4
	run -0 --separate-stderr spool-cancel --by ops --note T-2 j5
	equals "$output$stderr" "j5"
	run -0 --separate-stderr spool-redrive --by ops --note T-3 j4
	equals "$output$stderr" "j4"
	run -0 --separate-stderr spool-drop --by ops --note T-4 p
	equals "$output$stderr" "p"
	run -0 --separate-stderr spool-claim --owner w2 -n 5
	equals "$(cut -f1,3 <<<"$output" | LC_ALL=C sort)" "$(printf 'j3\t1\nj4\t1\nj6\t1')"
	equals "$stderr" ""
	equals "$(ids_in new)" j2
	equals "$(ids_in leased | tr '\n' ' ')" "j3 j4 j6 "
	equals "$(ids_in done | tr '\n' ' ')" "j1 p "
	equals "$(ids_in dead)" j5
	fsck_clean
	# It drew on the reserve: fewer inodes and bytes held.
	read -r inodes bytes <<<"$(reserve_held)"
	[ "$inodes" -lt 16 ]
	[ "$bytes" -lt 1048576 ]
	# spool-stat says so; each give is a multiple of 64K.
	run -0 spool-stat
	equals "$(grep '^reserve' <<<"$output")" "$(printf '%-31s %s' reserve \
	    "$((bytes / 1024))K of 1.0M held, $inodes of 16 inodes: the disk was full, or is small; an enqueue with room makes it whole")"
	rm -r "$1/fill" "$1/filler"
	run -0 spool-enqueue --id e <<<"job e"
	equals "$(reserve_held)" "16 1048576"
	run -0 spool-stat
	equals "$(grep -c '^reserve' <<<"$output")" 0
	fsck_clean
}

@test "a tmpfs filled to its last block and inode: the drain goes on, enqueue is refused" {
	drain_when_full "$MNT"
}

@test "an ext4 image of 4 KiB blocks filled to its last block and inode: the same" {
	EXT4=$BATS_TEST_TMPDIR/ext4
	mkdir "$EXT4"
	truncate -s 16M "$BATS_TEST_TMPDIR/ext4.img"
	mkfs.ext4 -q -b 4096 -m 0 -N 256 "$BATS_TEST_TMPDIR/ext4.img"
	mount -o loop "$BATS_TEST_TMPDIR/ext4.img" "$EXT4"
	export SPOOL_DIR=$EXT4/spool
	spool-init
	printf 'reserve=1M\nreserve-inodes=50\n' >"$SPOOL_DIR/config"
	drain_when_full "$EXT4"
}

@test "without its reserve, a full file system stops the drain: the reserve is what carries it" {
	for id in j1 j2; do
		spool-enqueue --id $id <<<"job $id" >/dev/null
	done
	spool-claim --owner w1 -n 2 >/dev/null
	rm -r "$SPOOL_DIR/reserve"
	fill_all "$MNT"
	run -111 --separate-stderr spool-finish --class transient --delay 1d \
	    j2 "$(lease_token j2)" retry
	equals "$output" ""
	equals "$stderr" "spool-finish: j2: No space left on device"
	equals "$(ids_in leased | tr '\n' ' ')" "j1 j2 "
	run -111 --separate-stderr spool-pause --by ops --note T-1
	equals "$stderr" "spool-pause: No space left on device"
	rm -r "$MNT/fill" "$MNT/filler"
	run -0 spool-finish --class transient --delay 1d j2 "$(lease_token j2)" retry
	spool-fsck --repair >/dev/null
	fsck_clean
}

@test "the reserve holds at most 1M of its bytes, and every inode file again" {
	printf 'reserve=16M\nreserve-inodes=50\n' >"$SPOOL_DIR/config"
	# 4 MB: below the reserve, so refused; the reserve is held all the same.
	run -111 spool-enqueue --id a <<<"job a"
	equals "$(reserve_held)" "16 1048576"
	# A give takes the last inode file first; the next enqueue sees it.
	rm "$SPOOL_DIR/reserve/15"
	run -111 spool-enqueue --id a <<<"job a"
	equals "$(reserve_held)" "16 1048576"
	# Lowered to nothing, the reserve lets its bytes go.
	printf 'reserve=0\nreserve-inodes=0\n' >"$SPOOL_DIR/config"
	run -0 spool-enqueue --id a <<<"job a"
	equals "$(stat -c %s "$SPOOL_DIR/reserve/space")" 0
}
