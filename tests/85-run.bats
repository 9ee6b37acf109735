#!/usr/bin/env bats
# spool-run: the worker.  Every way a handler can end maps to one outcome;
# leases are renewed while it runs and a lost lease is never finished;
# SIGTERM releases what has not finished; an idle worker sleeps in one
# blocking call; a worker killed mid-job loses nothing.
#
# Synchronisation is by the events fifo (handlers write a line to it as they
# start or stop), per-job gate fifos (a handler blocks until the test opens
# its gate), /proc/locks, and wait: never by sleeping.  Handlers may sleep
# as their workload.

load helpers

BATS_TEST_TIMEOUT=60

eval "helpers_$(declare -f setup)"

setup() {
	helpers_setup
	# The handler of most tests runs its payload as shell code.
	H=$BATS_TEST_TMPDIR/handler
	printf '#!/bin/sh\neval "$(cat)"\n' >"$H"
	chmod +x "$H"
	export EVENTS=$BATS_TEST_TMPDIR/events GATES=$BATS_TEST_TMPDIR/gates
	export PIDS=$BATS_TEST_TMPDIR/pids T=$BATS_TEST_TMPDIR
	# The workers' private result directories, even a killed one's.
	export TMPDIR=$BATS_TEST_TMPDIR
	mkfifo "$EVENTS"
	mkdir "$GATES"
	exec {EVFD}<>"$EVENTS"
	# A retried job comes back in an hour: each test sees one delivery.
	sed -i 's/^backoff=.*/backoff=1h/' "$SPOOL_DIR/config"
	WPID=
}

# Nothing a test started outlives it, even when it fails half-way.
teardown() {
	local p
	[ -z "$WPID" ] || kill -KILL "$WPID" 2>/dev/null || true
	if [ -f "$PIDS" ]; then
		while read -r p; do
			kill -KILL -- "-$p" 2>/dev/null || true
		done <"$PIDS"
	fi
	exec {EVFD}<&-
}

# start_worker ARG...: spool-run in the background; stdout and stderr in
# $T/out and $T/err.
start_worker() {
	spool-run "$@" >"$T/out" 2>"$T/err" 3>&- {EVFD}<&- &
	WPID=$!
}

# runlog: spool-run's lines on stdin, with the time as T and the duration
# as D; other lines as they are.
runlog() {
	sed -E 's/^spool-run: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z /spool-run: T /
	    s/ duration=[0-9]+\.[0-9]{3}s / duration=D /'
}

# wait_worker STATUS: the worker ends with STATUS.
wait_worker() {
	local rc=0
	wait "$WPID" || rc=$?
	WPID=
	[ "$rc" -eq "$1" ] || { echo "worker exit $rc, not $1" >&2; cat "$T/err" >&2; return 1; }
}

# The next line a handler wrote to the events fifo.
next_event() {
	local line
	read -r -t 20 -u "$EVFD" line || { echo "no event" >&2; return 1; }
	printf '%s\n' "$line"
}

# enqueue ID CODE [OPTION...]: a job whose handler runs CODE.
enqueue() {
	local id=$1 code=$2
	shift 2
	printf '%s\n' "$code" | spool-enqueue --id "$id" "$@" >/dev/null
}

# Open the gate a handler waits at with: read -r _ <"$GATES/ID".
gate() { mkfifo "$GATES/$1"; }
open_gate() { echo go >"$GATES/$1"; }

# last_recs "KEY ..." ID ...: a line for each ID, "ID key=value ...", of
# the named fields of its last sidecar record ("key=" where it has none).
last_recs() {
	local keys=$1 files=() id
	shift
	for id; do files+=("$SPOOL_DIR/meta/$id"); done
	tail -q -n 1 "${files[@]}" | awk -v keys="$keys" -v ids="$*" '
	BEGIN { split(ids, id, " "); n = split(keys, k, " ") }
	{
		line = id[NR]
		for (i = 1; i <= n; i++) {
			v = ""
			for (j = 1; j <= NF; j++)
				if (index($j, k[i] "=") == 1)
					v = substr($j, length(k[i]) + 2)
			line = line " " k[i] "=" v
		}
		print line
	}'
}

# last_rec ID KEY ...: the named fields of ID's last record, one a line.
last_rec() {
	local id=$1
	shift
	last_recs "$*" "$id" | tr ' ' '\n' | sed 1d
}

# One field of every record of ID with event EV, a line each.
recs() {
	grep " ev=$2 " "$SPOOL_DIR/meta/$1" | tr ' ' '\n' | sed -n "s/^$3=//p"
}

# Wait until process PID sleeps in poll(2), its one blocking wait.
wait_polling() {
	local end=$((SECONDS + 20)) wchan=
	until [[ $wchan = *poll* ]]; do
		wchan=$(cat "/proc/$1/wchan") || return 1
		[ "$SECONDS" -lt "$end" ] || { echo "never blocked: $wchan" >&2; return 1; }
	done
}

# Wait until process PID waits for an flock(2) lock.
wait_lock_waiter() {
	local end=$((SECONDS + 20))
	until grep -q -- "-> FLOCK .* $1 " /proc/locks; do
		[ "$SECONDS" -lt "$end" ] || { echo "$1 never waited" >&2; return 1; }
	done
}

# A process that has ended (or is a zombie awaiting its reaper).  Its
# stat read once: one reaped between two looks is gone, not an error.
gone() {
	local s
	s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
	[ "$s" = Z ]
}

# Wait until each PID has gone.
wait_gone() {
	local end=$((SECONDS + 20)) p
	for p; do
		until gone "$p"; do
			[ "$SECONDS" -lt "$end" ] || { echo "$p never went" >&2; return 1; }
			sleep 0.05
		done
	done
}

@test "the handler gets the payload on stdin, the job in its environment, and its arguments" {
	cat >"$T/show" <<'EOF'
#!/bin/sh
cat >"$T/stdin"
env | grep '^SPOOL_' | grep -v '^SPOOL_RESULT=' | LC_ALL=C sort
echo "args: $*"
case $SPOOL_RESULT in /*/spool-run.*/"$SPOOL_JOB_ID,$SPOOL_TOKEN") echo result ok ;; esac
EOF
	chmod +x "$T/show"
	printf 'line one\n\001\377 binary\000 tail' >"$T/payload"
	spool-enqueue --id order-1842 --trace trace-7 "$T/payload" >/dev/null
	run -0 --separate-stderr spool-run --once --owner w1 -- "$T/show" one 'two words'
	dir=$(realpath "$SPOOL_DIR")
	diff -u - <(printf '%s\n' "$output") <<EOF
SPOOL_ATTEMPT=1
SPOOL_CYCLE=1
SPOOL_DIR=$dir
SPOOL_HOST=testhost
SPOOL_JOB_ID=order-1842
SPOOL_JOB_PATH=$dir/leased/order-1842,1
SPOOL_TOKEN=1
SPOOL_TRACE=trace-7
args: one two words
result ok
EOF
	equals "$(runlog <<<"$stderr")" \
	    "spool-run: T order-1842 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
	cmp "$T/payload" "$T/stdin"
	equals "$(state_of order-1842)" done
	diff -u - <(audit_events) <<EOF
enqueue order-1842 0 0 1 - - - -
claim order-1842 1 1 1 w1 - - -
ok order-1842 1 1 1 w1 - - -
EOF
	# The private directory of results is gone with the worker.
	equals "$(find "$TMPDIR" -maxdepth 1 -name 'spool-run.*')" ""
}

@test "every exit status maps to its outcome and class" {
	for s in 0 1 2 64 65 75 77 78 100 111 255; do
		enqueue "s$s" "exit $s"
	done
	enqueue sig 'kill -KILL $$'
	run -0 --separate-stderr spool-run -j 4 --max-jobs 12 --owner w1 -- "$H"
	equals "$output" ""
	# One line a delivery, in the order they ended.
	diff -u - <(runlog <<<"$stderr" | sed 's/ token=[0-9]*//' | LC_ALL=C sort) <<'EOF'
spool-run: T s0 attempt=1 exit=0 duration=D outcome=ok class=- state=done
spool-run: T s1 attempt=1 exit=1 duration=D outcome=retry class=crashed state=new
spool-run: T s100 attempt=1 exit=100 duration=D outcome=permanent class=- state=dead reason=permanent
spool-run: T s111 attempt=1 exit=111 duration=D outcome=retry class=transient state=new
spool-run: T s2 attempt=1 exit=2 duration=D outcome=retry class=crashed state=new
spool-run: T s255 attempt=1 exit=255 duration=D outcome=retry class=crashed state=new
spool-run: T s64 attempt=1 exit=64 duration=D outcome=permanent class=invalid-input state=dead reason=permanent
spool-run: T s65 attempt=1 exit=65 duration=D outcome=permanent class=invalid-input state=dead reason=permanent
spool-run: T s75 attempt=1 exit=75 duration=D outcome=retry class=transient state=new
spool-run: T s77 attempt=1 exit=77 duration=D outcome=permanent class=permission state=dead reason=permanent
spool-run: T s78 attempt=1 exit=78 duration=D outcome=retry class=dependency-down state=new
spool-run: T sig attempt=1 signal=9 duration=D outcome=retry class=crashed state=new
EOF
	diff -u - <(last_recs "ev out cls reason detail" s0 s1 s2 s64 s65 s75 \
	    s77 s78 s100 s111 s255 sig) <<'EOF'
s0 ev=ok out=ok cls= reason= detail=
s1 ev=retry out=retry cls=crashed reason= detail=exit%201
s2 ev=retry out=retry cls=crashed reason= detail=exit%202
s64 ev=park out=permanent cls=invalid-input reason=permanent detail=exit%2064
s65 ev=park out=permanent cls=invalid-input reason=permanent detail=exit%2065
s75 ev=retry out=retry cls=transient reason= detail=exit%2075
s77 ev=park out=permanent cls=permission reason=permanent detail=exit%2077
s78 ev=retry out=retry cls=dependency-down reason= detail=exit%2078
s100 ev=park out=permanent cls= reason=permanent detail=exit%20100
s111 ev=retry out=retry cls=transient reason= detail=exit%20111
s255 ev=retry out=retry cls=crashed reason= detail=exit%20255
sig ev=retry out=retry cls=crashed reason= detail=signal%209
EOF
	equals "$(ids_in done)" s0
	equals "$(ids_in dead)" "$(printf '%s\n' s100 s64 s65 s77)"
	check_invariants
	fsck_clean
}

@test "a crashed delivery that parks is flagged for reconciliation; a permanent one is not" {
	enqueue c1 'exit 1' --max-attempts 1
	enqueue p1 'exit 65' --max-attempts 1
	run -0 spool-run --max-jobs 2 --owner w1 -- "$H"
	diff -u - <(last_rec c1 ev reason cls se) <<'EOF'
ev=park
reason=exhausted
cls=crashed
se=1
EOF
	diff -u - <(last_rec p1 ev reason cls se) <<'EOF'
ev=park
reason=permanent
cls=invalid-input
se=
EOF
}

@test "a class and delay named in SPOOL_RESULT override the status's, so Retry-After is honoured" {
	enqueue rl 'echo "class=rate-limited delay=30s" >"$SPOOL_RESULT"; exit 75'
	enqueue dd 'echo class=dependency-down >"$SPOOL_RESULT"; exit 1'
	enqueue now 'echo delay=0 >"$SPOOL_RESULT"; exit 111'
	enqueue cx 'printf "class=cancelled\ndelay=5s\n" >"$SPOOL_RESULT"; exit 100'
	enqueue okc 'echo class=rate-limited >"$SPOOL_RESULT"; exit 0'
	enqueue bad 'echo class=nonsense >"$SPOOL_RESULT"; exit 0'
	enqueue gone 'rm "$SPOOL_RESULT"; exit 75'
	run -0 --separate-stderr spool-run --max-jobs 7 --owner w1 -- "$H"
	# (jobs due in one 16 ms bucket are claimed in any order)
	diff -u - <(runlog <<<"$stderr" | sed 's/ token=[0-9]*//' | LC_ALL=C sort) <<'EOF'
spool-run: T bad attempt=1 exit=0 duration=D outcome=retry class=crashed state=new
spool-run: T cx attempt=1 exit=100 duration=D outcome=permanent class=cancelled state=dead reason=permanent
spool-run: T dd attempt=1 exit=1 duration=D outcome=retry class=dependency-down state=new
spool-run: T gone attempt=1 exit=75 duration=D outcome=retry class=transient state=new
spool-run: T now attempt=1 exit=111 duration=D outcome=retry class=transient state=new
spool-run: T okc attempt=1 exit=0 duration=D outcome=ok class=- state=done
spool-run: T rl attempt=1 exit=75 duration=D outcome=retry class=rate-limited state=new
EOF
	diff -u - <(last_recs "ev cls detail" rl dd now cx okc bad gone) <<'EOF'
rl ev=retry cls=rate-limited detail=exit%2075
dd ev=retry cls=dependency-down detail=exit%201
now ev=retry cls=transient detail=exit%20111
cx ev=park cls=cancelled detail=exit%20100
okc ev=ok cls= detail=
bad ev=retry cls=crashed detail=SPOOL_RESULT:%20bad%20word%20'class=nonsense'
gone ev=retry cls=transient detail=exit%2075
EOF
	# Eligible again exactly 30s after the retry, and at once.
	t=$(last_rec rl t | cut -d= -f2)
	equals "$(last_rec rl at)" "at=new:$((t + 30000))"
	t=$(last_rec now t | cut -d= -f2)
	equals "$(last_rec now at)" "at=new:$t"
}

@test "stderr passes through a line at a time after the job's ID; its tail is the detail, in the sidecar only" {
	enqueue j1 'head -c 1500 /dev/zero | tr "\0" x >&2; printf "\nfirst line\nsecond line\n" >&2; echo out; exit 3'
	run -0 --separate-stderr spool-run --once --owner w1 -- "$H"
	equals "$output" out
	# A line longer than 1024 bytes is cut there.
	x() { head -c "$1" /dev/zero | tr '\0' x; }
	diff -u - <(runlog <<<"$stderr") <<EOF
j1: $(x 1024)
j1: $(x 476)
j1: first line
j1: second line
spool-run: T j1 token=1 attempt=1 exit=3 duration=D outcome=retry class=crashed state=new
EOF
	# 200 bytes: the status, then the end of stderr on one line.
	want="exit 3: $(head -c 169 /dev/zero | tr '\0' x) first line second line"
	[ "${#want}" -eq 200 ]
	equals "$(last_rec j1 detail | sed 's/%20/ /g')" "detail=$want"
	equals "$(grep -h 'line' "$SPOOL_DIR"/audit/*.log)" ""
	equals "$(audit_events | tail -n 1)" "retry j1 1 1 1 w1 - crashed -"
}

@test "a line of exactly 1024 bytes whose newline comes in a later write is one line" {
	enqueue j1 'head -c 1024 /dev/zero | tr "\0" x >&2; sleep 0.2; printf "\nnext\n" >&2'
	run -0 --separate-stderr spool-run --once --owner w1 -- "$H"
	diff -u - <(runlog <<<"$stderr") <<EOF
j1: $(head -c 1024 /dev/zero | tr '\0' x)
j1: next
spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done
EOF
}

@test "--timeout stops the handler with SIGTERM and retries it as timeout; a last attempt parks flagged" {
	code='echo "start $SPOOL_JOB_ID" >"$EVENTS"; trap "echo term \$SPOOL_JOB_ID >\"\$EVENTS\"; exit 143" TERM; sleep 60 & wait'
	enqueue t1 "$code"
	enqueue t2 "$code" --max-attempts 1
	# A second: a loaded machine may take a good part of it to start
	# the handler's shell, which must set its trap before the SIGTERM.
	run -0 --separate-stderr spool-run -j 2 --max-jobs 2 --timeout 1s --owner w1 -- "$H"
	diff -u - <(runlog <<<"$stderr" | LC_ALL=C sort) <<'EOF'
spool-run: T t1 token=1 attempt=1 exit=143 duration=D outcome=retry class=timeout state=new stopped=timeout
spool-run: T t2 token=2 attempt=1 exit=143 duration=D outcome=retry class=timeout state=dead reason=exhausted stopped=timeout
EOF
	for k in 1 2 3 4; do next_event; done >"$T/seen"
	diff -u <(printf '%s\n' "start t1" "start t2" "term t1" "term t2") \
	    <(LC_ALL=C sort "$T/seen")
	diff -u - <(last_rec t1 ev att cls detail) <<'EOF'
ev=retry
att=1
cls=timeout
detail=timed%20out%20after%201s
EOF
	diff -u - <(last_rec t2 ev reason cls se) <<'EOF'
ev=park
reason=exhausted
cls=timeout
se=1
EOF
}

@test "a handler that ignores SIGTERM is killed with its children, and still retried as timeout" {
	enqueue j1 'trap "" TERM; sleep 60 & echo "start $!" >"$EVENTS"; wait'
	start_worker --max-jobs 1 --timeout 1s --owner w1 -- "$H"
	child=$(next_event | cut -d' ' -f2)
	wait_worker 0
	gone "$child"
	# The timeout as a person gives it: 1s, not 1000ms.
	equals "$(last_rec j1 ev cls detail)" "$(printf '%s\n' ev=retry cls=timeout \
	    detail=timed%20out%20after%201s)"
}

@test "a handler that runs past its lease has it renewed, and nobody takes the job over" {
	# Renewed every 500 ms: each renewal may come a second late, on a
	# loaded machine, before the thief could take the job.
	enqueue j1 'sleep 2.5; spool-claim --owner thief; echo "thief $?" >"$EVENTS"'
	start_worker --max-jobs 1 --lease 1500ms --owner w1 -- "$H"
	equals "$(next_event)" "thief 1"
	wait_worker 0
	equals "$(state_of j1)" done
	equals "$(recs j1 renew tok | sort -u)" 1
	equals "$(recs j1 renew own | sort -u)" w1
	[ "$(recs j1 renew tok | wc -l)" -ge 2 ]
	# Each renew moved the expiry later, past the first lease's.
	recs j1 claim until >"$T/until"
	recs j1 renew until >>"$T/until"
	sort -n -c -u "$T/until"
	equals "$(last_rec j1 ev tok own)" "$(printf '%s\n' ev=ok tok=1 own=w1)"
	equals "$(audit_events | grep '^reclaim')" ""
	equals "$(cat "$T/out")" ""
	equals "$(runlog <"$T/err")" "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
}

@test "a renew refused after a takeover stops the handler, and the job is not finished" {
	enqueue j1 'echo start >"$EVENTS"; trap "echo term >\"\$EVENTS\"; exit 0" TERM; sleep 60 & wait'
	start_worker --max-jobs 1 --lease 3s --owner w1 -- "$H"
	equals "$(next_event)" start
	# Another claimer whose clock is past the lease takes the job over.
	run -0 env SPOOL_TEST_NOW=$(($(date +%s%3N) + 10000)) spool-claim --owner thief
	equals "$(cut -f1-3 <<<"$output")" "$(printf 'j1\t2\t2')"
	equals "$(next_event)" term
	wait_worker 0
	equals "$(runlog <"$T/err")" "$(printf '%s\n' "spool-run: j1: lease lost (stale token): handler stopped, job not finished" \
	    "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=- class=- state=- stopped=lost")"
	# The handler's exit 0 did not finish it: the thief holds it still.
	equals "$(cd "$SPOOL_DIR" && find leased -type f)" "leased/j1,2"
	equals "$(last_rec j1 ev tok own)" "$(printf '%s\n' ev=claim tok=2 own=thief)"
	diff -u - <(audit_events | grep -v '^renew') <<'EOF'
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
reclaim j1 2 2 1 thief - lease-expired 1
EOF
	fsck_clean
}

@test "SIGTERM: a handler still running after the grace is stopped and its job released" {
	enqueue j1 'echo start >"$EVENTS"; trap "echo term >\"\$EVENTS\"; exit 0" TERM; sleep 60 & wait'
	start_worker --grace 500ms --owner w1 -- "$H"
	equals "$(next_event)" start
	t0=${EPOCHREALTIME/./}
	kill -TERM "$WPID"
	equals "$(next_event)" term
	t1=${EPOCHREALTIME/./}
	wait_worker 0
	# It was left alone for the grace (a lower bound: nothing to race).
	[ $((t1 - t0)) -ge 500000 ]
	equals "$(state_of j1)" new
	diff -u - <(last_rec j1 ev att out detail) <<'EOF'
ev=release
att=0
out=release
detail=stopped%20after%20the%20grace
EOF
	equals "$(audit_events | tail -n 1)" "release j1 1 0 1 w1 - - -"
	equals "$(runlog <"$T/err")" "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=release class=- state=new stopped=shutdown"
}

@test "SIGTERM: claimed jobs not yet started are released at once; a running one finishes in the grace" {
	enqueue a 'echo "start a" >"$EVENTS"; read -r _ <"$GATES/a"'
	gate a
	start_worker -j 3 --grace 20s --owner w1 -- "$H"
	equals "$(next_event)" "start a"
	wait_polling "$WPID"
	# b and c arrive together; the claim that takes them then waits for
	# the lease hint's lock, which we hold while SIGTERM arrives.
	kill -STOP "$WPID"
	enqueue b 'echo "start b" >"$EVENTS"'
	enqueue c 'echo "start c" >"$EVENTS"'
	exec {LK}<"$SPOOL_DIR/next-expiry"
	flock -x "$LK"
	kill -CONT "$WPID"
	wait_lock_waiter "$WPID"
	kill -TERM "$WPID"
	exec {LK}<&-
	open_gate a
	wait_worker 0
	equals "$(state_of a)" done
	equals "$(state_of b)" new
	equals "$(state_of c)" new
	# One claim took b and c, tokens 2 and 3 in the order it found them
	# (due in the same 16 ms, they come in directory order).
	tb=$(recs b claim tok)
	tc=$(recs c claim tok)
	equals "$(printf '%s\n' "$tb" "$tc" | sort -n | paste -sd' ')" "2 3"
	diff -u - <(audit_events | head -n 6) <<EOF
enqueue a 0 0 1 - - - -
claim a 1 1 1 w1 - - -
enqueue b 0 0 1 - - - -
enqueue c 0 0 1 - - - -
$(printf 'claim b %s 1 1 w1 - - -\nclaim c %s 1 1 w1 - - -\n' "$tb" "$tc" |
    sort -k3n)
EOF
	# a may end before or after b and c are released.
	diff -u - <(audit_events | sed 1,6d | LC_ALL=C sort) <<EOF
ok a 1 1 1 w1 - - -
release b $tb 0 1 w1 - - -
release c $tc 0 1 w1 - - -
EOF
	equals "$(last_rec b detail)" "detail=not%20started:%20the%20worker%20is%20stopping"
	# Neither handler ran.
	if read -r -t 0 -u "$EVFD"; then echo "a handler ran" >&2; false; fi
	equals "$(runlog <"$T/err")" "spool-run: T a token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
	fsck_clean
}

@test "-j 4 runs four handlers at once, never two for one job" {
	for k in 1 2 3 4 5 6 7 8; do
		enqueue j$k 'echo "start $SPOOL_JOB_ID $SPOOL_TOKEN" >"$EVENTS"; read -r _ <"$GATES/$SPOOL_JOB_ID"'
		gate j$k
	done
	start_worker -j 4 --max-jobs 8 --owner w1 -- "$H"
	for k in 1 2 3 4; do next_event; done >"$T/started"
	# Four run, four wait: the worker holds no lease it cannot run.
	[ "$(ids_in leased | wc -l)" -eq 4 ]
	[ "$(ids_in new | wc -l)" -eq 4 ]
	diff -u <(cut -d' ' -f2 "$T/started" | sort) <(ids_in leased)
	# Each time one ends, one more starts.
	for k in 1 2 3 4; do
		open_gate "$(sed -n "${k}p" "$T/started" | cut -d' ' -f2)"
		next_event >>"$T/started"
		[ "$(ids_in leased | wc -l)" -le 4 ]
	done
	for id in $(tail -n 4 "$T/started" | cut -d' ' -f2); do open_gate "$id"; done
	wait_worker 0
	[ "$(ids_in done | wc -l)" -eq 8 ]
	[ "$(wc -l <"$T/started")" -eq 8 ]
	[ "$(cut -d' ' -f2 "$T/started" | sort -u | wc -l)" -eq 8 ]
	# Each started once, on its first claim: the eight claims took the
	# spool's first eight tokens, one each.
	equals "$(cut -d' ' -f3 "$T/started" | sort -n | paste -sd' ')" "1 2 3 4 5 6 7 8"
	equals "$(audit_events | grep '^reclaim')" ""
	fsck_clean
}

@test "handlers that ended together are finished in one call: one audit write, one time" {
	local k spid
	# LeakSanitizer cannot run in a traced process: the worker is traced.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	for k in 1 2 3 4; do
		enqueue j$k 'echo "start $$" >"$EVENTS"; read -r _ <"$GATES/$SPOOL_JOB_ID"'
		gate j$k
	done
	start_worker -j 4 --max-jobs 4 --owner w1 -- "$H"
	for k in 1 2 3 4; do next_event; done >"$T/started"
	strace -qq -s 4096 -e trace=write -o "$T/trace" -p "$WPID" &
	spid=$!
	local end=$((SECONDS + 20))
	until [ "$(awk '/^TracerPid/ { print $2 }' "/proc/$WPID/status")" != 0 ]; do
		kill -0 "$spid" 2>/dev/null || { echo "strace could not attach" >&2; return 1; }
		[ "$SECONDS" -lt "$end" ] || { echo "strace never attached" >&2; return 1; }
		sleep 0.01
	done
	# The worker stopped, the four handlers end; it sees them all at once.
	kill -STOP "$WPID"
	for k in 1 2 3 4; do open_gate j$k; done
	# shellcheck disable=SC2046 # process IDs, one word each
	wait_gone $(cut -d' ' -f2 "$T/started")
	kill -CONT "$WPID"
	wait_worker 0
	wait "$spid"
	equals "$(ids_in done | paste -sd' ')" "j1 j2 j3 j4"
	# One write appended the four audit lines: one finish, one wait.
	grep ' ok j1 ' "$T/trace" | grep ' ok j2 ' | grep ' ok j3 ' |
	    grep -q ' ok j4 '
	equals "$(for k in 1 2 3 4; do recs j$k ok t; done | sort -u | wc -l)" 1
	fsck_clean
}

# The trace's audit lines, "EVENT ID" each, and its syncs, a run of them
# as one "sync": what was written between which waits.
lines_and_waits() {
	awk '/ write\([0-9]+, "[0-9][0-9][0-9][0-9]-/ {
		s = $0; sub(/^[^"]*"/, "", s)
		n = split(s, l, /\\n/)
		for (i = 1; i < n; i++) { split(l[i], f, " "); print f[2], f[3] }
		next
	}
	/f(data)?sync\(/ { print "sync" }' "$1" | uniq
}

@test "a worker ends a delivery and claims the next job in one wait: no sync between them" {
	local k now
	# LeakSanitizer cannot run in a traced process: the worker is traced.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	now=$(date +%s%3N)
	for k in 1 2 3; do	# in this order, each in a bucket of its own
		echo "$k" | at_ms $((now - 1000 + k * 100)) spool-enqueue --id j$k >/dev/null
	done
	# The syncs of a wait in threads, where strace sees them.
	SPOOL_TEST_NO_URING=1 run -0 strace -qq -f -s 4096 \
	    -e trace=write,fdatasync,fsync -o "$T/trace" \
	    spool-run -j 1 --idle-exit 0 --owner w1 -- true
	equals "$(lines_and_waits "$T/trace")" "$(printf '%s\n' sync \
	    'claim j1' sync 'ok j1' 'claim j2' sync 'ok j2' 'claim j3' sync \
	    'ok j3' sync)"
	equals "$(ids_in done | paste -sd' ')" "j1 j2 j3"
	fsck_clean
}

@test "an idle worker makes no system calls, and a new job wakes it at once" {
	start_worker --max-jobs 1 --owner w1 -- "$H"
	wait_polling "$WPID"
	# ppoll(fds, nfds, timeout, ...): no timeout, so no timer can wake it.
	read -r nr fds nfds timeout rest <"/proc/$WPID/syscall"
	equals "$timeout" 0x0
	before=$(grep ctxt_switches "/proc/$WPID/status")
	sleep 2		# the idle period measured, not a synchronisation
	after=$(grep ctxt_switches "/proc/$WPID/status")
	equals "$before" "$after"
	enqueue j1 'echo "start $SPOOL_JOB_ID" >"$EVENTS"'
	equals "$(next_event)" "start j1"
	wait_worker 0
	equals "$(state_of j1)" done
}

@test "a job due later is started at its eligible time, by the worker's timer" {
	start_worker --max-jobs 1 --owner w1 -- "$H"
	wait_polling "$WPID"
	# Its enqueue wakes the worker, which then sleeps until it is due:
	# nothing else happens in the spool to wake it.
	enqueue j1 'echo start >"$EVENTS"' --delay 700ms
	equals "$(next_event)" start
	wait_worker 0
	eligible=$(head -n 1 "$SPOOL_DIR/meta/j1" | tr ' ' '\n' | sed -n 's/^at=new://p')
	[ "$(recs j1 claim t)" -ge "$eligible" ]
}

@test "a paused spool: the worker waits without a timer, and a resume wakes it" {
	enqueue j1 'echo start >"$EVENTS"'
	spool-pause >/dev/null
	start_worker --max-jobs 1 --owner w1 -- "$H"
	wait_polling "$WPID"
	read -r nr fds nfds timeout rest <"/proc/$WPID/syscall"
	equals "$timeout" 0x0
	equals "$(state_of j1)" new
	spool-resume >/dev/null
	equals "$(next_event)" start
	wait_worker 0
	equals "$(state_of j1)" done
}

@test "a worker killed with SIGKILL takes its handlers with it; the job is reclaimed with a higher token" {
	enqueue j1 'echo "start $SPOOL_TOKEN" >"$EVENTS"; [ "$SPOOL_TOKEN" -gt 1 ] || { sleep 60 & echo "child $!" >"$EVENTS"; echo $$ >>"$PIDS"; wait; }'
	start_worker --lease 1s --owner w1 -- "$H"
	equals "$(next_event)" "start 1"
	child=$(next_event)
	child=${child#child }
	keeper=$(pgrep -P "$WPID" -x spool-run-keep)
	kill -KILL "$WPID"
	wait_worker 137
	# The keeper kills the handler's group, the handler's child with it,
	# and removes the result directory.
	wait_gone "$(cat "$PIDS")" "$child" "$keeper"
	equals "$(cat "$T/err")" "spool-run: the worker is gone: killed 1 handler and what it started"
	equals "$(cd "$T" && echo spool-run.*)" "spool-run.*"
	equals "$(cd "$SPOOL_DIR" && find leased -type f)" "leased/j1,1"
	start_worker --max-jobs 1 --owner w2 -- "$H"
	equals "$(next_event)" "start 2"
	wait_worker 0
	equals "$(state_of j1)" done
	# On a loaded machine w1 may renew before the kill: the renewal is
	# its right, and not what this test is about.
	diff -u - <(audit_events | grep -v '^renew j1 1 1 1 w1 ') <<'EOF'
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
reclaim j1 2 2 1 w2 - lease-expired 1
ok j1 2 2 1 w2 - - -
EOF
	fsck_clean
}

@test "a keeper killed by hand stops its worker: no handler may start unguarded" {
	enqueue j1 'echo start >"$EVENTS"; sleep 60'
	start_worker --owner w1 -- "$H"
	equals "$(next_event)" start
	keeper=$(pgrep -P "$WPID" -x spool-run-keep)
	handler=$(pgrep -P "$WPID" -x handler)
	# A keeper killed alone: the worker stops as on SIGTERM, and exits 111.
	kill -KILL "$keeper"
	local end=$((SECONDS + 20))
	until grep -q keeper "$T/err"; do
		[ "$SECONDS" -lt "$end" ] || { echo "never said" >&2; return 1; }
		sleep 0.05
	done
	kill -TERM "$handler"
	wait_worker 111
	equals "$(runlog <"$T/err")" "$(printf '%s\n' "spool-run: the keeper of the handlers (PID $keeper) ended: stopping" \
	    "spool-run: T j1 token=1 attempt=1 signal=15 duration=D outcome=retry class=crashed state=new")"
}

@test "a cancel reaches a running handler at once: SIGTERM to its group, and the job stays parked" {
	enqueue j1 'echo start >"$EVENTS"; trap "echo term >\"\$EVENTS\"; exit 0" TERM; sleep 60 & wait'
	# A lease of an hour: its first renewal is 20 minutes away.
	start_worker --max-jobs 1 --lease 1h --owner w1 -- "$H"
	equals "$(next_event)" start
	run -0 spool-cancel --by ops --note INC-7 j1
	equals "$output" j1
	equals "$(next_event)" term
	wait_worker 0
	equals "$(runlog <"$T/err")" "$(printf '%s\n' "spool-run: j1: cancelled by ops: handler stopped" \
	    "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=- class=- state=- stopped=cancelled")"
	# The handler's exit 0 finished nothing: the job is parked as cancelled.
	equals "$(state_of j1)" dead
	equals "$(last_rec j1 ev reason)" "$(printf '%s\n' ev=cancel reason=cancelled)"
	diff -u - <(audit_events) <<'EOF'
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
cancel j1 1 1 1 ops cancelled cancelled INC-7
EOF
	fsck_clean
}

@test "SIGHUP is harmless: the job finishes and the worker goes on" {
	enqueue j1 'echo start >"$EVENTS"; read -r _ <"$GATES/j1"'
	gate j1
	start_worker --owner w1 -- "$H"
	equals "$(next_event)" start
	kill -HUP "$WPID"
	open_gate j1
	enqueue j2 'echo "second" >"$EVENTS"'
	equals "$(next_event)" second
	kill -TERM "$WPID"
	wait_worker 0
	equals "$(ids_in done)" "$(printf '%s\n' j1 j2)"
	equals "$(runlog <"$T/err")" "$(printf '%s\n' \
	    "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done" \
	    "spool-run: T j2 token=2 attempt=1 exit=0 duration=D outcome=ok class=- state=done")"
}

@test "--once runs one job and exits 0, or exits 1 when nothing is due, saying so if paused" {
	run -1 --separate-stderr spool-run --once -- "$H"
	equals "$output" ""
	equals "$stderr" ""
	enqueue j1 'echo one'
	# (due later, in a leaf of its own: one leaf's jobs come in no set order)
	enqueue j2 'echo two' --delay 50ms
	spool-pause --by ops --note T-1
	run -1 --separate-stderr spool-run --once -- "$H"
	equals "$output" ""
	equals "$stderr" "spool-run: spool paused"
	spool-resume --by ops --note T-1
	run -0 --separate-stderr spool-run --once -- "$H"
	equals "$output" one
	equals "$(runlog <<<"$stderr")" "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
	equals "$(state_of j2)" new
}

@test "--idle-exit ends a worker once nothing has been due for that long" {
	enqueue j1 'echo one'
	enqueue j2 'echo two' --delay 50ms
	enqueue later 'echo later' --delay 1h
	run -0 --separate-stderr spool-run --idle-exit 300ms -- "$H"
	equals "$output" "$(printf '%s\n' one two)"
	equals "$(runlog <<<"$stderr")" "$(printf '%s\n' \
	    "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done" \
	    "spool-run: T j2 token=2 attempt=1 exit=0 duration=D outcome=ok class=- state=done")"
	equals "$(ids_in done)" "$(printf '%s\n' j1 j2)"
	equals "$(state_of later)" new
}

@test "a job that falls due during a claim is claimed at once, not after a recheck" {
	enqueue j1 'echo one' --delay 100ms
	# The first claim finds nothing due and stops at its end.  While it
	# is stopped j1 falls due: a wait on the clock, not on a process.
	SPOOL_TEST_PAUSE=claim-logged start_worker --idle-exit 1100ms -- "$H"
	end=$((SECONDS + 20))
	until [ "$(cut -d' ' -f3 "/proc/$WPID/stat")" = T ]; do
		[ "$SECONDS" -lt "$end" ] || { echo "never stopped" >&2; false; }
		sleep 0.05
	done
	sleep 0.3
	# j1 was not due when the claim looked, so the worker claims it now.
	# Were it taken for a job another worker holds, it would be looked
	# at again a second from now, after the idle exit, 1,100 ms from the
	# worker's start.
	kill -CONT "$WPID"
	wait_worker 0
	equals "$(cat "$T/out")" one
	equals "$(runlog <"$T/err")" "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
	equals "$(ids_in done)" j1
}

@test "bad usage is refused with status 100 before the spool is touched" {
	enqueue j1 'exit 0'
	before=$(snapshot)
	run -100 --separate-stderr spool-run
	equals "$output" ""
	equals "$stderr" "usage: spool-run [-d DIR] [--grace DUR] [--idle-exit DUR] [-j N] [--lease DUR] [--max-jobs N] [--once] [--owner NAME] [--timeout DUR] -- HANDLER [ARG ...]"
	run -100 --separate-stderr spool-run -j 0 -- "$H"
	equals "$stderr" "spool-run: -j: bad number '0' (1 to 256)"
	run -100 --separate-stderr spool-run --timeout 5x -- "$H"
	equals "$stderr" "spool-run: --timeout: bad duration '5x' (use e.g. 500ms, 30s, 5m, 2h, 7d, 0)"
	run -100 --separate-stderr spool-run --owner 'a b' -- "$H"
	[[ $stderr = "spool-run: --owner: bad value ("* ]]
	run -100 --separate-stderr spool-run -- "$T/no-such-handler"
	equals "$stderr" "spool-run: $T/no-such-handler: not found, or not executable"
	run -100 --separate-stderr spool-run -- no-such-handler-in-path
	equals "$stderr" "spool-run: no-such-handler-in-path: not found, or not executable"
	run -100 --separate-stderr spool-run -d "$T/nowhere" -- "$H"
	[[ $stderr = "spool-run: $T/nowhere: "* ]]
	equals "$(snapshot)" "$before"
}

@test "the handler's own options are its own; without --, spool-run's own names get a warning" {
	enqueue j1 'exit 0'
	run -0 --separate-stderr spool-run --once -- echo -j 9 --once
	equals "$output" "-j 9 --once"
	equals "$(runlog <<<"$stderr")" "spool-run: T j1 token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
	enqueue j2 'exit 0'
	run -0 --separate-stderr spool-run --once echo -j 9 --once --x
	equals "$output" "-j 9 --once --x"
	diff -u - <(runlog <<<"$stderr") <<'EOF'
spool-run: warning: '-j' after the handler is the handler's, not spool-run's: put spool-run's options before the handler, or write -- before the handler to say it is meant
spool-run: warning: '--once' after the handler is the handler's, not spool-run's: put spool-run's options before the handler, or write -- before the handler to say it is meant
spool-run: T j2 token=2 attempt=1 exit=0 duration=D outcome=ok class=- state=done
EOF
}

@test "the spool's timeout stops a handler when --timeout is not given; --timeout 0 is none" {
	sed -i 's/^timeout=.*/timeout=300ms/' "$SPOOL_DIR/config"
	enqueue t1 'sleep 60 & wait'
	run -0 --separate-stderr spool-run --once --owner w1 -- "$H"
	equals "$(runlog <<<"$stderr")" "spool-run: T t1 token=1 attempt=1 signal=15 duration=D outcome=retry class=timeout state=new stopped=timeout"
	equals "$(last_rec t1 detail)" "detail=timed%20out%20after%20300ms"
	# --timeout 0: the handler runs until it ends.
	enqueue t2 'sleep 0.6'
	run -0 --separate-stderr spool-run --once --timeout 0 --owner w1 -- "$H"
	equals "$(runlog <<<"$stderr")" "spool-run: T t2 token=2 attempt=1 exit=0 duration=D outcome=ok class=- state=done"
}

@test "a handler that cannot be started: its job is released and the worker exits 111" {
	start_worker --owner w1 -- "$H"
	wait_polling "$WPID"
	chmod a-x "$H"
	enqueue j1 'exit 0'
	wait_worker 111
	equals "$(cat "$T/err")" "spool-run: $H: Permission denied"
	equals "$(state_of j1)" new
	equals "$(last_rec j1 ev att detail)" "$(printf '%s\n' ev=release att=0 \
	    detail=not%20started:%20the%20handler%20could%20not%20be%20run)"
}

@test "a worker that cannot read leased/ to learn when work is next due exits 111, the spool untouched" {
	make -s -C "$BATS_TEST_DIRNAME/.." tests/shim/faultshim.so >&2
	# One pinned clock: the worker's claim finds the next-expiry hint
	# (the first claim's time + 1 s) not yet passed and does not read
	# leased/, so the first read there is the one of the due time.
	SPOOL_TEST_NOW=$(date +%s%3N)
	export SPOOL_TEST_NOW
	enqueue j1 'exit 0'
	run -0 spool-claim --lease 1h
	before=$(snapshot)
	run -111 --separate-stderr shimmed SHIM_ROOT="$SPOOL_DIR/leased" \
	    SHIM_FAMILY=getdents SHIM_NTH=1 SHIM_ERRNO=EIO \
	    spool-run --idle-exit 300ms -- "$H"
	equals "$output" ""
	equals "$stderr" "spool-run: next due time: Input/output error"
	equals "$(snapshot)" "$before"
}
