# Shared by every bats file: a fresh spool per test, and the checks that
# say a spool is consistent.  Load with: load helpers

bats_require_minimum_version 1.5.0

# bats runs its DEBUG trap before every command of every function a test
# calls, to name a failing line: a millisecond a command on this machine,
# most of the suite's CPU.  trace_test_only keeps the trap on the test's
# own lines and off the functions it calls.  A failure still names the
# test's line; one inside a helper names the line that called it.  Every
# setup() calls it first.
trace_test_only() {
	set +T
	declare -ft "$BATS_TEST_NAME"
}

setup() {
	trace_test_only
	export PATH="$BATS_TEST_DIRNAME/bin:$PATH"
	export SPOOL_DIR="$BATS_TEST_TMPDIR/spool"
	export SPOOL_HOST=testhost
	unset SPOOL_TEST_CRASH SPOOL_TEST_NOW SPOOL_TEST_NOREPLACE
	spool-init
}

# shimmed [VAR=VALUE ...] COMMAND ...: run it under the fault shim
# (tests/shim/faultshim.c; its SHIM_ variables among the VARs), its syncs
# made by plain calls, which the shim sees, not through io_uring.
shimmed() {
	env SPOOL_TEST_NO_URING=1 \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    LD_PRELOAD="$BATS_TEST_DIRNAME/shim/faultshim.so" "$@"
}

# slurp FILE VAR: the bytes of FILE into VAR, with no process started.
slurp() {
	IFS= read -r -d '' "$2" <"$1" || true
}

# Every name and mode in the spool, and each file's size, inode and change
# time (ctime): two snapshots are equal when no file changed.  A write, a
# rename or a chmod sets a file's ctime, and nothing sets it back; a
# rewrite with the same bytes shows too, but for one within the clock tick
# (a few ms) of the file's last change.  One process: tests/60-badinput.bats
# takes hundreds.
snapshot() {
	find "$SPOOL_DIR" \( -type f -printf 'f %m %s %i %C@ ./%P\n' \) -o \
	    -printf '%y %m ./%P\n'
}

# Every job file, "STATE<TAB>ID" a line (new, leased, done, dead), in one
# find: the checks below run after each step of many tests.  A name in
# new/ or leased/ ends in ",N", which is not the ID's.
job_files() {
	(cd "$SPOOL_DIR" && find new leased done dead -type f -printf '%H\t%f\n') |
	    sed -E 's/^((new|leased)\t.*),[0-9]*$/\1/'
}

# The IDs whose file is in STATE (new, leased, done, dead), one a line.
ids_in() {
	job_files | awk -F'\t' -v s="$1" '$1 == s { print $2 }' | LC_ALL=C sort
}

# The state an ID's file is in; fails unless it is in exactly one.
state_of() {
	job_files | awk -F'\t' -v id="$1" '$2 == id { n++; s = $1 }
	    END { if (n == 1) print s; else { print id " has " n + 0 " files" >"/dev/stderr"; exit 1 } }'
}

# The path of an ID's job file, wherever it is.
path_of() {
	find "$SPOOL_DIR/new" "$SPOOL_DIR/leased" "$SPOOL_DIR/done" \
	    "$SPOOL_DIR/dead" -type f \( -name "$1" -o -name "$1,*" \)
}

# No ID has files in two states, or two files in one.
check_invariants() {
	local dups
	dups=$(job_files | awk -F'\t' '++n[$2] == 2 { print $2 }')
	[ -z "$dups" ] || { echo "in two places: $dups" >&2; return 1; }
}

# lock_waiter FILE [SECONDS]: until a process waits for a flock(2) lock on
# FILE; false after SECONDS (20).  /proc/locks names the file by its device
# and inode, so the locks of other tests running at the same time do not
# count.
lock_waiter() {
	local f end=$((SECONDS + ${2:-20}))
	f=$(stat -c '%Hd %Ld %i' "$1") || return 1
	f=$(printf '%02x:%02x:%s' $f)
	until grep -q -- "^[0-9]*: -> FLOCK .* $f " /proc/locks; do
		[ "$SECONDS" -lt "$end" ] ||
		    { echo "no process waits for the lock of $1" >&2; return 1; }
		sleep 0.01
	done
}

# equals ACTUAL EXPECTED: true when the two texts are the same.  When
# they differ, a diff from EXPECTED to ACTUAL on stderr, and false.
equals() {
	[ $# -eq 2 ] || { echo "usage: equals ACTUAL EXPECTED" >&2; return 2; }
	[ "$1" = "$2" ] && return 0
	diff -u --label expected --label actual \
	    <(printf '%s\n' "$2") <(printf '%s\n' "$1") >&2 || true
	return 1
}

# Fail with a diff unless the file's content is the given text.
assert_file() {
	diff -u <(printf '%s' "$2") "$1"
}

# The audit log with its first and last fields (time, writer) removed.
audit_events() {
	cat "$SPOOL_DIR"/audit/*.log | cut -d' ' -f2-10
}

# spool-fsck finds nothing: exit 0, no output.
fsck_clean() {
	local out rc=0
	out=$(spool-fsck 2>&1) || rc=$?
	[ "$rc" -eq 0 ] && [ -z "$out" ] || {
		echo "spool-fsck: exit $rc" >&2
		echo "$out" >&2
		return 1
	}
}

# at_ms MS CMD...: run CMD with the library clock pinned at MS.
at_ms() {
	local ms=$1
	shift
	SPOOL_TEST_NOW=$ms "$@"
}

# lease_line ID TOKEN ATTEMPT: the line spool-claim prints for a lease,
# ID TOKEN ATTEMPT PATH, tab-separated.
lease_line() {
	printf '%s\t%s\t%s\t%s/leased/%s,%s\n' "$1" "$2" "$3" \
	    "$(realpath "$SPOOL_DIR")" "$1" "$2"
}

# The token of ID's current lease, from its name in leased/.
lease_token() {
	find "$SPOOL_DIR/leased" -name "$1,*" -printf '%f\n' | sed 's/.*,//'
}

# xxh_of FILE (- for stdin): its XXH3-64, as xxhsum, independent of the
# library, computes it.
xxh_of() {
	if [ "$1" = - ]; then xxhsum -H3; else xxhsum -H3 <"$1"; fi |
	    sed 's/.* = //'
}

# The named fields of ID's last sidecar record, "key=value" a line ("key="
# when the record does not have it).
last_rec() {
	local id=$1 rec k
	shift
	rec=$(tail -n 1 "$SPOOL_DIR/meta/$id")
	for k; do
		printf '%s=%s\n' "$k" "$(tr ' ' '\n' <<<"$rec" | sed -n "s/^$k=//p")"
	done
}

# "CMD OPTION" for every option that the man pages' item lists name ("Fl
# -warn" is --warn, "Fl d" -d; a bare "Fl", standard input, is not an
# option); spool-resume's page is spool-pause's.  An item that begins
# with a word ("Cm claim"), spool-batch(1)'s requests, names no option of
# the command.  In one awk.
man_options() {
	awk '/^\.It / && $2 != "Cm" {
		cmd = FILENAME; sub(/.*\//, "", cmd); sub(/\.1$/, "", cmd)
		for (i = 2; i < NF; i++)
			if ($i == "Fl" && $(i + 1) ~ /^[^ ]/ && $(i + 1) != ",") {
				print cmd, "-" $(i + 1)
				if (cmd == "spool-pause")
					print "spool-resume", "-" $(i + 1)
			}
	}' "$@" | sort -u
}
