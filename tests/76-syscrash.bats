#!/usr/bin/env bats
# The k-th-system-call crash walk: spool-layout.md, "Crashes", held to
# every step of every command, not only to the named ones.  The named crash
# points of tests/70-crash.bats are the places we thought of; here each
# command is killed (SIGKILL, by the fault shim tests/shim/faultshim.c)
# just before its k-th system call on the spool, so that no step between
# two named points goes untried.  After each kill the ordinary commands
# must carry on as in tests/70-crash.bats: the job is never lost, never in
# two states (but for the window spool-layout.md documents, which the next
# command on the job closes), never half-written, never given a lower
# token; it can be driven to done/ with its payload byte-identical; and
# after spool-fsck --repair, spool-fsck is clean.  A killed spool-init is
# completed by running it again.
# The table (command, call number, the call, outcome) is printed as TAP
# comments, one row for every k, and the last test prints the totals.
# FULL=1 (make torture) kills the command at every k.  make check kills it
# at k = 1 and at every k that follows a call that changes what is on disk
# (a write, a rename, an unlink, a mkdir, an open that may create or
# truncate): a call that changes nothing (an open, a read, an fsync, a
# lock, a close, a readdir) leaves, when the process dies before the next
# one, the very state that dying before it left, so the rows of those k
# name the k whose run stands for them.  Every distinct state a kill can
# leave is tried; only repeats are not.

load helpers
load shim/faults

setup_file() {
	faults_setup_file || return 1
	: >"$BATS_FILE_TMPDIR/walks"
}

teardown_file() {
	faults_teardown_file
}

setup() {
	faults_setup
}

teardown() {
	rm -rf "$WORK"
}

# run_kill K: the command, killed just before its K-th call (0: not
# killed, its calls logged to LOGF).
run_kill() {
	rc=0
	: >"$TW/count"
	# (the braces keep bash's "Killed" notice off stderr)
	{ ASAN_OPTIONS=${TESTED_ASAN_OPTIONS:-${ASAN_OPTIONS:-}} \
	    SHIM_LOG=${LOGF:-} LD_PRELOAD=$SHIM SHIM_ROOT=$AREA \
	    SHIM_COUNT="$TW/count" SHIM_FAMILY=all SHIM_NTH=$1 \
	    SHIM_ACTION=kill SPOOL_TEST_NOW=$NOW "${ACT[@]}" <"$STDIN" \
	    >"$TW/out" 2>"$TW/err" || rc=$?; } 2>/dev/null
	read_out
}

# Highest token the spool has shown for j1: its sidecar and leased/ names,
# and the last the counter handed out.
max_token() {
	local line t max=0 f
	if [ -f "$SPOOL_DIR/tokens" ]; then
		read -r _ line _ <"$SPOOL_DIR/tokens"
		max=${line#last=}
	fi
	if [ -f "$SPOOL_DIR/meta/j1" ]; then
		while IFS= read -r line; do
			[[ $line =~ \ tok=([0-9]+) ]] || continue
			t=${BASH_REMATCH[1]}
			[ "$t" -le "$max" ] || max=$t
		done <"$SPOOL_DIR/meta/j1"
	fi
	for f in "$SPOOL_DIR"/leased/j1,*; do
		t=${f##*,}
		[ "$t" -le "$max" ] || max=$t
	done
	echo "$max"
}

# drive_to_done BEFORE: drive j1 from wherever it is to done/ with ordinary
# commands (as tests/70-crash.bats does), each token handed out above
# BEFORE, every token seen before the kill, the payload always WANT.  The
# clock is a day on, so that every lease has run out.
drive_to_done() {
	local before=$1 far=$((T0 + 86400000)) line tok path n=0 r
	while :; do
		list_files
		where j1
		[ "$W" != done ] || break
		n=$((n + 1))
		[ "$n" -lt 10 ] || { why="j1 stuck ($W)"; return 1; }
		case $W in
		new | leased,*)
			r=0
			line=$(SPOOL_TEST_NOW=$far spool-claim --owner after 2>&1) || r=$?
			[ "$r" -eq 0 ] || { why="claim of j1 ($W): exit $r: $line"; return 1; }
			;;
		dead)
			r=0
			line=$(spool-redrive --by ops --note CRASH-1 --reconciled $EDITED j1 2>&1) || r=$?
			[ "$r" -eq 0 ] || { why="redrive of j1: exit $r: $line"; return 1; }
			continue
			;;
		absent)
			# Only an enqueue that never published, or a purge, leaves
			# no job; its producer, not told "done", enqueues again.
			[ "$FROM" = absent ] || [ "$TO" = absent ] ||
			    { why="j1 is nowhere"; return 1; }
			r=0
			line=$(spool-enqueue --id j1 <"$STDIN" 2>&1) || r=$?
			[ "$r" -eq 0 ] || { why="enqueue of j1 again: exit $r: $line"; return 1; }
			WANT=one
			continue
			;;
		*)
			why="j1 is $W"
			return 1
			;;
		esac
		IFS=$'\t' read -r _ tok _ path <<<"$line"
		[ "$tok" -gt "$before" ] || { why="token $tok not above $before"; return 1; }
		same "$path" "$WANT" || { why="claimed payload differs"; return 1; }
		r=0
		line=$(SPOOL_TEST_NOW=$far spool-finish j1 "$tok" ok 2>&1) || r=$?
		[ "$r" -eq 0 ] || { why="finish of j1: exit $r: $line"; return 1; }
	done
	same "$SPOOL_DIR/done/j1" "$WANT" || { why="done/j1 is not the job's payload"; return 1; }
}

# survive: judge the case just killed; 0 if the spool carried on.
survive() {
	local line killed= f p c IDS=$IDS
	why=
	while read -r line; do
		case $line in
		fired\ *) read -r _ _ _ _ FN FPATH <<<"$line"; FPATH=${FPATH#"$AREA"/} ;;
		killed) killed=1 ;;
		esac
	done <"$TW/count"
	if [ -z "$killed" ] || [ "$rc" -ne 137 ]; then
		why="not killed (exit $rc)"
		return 1
	fi
	# A person's recovery first where the command is one (spool-fsck
	# --repair, or one that is run again: see recover), or where what it
	# leaves is checked (AFTER).
	if [ -n "$AGAIN$AFTER" ] || [ "$CMD" = spool-fsck ]; then
		recover || return 1
	fi
	if [ -n "$FROM" ]; then
		# Before anyone repairs anything: j1 in one place, or in the
		# documented window of a new cycle, which the next command on
		# the job closes (here a renew with a token nobody has).
		list_files
		where j1
		if [ "$W" = two ]; then
			if [ "$SCEN" != re-enqueue ] ||
			    [ ! -f "$SPOOL_DIR/done/j1" ]; then
				why="j1 in two places: ${FILES[*]}"
				return 1
			fi
			spool-renew j1 999 >/dev/null 2>&1
			list_files
			where j1
			[ "$W" = new ] || { why="the next command left j1 $W"; return 1; }
		fi
		TMP_OK=1 jobs_ok || return 1
		# The payload j1 has now, of the cycles it may be in.
		WANT=
		for f in "${FILES[@]}"; do
			case ${f##*/} in j1 | j1,*) ;; *) continue ;; esac
			[ "${f%%/*}" != tmp ] || continue
			slurp "$SPOOL_DIR/$f" c
			for p in one two; do
				[ "$c" != "${PAY[$p]}" ] || WANT=$p
			done
		done
		drive_to_done "$BEFORE" || return 1
		# j1 with the payload it was driven with; the other jobs as
		# they were.
		local spec ids="j1=$WANT"
		for spec in $IDS; do
			case $spec in j1[:=]*) ;; *) ids+=" $spec" ;; esac
		done
		IDS=$ids
	fi
	repair && quiet_fsck && jobs_ok $MUST || return 1
	[ -z "$AFTER" ] || $AFTER
}

# kill_case K: a fresh copy, the command killed before its K-th call; the
# verdict in RES: "K ok|FAILED CALL PATH [why]".
kill_case() {
	fresh
	FN='?' FPATH='?'
	run_kill "$1"
	if survive; then
		RES="$1 ok $FN $FPATH"
	else
		RES="$1 FAILED $FN $FPATH ${why//$'\n'/ }"
	fi
}

# walk NAME: count the command's calls, then kill it at each in turn (or
# at each that can leave a state not seen yet), on every core.
walk() {
	local name=$1 k n f p status fn2 path2 rest survived=0 fails=0 ran=0
	local -a fn path changes res
	prepare "$name" || return 1
	WID=p NCASE=0 TW="$WORK/wp"
	mkdir -p "$TW"
	SPOOL_DIR="$WORK/tpl/spool"
	BEFORE=$(max_token)
	fresh
	: >"$TW/log"
	LOGF="$TW/log" run_kill 0
	if [ "$rc" -ne 0 ] || [ -n "$ERR" ]; then
		echo "$name: plain run: exit $rc: $ERR" >&2
		return 1
	fi
	n=$(awk '$1 == "total" { print $2 }' "$TW/count")
	[ "${n:-0}" -gt 0 ] || { echo "$name: no call counted" >&2; return 1; }
	# The calls, and which change what is on disk.
	while read -r k _ f p; do
		fn[k]=$f path[k]=${p#"$AREA"/}
		case $f in
		write | pwrite* | ftruncate* | rename* | link* | unlink* | rmdir | \
		    remove | mkdir* | *+creat* | *+trunc*) changes[k]=1 ;;
		esac
	done <"$TW/log"
	for ((k = 1; k <= n; k++)); do
		[ -n "${FULL:-}" ] || [ "$k" -eq 1 ] || [ -n "${changes[k - 1]:-}" ] ||
		    continue
		echo "$k"
	done >"$WORK/cases"
	run_cases kill_case "$WORK/cases" || return 1
	while read -r k status rest; do res[k]="$status $rest"; done <"$RESULTS"
	local stands=1
	for ((k = 1; k <= n; k++)); do
		if [ -z "${res[k]:-}" ]; then
			printf '# %-16s %4d/%-4d %-14s %-34s as k=%d: call %d changed nothing\n' \
			    "$name" "$k" "$n" "${fn[k]}" "${path[k]}" "$stands" $((k - 1))
			continue
		fi
		stands=$k ran=$((ran + 1))
		read -r status fn2 path2 rest <<<"${res[k]}"
		if [ "$status" = ok ]; then
			survived=$((survived + 1))
			printf '# %-16s %4d/%-4d %-14s %-34s killed, recovered\n' \
			    "$name" "$k" "$n" "$fn2" "$path2"
		else
			fails=$((fails + 1))
			printf '# %-16s %4d/%-4d %-14s %-34s FAILED: %s\n' \
			    "$name" "$k" "$n" "$fn2" "$path2" "$rest"
		fi
	done >"$WORK/table"
	cat "$WORK/table" >&3
	local which="each distinct state"
	[ -z "${FULL:-}" ] || which="every k"
	printf '# %-16s %d calls; killed at %d (%s), %d recovered, %d failed\n' \
	    "$name" "$n" "$ran" "$which" "$survived" "$fails" >&3
	printf '%s %s %s %s\n' "$name" "$n" "$ran" "$survived" >>"$BATS_FILE_TMPDIR/walks"
	[ "$ran" -gt 0 ] || { echo "$name: no kill tried" >&2; return 1; }
	if [ "$fails" -gt 0 ]; then
		echo "$name: $fails of $ran kills not survived:" >&2
		grep FAILED "$WORK/table" >&2
		return 1
	fi
}

@test "spool-init killed at every call" { plain walk init; }
@test "spool-enqueue of one job killed at every call" { plain walk enqueue; }
@test "spool-enqueue of a batch killed at every call" { plain walk batch; }
@test "spool-enqueue of a done ID (a new cycle) killed at every call" { plain walk re-enqueue; }
@test "spool-claim killed at every call" { plain walk claim; }
@test "spool-claim taking over an expired lease killed at every call" { plain walk reclaim; }
@test "spool-finish ok killed at every call" { plain walk finish-ok; }
@test "spool-finish retry killed at every call" { plain walk finish-retry; }
@test "spool-finish release killed at every call" { plain walk finish-release; }
@test "spool-finish permanent killed at every call" { plain walk finish-permanent; }
@test "spool-renew killed at every call" { plain walk renew; }
@test "spool-redrive killed at every call" { plain walk redrive; }
@test "spool-drop killed at every call" { plain walk drop; }
@test "spool-cancel killed at every call" { plain walk cancel; }
@test "spool-fsck --repair of a damaged spool killed at every call" { plain walk fsck; }
@test "spool-fsck --repair adopting dead/ moved to new/ by hand killed at every call" { plain walk hand-redrive; }
@test "spool-fsck --repair adopting dead/ moved to done/ by hand killed at every call" { plain walk hand-drop; }
@test "spool-fsck --repair putting back a move into leased/ killed at every call" { plain walk hand-leased; }
@test "spool-fsck --repair rebuilding an emptied sidecar killed at every call" { plain walk rebuild-empty; }
@test "spool-fsck --repair rebuilding a garbled sidecar killed at every call" { plain walk rebuild-garbled; }
@test "spool-fsck --repair quarantining a file no job owns killed at every call" { plain walk stray; }
@test "spool-purge --missing of a file removed by hand killed at every call" { plain walk purge-missing; }
@test "spool-purge done ID killed at every call" { plain walk purge-done; }
@test "spool-redrive --edited of a payload changed by hand killed at every call" { plain walk redrive-edited; }
@test "spool-fsck --restored killed at every call" { plain walk restored; }
@test "spool-claim reserving a new block of tokens killed at every call" { plain walk claim-block; }
@test "spool-init --upgrade of a format 1 spool killed at every call" { plain walk upgrade; }

@test "the totals: call numbers hit and survived per command" {
	local name n r s tn=0 tr=0 ts=0 rows=0
	[ -s "$BATS_FILE_TMPDIR/walks" ] || { echo "no walk ran" >&2; return 1; }
	printf '# %-16s %6s %7s %9s\n' command calls killed survived >&3
	while read -r name n r s; do
		printf '# %-16s %6d %7d %9d\n' "$name" "$n" "$r" "$s" >&3
		tn=$((tn + n)) tr=$((tr + r)) ts=$((ts + s)) rows=$((rows + 1))
	done <"$BATS_FILE_TMPDIR/walks"
	printf '# %-16s %6d %7d %9d\n' total "$tn" "$tr" "$ts" >&3
	[ "$rows" -eq 27 ] || { echo "$rows of 27 walks ran" >&2; return 1; }
	[ "$tr" -gt 0 ] && [ "$tr" -eq "$ts" ]
}
