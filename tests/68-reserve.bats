#!/usr/bin/env bats
# The disk reserve: below the free space or the free inodes kept in config,
# enqueue is refused as a temporary failure, while claim, finish, redrive
# and drop go on, so that the spool's own jobs never stop the drain.  The
# spool is on a tmpfs of 4 MB and 200 inodes, which only root can mount.
# spool-init warns on a file system smaller than the reserve.

load helpers

setup() {
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
