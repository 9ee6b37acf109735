#!/usr/bin/env bats
# Power cuts on real kernels (spool-powercuts.md, "Real kernels"):
# tests/powercut/realfs cuts each command on loop-mounted ext4 and xfs
# images by copying the image while it is mounted, and checks the copy
# with the explorer's checks.  As root; make check-powercut-real (every
# cut point) and make check-powercut-real-sampled (two kills a command,
# and each command's end; in CI).  Outside CI the tests skip, saying why,
# where they cannot run (not root, no loop device, no mkfs.xfs); in CI
# that is a failure.

REALFS="$BATS_TEST_DIRNAME/realfs"
SEED=${POWERCUT_SEED:-14}

# realfs ARGS...: run it; skip (fail in CI) if it cannot run here.
realfs() {
	run "$REALFS" "$@"
	if [ "$status" -eq 77 ]; then
		[ -z "${CI:-}" ] || { echo "$output"; return 1; }
		skip "$output"
	fi
}

@test "real kernels: no violation at any cut of any command, on ext4 and xfs" {
	local args=(--seed "$SEED" --sample 2) f
	[ -z "${POWERCUT_REAL_FULL:-}" ] || args=(--seed "$SEED" --full)
	realfs "${args[@]}"
	printf '%s\n' "$output" >&3
	[ "$status" -eq 0 ]
	# every command on each file system, no violation, and no cut that
	# needed more than one pair of copies
	diff -u <(for f in ext4 xfs; do "$REALFS" --list | sed "s/^/$f /;s/$/ 0 0/"; done) \
	    <(awk 'NR > 2 && NF == 7 { print $1, $2, $6, $7 }' <<<"$output")
	[ "${lines[${#lines[@]} - 1]}" = "0 violations" ]
	# the copies are power cuts: on each file system some lost a write
	# the killed command had made
	for f in ext4 xfs; do
		awk -v f=$f '$1 == f { n += $5 } END { exit !(n > 0) }' <<<"$output"
	done
}

# The syncs whose loss a real kernel shows: a payload's and a record's
# fdatasync, the token block's, a purge's audit line's and paused's.  (A
# directory's fsync is not among them: on both file systems the next fdatasync of a file that grew
# commits the journal, or forces the log, with every change made before
# it; spool-powercuts.md, "Real kernels".)
@test "real kernels' teeth: without a payload's, a record's, the token block's, a purge's audit line's or paused's sync, a violation" {
	realfs --teeth enqueue-first:1 enqueue-first:2 claim:1 purge:2 pause:1
	[ "$status" -eq 0 ]
	diff -u - <(printf '%s\n' "$output") <<'OUT'
ext4 enqueue-first 1 fdatasync(tmp/j1,PID.N): violation
ext4 enqueue-first 2 fdatasync(meta/j1): violation
ext4 claim 1 fdatasync(tokens): violation
ext4 purge 2 fdatasync(audit/h.log): violation
ext4 pause 1 fdatasync(tmp/paused,PID): violation
xfs enqueue-first 1 fdatasync(tmp/j1,PID.N): violation
xfs enqueue-first 2 fdatasync(meta/j1): violation
xfs claim 1 fdatasync(tokens): violation
xfs purge 2 fdatasync(audit/h.log): violation
xfs pause 1 fdatasync(tmp/paused,PID): violation
OUT
}

# With config syncfs=yes a batch's one wait is one syncfs (spool-layout.md,
# "One syncfs for a large wait"): skipped, a real kernel loses the records.
@test "real kernels' teeth: without a batch's syncfs, a violation" {
	realfs --teeth claim-syncfs:2 finish-syncfs:1
	[ "$status" -eq 0 ]
	diff -u - <(printf '%s\n' "$output") <<'OUT'
ext4 claim-syncfs 2 syncfs(.): violation
ext4 finish-syncfs 1 syncfs(.): violation
xfs claim-syncfs 2 syncfs(.): violation
xfs finish-syncfs 1 syncfs(.): violation
OUT
}
