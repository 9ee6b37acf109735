#!/usr/bin/env bats
# I/O errors at every system call, against spool(7), "Success is durable"
# and EXIT STATUS, and spool-layout.md, "Crashes".  Each command runs
# once under the fault shim (tests/shim/faultshim.c) to learn the calls it
# makes on the spool, family by family; then, from the same known state,
# the k-th call of a family fails with ENOSPC, EIO, EDQUOT or EINTR.
#  - EINTR: the command must not notice: same status, stdout and stderr as
#    without the fault, and the spool as after a plain run.  A close that
#    reports EINTR has closed the descriptor all the same (Linux): it must
#    not be retried, and the shim says so if it is.
#  - any other error: exit 111 and one line on stderr per failed item,
#    naming the command ("spool-finish: j1: ..."); the message says "state
#    changed" exactly when the job did move; after spool-fsck --repair the
#    spool is clean, every job is there exactly once with its payload
#    byte-identical, and no partial file is visible in new/ leased/ done/
#    dead/ (or tmp/).  A failure the command may absorb (a close of a
#    read-only descriptor, a bucket it prunes, the next-expiry hint) must
#    leave the exit status, the output and the spool as without it; an
#    absorbed failure of fsync, write, rename, link or mkdir is a violation,
#    but for an ENOSPC or EDQUOT that the spool's reserve made room for
#    (spool-layout.md, "The reserve"): a command other than spool-enqueue
#    gives back part of it and tries again, and the reserve shows it.
#    A batch that fails as a whole says so in one line.
# FULL=1 (make torture) tries every k of every family with every errno.
# make check samples: each distinct call once in the whole file, where a
# call is its function and the path it names (bucket names, generated IDs
# and numbers made alike), with the errnos taken in turn: every family,
# and every file and directory the commands touch, fails at least once.
# The writes, fsyncs and renames that make a transition, which each
# command does its own way, are distinct per command.
# Each test prints its table as TAP comments, the last but one the totals
# per family.  FAULT_LOG=FILE collects every case not survived, and every
# failure a command absorbed, with the SHIM_ variables that reproduce it.
# The last test fills a real file system (a loop-mounted ext4 as root, else
# the shim's ENOSPC on every write).

load helpers
load shim/faults

ERRNOS=(ENOSPC EIO EDQUOT EINTR)
FAMILIES=(open read write fsync rename link unlink mkdir flock close getdents)

setup_file() {
	faults_setup_file || return 1
	: >"$BATS_FILE_TMPDIR/families"
	: >"$BATS_FILE_TMPDIR/seen"
}

teardown_file() {
	faults_teardown_file
}

setup() {
	faults_setup
}

teardown() {
	if [ -n "${FULLFS:-}" ]; then
		umount "$FULLFS" || umount -l "$FULLFS"
	fi
	rm -rf "$WORK"
}

# run_shim FAMILY K ERRNO: the command once, in the current case.
run_shim() {
	rc=0
	: >"$TW/count"
	ASAN_OPTIONS=${TESTED_ASAN_OPTIONS:-${ASAN_OPTIONS:-}} \
	    LD_PRELOAD=$SHIM SHIM_ROOT=$AREA SHIM_COUNT="$TW/count" SHIM_LOG=${LOGF:-} \
	    SHIM_FAMILY=$1 SHIM_NTH=$2 SHIM_ERRNO=$3 SPOOL_TEST_NOW=$NOW \
	    SPOOL_TEST_NOREPLACE=$NOREPLACE \
	    "${ACT[@]}" <"$STDIN" >"$TW/out" 2>"$TW/err" || rc=$?
	read_out
}

# As a plain run leaves it: the same place for j1, a clean spool.
like_plain() {
	quiet_fsck && jobs_ok $MUST || return 1
	[ -z "$AFTER" ] || $AFTER || return 1
	[ -n "$FROM" ] || return 0
	where j1
	[ "$W" = "$BASE_WHERE" ] ||
	    { why="j1 is $W, not $BASE_WHERE as after a plain run"; return 1; }
}

# drew ERRNO: the command found the disk full (ERRNO is ENOSPC or EDQUOT),
# may draw on the spool's reserve (spool-enqueue may not), and did: the
# reserve holds fewer bytes than before the run.
drew() {
	local before after
	[[ $1 == ENOSPC || $1 == EDQUOT ]] && [ "$CMD" != spool-enqueue ] ||
	    return 1
	before=$(stat -c %s "$WORK/tpl/spool/reserve/space" 2>/dev/null) ||
	    return 1
	after=$(stat -c %s "$SPOOL_DIR/reserve/space") || return 1
	[ "$after" -lt "$before" ]
}

# check FAMILY K ERRNO: judge one run; 0 survived, 1 not (why says why).
# ABSORBED is set if the command went on as if the call had not failed.
check() {
	local fam=$1 k=$2 err=$3 fired= ffam fk ferr ffn fpath line n lines
	why= ABSORBED=
	while read -r line; do
		case $line in
		fired\ *) read -r _ ffam fk ferr ffn fpath <<<"$line"; fired=1 ;;
		close-retried\ *)
			why="close retried after it failed (fd ${line#* })"
			return 1
			;;
		esac
	done <"$TW/count"
	[ -n "$fired" ] || { why="the injection did not fire"; return 1; }
	[ "$ffam $fk $ferr" = "$fam $k $err" ] ||
	    { why="fired $ffam $fk $ferr, not $fam $k $err"; return 1; }
	fpath=${fpath#"$AREA"/}
	FCALL="$ffn($fpath)"
	if [ "$err" = EINTR ]; then
		if [ "$rc" -ne "$BASE_RC" ] || [ "$NORM" != "$BASE_OUT" ] ||
		    [ -n "$ERR" ]; then
			why="EINTR at $FCALL not retried: exit $rc: ${ERR%$'\n'}"
			return 1
		fi
		like_plain
		return
	fi
	if [ "$rc" -eq "$BASE_RC" ] && [ -z "$ERR" ] && [ "$NORM" = "$BASE_OUT" ]; then
		# The command went on as if nothing had failed.
		case $fam/$fpath in
		*/spool/next-expiry) ;;
		# Making the reserve whole is enqueue's best effort: the
		# free space left decides whether the job comes in.
		*/spool/reserve | */spool/reserve/*) ;;
		write/* | rename/* | mkdir/* | link/*)
			# A full disk that the spool's reserve made room on.
			if ! drew "$err"; then
				why="$FCALL failed with $err, yet exit $rc as if it had not"
				return 1
			fi
			;;
		fsync/*)
			why="$FCALL failed with $err, yet exit $rc as if it had not"
			return 1
			;;
		esac
		ABSORBED=1
		like_plain
		return
	fi
	if [ "$rc" -ne 111 ]; then
		why="exit $rc, not 111, when $FCALL failed with $err: ${ERR%$'\n'}"
		return 1
	fi
	lines=0
	while IFS= read -r line; do
		lines=$((lines + 1))
		case $line in
		"$CMD: "*) ;;
		*) why="a line on stderr that does not name $CMD: $line"; return 1 ;;
		esac
	done <"$TW/err"
	if [ "$IDS" = batch ]; then
		# One line per file not enqueued, or one for the whole command
		# when it failed before any.
		n=0
		for line in $OUT; do n=$((n + 1)); done
		if [ "$lines" -ne $((3 - n)) ] && ! { [ "$n" -eq 0 ] && [ "$lines" -eq 1 ]; }; then
			why="$lines lines on stderr for $((3 - n)) failed items: ${ERR//$'\n'/|}"
			return 1
		fi
	elif [ "$lines" -ne 1 ]; then
		why="$lines lines on stderr, not one: ${ERR//$'\n'/|}"
		return 1
	fi
	recover && quiet_fsck && jobs_ok $MUST || return 1
	[ -n "$FROM" ] || return 0
	where j1
	if [ "$W" != "$FROM" ] && [ "$W" != "$TO" ]; then
		why="j1 is $W: neither where it was ($FROM) nor where it was going ($TO)"
		return 1
	fi
	if [ -n "$RAN_AGAIN" ] && [[ $ERR == *"state changed"* ]]; then
		# The failed run left the job as it was, for its second run.
		why="the message says the state changed, but it had not: ${ERR%$'\n'}"
		return 1
	fi
	if [ "$MOVES" = 1 ] && [ "$FROM" != "$TO" ] && [ -z "$RAN_AGAIN" ]; then
		if [ "$W" = "$TO" ] && [[ $ERR != *"state changed"* ]]; then
			why="j1 moved to $TO but the message does not say the state changed: ${ERR%$'\n'}"
			return 1
		fi
		if [ "$W" = "$FROM" ] && [[ $ERR == *"state changed"* ]]; then
			why="the message says the state changed but j1 is still $FROM"
			return 1
		fi
	fi
	if [ "$W" = absent ]; then
		# An enqueue that failed before publishing: the producer retries.
		n=0
		spool-enqueue --id j1 <"$STDIN" >/dev/null 2>"$TW/rerr" || n=$?
		slurp "$TW/rerr" line
		[ "$n" -eq 0 ] || { why="enqueue again after the failure: exit $n: $line"; return 1; }
		jobs_ok must
	fi
}

# one_case FAMILY K ERRNO: a fresh copy, the command with the fault, the
# verdict in RES: "FAMILY K ERRNO ok|absorbed|FAILED ...".
one_case() {
	fresh
	FCALL='?'
	run_shim "$1" "$2" "$3"
	if check "$1" "$2" "$3"; then
		RES="$1 $2 $3 ok $FCALL"
		[ -z "$ABSORBED" ] || RES="$1 $2 $3 absorbed $FCALL"
	else
		RES="$1 $2 $3 FAILED $FCALL: ${why//$'\n'/|}"
	fi
}

# sweep NAME: the plain run, then the cases (all, or the sample), each from
# a copy of the known state, on every core.
sweep() {
	local name=$1 fam k n e t fn p key line status rest sel=0
	local tried survived absorbed fails=0 total=0 nabs=0
	local -A N K SEEN
	prepare "$name" || return 1
	WID=p NCASE=0 TW="$WORK/wp"
	mkdir -p "$TW"
	fresh
	: >"$TW/log"
	LOGF="$TW/log" run_shim none 0 EIO
	BASE_RC=$rc BASE_OUT=$NORM
	if [ "$rc" -ne 0 ] || [ -n "$ERR" ]; then
		echo "$name: plain run: exit $rc: $ERR" >&2
		return 1
	fi
	if ! quiet_fsck || ! jobs_ok $MUST || { [ -n "$AFTER" ] && ! $AFTER; }; then
		echo "$name: the plain run left: $why" >&2
		return 1
	fi
	where j1
	BASE_WHERE=$W
	while read -r fam n; do
		case " ${FAMILIES[*]} " in *" $fam "*) N[$fam]=$n ;; esac
	done <"$TW/count"
	# The cases.
	: >"$WORK/cases"
	if [ -n "${FULL:-}" ]; then
		for fam in "${FAMILIES[@]}"; do
			for ((k = 1; k <= ${N[$fam]:-0}; k++)); do
				for e in "${ERRNOS[@]}"; do
					echo "$fam $k $e"
				done
			done
		done >"$WORK/cases"
	else
		while read -r key; do SEEN[$key]=1; done <"$BATS_FILE_TMPDIR/seen"
		sel=${#SEEN[@]}
		while read -r t fam fn p; do
			K[$fam]=$((${K[$fam]:-0} + 1))
			norm_path "${p#"$AREA"/}"
			case $fam in
			write | fsync | rename) key="$name $fam $fn $NP" ;;
			*) key="$fam $fn $NP" ;;
			esac
			[ -z "${SEEN[$key]:-}" ] || continue
			SEEN[$key]=1
			echo "$key" >>"$BATS_FILE_TMPDIR/seen"
			echo "$fam ${K[$fam]} ${ERRNOS[sel % ${#ERRNOS[@]}]}"
			sel=$((sel + 1))
		done <"$TW/log" >"$WORK/cases"
	fi
	run_cases one_case "$WORK/cases" || return 1
	# The table: per family, its calls, the cases tried and survived.
	: >"$WORK/fails"
	for fam in "${FAMILIES[@]}"; do
		n=${N[$fam]:-0}
		tried=0 survived=0 absorbed=0
		while read -r line; do
			read -r _ k e status rest <<<"$line"
			tried=$((tried + 1))
			case $status in
			ok) survived=$((survived + 1)) ;;
			absorbed)
				survived=$((survived + 1)) absorbed=$((absorbed + 1))
				[ -z "${FAULT_LOG:-}" ] ||
				    printf '%s: SHIM_FAMILY=%s SHIM_NTH=%s SHIM_ERRNO=%s: absorbed: %s\n' \
				    "$name" "$fam" "$k" "$e" "$rest" >>"$FAULT_LOG"
				;;
			*) printf '%s: SHIM_FAMILY=%s SHIM_NTH=%s SHIM_ERRNO=%s: %s\n' \
			    "$name" "$fam" "$k" "$e" "$rest" >>"$WORK/fails" ;;
			esac
		done < <(grep "^$fam " "$RESULTS")
		printf '%s %s %s %s %s\n' "$name" "$fam" "$n" "$tried" "$survived" \
		    >>"$BATS_FILE_TMPDIR/families"
		[ "$n" -eq 0 ] ||
		    printf '# %-16s %-9s calls %4d  failed %4d  survived %4d  (absorbed %d)\n' \
		    "$name" "$fam" "$n" "$tried" "$survived" "$absorbed" >&3
		total=$((total + tried))
		fails=$((fails + tried - survived))
		nabs=$((nabs + absorbed))
	done
	printf '# %-16s %d injections, %d survived (%d of them absorbed harmlessly)\n' \
	    "$name" "$total" $((total - fails)) "$nabs" >&3
	[ -z "${FAULT_LOG:-}" ] || cat "$WORK/fails" >>"$FAULT_LOG"
	[ "$total" -gt 0 ] || { echo "$name: no case tried" >&2; return 1; }
	if [ "$fails" -gt 0 ]; then
		echo "$name: $fails of $total injections not survived:" >&2
		cat "$WORK/fails" >&2
		return 1
	fi
}

@test "spool-init: every call failed in turn" { plain sweep init; }
@test "spool-enqueue of one job: every call failed in turn" { plain sweep enqueue; }
@test "spool-enqueue of a batch of three: every call failed in turn" { plain sweep batch; }
@test "spool-enqueue of a done ID (a new cycle): every call failed in turn" { plain sweep re-enqueue; }
@test "spool-claim: every call failed in turn" { plain sweep claim; }
@test "spool-claim by link and unlink (no RENAME_NOREPLACE): every call failed in turn" { plain sweep claim-link; }
@test "spool-claim taking over an expired lease: every call failed in turn" { plain sweep reclaim; }
@test "spool-finish ok: every call failed in turn" { plain sweep finish-ok; }
@test "spool-finish retry: every call failed in turn" { plain sweep finish-retry; }
@test "spool-finish release: every call failed in turn" { plain sweep finish-release; }
@test "spool-finish permanent: every call failed in turn" { plain sweep finish-permanent; }
@test "spool-renew: every call failed in turn" { plain sweep renew; }
@test "spool-redrive: every call failed in turn" { plain sweep redrive; }
@test "spool-drop: every call failed in turn" { plain sweep drop; }
@test "spool-cancel: every call failed in turn" { plain sweep cancel; }
@test "spool-fsck --repair of a damaged spool: every call failed in turn" { plain sweep fsck; }
@test "spool-fsck --repair adopting dead/ moved to new/ by hand: every call failed in turn" { plain sweep hand-redrive; }
@test "spool-fsck --repair adopting dead/ moved to done/ by hand: every call failed in turn" { plain sweep hand-drop; }
@test "spool-fsck --repair putting back a move into leased/: every call failed in turn" { plain sweep hand-leased; }
@test "spool-fsck --repair rebuilding an emptied sidecar: every call failed in turn" { plain sweep rebuild-empty; }
@test "spool-fsck --repair rebuilding a garbled sidecar: every call failed in turn" { plain sweep rebuild-garbled; }
@test "spool-fsck --repair quarantining a file no job owns: every call failed in turn" { plain sweep stray; }
@test "spool-purge --missing of a file removed by hand: every call failed in turn" { plain sweep purge-missing; }
@test "spool-purge done ID: every call failed in turn" { plain sweep purge-done; }
@test "spool-redrive --edited of a payload changed by hand: every call failed in turn" { plain sweep redrive-edited; }
@test "spool-fsck --restored: every call failed in turn" { plain sweep restored; }
@test "spool-claim reserving a new block of tokens: every call failed in turn" { plain sweep claim-block; }
@test "spool-init --upgrade of a format 1 spool: every call failed in turn" { plain sweep upgrade; }

@test "every family was reached and failed, or no command uses it" {
	local fam calls tried survived unused= f bins tc=0 tt=0 ts=0
	[ -s "$BATS_FILE_TMPDIR/families" ] || { echo "no sweep ran" >&2; return 1; }
	bins=$(for c in init enqueue claim finish renew redrive drop cancel fsck purge; do
		echo "$BIN/spool-$c"
	done)
	printf '# %-9s %8s %9s %9s\n' family calls injected survived >&3
	for fam in "${FAMILIES[@]}"; do
		read -r calls tried survived < <(awk -v f="$fam" \
		    '$2 == f { c += $3; t += $4; s += $5 } END { print c + 0, t + 0, s + 0 }' \
		    "$BATS_FILE_TMPDIR/families")
		printf '# %-9s %8d %9d %9d\n' "$fam" "$calls" "$tried" "$survived" >&3
		tc=$((tc + calls)) tt=$((tt + tried)) ts=$((ts + survived))
		if [ "$calls" -gt 0 ]; then
			[ "$tried" -gt 0 ] ||
			    { echo "family $fam: reached but never failed" >&2; unused="$unused $fam"; }
			continue
		fi
		# Never reached: then no command may even import the calls.
		case $fam in
		open) f='open|open64|openat|openat64|__open_2|__openat_2' ;;
		read) f='read|pread|pread64' ;;
		write) f='write|pwrite|pwrite64|ftruncate' ;;
		fsync) f='fsync|fdatasync' ;;
		rename) f='rename|renameat|renameat2' ;;
		link) f='link|linkat' ;;
		unlink) f='unlink|unlinkat|rmdir|remove' ;;
		mkdir) f='mkdir|mkdirat' ;;
		flock) f='flock|fcntl|fcntl64' ;;
		close) f='close|closedir' ;;
		getdents) f='readdir|readdir64|getdents64' ;;
		esac
		if nm -D --undefined-only $bins | grep -Eqw "($f)(@.*)?$"; then
			echo "family $fam: imported by a command but never reached" >&2
			unused="$unused $fam"
		else
			printf '# %-9s not used by the spool: no command imports %s\n' \
			    "$fam" "${f//|/ }" >&3
		fi
	done
	printf '# %-9s %8d %9d %9d\n' total "$tc" "$tt" "$ts" >&3
	equals "$unused" ""
	[ "$tt" -eq "$ts" ]
}

# ---- a full file system ------------------------------------------------------

# enqueue_until_full [PREFIX...]: enqueue payload a as j1, j2, ... (from
# j$((JOBS + 1))) until an enqueue fails: exit 111, one line; JOBS is then
# the number of the one that failed.
enqueue_until_full() {
	local rc
	while :; do
		JOBS=$((JOBS + 1))
		rc=0
		"$@" spool-enqueue --id "j$JOBS" "$PD/a" >"$WORK/out" 2>"$WORK/err" || rc=$?
		[ "$rc" -eq 0 ] || break
		equals "$(cat "$WORK/out")" "j$JOBS"
		[ "$JOBS" -lt 500 ] || { echo "the disk never filled" >&2; return 1; }
	done
	echo "# full after $((JOBS - 1)) jobs: $(cat "$WORK/err")" >&3
	[ "$rc" -eq 111 ]
	[ "$(wc -l <"$WORK/err")" -eq 1 ]
	grep -q "^spool-enqueue: " "$WORK/err"
}

# full_disk_checks [PREFIX...]: after the disk filled, nothing partial and
# nothing lost; a claim on the full disk works, or is refused cleanly.
full_disk_checks() {
	local n rc
	# No partial file, and no job twice: every job file is the whole
	# payload; every enqueue that said yes is there; the failed one is
	# not, or whole.
	IDS="$(for ((n = 1; n <= JOBS; n++)); do printf 'j%d=a ' "$n"; done)"
	TMP_OK=1 jobs_ok || { echo "$why" >&2; return 1; }
	for ((n = 1; n < JOBS; n++)); do
		where "j$n"
		[ "$W" = new ] || { echo "j$n is $W" >&2; return 1; }
	done
	# A claim on the full disk: done, or refused cleanly.
	rc=0
	"$@" spool-claim -n 2 >"$WORK/out" 2>"$WORK/err" || rc=$?
	echo "# claim on the full disk: exit $rc $(cat "$WORK/err")" >&3
	case $rc in
	0) [ "$(wc -l <"$WORK/out")" -eq 2 ] && [ ! -s "$WORK/err" ] ;;
	111) [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q '^spool-claim: ' "$WORK/err" ;;
	*) false ;;
	esac
}

# drain: with room again, repair, then every job to done/, payload intact.
drain() {
	local n line id tok path
	TW=$WORK
	repair || { echo "$why" >&2; return 1; }
	quiet_fsck || { echo "$why" >&2; return 1; }
	list_files
	where "j$JOBS"
	if [ "$W" = absent ]; then
		run -0 spool-enqueue --id "j$JOBS" "$PD/a"
		equals "$output" "j$JOBS"
	fi
	export SPOOL_TEST_NOW=$(($(date +%s%3N) + 86400000))
	for ((n = 1; n <= JOBS; n++)); do
		line=$(spool-claim --owner drain)
		IFS=$'\t' read -r id tok _ path <<<"$line"
		same "$path" a
		spool-finish "$id" "$tok" ok >/dev/null
	done
	run -1 spool-claim
	for ((n = 1; n <= JOBS; n++)); do
		same "$SPOOL_DIR/done/j$n" a || { echo "done/j$n" >&2; return 1; }
	done
	quiet_fsck || { echo "$why" >&2; return 1; }
}

@test "a full file system: enqueue fails cleanly, nothing partial, nothing lost" {
	local fs="$WORK/fs" avail kind=shim
	IDS=
	mkdir -p "$fs"
	# A loop-mounted ext4 of 4 MiB where we may mount (as root), else a
	# tmpfs of 1 MiB, else the shim: from one write on, every write
	# fails with ENOSPC.
	if [ "$(id -u)" -eq 0 ] && [ -z "${FAULT_FULLFS_SHIM:-}" ]; then
		truncate -s 4M "$WORK/img" && mkfs.ext4 -q -F -m 0 "$WORK/img" &&
		    mount -o loop "$WORK/img" "$fs" && kind=ext4 ||
		    { mount -t tmpfs -o size=1m tmpfs "$fs" && kind=tmpfs; }
		[ "$kind" = shim ] || FULLFS=$fs
	fi
	echo "# full file system: $kind" >&3
	export SPOOL_DIR="$fs/spool"
	spool-init
	if [ "$kind" != shim ]; then
		# The default reserve (16M) is more than the file system has:
		# refused at once.
		run -111 spool-enqueue --id j0 "$PD/a"
		[[ $output = "spool-enqueue: free space is below the spool's reserve: "*" free, reserve 16M"*" (see reserve and reserve-inodes in spool(7))" ]]
		equals "$(find "$SPOOL_DIR"/new "$SPOOL_DIR"/tmp "$SPOOL_DIR"/meta -type f)" ""
		# Without it, fill the disk but 64 KiB, then enqueue until an
		# enqueue fails.
		printf 'reserve=0\nreserve-inodes=0\n' >"$SPOOL_DIR/config"
		avail=$(df --output=avail -B1 "$fs" | tail -1)
		head -c $((avail - 65536)) /dev/zero >"$fs/filler" || true
		JOBS=0
		enqueue_until_full
		full_disk_checks
		rm "$fs/filler"
	else
		printf 'reserve=0\nreserve-inodes=0\n' >"$SPOOL_DIR/config"
		for JOBS in 1 2 3; do
			spool-enqueue --id "j$JOBS" "$PD/a" >/dev/null
		done
		enqueue_until_full env LD_PRELOAD="$SHIM" SHIM_ROOT="$fs" \
		    SHIM_FAMILY=write SHIM_NTH=1 SHIM_STICKY=1 SHIM_ERRNO=ENOSPC
		[ "$JOBS" -eq 4 ]
		full_disk_checks env LD_PRELOAD="$SHIM" SHIM_ROOT="$fs" \
		    SHIM_FAMILY=write SHIM_NTH=1 SHIM_STICKY=1 SHIM_ERRNO=ENOSPC
	fi
	drain
}
