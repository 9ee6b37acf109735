# Shared by tests/74-faults.bats (an error at each system call) and
# tests/76-syscrash.bats (a kill at each system call): the commands under
# test, the known states they run from, the checks of what they leave, and
# a runner that spreads the cases over the machine's cores.
#
# Each case runs in a copy of a known state on a tmpfs where there is one:
# these tests judge what the commands leave, not what reaches the disk (a
# kill keeps the page cache), and there every fsync is free.  The checks
# are bash builtins where they can be (a case runs the command, the copy
# and one or two spool-fsck, not dozens of processes).
#
# FULL=1 (make torture) tries every call number; without it each file
# samples, as it says at its top.  FAULT_JOBS=N runs N cases at a time
# (default: one per core, at most 4).

faults_setup_file() {
	local root
	root=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	make -s -C "$root" tests/shim/faultshim.so >&2 || return 1
	# The commands and the shim as they are now: a sweep learns a
	# binary's calls and then acts on them one by one, so a rebuild under
	# way must not swap it in the middle.
	export BIN="$BATS_FILE_TMPDIR/bin"
	mkdir -p "$BIN"
	find "$root/tests/bin" -maxdepth 1 -type f -name 'spool-*' ! -name '*.[co]' \
	    -exec cp -p -t "$BIN" {} + || return 1
	cp -p "$root/tests/shim/faultshim.so" "$BIN/" || return 1
	export SHIM="$BIN/faultshim.so"
	[ -x "$BIN/spool-init" ] || { echo "build the commands first" >&2; return 1; }
	# With SAN=1 the binaries load ASan's runtime, which wants to be the
	# first library; the shim, preloaded, comes first, and the interceptors
	# of both chain through dlsym(RTLD_NEXT).  Tell ASan that is meant.
	# The leak check at exit costs more than a whole run: the command
	# under test keeps it (TESTED_ASAN_OPTIONS), the checks' own runs of
	# spool-fsck and the rest, which the other tests cover, do without.
	if nm -D "$BIN/spool-init" 2>/dev/null | grep -q __asan_init; then
		export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
		export TESTED_ASAN_OPTIONS=$ASAN_OPTIONS
		export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
	fi
	export T0=$(($(date +%s%3N) - 10000))
	# Payloads: control bytes and a byte above 127 (no NUL: the checks
	# hold them in shell variables).
	export PD="$BATS_FILE_TMPDIR/p"
	mkdir -p "$PD"
	printf 'payload \001\002 bytes\nline two\n' >"$PD/one"
	printf 'second cycle \377\n' >"$PD/two"
	head -c 20000 /dev/urandom | tr -d '\000' | split -b 5000 -a 1 - "$PD/" || return 1
	# A spool of format 1, made by the version before format 2
	# (tests/fixtures/README.md), and its payloads by job.
	export F1="$BATS_FILE_TMPDIR/format1"
	mkdir -p "$F1"
	tar -C "$F1" -xzf "$root/tests/fixtures/format1-spool.tar.gz" || return 1
	local f n
	while IFS= read -r f; do
		n=${f##*/}
		cp "$f" "$PD/${n%%,*}" || return 1
	done < <(find "$F1"/spool/{new,leased,dead,done} -type f)
	export WORK_ROOT
	WORK_ROOT=$(mktemp -d /dev/shm/spool-faults.XXXXXX 2>/dev/null) ||
	    WORK_ROOT=$(mktemp -d "$BATS_FILE_TMPDIR/work.XXXXXX")
	: "${FAULT_JOBS:=$(nproc 2>/dev/null || echo 1)}"
	[ "$FAULT_JOBS" -le 4 ] || FAULT_JOBS=4
	export FAULT_JOBS
}

faults_teardown_file() {
	[ -z "${WORK_ROOT:-}" ] || rm -rf "$WORK_ROOT"
}

faults_setup() {
	trace_test_only
	shopt -s globstar nullglob
	export LC_ALL=C
	export PATH="$BIN:$PATH"
	export SPOOL_HOST=testhost
	# Syncs through threads, not io_uring, which the shim cannot see:
	# tests/75-ring.bats fails the ring's own.
	export SPOOL_TEST_NO_URING=1
	unset SPOOL_TEST_CRASH SPOOL_TEST_NOW SPOOL_TEST_NOREPLACE
	unset SHIM_FAMILY SHIM_NTH SHIM_ERRNO SHIM_ACTION SHIM_COUNT SHIM_ROOT \
	    SHIM_LOG SHIM_STICKY
	P1="$PD/one" P2="$PD/two"
	local p
	declare -gA PAY
	for p in one two a b c busy-1 dead-1 new-1 purged-1; do
		IFS= read -r -d '' "PAY[$p]" <"$PD/$p" || true
	done
	T1=$((T0 + 1000))
	WORK="$WORK_ROOT/$BATS_TEST_NUMBER"
	rm -rf "$WORK"
	mkdir -p "$WORK/c"
	AREA="$WORK/area"
	SPOOL_DIR="$AREA/spool"
	export SPOOL_DIR
}

# at MS CMD...: CMD with the library's clock pinned at MS.
at() {
	local ms=$1
	shift
	SPOOL_TEST_NOW=$ms "$@"
}

# plain CMD...: CMD in a subshell without bats's DEBUG trap, which would
# make the loops below a hundred times slower; it keeps its own checks.
plain() {
	(
		trap - DEBUG ERR
		set +eET
		"$@"
	)
}

# ---- the known states and the commands run from them ----------------------
#
# scenario NAME sets: SETUP (a function making the state), ACT (the command),
# NOW (its clock), STDIN, CMD (its name), IDS (the jobs with the payload
# each must have: "id=one", "id:state=two" where it depends on the state,
# or "batch"), FROM and TO (where j1 is before and after: absent, new,
# leased,TOKEN, done, dead), MOVES (1: a failure's message must say "state
# changed" exactly when j1 moved), MUST (must: no job may be missing, even
# before the producer retries), AGAIN (how a person recovers from a
# failure: see recover), EDITED (--edited: a redrive of j1 after it takes
# its payload as it is), AFTER (a check of what recovery must leave),
# NOREPLACE (off: moves by link and unlink, as without RENAME_NOREPLACE).

st_none() { :; }
st_spool() { spool-init; }
st_queued() { spool-init && at "$T0" spool-enqueue --id j1 <"$P1" >/dev/null; }
st_leased() { st_queued && at "$T0" spool-claim --owner w1 --lease 1h >/dev/null; }
st_done() { st_leased && at "$T0" spool-finish j1 1 ok >/dev/null; }
st_parked() { st_leased && at "$T0" spool-finish j1 1 permanent >/dev/null; }

# Hand edits (spool(7), EDITING THE SPOOL BY HAND), and states the token
# counter and the formats bring (spool-layout.md, "Tokens", "Formats").
st_hand_redrive() { st_parked && mv "$SPOOL_DIR/dead/j1" "$SPOOL_DIR/new/"; }
st_hand_drop() { st_parked && mv "$SPOOL_DIR/dead/j1" "$SPOOL_DIR/done/"; }
st_hand_leased() { st_parked && mv "$SPOOL_DIR/dead/j1" "$SPOOL_DIR/leased/"; }
st_emptied() { st_leased && : >"$SPOOL_DIR/meta/j1"; }
st_garbled() { st_queued && echo garbage >>"$SPOOL_DIR/meta/j1"; }
st_stray() { st_queued && cp "$P2" "$SPOOL_DIR/dead/stray"; }
st_removed() { st_parked && rm "$SPOOL_DIR/dead/j1"; }
# (an editor's save: a new file renamed over the old one)
st_edited() {
	st_parked && cp "$P2" "$SPOOL_DIR/dead/.j1.swp" &&
	    mv "$SPOOL_DIR/dead/.j1.swp" "$SPOOL_DIR/dead/j1"
}
# j1 leased with token 1, j2 parked with token 2: a backup brought back.
st_restored() {
	st_leased && at "$T0" spool-enqueue --id j2 <"$P1" >/dev/null &&
	    at "$T0" spool-claim --owner w1 >/dev/null &&
	    at "$T0" spool-finish j2 2 permanent >/dev/null
}
# The counter at the end of a block this boot reserved: the next claim
# takes its last token and reserves the next block.
st_block() {
	st_queued && printf 'next=1025 last=1024 boot=%s\n' \
	    "$(cat /proc/sys/kernel/random/boot_id)" >"$SPOOL_DIR/tokens"
}
st_format1() { cp -a "$F1/spool" "$SPOOL_DIR"; }

# A spool with one of everything a crash leaves (spool-layout.md, "Crashes").
st_damaged() {
	local old
	spool-init || return 1
	# j6: finished, killed after its move: no audit line
	at "$T0" spool-enqueue --id j6 <"$P1" >/dev/null &&
	    at "$T0" spool-claim >/dev/null || return 1
	killed_at finish-moved "$T0" spool-finish j6 1 ok || return 1
	# j4: done, then a new cycle killed before it removed done/j4
	at "$T0" spool-enqueue --id j4 <"$P1" >/dev/null &&
	    at "$T0" spool-claim >/dev/null &&
	    at "$T0" spool-finish j4 2 ok >/dev/null || return 1
	# j5: leased (token 3: one counter, j6 took 1 and j4 2); a second
	# name for its file in new/ (link+unlink cut short)
	at "$T0" spool-enqueue --id j5 <"$P1" >/dev/null || return 1
	old=$(path_of j5)
	at "$T0" spool-claim >/dev/null || return 1
	# j2: a claim killed after its record: a void record to mark
	at $((T0 + 100)) spool-enqueue --id j2 <"$P1" >/dev/null || return 1
	killed_at claim-recorded $((T0 + 100)) spool-claim || return 1
	killed_at enqueue-published $((T0 + 200)) spool-enqueue --id j4 <"$P2" || return 1
	# j1: published, killed before its audit line; j3: only in tmp/
	killed_at enqueue-published $((T0 + 200)) spool-enqueue --id j1 <"$P1" || return 1
	killed_at enqueue-copied $((T0 + 200)) spool-enqueue --id j3 <"$P1" || return 1
	# (a day old, so that no process that took the dead one's pid since
	# makes it look like an enqueue at work)
	touch -d @$((T0 / 1000 - 90000)) "$SPOOL_DIR"/tmp/j3,* || return 1
	mkdir -p "$(dirname "$old")" && ln "$SPOOL_DIR/leased/j5,3" "$old" &&
	    echo stray >"$SPOOL_DIR/new/garbage"
}

# killed_at POINT MS CMD...: CMD at MS, killed at the named crash point.
killed_at() {
	local point=$1 ms=$2 rc=0
	shift 2
	# (the braces keep bash's "Killed" notice off stderr)
	{ env SPOOL_TEST_CRASH="$point" SPOOL_TEST_NOW="$ms" "$@" >/dev/null 2>&1 || rc=$?; } 2>/dev/null
	[ "$rc" -eq 137 ] || { echo "$*: not killed at $point (exit $rc)" >&2; return 1; }
}

scenario() {
	SETUP=st_spool NOW=$T1 STDIN=/dev/null IDS="j1=one" FROM= TO= MOVES=1
	MUST=must AGAIN= EDITED= AFTER= NOREPLACE=
	case $1 in
	init) SETUP=st_none ACT=(spool-init) IDS= MOVES=0 AGAIN=init ;;
	enqueue) ACT=(spool-enqueue --id j1) STDIN=$P1 FROM=absent TO=new MUST= ;;
	batch)
		ACT=(spool-enqueue "$PD/a" "$PD/b" "$PD/c")
		IDS=batch MOVES=0 MUST=
		;;
	re-enqueue)
		SETUP=st_done ACT=(spool-enqueue --id j1) STDIN=$P2
		IDS="j1:done=one j1:new=two" FROM=done TO=new
		;;
	claim) SETUP=st_queued ACT=(spool-claim --owner w1 --lease 1h)
		FROM=new TO=leased,1 MOVES=0 ;;
	claim-link) SETUP=st_queued ACT=(spool-claim --owner w1 --lease 1h)
		FROM=new TO=leased,1 MOVES=0 NOREPLACE=off ;;
	reclaim)
		SETUP=st_leased NOW=$((T0 + 7200000))
		ACT=(spool-claim --owner w2 --lease 1h) FROM=leased,1 TO=leased,2
		MOVES=0
		;;
	finish-ok) SETUP=st_leased ACT=(spool-finish j1 1 ok) FROM=leased,1 TO=done ;;
	finish-retry) SETUP=st_leased ACT=(spool-finish --delay 5s j1 1 retry)
		FROM=leased,1 TO=new ;;
	finish-release) SETUP=st_leased ACT=(spool-finish j1 1 release)
		FROM=leased,1 TO=new ;;
	finish-permanent) SETUP=st_leased ACT=(spool-finish j1 1 permanent)
		FROM=leased,1 TO=dead ;;
	renew) SETUP=st_leased ACT=(spool-renew --lease 2h j1 1)
		FROM=leased,1 TO=leased,1 MOVES=0 ;;
	redrive) SETUP=st_parked ACT=(spool-redrive --by ops --note INC-1 j1)
		FROM=dead TO=new ;;
	drop) SETUP=st_parked ACT=(spool-drop --by ops --note INC-1 j1)
		FROM=dead TO=done ;;
	cancel) SETUP=st_queued ACT=(spool-cancel --by ops --note INC-1 j1)
		FROM=new TO=dead ;;
	fsck)
		SETUP=st_damaged ACT=(spool-fsck --repair) MOVES=0
		IDS="j1=one j2=one j4:new=two j5=one j6=one"
		;;
	hand-redrive) SETUP=st_hand_redrive ACT=(spool-fsck --repair)
		FROM=new TO=new MOVES=0 ;;
	hand-drop) SETUP=st_hand_drop ACT=(spool-fsck --repair)
		FROM=done TO=done MOVES=0 ;;
	hand-leased) SETUP=st_hand_leased ACT=(spool-fsck --repair)
		FROM=dead TO=dead MOVES=0 ;;
	rebuild-empty) SETUP=st_emptied ACT=(spool-fsck --repair)
		FROM=leased,1 TO=leased,1 MOVES=0 ;;
	rebuild-garbled) SETUP=st_garbled ACT=(spool-fsck --repair)
		FROM=new TO=new MOVES=0 ;;
	stray) SETUP=st_stray ACT=(spool-fsck --repair) FROM=new TO=new
		MOVES=0 AFTER=stray_kept ;;
	purge-missing)
		SETUP=st_removed STDIN=$P1 MUST= MOVES=0 AGAIN=unclean
		AFTER=purge_logged
		ACT=(spool-purge --missing --by ops --note INC-1 j1)
		FROM=absent TO=absent
		;;
	purge-done) SETUP=st_done ACT=(spool-purge done j1) STDIN=$P1
		FROM=done TO=absent MUST= AFTER=purge_logged ;;
	redrive-edited)
		SETUP=st_edited ACT=(spool-redrive --edited --by ops --note INC-1 j1)
		IDS="j1=two" FROM=dead TO=new EDITED=--edited AGAIN=unclean
		;;
	restored)
		SETUP=st_restored ACT=(spool-fsck --restored) AGAIN=always
		IDS="j1=one j2=one" FROM=leased,1 TO=leased,1 MOVES=0
		;;
	claim-block) SETUP=st_block ACT=(spool-claim --owner w1 --lease 1h)
		FROM=new TO=leased,1025 MOVES=0 ;;
	upgrade)
		SETUP=st_format1 ACT=(spool-init --upgrade) AGAIN=always MOVES=0
		IDS="busy-1=busy-1 dead-1=dead-1 new-1=new-1 purged-1=purged-1"
		AFTER=upgraded
		;;
	*) echo "no scenario $1" >&2; return 1 ;;
	esac
	CMD=${ACT[0]}
}

# prepare NAME: the scenario's known state in $WORK/tpl, and for init the
# config a fresh init writes.
prepare() {
	scenario "$1" || return 1
	SCEN=$1
	rm -rf "$WORK/tpl" "$WORK/c"
	mkdir -p "$WORK/tpl" "$WORK/c"
	if [ "$1" = init ]; then
		spool-init -d "$WORK/ref" &&
		    IFS= read -r -d '' REF_CONFIG <"$WORK/ref/config"
	fi
	SPOOL_DIR="$WORK/tpl/spool" $SETUP ||
	    { echo "$1: setup failed" >&2; return 1; }
}

# ---- checks ----------------------------------------------------------------

# same FILE NAME: FILE holds exactly payload NAME.
same() {
	local c
	[ -f "$1" ] || return 1
	slurp "$1" c
	[ "$c" = "${PAY[$2]}" ]
}

# The files in the state directories and tmp/, as FILES=(STATE/.../NAME);
# AT[ID] is where each job is, for where.  One pass: a full disk's checks
# ask where each of some 150 jobs is.
list_files() {
	local f id
	FILES=()
	declare -gA AT=()
	for f in "$SPOOL_DIR"/new/** "$SPOOL_DIR"/leased/* "$SPOOL_DIR"/done/* \
	    "$SPOOL_DIR"/dead/* "$SPOOL_DIR"/tmp/*; do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		f=${f#"$SPOOL_DIR"/}
		FILES+=("$f")
		case $f in
		tmp/*) continue ;;
		esac
		id=${f##*/}
		id=${id%%,*}
		if [ -n "${AT[$id]:-}" ]; then
			AT[$id]=two
		else
			case $f in
			leased/*) AT[$id]=leased,${f##*,} ;;
			*) AT[$id]=${f%%/*} ;;
			esac
		fi
	done
}

# where ID: W is where the job is, from list_files: absent, new,
# leased,TOKEN, done or dead; "two" if it has more than one file.
where() {
	W=${AT[$1]:-absent}
}

# jobs_ok [must]: every job file is a whole payload of its job, every job
# is there at most once (exactly once with must), tmp/ is empty (unless
# TMP_OK is set).  For a batch, every ID in OUT (the IDs the command said
# it enqueued) is there.
jobs_ok() {
	local must=${1:-} f id state want spec p c seen=" "
	local -A for_state=() for_any=()
	for spec in $IDS; do
		id=${spec%%=*}
		case $id in
		*:*) for_state[$id]=${spec#*=} ;;
		*) [ -n "${for_any[$id]:-}" ] || for_any[$id]=${spec#*=} ;;
		esac
	done
	list_files
	for f in "${FILES[@]}"; do
		state=${f%%/*}
		if [ "$state" = tmp ]; then
			# before a repair, an interrupted enqueue's file may be there
			[ -n "${TMP_OK:-}" ] && continue
			why="left in tmp/: $f"
			return 1
		fi
		id=${f##*/}
		id=${id%%,*}
		slurp "$SPOOL_DIR/$f" c
		if [ "$IDS" = batch ]; then
			for p in a b c; do
				[ "$c" = "${PAY[$p]}" ] || continue
				case $seen in *" $p "*)
					why="payload $p twice"; return 1 ;;
				esac
				seen="$seen$p "
				continue 2
			done
			why="$f is not a whole payload"
			return 1
		fi
		want=${for_state[$id:$state]:-${for_any[$id]:-}}
		[ -n "$want" ] || { why="unexpected file $f"; return 1; }
		[ "$c" = "${PAY[$want]}" ] || { why="$f: not its payload"; return 1; }
	done
	if [ "$IDS" = batch ]; then
		for id in $OUT; do
			where "$id"
			[ "$W" != absent ] || { why="$id printed but not there"; return 1; }
		done
		return 0
	fi
	for spec in $IDS; do
		id=${spec%%[:=]*}
		case $seen in *" $id "*) continue ;; esac
		seen="$seen$id "
		where "$id"
		[ "$W" != two ] || { why="$id has two files"; return 1; }
		if [ "$W" = absent ] && [ -n "$must" ]; then
			why="$id is lost"
			return 1
		fi
	done
}

# spool-fsck finds nothing: exit 0, no output.
quiet_fsck() {
	local out rc=0
	out=$(spool-fsck 2>&1) || rc=$?
	[ "$rc" -eq 0 ] && [ -z "$out" ] && return 0
	why="spool-fsck: exit $rc: ${out:0:300}"
	return 1
}

# spool-fsck --repair: exit 0 (nothing to do) or 1 (repaired), nothing on
# stderr.
repair() {
	local r=0 e
	spool-fsck --repair >/dev/null 2>"$TW/rerr" || r=$?
	slurp "$TW/rerr" e
	[ "$r" -le 1 ] && [ -z "$e" ] && return 0
	why="spool-fsck --repair: exit $r: ${e%$'\n'}"
	return 1
}

# recover: what a person does after the command failed or was killed, as
# spool(7) and spool-layout.md, "Crashes", say: a failed init is completed
# by running it again (AGAIN=init); a failed spool-fsck --restored or
# spool-init --upgrade is run again (always); a failed spool-purge
# --missing or spool-redrive --edited is run again if spool-fsck --repair
# leaves the job damaged (unclean; RAN_AGAIN says it was); spool-fsck
# --repair puts right the rest.  Then AFTER's check.
recover() {
	RAN_AGAIN=
	case $AGAIN in
	init) init_again ;;
	always) again && repair ;;
	unclean)
		repair || return 1
		quiet_fsck || { RAN_AGAIN=1 && again && repair; }
		;;
	*) repair ;;
	esac || return 1
	[ -z "$AFTER" ] || $AFTER
}

# again: the command once more, without faults: exit 0, nothing on stderr.
again() {
	local r=0 e
	SPOOL_TEST_NOW=$NOW SPOOL_TEST_NOREPLACE=$NOREPLACE "${ACT[@]}" <"$STDIN" \
	    >/dev/null 2>"$TW/rerr" || r=$?
	slurp "$TW/rerr" e
	[ "$r" -eq 0 ] && [ -z "$e" ] && return 0
	why="${ACT[*]} again: exit $r: ${e%$'\n'}"
	return 1
}

# stray_kept: the file no job owned is in quarantine/, whole.
stray_kept() {
	local f
	for f in "$SPOOL_DIR"/quarantine/dead_stray,*; do
		same "$f" two && return 0
	done
	why="the stray file is not in quarantine/"
	return 1
}

# purge_logged: a j1 gone from the spool has its purge in the audit log.
purge_logged() {
	[ ! -e "$SPOOL_DIR/meta/j1" ] || return 0
	grep -q ' purge j1 ' "$SPOOL_DIR"/audit/*.log && return 0
	why="j1 is gone, and no audit line says it was purged"
	return 1
}

# upgraded: format 2, and the counter above every token of format 1 plus
# the 2^20 the upgrade leaves for claims made during its scan.
upgraded() {
	local f next
	slurp "$SPOOL_DIR/format" f
	[ "$f" = $'2\n' ] || { why="format is ${f%$'\n'}, not 2"; return 1; }
	next=$(sed -n 's/^next=\([0-9]*\) .*/\1/p' "$SPOOL_DIR/tokens")
	[ "${next:-0}" -ge $((7 + (1 << 20))) ] ||
	    { why="tokens: next=$next, not above 6 + 2^20"; return 1; }
}

# A failed or killed init: running it again completes the spool, with the
# config a fresh init writes.
init_again() {
	local r=0 e c
	spool-init 2>"$TW/rerr" || r=$?
	slurp "$TW/rerr" e
	[ "$r" -eq 0 ] || { why="spool-init again: exit $r: $e"; return 1; }
	slurp "$SPOOL_DIR/config" c
	[ "$c" = "$REF_CONFIG" ] || { why="config differs from a fresh init's"; return 1; }
}

# OUT, ERR: the command's stdout and stderr; NORM: stdout with the case's
# own spool path, and the IDs the library generated, made the same for
# every run.
read_out() {
	local line norm=
	slurp "$TW/out" OUT
	slurp "$TW/err" ERR
	if [ "$IDS" = batch ]; then
		while IFS= read -r line; do
			[[ $line =~ ^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$ ]] &&
			    line=UUID
			norm+="$line"$'\n'
		done <<<"$OUT"
		NORM=$norm
	else
		NORM=${OUT//"$SPOOL_DIR"/SPOOL}
	fi
}

# fresh: a new case directory holding a copy of the known state.
fresh() {
	NCASE=$((NCASE + 1))
	AREA="$WORK/c/$WID.$NCASE"
	SPOOL_DIR="$AREA/spool"
	cp -a "$WORK/tpl" "$AREA"
}

# norm_path PATH: NP is PATH (relative to the case's area) with what varies
# from run to run made the same: bucket names, generated IDs, the numbers
# after a comma (eligible times, tokens, pids); and the jobs of the format
# 1 fixture made one, as the files of a batch are.
norm_path() {
	local c out= IFS=/
	for c in $1; do
		if [[ $c =~ ^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12} ]]; then
			c=ID${c:36}
		elif [[ $c =~ ^(busy|dead|done|new|purged)-1(,.*)?$ ]]; then
			c=FX${BASH_REMATCH[2]}	# the format 1 fixture's jobs
		fi
		if [[ $c =~ ^([0-9a-f]{3}|[0-9a-f]{8})$ ]]; then
			c=B
		elif [[ $c == *,* ]]; then
			c=${c%%,*},N
		fi
		out+=${out:+/}$c
	done
	NP=${out:-.}
}

# ---- running cases on every core --------------------------------------------

# run_cases FN LIST: FN (a function of this file) for every line of the
# file LIST, its words as arguments, FAULT_JOBS at a time; each call
# leaves its verdict, one line, in RES, and RESULTS names the file that
# collects them in the order of LIST.  FN runs in a worker: WID names it, TW is its own
# directory for scratch files, fresh() gives it its own case directories.
run_cases() {
	local fn=$1 list=$2 w n
	n=$(wc -l <"$list")
	RESULTS="$WORK/results"
	for ((w = 0; w < FAULT_JOBS; w++)); do
		(
			WID=$w NCASE=0 TW="$WORK/w$w"
			mkdir -p "$TW"
			local i=0 line
			while IFS= read -r line; do
				if [ $((i % FAULT_JOBS)) -eq "$w" ]; then
					RES=
					# shellcheck disable=SC2086
					$fn $line
					printf '%d %s\n' "$i" "$RES"
					if [ $((NCASE % 50)) -eq 0 ]; then
						rm -rf "$WORK/c/$WID".*
					fi
				fi
				i=$((i + 1))
			done <"$list" >"$WORK/res.$w"
			rm -rf "$WORK/c/$WID".*
		) &
	done
	wait
	sort -n "$WORK"/res.* | cut -d' ' -f2- >"$RESULTS"
	rm -f "$WORK"/res.*
	[ "$(wc -l <"$RESULTS")" -eq "$n" ] ||
	    { echo "$n cases, $(wc -l <"$RESULTS") results" >&2; return 1; }
}
