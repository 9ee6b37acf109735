#!/usr/bin/env bats
# Every command under valgrind's memcheck, through each of its outcomes:
# the exit status and output are those of the plain run, and memcheck finds
# no error and no leak (definite, indirect or possible).  valgrind cannot
# run what make check SAN=1 builds, so the commands are built once more,
# plain, into this file's own directory (tests/valgrind.mk).  Each test
# makes its spool with those commands run natively, then runs the commands
# under test under memcheck, those that touch different jobs at once.

load helpers

BATS_TEST_TIMEOUT=120

eval "helpers_$(declare -f setup)"

setup_file() {
	export VG_BIN=$BATS_FILE_TMPDIR/vg
	command -v valgrind >/dev/null ||
	    { echo "valgrind is not installed (tests/deps.sh)" >&3; return 1; }
	# Not make check's flags (SAN=1 would not reach these rules anyway).
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$BATS_TEST_DIRNAME/.." \
	    --no-print-directory -j2 VG_DIR="$VG_BIN" valgrind-build \
	    >"$BATS_FILE_TMPDIR/build.log" 2>&1 ||
	    { cat "$BATS_FILE_TMPDIR/build.log" >&3; return 1; }
}

setup() {
	helpers_setup
	# The plain build first: what the tests run natively is the same code.
	export PATH="$VG_BIN:$PATH"
	export SPOOL_TEST_NOW=$T
	V=$BATS_TEST_TMPDIR/vg
	mkdir "$V"
	VG_PIDS=()
}

T=1000000

# Nothing a test started outlives it, even when it fails half-way.
teardown() {
	local f
	for f in "$V"/*.pid; do
		[ ! -e "$f" ] || kill -KILL "$(cat "$f")" 2>/dev/null || true
	done
}

# vg NAME CMD [ARG...]: start CMD of the plain build under memcheck, in the
# background; stdin from $VG_IN (default /dev/null).  Its stdout, stderr
# and exit status go to $V/NAME.out, .err and .rc, memcheck's report (one
# file a process) to $V/NAME.vg.PID.
vg() {
	local name=$1 cmd=$2
	shift 2
	(
		rc=0
		valgrind -q --tool=memcheck --error-exitcode=99 \
		    --leak-check=full \
		    --errors-for-leak-kinds=definite,indirect,possible \
		    --show-leak-kinds=definite,indirect,possible \
		    --log-file="$V/$name.vg.%p" "$VG_BIN/$cmd" "$@" \
		    <"${VG_IN:-/dev/null}" >"$V/$name.out" 2>"$V/$name.err" &
		echo "$!" >"$V/$name.pid"
		wait "$!" || rc=$?
		rm -f "$V/$name.pid"
		echo "$rc" >"$V/$name.rc"
	) &
	VG_PIDS+=("$!")
}

# vg_wait: every vg started has ended.  (Not a bare wait: bats has
# children of its own.)
vg_wait() {
	local pid
	for pid in "${VG_PIDS[@]}"; do
		wait "$pid" || true
	done
	VG_PIDS=()
}

# lines [LINE...]: the lines given, each with its newline; none: nothing.
lines() {
	[ $# -eq 0 ] || printf '%s\n' "$@"
}

# vg_clean NAME: NAME ran under memcheck, which reported nothing.
vg_clean() {
	local f ran=0
	for f in "$V/$1".vg.*; do
		[ -e "$f" ] || continue
		ran=1
		[ ! -s "$f" ] || { echo "memcheck, $1:" >&2; cat "$f" >&2; return 1; }
	done
	[ "$ran" -eq 1 ] || { echo "$1: no memcheck report file" >&2; return 1; }
}

# vg_status NAME STATUS: NAME exited with STATUS; memcheck found nothing.
vg_status() {
	vg_clean "$1"
	[ "$(cat "$V/$1.rc")" = "$2" ] || {
		echo "$1: exit $(cat "$V/$1.rc"), not $2; stderr:" >&2
		cat "$V/$1.err" >&2
		return 1
	}
}

# vg_is NAME STATUS STDOUT STDERR: NAME exited with STATUS and printed
# exactly these (each a text of lines, without its last newline, or "").
vg_is() {
	vg_status "$1" "$2"
	diff -u <([ -z "$3" ] || printf '%s\n' "$3") "$V/$1.out"
	diff -u <([ -z "$4" ] || printf '%s\n' "$4") "$V/$1.err"
}

# vg_same NAME CMD [ARG...]: NAME printed and exited exactly as CMD does
# when run natively now (for the commands that only read the spool).
vg_same() {
	local name=$1 rc=0
	shift
	"$@" >"$V/$name.native.out" 2>"$V/$name.native.err" || rc=$?
	vg_status "$name" "$rc"
	diff -u "$V/$name.native.out" "$V/$name.out"
	diff -u "$V/$name.native.err" "$V/$name.err"
}

# at MS CMD...: CMD natively, with the clock at MS.
at() {
	local ms=$1
	shift
	SPOOL_TEST_NOW=$ms "$@"
}

# states ID...: "ID STATE" a line, STATE the directory of each file of ID
# (a job in two places shows both), or "-"; from one look at the spool.
states() {
	local files id where
	files=$(cd "$SPOOL_DIR" && find new leased done dead -type f)
	for id; do
		where=$(grep -E "(^|/)$id(,[0-9]+)?$" <<<"$files" |
		    cut -d/ -f1 | paste -sd' ')
		printf '%s %s\n' "$id" "${where:--}"
	done
}

# enq ID [ENQUEUE OPTION...]: enqueue ID natively, 100 ms after the last,
# so that claims take the jobs in the order enqueued.
enq() {
	local id=$1
	shift
	ENQ_AT=$((${ENQ_AT:-$T} + 100))
	at "$ENQ_AT" spool-enqueue --id "$id" "$@" <<<"payload of $id" >/dev/null
}

# claimed N: claim N jobs natively (owner w1, lease 30s) at T + 10000.
claimed() {
	[ "$(at $((T + 10000)) spool-claim --owner w1 -n "$1" | wc -l)" -eq "$1" ]
}

# finished ID OUTCOME [OPTION...]: finish ID's current lease natively at
# T + 10000.
finished() {
	at $((T + 10000)) spool-finish "${@:3}" "$1" "$(lease_token "$1")" "$2" \
	    >/dev/null
}

@test "spool-init: made, already a spool, not a spool" {
	mkdir "$BATS_TEST_TMPDIR/other"
	echo x >"$BATS_TEST_TMPDIR/other/file"
	vg made spool-init -d "$BATS_TEST_TMPDIR/new"
	vg again spool-init
	vg other spool-init -d "$BATS_TEST_TMPDIR/other"
	vg_wait
	vg_is made 0 "" ""
	[ -f "$BATS_TEST_TMPDIR/new/format" ]
	vg_is again 0 "" ""
	vg_is other 100 "" "spool-init: $BATS_TEST_TMPDIR/other: exists and is not a spool"
}

@test "spool-enqueue: from stdin, from files, duplicate, no such file" {
	enq dup
	cd "$BATS_TEST_TMPDIR"
	echo one >f1
	echo two >f2
	echo stdin >in
	VG_IN=in vg stdin spool-enqueue --id s1 --trace tr-1 --max-attempts 2 \
	    --deadline 1d --delay 5s
	vg files spool-enqueue f1 f2
	vg dup spool-enqueue --id dup f1
	vg nofile spool-enqueue --id z nosuch
	vg_wait
	vg_is stdin 0 "s1" ""
	vg_status files 0
	[ ! -s "$V/files.err" ]
	uuid='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
	[ "$(grep -cxE "$uuid" "$V/files.out")" -eq 2 ]
	[ "$(wc -l <"$V/files.out")" -eq 2 ]
	vg_is dup 1 "" "spool-enqueue: dup: duplicate ID: the job is in new/"
	vg_is nofile 100 "" "spool-enqueue: nosuch: No such file or directory"
	diff -u <(lines dup s1 | LC_ALL=C sort - "$V/files.out") <(ids_in new)
	diff -u - <(last_rec s1 ev at trace max dl) <<EOT
ev=enqueue
at=new:$((T + 5000))
trace=tr-1
max=2
dl=$((T + 86400000))
EOT
	fsck_clean
}

@test "spool-claim: leases, reclaims an expired lease, parks the last attempt, nothing due, usage" {
	enq j1
	enq j2 --max-attempts 1
	at $((T + 1000)) spool-claim --owner w1 --lease 1s -n 2 >/dev/null
	enq j3
	export SPOOL_TEST_NOW=$((T + 5000))
	vg claim spool-claim --owner w2 -n 3
	vg usage spool-claim -n 0
	vg_wait
	vg_status claim 0
	# j1 and j2 took tokens 1 and 2; j2 parks and takes none, so the
	# reclaim of j1 takes 3 and j3 (new/ is walked after) 4.
	diff -u - <(sort "$V/claim.out") <<EOT
j1	3	2	$(realpath "$SPOOL_DIR")/leased/j1,3
j3	4	1	$(realpath "$SPOOL_DIR")/leased/j3,4
EOT
	[ ! -s "$V/claim.err" ]
	vg_is usage 100 "" "spool-claim: -n: bad number '0' (1 to 256)"
	diff -u - <(last_rec j1 ev tok prev) <<EOT
ev=claim
tok=3
prev=1
EOT
	diff -u - <(last_rec j2 ev at reason cls se) <<EOT
ev=park
at=dead
reason=exhausted
cls=lease-expired
se=1
EOT
	vg none spool-claim --owner w2
	vg_wait
	vg_is none 1 "" ""
	fsck_clean
}

@test "spool-renew: extends the lease, stale token, bad token" {
	enq j1
	claimed 1
	export SPOOL_TEST_NOW=$((T + 20000))
	vg renew spool-renew --lease 1m j1 1
	vg stale spool-renew j1 5
	vg badtok spool-renew j1 x
	vg_wait
	vg_is renew 0 "" ""
	vg_is stale 1 "" "spool-renew: j1: stale token: the current token is 1 and the job is in leased/"
	vg_is badtok 100 "" "spool-renew: j1: bad token 'x' (a number from 1 to 10^18-1)"
	diff -u - <(last_rec j1 ev until) <<EOT
ev=renew
until=$((T + 80000))
EOT
	fsck_clean
}

@test "spool-finish: ok, retry, permanent, release; from stdin: a retry that parks, stale, no such job; a repeat; usage" {
	for id in ok retry perm release stale in1; do
		enq "$id"
	done
	enq spent --max-attempts 1
	# Claimed in the order enqueued: tokens 1 (ok) to 7 (spent).
	claimed 7
	export SPOOL_TEST_NOW=$((T + 20000))
	printf 'in1 6 ok\nspent 7 retry\nstale 9 ok\nnosuch 1 ok\n' \
	    >"$BATS_TEST_TMPDIR/lines"
	vg ok spool-finish ok 1 ok
	vg retry spool-finish --class transient --delay 0 retry 2 retry
	vg perm spool-finish --class invalid-input --detail 'bad row 7' perm 3 permanent
	vg release spool-finish release 4 release
	VG_IN=$BATS_TEST_TMPDIR/lines vg stdin spool-finish -
	vg usage spool-finish stale 5 maybe
	vg_wait
	vg_is ok 0 "ok" ""
	vg_is retry 0 "retry" ""
	vg_is perm 0 "perm" ""
	vg_is release 0 "release" ""
	vg_is stdin 1 "in1
spent" "spool-finish: stale: stale token: the current token is 5 and the job is in leased/
spool-finish: nosuch: no such job"
	vg_is usage 100 "" "spool-finish: stale: bad outcome 'maybe' (ok, retry, permanent or release)"
	diff -u - <(states ok retry perm release in1 spent stale) <<EOT
ok done
retry new
perm dead
release new
in1 done
spent dead
stale leased
EOT
	diff -u - <(last_rec perm reason cls detail) <<EOT
reason=permanent
cls=invalid-input
detail=bad%20row%207
EOT
	diff -u - <(last_rec spent ev reason) <<EOT
ev=park
reason=exhausted
EOT
	# A repeat of a finish changes nothing; another outcome is refused.
	printf 'ok 1 ok\nok 1 retry\n' >"$BATS_TEST_TMPDIR/again"
	VG_IN=$BATS_TEST_TMPDIR/again vg again spool-finish -
	vg_wait
	vg_is again 1 "ok" "spool-finish: ok: not leased: the job is in done/"
	fsck_clean
}

@test "spool-redrive: by ID with refusals (not parked, flagged), dry run, all at a rate, usage" {
	for id in p1 p2 flagged ok; do
		enq "$id"
	done
	claimed 4
	finished p1 permanent
	finished p2 permanent
	finished flagged retry --class unknown-side-effect
	finished ok ok
	export SPOOL_TEST_NOW=$((T + 20000))
	vg ids spool-redrive --by ops --note INC-1 p1 ok flagged
	vg usage spool-redrive p2
	vg_wait
	vg_is ids 1 "p1" "spool-redrive: ok: not parked: the job is in done/
spool-redrive: flagged: its side effect may have happened: reconcile it, then redrive with --reconciled"
	vg_is usage 100 "" "spool-redrive: --by WHO and --note TICKET are needed; missing: --by and --note"
	vg dry spool-redrive --by ops --note INC-2 --dry-run --all
	vg_wait
	vg_is dry 1 "p2" "spool-redrive: flagged: its side effect may have happened: reconcile it, then redrive with --reconciled
spool-redrive: dry run: would redrive 1 of 2 (1 refused)"
	vg all spool-redrive --by ops --note INC-3 --reconciled --all --rate 100/s
	vg_wait
	vg_status all 0
	diff -u <(lines flagged p2) <(sort "$V/all.out")
	[[ $(cat "$V/all.err") =~ ^"spool-redrive: redrove 2 of 2 (0 refused) in "[0-9]+\.[0-9]s$ ]]
	equals "$(ids_in dead)" ""
	diff -u - <(last_rec flagged ev by note cyc) <<EOT
ev=redrive
by=ops
note=INC-3
cyc=2
EOT
	fsck_clean
}

@test "spool-drop, spool-cancel, spool-purge: done and refused, by age, usage" {
	for id in parked queued done q2 d2 parked2 parked3; do
		enq "$id"
	done
	claimed 7
	finished parked permanent
	finished queued release
	finished done ok
	finished q2 release
	finished d2 ok
	finished parked2 permanent
	finished parked3 permanent
	export SPOOL_TEST_NOW=$((T + 20000))
	vg drop spool-drop --by ops --note INC-1 parked queued
	vg dropusage spool-drop parked
	vg cancel spool-cancel --by ops --note INC-2 q2 done
	vg cancelusage spool-cancel --by ops q2
	vg purge spool-purge done d2 parked2
	vg purgedead spool-purge --by ops --note INC-3 dead parked3
	vg purgeusage spool-purge new queued
	vg_wait
	vg_is drop 1 "parked" "spool-drop: queued: not parked: the job is in new/"
	vg_is dropusage 100 "" "spool-drop: --by WHO and --note TICKET are needed; missing: --by and --note"
	vg_is cancel 1 "q2" "spool-cancel: done: not queued: the job is in done/"
	vg_is cancelusage 100 "" "spool-cancel: --by WHO and --note TICKET are needed; missing: --note"
	vg_is purge 1 "d2" "spool-purge: parked2: not done: the job is in dead/"
	vg_is purgedead 0 "parked3" ""
	vg_is purgeusage 100 "" "usage: spool-purge [-d DIR] [--dry-run] done | dropped --older-than DUR [--keep N]
       spool-purge [-d DIR] [--dry-run] dead --by WHO --note TICKET --older-than DUR [--keep N]
       spool-purge [-d DIR] [--dry-run] [--by WHO --note TICKET] done | dead ID ... | [-0] -
       spool-purge [-d DIR] [--dry-run] --missing --by WHO --note TICKET ID ... | [-0] -"
	diff -u - <(states parked q2 d2 parked3) <<EOT
parked done
q2 dead
d2 -
parked3 -
EOT
	# A purge removes the sidecar (format 2); the audit log keeps the
	# purge, with its token (claimed in the order enqueued: d2 5,
	# parked3 7) and the operator.
	[ ! -e "$SPOOL_DIR/meta/d2" ]
	[ ! -e "$SPOOL_DIR/meta/parked3" ]
	diff -u - <(audit_events | grep '^purge ' | LC_ALL=C sort) <<EOT
purge d2 5 1 1 - - - -
purge parked3 7 1 1 ops permanent - INC-3
EOT
	# By age: dead/ (parked2, q2) kept to its newest one.
	export SPOOL_TEST_NOW=$((T + 3600000))
	vg old spool-purge dead --by ops --note INC-4 --older-than 1s --keep 1
	vg_wait
	vg_is old 0 "parked2" ""
	equals "$(ids_in dead)" q2
	fsck_clean
}

@test "spool-pause and spool-resume: paused, claims refused, resumed, usage" {
	enq j1
	vg pause spool-pause --by ops --note INC-5
	vg pauseusage spool-pause --by ops
	vg resumeusage spool-resume extra
	vg_wait
	vg_is pause 0 "" ""
	vg_is pauseusage 100 "" "spool-pause: --by WHO and --note TICKET go together; missing: --note"
	vg_is resumeusage 100 "" "usage: spool-resume [-d DIR] [--by WHO --note TICKET]"
	vg paused spool-claim --owner w1
	vg_wait
	vg_is paused 1 "" "spool-claim: spool paused"
	vg resume spool-resume --by ops --note INC-6
	vg_wait
	vg_is resume 0 "" ""
	equals "$(audit_events | cut -d' ' -f1,6,9)" "enqueue - -
pause ops INC-5
resume ops INC-6"
	claimed 1
}

@test "spool-ls and spool-show: text, JSON, NUL-separated, no such job, a damaged sidecar, usage" {
	for id in new leased done dead dropped bad; do
		enq "$id"
	done
	claimed 5
	finished done ok
	finished dead permanent --class invalid-input --detail 'bad row 7'
	finished dropped permanent
	at $((T + 11000)) spool-drop --by ops --note INC-1 dropped >/dev/null
	finished new release
	claimed 1	# the first due: bad
	finished bad ok
	export SPOOL_TEST_NOW=$((T + 3600000))
	vg lsl spool-ls -l dead
	vg lsjson spool-ls --json leased
	vg ls0 spool-ls -0 --older-than 1m --reason permanent dead
	vg lsusage spool-ls nosuchstate
	vg show spool-show dead
	vg showjson spool-show --json leased
	vg shownone spool-show nosuch
	vg_wait
	vg_same lsl spool-ls -l dead
	vg_same lsjson spool-ls --json leased
	vg_same ls0 spool-ls -0 --older-than 1m --reason permanent dead
	vg_same show spool-show dead
	vg_same showjson spool-show --json leased
	grep -q '^dead ' "$V/lsl.out"
	equals "$(jq -r '.id + " " + .state' "$V/lsjson.out")" "leased leased"
	equals "$(tr '\0' '\n' <"$V/ls0.out")" dead
	grep -qx 'state        dead' "$V/show.out"
	equals "$(jq -r '.id + " " + .state + " " + .owner' "$V/showjson.out")" "leased leased w1"
	vg_is shownone 1 "" "spool-show: nosuch: no such job"
	vg_is lsusage 100 "" "spool-ls: bad state 'nosuchstate' (new, leased, done, dead or dropped)"
	# A sidecar that is not a record log: named, the rest still listed.
	echo 'not a record' >>"$SPOOL_DIR/meta/bad"
	vg lsbad spool-ls -l done
	vg showbad spool-show bad
	vg_wait
	vg_same lsbad spool-ls -l done
	vg_same showbad spool-show bad
	vg_status lsbad 100
	vg_status showbad 100
	grep -q '^spool-ls: bad: ' "$V/lsbad.err"
	grep -q '^done ' "$V/lsbad.out"
}

@test "spool-stat: text, --json, --prom, --warn and --crit, usage" {
	for id in new leased done dead; do
		enq "$id"
	done
	claimed 4
	finished new release
	finished done ok
	finished dead permanent
	export SPOOL_TEST_NOW=$((T + 3600000))
	vg text spool-stat
	vg json spool-stat --json
	vg prom spool-stat --prom
	vg warn spool-stat --warn 'dead>0' --crit 'dead>5'
	vg crit spool-stat --warn 'dead>0' --crit 'oldest_dead>1m'
	vg usage spool-stat --json --prom
	vg_wait
	vg_same text spool-stat
	vg_same json spool-stat --json
	vg_same prom spool-stat --prom
	vg_same warn spool-stat --warn 'dead>0' --crit 'dead>5'
	vg_same crit spool-stat --warn 'dead>0' --crit 'oldest_dead>1m'
	vg_status warn 1
	vg_status crit 2
	vg_is usage 100 "" "usage: spool-stat [-d DIR] [-a | --ages | --json | --prom] [--warn EXPR] ... [--crit EXPR] ..."
	equals "$(jq -c '[.new, .leased, .done, .dead]' "$V/json.out")" "[1,1,1,1]"
	promtool check metrics <"$V/prom.out"
	grep -qx "spool_jobs{spool=\"$(realpath "$SPOOL_DIR")\",state=\"dead\"} 1" "$V/prom.out"
}

@test "spool-fsck: clean, problems found, repaired, usage" {
	for id in j1 j2 j3; do
		enq "$id"
	done
	claimed 3
	finished j1 ok
	vg clean spool-fsck
	vg usage spool-fsck extra
	vg_wait
	vg_is clean 0 "" ""
	vg_is usage 100 "" "usage: spool-fsck [-d DIR] [--repair | --restored] [--verify]"
	# A finish cut short after its record, a stray name, a file of no job,
	# an enqueue's leftover in tmp/.
	run -137 env SPOOL_TEST_CRASH=record-written SPOOL_TEST_NOW=$((T + 10000)) \
	    spool-finish j2 "$(lease_token j2)" ok
	echo x >"$SPOOL_DIR/done/not a job"
	echo x >"$SPOOL_DIR/done/nobody"
	echo x >"$SPOOL_DIR/tmp/left,999999999"
	export SPOOL_TEST_NOW=$((T + 20000))
	vg found spool-fsck
	vg_wait
	vg_same found spool-fsck
	vg_status found 1
	vg repair spool-fsck --repair
	vg_wait
	vg_status repair 0
	diff -u - <(LC_ALL=C sort "$V/repair.out" "$V/repair.err") <<EOT
done/nobody: a file no job owns (no sidecar, and no audit line of ID nobody) (quarantined): to make it a job, spool-enqueue --id nobody FILE
done/not a job: not a job's name (quarantined)
j2: its last transition was cut short before its move (marked void)
tmp: left,999999999: left by an interrupted enqueue, never published (removed)
EOT
	fsck_clean
	equals "$(states j2)" "j2 leased"
	[ "$(ls "$SPOOL_DIR/quarantine" | wc -l)" -eq 2 ]
}

@test "spool-run --once: each way a handler ends, renewals, a stopped worker's release, nothing due, no handler" {
	unset SPOOL_TEST_NOW
	sed -i 's/^backoff=.*/backoff=1h/' "$SPOOL_DIR/config"
	export FIFO=$BATS_TEST_TMPDIR/fifo
	mkfifo "$FIFO"
	H=$BATS_TEST_TMPDIR/handler
	cat >"$H" <<'EOF'
#!/bin/sh
case $SPOOL_JOB_ID in
ok) exit 0 ;;
retry) exit 75 ;;
perm) exit 100 ;;
crash) exit 3 ;;
signal) kill -KILL $$ ;;
result) echo 'class=rate-limited delay=2h' >"$SPOOL_RESULT"; exit 75 ;;
slow) exec sleep 60 ;;
held) echo "$PPID" >"$FIFO"; exec sleep 60 ;;
esac
exit 99
EOF
	chmod +x "$H"
	ids="ok retry perm crash signal result held"
	for id in $ids; do
		spool-enqueue --id "$id" </dev/null >/dev/null
	done
	# The slow job alone on a spool, so that no worker takes its short
	# lease over (valgrind is slow): it is renewed, then timed out.
	S=$BATS_TEST_TMPDIR/slow
	spool-init -d "$S"
	sed -i 's/^backoff=.*/backoff=1h/' "$S/config"
	spool-enqueue -d "$S" --id slow </dev/null >/dev/null
	for id in $ids; do
		vg "run-$id" spool-run --once --grace 1s -- "$H"
	done
	vg run-slow spool-run -d "$S" --once --lease 3s --timeout 2s --grace 1s -- "$H"
	# The worker whose handler holds a job is told to stop: it releases.
	exec {fd}<>"$FIFO"
	read -t 60 -r pid <&"$fd"
	exec {fd}<&-
	kill -TERM "$pid"
	vg_wait
	# Each says one line of its delivery, no more.  The workers ran at
	# once, so which took which job is not known: one line a job.
	for id in $ids slow; do
		vg_status "run-$id" 0
		diff -u /dev/null "$V/run-$id.out"
		equals "$(wc -l <"$V/run-$id.err")" 1
	done
	equals "$(for id in $ids slow; do cut -d' ' -f3 "$V/run-$id.err"; done |
	    LC_ALL=C sort | paste -sd' ')" \
	    "$(printf '%s\n' $ids slow | LC_ALL=C sort | paste -sd' ')"
	diff -u - <(for id in $ids slow; do
		[ "$id" != slow ] || SPOOL_DIR=$S
		echo "$id $(last_rec "$id" ev out cls | sed 's/=$/=-/' |
		    cut -d= -f2 | paste -sd' ')"
	done) <<EOT
ok ok ok -
retry retry retry transient
perm park permanent -
crash retry retry crashed
signal retry retry crashed
result retry retry rate-limited
held release release -
slow retry retry timeout
EOT
	grep -q '^[^ ]* renew slow ' "$S"/audit/*.log
	# Nothing due (on the slow job's spool: held is due again), no handler.
	vg none spool-run -d "$S" --once -- "$H"
	vg nohandler spool-run --once -- "$BATS_TEST_TMPDIR/nosuch"
	vg_wait
	vg_is none 1 "" ""
	vg_is nohandler 100 "" "spool-run: $BATS_TEST_TMPDIR/nosuch: not found, or not executable"
	fsck_clean
}
