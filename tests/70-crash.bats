#!/usr/bin/env bats
# Atomicity: SIGKILL each command at every named crash point (tests/README.md,
# "Crash points"), then let the next ordinary commands carry on.  The job
# must never be lost, in two states, half-written, or given a lower token.
# Each test prints its table to the file named by $CRASH_TABLE, if set.

load helpers

PAYLOAD=$'payload \x01\x02 bytes\nline two'

# A fresh spool for one crash case.
fresh() {
	rm -rf "$SPOOL_DIR"
	spool-init
}

# Highest token the spool has ever shown for $1 (sidecar and leased/ names).
max_token() {
	{
		grep -o 'tok=[0-9]*' "$SPOOL_DIR/meta/$1" 2>/dev/null | cut -d= -f2
		find "$SPOOL_DIR/leased" -name "$1,*" -printf '%f\n' | sed 's/.*,//'
		echo 0
	} | sort -n | tail -1
}

row() {
	printf '# %-10s %-22s %-8s %s\n' "$1" "$2" "$3" "$4" >>"$BATS_TEST_TMPDIR/table"
}

# crash LABEL POINT CMD...: run CMD with the crash point armed and require
# that it died of SIGKILL there (an unreached point would prove nothing).
crash() {
	local label=$1 point=$2 rc
	shift 2
	rc=0
	SPOOL_TEST_CRASH=$point "$@" >/dev/null 2>&1 <<<"$PAYLOAD" || rc=$?
	if [ "$rc" -ne 137 ]; then
		row "$label" "$point" "rc=$rc" "NOT REACHED"
		echo "$label: crash point $point not reached (exit $rc)" >&2
		return 1
	fi
}

# After any crash: no ID in two places, and the job's payload, wherever it
# is, is byte-identical.
intact() {
	local p
	check_invariants || return 1
	p=$(path_of j1)
	if [ -n "$p" ]; then
		diff <(printf '%s\n' "$PAYLOAD") "$p" || { echo "payload changed" >&2; return 1; }
	fi
}

# Drive j1 from wherever it is to done/, with ordinary commands, and check
# every token handed out is above every token seen before the crash.
drive_to_done() {
	local before=$1 label=$2 line tok state n=0
	while state=$(state_of j1 2>/dev/null) || true; [ "$state" != done ]; do
		n=$((n + 1))
		[ "$n" -lt 10 ] || { echo "j1 stuck in $state" >&2; return 1; }
		case $state in
		new)
			line=$(spool-claim --owner after) || { echo "claim failed" >&2; return 1; }
			;;
		leased)
			# Whoever held it is dead: wait out the lease in pinned time.
			line=$(SPOOL_TEST_NOW=$(($(date +%s%3N) + 86400000)) \
			    spool-claim --owner after) || { echo "reclaim failed" >&2; return 1; }
			;;
		dead)
			spool-redrive --by ops --note CRASH-1 --reconciled j1 >/dev/null || return 1
			continue
			;;
		"")
			# Only an enqueue that never published leaves no job; its
			# producer, not told "done", enqueues again.
			[ "$label" = enqueue ] || { echo "j1 is nowhere" >&2; return 1; }
			spool-enqueue --id j1 <<<"$PAYLOAD" >/dev/null || return 1
			continue
			;;
		esac
		tok=$(cut -f2 <<<"$line")
		[ "$tok" -gt "$before" ] || { echo "token $tok not above $before" >&2; return 1; }
		diff <(printf '%s\n' "$PAYLOAD") "$(cut -f4 <<<"$line")" || return 1
		SPOOL_TEST_NOW=$(($(date +%s%3N) + 86400000)) spool-finish j1 "$tok" ok >/dev/null || return 1
	done
	intact
}

finish_table() {
	cat "$BATS_TEST_TMPDIR/table" >&3
	[ -z "${CRASH_TABLE:-}" ] || cat "$BATS_TEST_TMPDIR/table" >>"$CRASH_TABLE"
	! grep -q 'NOT REACHED\|FAILED' "$BATS_TEST_TMPDIR/table"
}

# The window spool-layout.md documents ("Crashes") in which a job has a
# second file: check it is exactly that, then let the next command on the
# job (here a renew with a token nobody has) remove it.
documented_window() {
	local files
	files=$(cd "$SPOOL_DIR" && find new leased done dead -type f \
	    \( -name j1 -o -name 'j1,*' \) -printf '%n %p\n' | LC_ALL=C sort)
	case $1/$2 in
	re-enqueue/enqueue-published | re-enqueue/enqueue-synced)
		# the new cycle is in new/, the old one still in done/
		[ "$(cut -d' ' -f2 <<<"$files" | cut -d/ -f1 | tr '\n' ' ')" = "done new " ] ||
		    return 1
		;;
	*)
		return 0
		;;
	esac
	spool-renew j1 999 2>/dev/null || true
	[ "$(wc -l < <(path_of j1))" -eq 1 ]
}

# walk LABEL SETUP ACT POINTS...: for each point, a fresh spool, SETUP, ACT
# killed at the point, the checks, then the ordinary way to done/.
walk() {
	local label=$1 setup=$2 act=$3 point before
	shift 3
	for point in "$@"; do
		fresh
		$setup || { row "$label" "$point" setup FAILED; continue; }
		before=$(max_token j1)
		crash "$label" "$point" $act || continue
		if ! documented_window "$label" "$point"; then
			row "$label" "$point" killed "FAILED: not the documented window"
			continue
		fi
		if intact && drive_to_done "$before" "$label" &&
		    spool-fsck --repair >/dev/null && fsck_clean; then
			row "$label" "$point" killed "recovered, payload intact"
		else
			row "$label" "$point" killed FAILED
		fi
	done
}

none() { :; }
queued() { spool-enqueue --id j1 <<<"$PAYLOAD" >/dev/null; }
leased() { queued && spool-claim --owner w1 --lease 1h >/dev/null; }
done_once() { leased && spool-finish j1 1 ok >/dev/null; }
parked() { leased && spool-finish j1 1 permanent >/dev/null; }

claim_expired() { SPOOL_TEST_NOW=$(($(date +%s%3N) + 7200000)) spool-claim --owner w2; }
enqueue() { spool-enqueue --id j1; }
finish_ok() { spool-finish j1 1 ok; }
finish_retry() { spool-finish --delay 0 j1 1 retry; }
finish_release() { spool-finish j1 1 release; }
finish_permanent() { spool-finish j1 1 permanent; }
renew() { spool-renew --lease 2h j1 1; }
redrive() { spool-redrive --by ops --note INC-1 j1; }

@test "enqueue killed at every point: the ID is free or queued, never half" {
	walk enqueue none enqueue enqueue-copied record-written \
	    enqueue-recorded enqueue-published enqueue-synced audit-written \
	    enqueue-logged
	finish_table
}

@test "enqueue of a done ID killed at every point: one cycle or the other" {
	walk re-enqueue done_once enqueue enqueue-copied record-written \
	    enqueue-recorded enqueue-published enqueue-synced audit-written \
	    enqueue-logged
	finish_table
}

@test "claim killed at every point, from new/ and from an expired lease" {
	walk claim queued spool-claim record-written claim-recorded \
	    claim-moved claim-synced audit-written claim-logged
	walk reclaim leased claim_expired record-written claim-recorded \
	    claim-moved claim-synced audit-written claim-logged
	finish_table
}

@test "finish killed at every point, for every outcome" {
	local f
	for f in finish_ok finish_retry finish_release finish_permanent; do
		walk "${f#finish_}" leased $f record-written finish-recorded \
		    finish-moved finish-synced audit-written finish-logged
	done
	finish_table
}

@test "a finish retried after a crash completes it or repeats it" {
	local point
	for point in finish-recorded finish-moved audit-written; do
		fresh
		leased
		crash ok "$point" spool-finish j1 1 ok
		run -0 spool-finish j1 1 ok
		equals "$output" j1
		equals "$(state_of j1)" done
		intact
	done
}

@test "renew and redrive killed at every point" {
	walk renew leased renew record-written renew-recorded audit-written \
	    renew-logged
	walk redrive parked redrive record-written redrive-recorded \
	    redrive-moved redrive-synced audit-written redrive-logged
	finish_table
}

@test "with the fallback move (no RENAME_NOREPLACE), killed after each move" {
	export SPOOL_TEST_NOREPLACE=off
	walk enqueue none enqueue enqueue-published
	walk claim queued spool-claim claim-moved
	walk reclaim leased claim_expired claim-moved
	walk ok leased finish_ok finish-moved
	walk retry leased finish_retry finish-moved
	walk redrive parked redrive redrive-moved
	finish_table
}

@test "the link+unlink move killed between its link and its unlink: one file under two names, put right" {
	local label setup act names before out
	export SPOOL_TEST_NOREPLACE=off
	claim() { spool-claim --owner w1; }
	while read -r label setup act; do
		fresh
		$setup || { row "$label" move-linked setup FAILED; continue; }
		before=$(max_token j1)
		crash "$label" move-linked $act || continue
		# One inode, two names: the source and the target.
		names=$(cd "$SPOOL_DIR" && find tmp new leased done dead -type f \
		    \( -name j1 -o -name 'j1,*' \) -printf '%i %n\n' | sort | uniq -c)
		if ! [[ $names =~ ^\ *2\ [0-9]+\ 2$ ]]; then
			row "$label" move-linked killed "FAILED: not two names of one file: $names"
			continue
		fi
		out=$(spool-fsck 2>&1) && { row "$label" move-linked killed "FAILED: fsck saw nothing"; continue; }
		case $label in
		enqueue) grep -q '^tmp: j1,[0-9.]*: left by an interrupted enqueue' <<<"$out" ;;
		*) grep -q ": a second name of job j1's file, left by a move cut short$" <<<"$out" ;;
		esac || { row "$label" move-linked killed "FAILED: fsck said: $out"; continue; }
		if spool-fsck --repair >/dev/null && fsck_clean && intact &&
		    drive_to_done "$before" "$label" && fsck_clean; then
			row "$label" move-linked killed "one name left, payload intact"
		else
			row "$label" move-linked killed FAILED
		fi
	done <<-'EOF'
	enqueue none enqueue
	claim queued claim
	reclaim leased claim_expired
	ok leased finish_ok
	retry leased finish_retry
	park leased finish_permanent
	redrive parked redrive
	EOF
	finish_table
}

@test "a second name for the job's file (a rename done as link+unlink, cut short) is removed by the next command" {
	# GlusterFS renames by link and unlink: a client dying between them
	# leaves the job's one inode under its old and new names.
	queued
	old=$(path_of j1)
	spool-claim --owner w1 >/dev/null
	mkdir -p "$(dirname "$old")"
	ln "$SPOOL_DIR/leased/j1,1" "$old"
	run -1 spool-renew j1 999
	[ ! -e "$old" ]
	equals "$(state_of j1)" leased
	intact
}

@test "a claim killed after its record burns the token: the next claim skips it" {
	queued
	crash claim claim-recorded spool-claim --owner w1
	equals "$(state_of j1)" new
	run -0 spool-claim --owner w2
	equals "$(cut -f1-3 <<<"$output")" "$(printf 'j1\t2\t1')"
	# the void record is marked, and the attempt was not spent
	[ "$(grep -c 'ev=void tok=1' "$SPOOL_DIR/meta/j1")" -eq 1 ]
}
