#!/usr/bin/env bats
# spool-batch: one process opens the spool once and serves requests, one
# a line on stdin, each answered on stdout by "STATUS NOUT NERR", NOUT
# lines of output and NERR messages (--json: one object a request).  An
# answer says what the command itself would have said; a request that is
# not understood gets one answer of 100 and changes nothing; the session
# goes on until the end of its input.

load helpers

T=1700000000000

setup() {
	trace_test_only
	export PATH="$BATS_TEST_DIRNAME/bin:$PATH"
	export SPOOL_DIR="$BATS_TEST_TMPDIR/spool"
	export SPOOL_HOST=testhost
	unset SPOOL_TEST_CRASH SPOOL_TEST_NOW SPOOL_TEST_NOREPLACE
	spool-init
	R=$BATS_TEST_TMPDIR/req	# the requests of a session
	P=$(realpath "$SPOOL_DIR")	# the spool as the paths of leases name it
}

teardown() {
	# A session left running by a failed test, and its spool on /dev/shm.
	if [ -n "${BPID:-}" ]; then
		kill "$BPID" 2>/dev/null || true
	fi
	if [ -n "${SHM:-}" ]; then
		rm -rf "$SHM"
	fi
}

# said STATUS COMMAND...: what COMMAND prints on stderr, one line, after
# checking that it exits STATUS and prints nothing on stdout: the message
# an answer must hold.
said() {
	local want=$1 st=0 err
	shift
	err=$("$@" 2>&1 >"$BATS_TEST_TMPDIR/said.out" </dev/null) || st=$?
	if [ "$st" -ne "$want" ] || [ -s "$BATS_TEST_TMPDIR/said.out" ] ||
	    [ -z "$err" ] || [[ $err = *$'\n'* ]]; then
		echo "said: $* exits $st, not $want, stdout: $(cat \
		    "$BATS_TEST_TMPDIR/said.out"), stderr: $err" >&2
		return 1
	fi
	printf '%s\n' "$err"
}

# direct COMMAND...: the text answer to COMMAND run by itself, stdin
# closed to it as spool-batch closes it: "STATUS NOUT NERR", its output
# lines, its messages.
direct() {
	local st=0 d=$BATS_TEST_TMPDIR/direct out err
	"$@" <&- >"$d.out" 2>"$d.err" || st=$?
	mapfile -t out <"$d.out"
	mapfile -t err <"$d.err"
	printf '%s %s %s\n' "$st" "${#out[@]}" "${#err[@]}"
	[ $((${#out[@]} + ${#err[@]})) -eq 0 ] ||
	    printf '%s\n' "${out[@]}" "${err[@]}"
}

# direct_json COMMAND...: the JSON answer to COMMAND run by itself, its
# output lines JSON values already (--json).
direct_json() {
	local st=0 d=$BATS_TEST_TMPDIR/direct
	"$@" <&- >"$d.out" 2>"$d.err" || st=$?
	printf '{"status":%s,"out":[%s],"err":[%s]}\n' "$st" \
	    "$(paste -sd, "$d.out")" "$(sed 's/[\\"]/\\&/g; s/.*/"&"/' \
	    "$d.err" | paste -sd,)"
}

# A spool in which "unchanged" means something, and in which a claim
# finds nothing: j4 done, j3 parked, j2 leased (token 3, owner w1), j5
# queued for an hour from now.  At $T.
nothing_claimable() {
	export SPOOL_TEST_NOW=$T
	spool-enqueue --id j4 <<<four >/dev/null
	spool-claim --owner w1 >/dev/null
	spool-finish j4 1 ok >/dev/null
	spool-enqueue --id j3 <<<three >/dev/null
	spool-claim --owner w1 >/dev/null
	spool-finish --class invalid-input j3 2 permanent >/dev/null
	spool-enqueue --id j2 <<<two >/dev/null
	spool-claim --owner w1 >/dev/null
	spool-enqueue --id j5 --delay 1h <<<five >/dev/null
	equals "$(state_of j4) $(state_of j3) $(state_of j2) $(state_of j5)" \
	    "done dead leased new"
	run -1 --separate-stderr spool-claim --owner w9
	equals "$output$stderr" ""
}

# The calls of fsync and fdatasync that COMMAND... makes, stdin from $R,
# as strace counts them: the syncs a plain call makes, not the ring's.
syncs() {
	local t=$BATS_TEST_TMPDIR/strace
	SPOOL_TEST_NO_URING=1 \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    strace -f -qq -c -e trace=fsync,fdatasync -o "$t" "$@" \
	    <"$R" >"$BATS_TEST_TMPDIR/syncs.out"
	awk '$NF == "total" { print $4 }' "$t"
}

# session [OPTION...]: spool-batch in the background, talked to through
# two FIFOs: requests written to descriptor $SW, answers read by recv.
# The greeting starts $TRANSCRIPT, which every answer read is added to.
session() {
	local d=$BATS_TEST_TMPDIR
	rm -f "$d/sin" "$d/sout"
	mkfifo "$d/sin" "$d/sout"
	spool-batch "$@" <"$d/sin" >"$d/sout" 2>"$d/serr" 3>&- &
	BPID=$!
	exec {SW}>"$d/sin" {SR}<"$d/sout"
	IFS= read -r -t 20 -u "$SR" TRANSCRIPT ||
	    { echo "session: no greeting" >&2; return 1; }
}

# recv [N]: the next N answers (default 1), text ones, into $TRANSCRIPT;
# the last in $ANSWER.  Fails after 20 s without one.
recv() {
	local k i n e line
	for ((k = 0; k < ${1:-1}; k++)); do
		IFS= read -r -t 20 -u "$SR" ANSWER ||
		    { echo "recv: no answer" >&2; return 1; }
		read -r _ n e <<<"$ANSWER"
		for ((i = 0; i < n + e; i++)); do
			IFS= read -r -t 20 -u "$SR" line ||
			    { echo "recv: an answer cut short" >&2; return 1; }
			ANSWER+=$'\n'$line
		done
		TRANSCRIPT+=$'\n'$ANSWER
	done
}

# recv_json [N]: the same for JSON answers, a line each.
recv_json() {
	local k
	for ((k = 0; k < ${1:-1}; k++)); do
		IFS= read -r -t 20 -u "$SR" ANSWER ||
		    { echo "recv_json: no answer" >&2; return 1; }
		TRANSCRIPT+=$'\n'$ANSWER
	done
}

# polling PID: until PID blocks in poll(2), as a claim that waits does
# (between requests it blocks in read(2)); false after 20 s.
polling() {
	local end=$((SECONDS + 20)) wchan=
	until [[ $wchan = *poll* ]]; do
		read -r wchan <"/proc/$1/wchan" || true
		[ "$SECONDS" -lt "$end" ] ||
		    { echo "$1 never blocked in poll: $wchan" >&2; return 1; }
	done
}

# end_session: the end of input; spool-batch writes nothing more, says
# nothing on stderr and exits 0.
end_session() {
	local st=0 rest
	exec {SW}>&-
	rest=$(timeout 20 cat <&"$SR") || true
	wait "$BPID" || st=$?
	BPID=
	exec {SR}<&-
	equals "$rest" ""
	equals "$(cat "$BATS_TEST_TMPDIR/serr")" ""
	equals "$st" 0
}

@test "the greeting, in text and in JSON; an empty input ends the session with 0" {
	run -0 --separate-stderr spool-batch </dev/null
	equals "$output" "spool-batch 1"
	equals "$stderr" ""
	run -0 --separate-stderr spool-batch --json </dev/null
	equals "$output" '{"protocol":"spool-batch","version":1}'
	equals "$stderr" ""
	run -0 --separate-stderr spool-batch -d "$SPOOL_DIR" --json --group 256 </dev/null
	equals "$output" '{"protocol":"spool-batch","version":1}'
	equals "$stderr" ""
}

@test "--help and --version; a bad option, a bad --group or an operand: the usage or the option's message, 100" {
	# Its wording is the man page's (tests/63-cli.bats): here, its form.
	run -0 --separate-stderr spool-batch --help
	equals "$stderr" ""
	equals "${lines[0]}" "usage: spool-batch [-d DIR] [--json] [--group N]"
	equals "$(printf '%s\n' "${lines[@]:1}" | awk '{ print $1 }')" \
	    $'-d\n--json\n--group'
	run -0 --separate-stderr spool-batch --version
	equals "$stderr" ""
	equals "$output" "spool-batch $(cat "$BATS_TEST_DIRNAME/../VERSION") (spool format 2; reads format 1 too)"
	before=$(snapshot)
	for args in --bogus -x "--group" "--json stray" "-d"; do
		# shellcheck disable=SC2086 # the words of a case
		run -100 --separate-stderr spool-batch $args </dev/null
		equals "$output" ""
		equals "$stderr" "usage: spool-batch [-d DIR] [--json] [--group N]"
	done
	for n in 0 257 x -1; do
		run -100 --separate-stderr spool-batch --group "$n" </dev/null
		equals "$output" ""
		equals "$stderr" "spool-batch: --group: bad number '$n' (1 to 256)"
	done
	equals "$(snapshot)" "$before"
}

@test "no spool, a missing spool, a closed stdin: one line on stderr, 100, no greeting" {
	run -100 --separate-stderr env -u SPOOL_DIR spool-batch </dev/null
	equals "$output" ""
	equals "$stderr" "spool-batch: no spool: give -d DIR or set SPOOL_DIR"
	run -100 --separate-stderr spool-batch -d "$BATS_TEST_TMPDIR/nope" </dev/null
	equals "$output" ""
	equals "$stderr" "spool-batch: $BATS_TEST_TMPDIR/nope: No such file or directory"
	run -100 --separate-stderr env SPOOL_DIR="$BATS_TEST_TMPDIR/nope" spool-batch </dev/null
	equals "$output" ""
	equals "$stderr" "spool-batch: $BATS_TEST_TMPDIR/nope: No such file or directory"
	before=$(snapshot)
	# Closed by exec: run's own pipe would take descriptor 0 otherwise.
	run -100 --separate-stderr bash -c 'exec spool-batch <&-'
	equals "$output" ""
	equals "$stderr" "spool-batch: standard input is closed"
	equals "$(snapshot)" "$before"
}

# claimed_two ANSWER: which of a and b the claim's first lease is, by its
# token (two jobs of one 16 ms bucket of new/ come in directory order):
# their tokens in $ta and $tb.
claimed_two() {
	if [ "$1" = "$(printf '0 2 0\n'; lease_line a 1 1; lease_line b 2 1)" ]; then
		ta=1 tb=2
	elif [ "$1" = "$(printf '0 2 0\n'; lease_line b 1 1; lease_line a 2 1)" ]; then
		ta=2 tb=1
	else
		echo "not a claim of a and b: $1" >&2
		return 1
	fi
}

@test "a job cycle in one text session: enqueue a FILE and --bytes, claim -n 2, renew, finish ok, retry and permanent" {
	export SPOOL_TEST_NOW=$T
	printf 'file one\n' >"$BATS_TEST_TMPDIR/f1"
	session
	{
		echo "enqueue --id a $BATS_TEST_TMPDIR/f1"
		printf 'enqueue --id b --bytes 9\ntwo\nlines\n'
		echo "claim -n 2 --owner w1"
	} >&"$SW"
	recv 3
	claimed=$ANSWER
	claimed_two "$claimed"
	{
		printf 'enqueue --id c --bytes 0\n\n'
		echo "renew --lease 1m a $ta"
		echo "finish a $ta ok"
		echo "finish --class transient --detail \"try later\" b $tb retry"
		echo "claim --owner w1"
		echo 'finish --class invalid-input --detail "bad input" c 3 permanent'
		echo "claim --owner w1"
	} >&"$SW"
	recv 7
	end_session
	equals "$TRANSCRIPT" "spool-batch 1
0 1 0
a
0 1 0
b
$claimed
0 1 0
c
0 0 0
0 1 0
a
0 1 0
b
0 1 0
$(lease_line c 3 1)
0 1 0
c
1 0 0"
	equals "$(state_of a) $(state_of b) $(state_of c)" "done new dead"
	equals "$(audit_events)" "enqueue a 0 0 1 - - - -
enqueue b 0 0 1 - - - -
$(printf 'claim a %s 1 1 w1 - - -\nclaim b %s 1 1 w1 - - -\n' "$ta" "$tb" |
	    sort -k3n)
enqueue c 0 0 1 - - - -
renew a $ta 1 1 w1 - - -
ok a $ta 1 1 w1 - - -
retry b $tb 1 1 w1 - transient -
claim c 3 1 1 w1 - - -
park c 3 1 1 w1 permanent invalid-input -"
	# The payloads, byte for byte: the file's, one with a newline in it,
	# an empty one.
	cmp "$BATS_TEST_TMPDIR/f1" "$(path_of a)"
	cmp <(printf 'two\nlines') "$(path_of b)"
	[ ! -s "$(path_of c)" ]
	# Renewed by 1m from $T.
	equals "$(grep ' ev=renew ' "$SPOOL_DIR/meta/a" | tr ' ' '\n' |
	    grep '^until=')" "until=$((T + 60000))"
	equals "$(spool-show b | grep '^detail')" "detail       try later"
	equals "$(spool-show c | grep -E '^(reason|class|detail) ')" \
	    "reason       permanent
class        invalid-input
detail       bad input"
	fsck_clean
}

@test "the same cycle in JSON: arrays of strings in, an object an answer out; ls, show and stat embed the commands' JSON" {
	export SPOOL_TEST_NOW=$T
	printf 'file one\n' >"$BATS_TEST_TMPDIR/f1"
	lease() {
		printf '{"id":"%s","token":%s,"attempt":1,"cycle":1,"lease_until":%s,"trace":%s,"path":"%s/leased/%s,%s"}' \
		    "$1" "$2" $((T + 30000)) "$3" "$P" "$1" "$2"
	}
	session --json
	{
		echo "[\"enqueue\",\"--id\",\"a\",\"--trace\",\"t1\",\"$BATS_TEST_TMPDIR/f1\"]"
		printf '["enqueue","--id","b","--bytes","9"]\ntwo\nlines\n'
		echo '["claim","-n","2","--owner","w1"]'
	} >&"$SW"
	recv_json 3
	claimed=$ANSWER
	if [ "$claimed" = "{\"status\":0,\"out\":[$(lease a 1 '"t1"'),$(lease b 2 null)],\"err\":[]}" ]; then
		ta=1 tb=2
	else
		equals "$claimed" "{\"status\":0,\"out\":[$(lease b 1 null),$(lease a 2 '"t1"')],\"err\":[]}"
		ta=2 tb=1
	fi
	{
		printf ' [ "enqueue" , "--id" , "c" , "--bytes=0" ] \n\n'
		echo "[\"renew\",\"--lease\",\"1m\",\"a\",\"$ta\"]"
		echo "[\"finish\",\"a\",\"$ta\",\"ok\"]"
		echo "[\"finish\",\"--class\",\"transient\",\"--detail\",\"HTTP \\\"503\\\"\\ttoo\\u00e9\",\"b\",\"$tb\",\"retry\"]"
		echo '["claim","--owner","w1"]'
		echo '["finish","--class","invalid-input","c","3","permanent"]'
		echo '["claim","--owner","w1"]'
		echo '["renew","zz","1"]'
	} >&"$SW"
	recv_json 8
	# The readers' answers hold the commands' own output, run by
	# themselves on the same spool at the same time.
	printf '%s\n' '["ls","dead"]' '["ls","new","done"]' '["show","b"]' \
	    '["stat"]' >&"$SW"
	recv_json 4
	end_session
	equals "$TRANSCRIPT" "{\"protocol\":\"spool-batch\",\"version\":1}
{\"status\":0,\"out\":[\"a\"],\"err\":[]}
{\"status\":0,\"out\":[\"b\"],\"err\":[]}
$claimed
{\"status\":0,\"out\":[\"c\"],\"err\":[]}
{\"status\":0,\"out\":[],\"err\":[]}
{\"status\":0,\"out\":[\"a\"],\"err\":[]}
{\"status\":0,\"out\":[\"b\"],\"err\":[]}
{\"status\":0,\"out\":[$(lease c 3 null)],\"err\":[]}
{\"status\":0,\"out\":[\"c\"],\"err\":[]}
{\"status\":1,\"out\":[],\"err\":[]}
{\"status\":1,\"out\":[],\"err\":[\"spool-renew: zz: no such job\"]}
$(direct_json spool-ls --json dead)
$(direct_json spool-ls --json new done)
$(direct_json spool-show --json b)
$(direct_json spool-stat --json)"
	# Not empty, those: each holds its objects.  (The detail's tab and
	# non-ASCII bytes are stored as '?', by spool-finish too.)
	mapfile -t got <<<"$TRANSCRIPT"
	[[ ${got[12]} = '{"status":0,"out":[{"id":"c","state":"dead",'*'}],"err":[]}' ]]
	[[ ${got[13]} = '{"status":0,"out":[{"id":"'[ab]'","state":"'*'},{"id":"'[ab]'","state":"'*'}],"err":[]}' ]]
	[[ ${got[14]} = '{"status":0,"out":[{"id":"b","state":"new",'*'"detail":"HTTP \"503\"?too??",'* ]]
	[[ ${got[15]} = '{"status":0,"out":[{"now":1700000000000,'*'}],"err":[]}' ]]
	equals "$(state_of a) $(state_of b) $(state_of c)" "done new dead"
	cmp "$BATS_TEST_TMPDIR/f1" "$(path_of a)"
	cmp <(printf 'two\nlines') "$(path_of b)"
	[ ! -s "$(path_of c)" ]
	equals "$(audit_events | cut -d' ' -f1,2 | paste -sd' ')" \
	    "enqueue a enqueue b claim $( ((ta == 1)) && echo "a claim b" || echo "b claim a") enqueue c renew a ok a retry b claim c park c"
	fsck_clean
}

@test "negative answers are the commands' own: empty spool, paused, a stale token after a takeover, never claimed, no such job, not parked" {
	export SPOOL_TEST_NOW=$T
	# An empty spool: 1, nothing said, as spool-claim.  (A claim's first
	# writes the lease hint, next-expiry, once.)
	d=$(direct spool-claim)
	equals "$d" "1 0 0"
	before=$(snapshot)
	printf 'claim\nclaim -n 5 --owner w1\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
$d
$d"
	equals "$(snapshot)" "$before"
	# Waiting for nothing: on the clock, not at a pinned time.
	printf 'claim --wait 1ms\nclaim --wait 2ms -n 3\n' >"$R"
	run -0 --separate-stderr env -u SPOOL_TEST_NOW spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
$d
$d"

	# Paused: 1 and "spool paused", as spool-claim.
	spool-enqueue --id a <<<a >/dev/null
	spool-pause
	before=$(snapshot)
	d=$(direct spool-claim --owner w1)
	equals "$d" "1 0 1
spool-claim: spool paused"
	printf 'claim --owner w1\nclaim -n 3\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
$d
$d"
	equals "$(snapshot)" "$before"
	spool-resume

	# Never claimed.
	before=$(snapshot)
	d=$(direct spool-renew a 1)
	equals "$d" "1 0 1
spool-renew: a: not leased: never claimed, the job is in new/"
	d2=$(direct spool-finish a 1 ok)
	equals "$d2" "1 0 1
spool-finish: a: not leased: never claimed, the job is in new/"
	# No such job; not parked.
	d3=$(direct spool-show zz)
	equals "$d3" "1 0 1
spool-show: zz: no such job"
	d4=$(direct spool-redrive --by ops --note INC-1 a)
	equals "$d4" "1 0 1
spool-redrive: a: not parked: the job is in new/"
	d5=$(direct spool-renew zz 1)
	equals "$d5" "1 0 1
spool-renew: zz: no such job"
	printf '%s\n' "renew a 1" "finish a 1 ok" "show zz" \
	    "redrive --by ops --note INC-1 a" "renew zz 1" >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
$d
$d2
$d3
$d4
$d5"
	equals "$(snapshot)" "$before"

	# A takeover: the lease of token 1 expires, another claim takes the
	# job as token 2, and the first holder's finish and renew are stale.
	printf 'claim --lease 1s --owner w1\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" "spool-batch 1
0 1 0
$(lease_line a 1 1)"
	at_ms $((T + 1000)) spool-claim --owner w2 >/dev/null
	equals "$(lease_token a)" 2
	export SPOOL_TEST_NOW=$((T + 1001))
	before=$(snapshot)
	d=$(direct spool-finish a 1 ok)
	equals "$d" "1 0 1
spool-finish: a: stale token: the current token is 2 and the job is in leased/"
	d2=$(direct spool-renew a 1)
	equals "$d2" "1 0 1
spool-renew: a: stale token: the current token is 2 and the job is in leased/"
	printf 'finish a 1 ok\nrenew a 1\nfinish --class transient a 1 retry\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
$d
$d2
$d"
	equals "$(snapshot)" "$before"
	# The holder of token 2 still finishes.
	printf 'finish a 2 ok\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" $'spool-batch 1\n0 1 0\na'
	equals "$(state_of a)" done
	fsck_clean
}

# bad LINE MESSAGE: a case: LINE, then a good request; the answers, one of
# 100 with MESSAGE, then the good one's "1 0 0" (a claim that finds
# nothing, see nothing_claimable).
bad() {
	printf '%s\nclaim --owner w9\n' "$1" >>"$R"
	printf '100 0 1\n%s\n1 0 0\n' "$2" >>"$BATS_TEST_TMPDIR/expected"
}

@test "every malformed or refused text request: one answer of 100, the spool untouched, and the session goes on" {
	nothing_claimable
	mkdir "$BATS_TEST_TMPDIR/dir"
	printf 'x\n' >"$BATS_TEST_TMPDIR/f1"
	before=$(snapshot)
	: >"$R"
	echo "spool-batch 1" >"$BATS_TEST_TMPDIR/expected"
	B="spool-batch: malformed request:"
	bad "bogus" "spool-batch: unknown request 'bogus'"
	bad "claimx --owner w9" "spool-batch: unknown request 'claimx'"
	bad "CLAIM" "spool-batch: unknown request 'CLAIM'"
	bad "run" "spool-batch: unknown request 'run'"
	bad "init" "spool-batch: unknown request 'init'"
	bad "spool-claim" "spool-batch: unknown request 'spool-claim'"
	bad "" "$B no words"
	bad $' \t  ' "$B no words"
	bad 'finish "j2 3 ok' "$B a quote not closed"
	bad 'finish --detail "j2 3 ok"x"' "$B a quote not closed"
	bad 'finish --detail "a\nb" j2 3 retry' "$B a backslash in quotes that is not \\\" or \\\\"
	bad 'finish --detail "a\' "$B a backslash in quotes that is not \\\" or \\\\"
	bad $'claim\x01' "$B a control character"
	bad $'claim --owner w\x7f' "$B a control character"
	bad $'claim\r' "$B a control character"
	bad $'finish --detail "a\x1bb" j2 3 retry' "$B a control character"
	# Options' values, as the commands refuse them.
	bad "claim --lease forever" "$(said 100 spool-claim --lease forever)"
	bad "claim --lease 0" "$(said 100 spool-claim --lease 0)"
	bad "claim -n 0" "$(said 100 spool-claim -n 0)"
	bad "claim -n 257" "$(said 100 spool-claim -n 257)"
	bad "claim --owner a/b" "$(said 100 spool-claim --owner a/b)"
	bad "claim --wait soon" "spool-claim: --wait: bad duration 'soon' (use e.g. 500ms, 30s, 5m, 2h, 7d, 0)"
	bad "renew --lease 1y j2 3" "$(said 100 spool-renew --lease 1y j2 3)"
	bad "finish --delay soon j2 3 retry" "$(said 100 spool-finish --delay soon j2 3 retry)"
	bad "finish --class foo j2 3 retry" "$(said 100 spool-finish --class foo j2 3 retry)"
	bad "finish --delay 1s j2 3 ok" "$(said 100 spool-finish --delay 1s j2 3 ok)"
	bad "enqueue --id .x $BATS_TEST_TMPDIR/f1" "$(said 100 spool-enqueue --id .x "$BATS_TEST_TMPDIR/f1")"
	bad "enqueue --max-attempts 0 $BATS_TEST_TMPDIR/f1" "$(said 100 spool-enqueue --max-attempts 0 "$BATS_TEST_TMPDIR/f1")"
	bad "enqueue --key a/b $BATS_TEST_TMPDIR/f1" "$(said 100 spool-enqueue --key a/b "$BATS_TEST_TMPDIR/f1")"
	# A count that is not one: no payload is read past; 1G at most.
	NC="spool-batch: --bytes: not a count of bytes, 0 to 1073741824"
	bad "enqueue --bytes x" "$NC"
	bad "enqueue --bytes -1" "$NC"
	bad "enqueue --bytes 0x10" "$NC"
	bad "enqueue --bytes ''" "$NC"
	bad "enqueue --bytes 1073741825" "$NC"
	bad "enqueue --id j9 --byt=18446744073709551616" "$NC"
	bad "bogus --bytes=1k" "$NC"
	# Unknown options, missing and stray operands: the request's usage.
	UC="usage: claim [--lease DUR] [--owner NAME] [-n N] [--wait DUR]"
	UR="usage: renew [--lease DUR] ID TOKEN"
	UF="usage: finish [--class CLASS] [--detail TEXT] [--delay DUR] ID TOKEN ok|retry|permanent|release"
	UE="usage: enqueue [--id ID] [--max-attempts N] [--deadline DUR] [--delay DUR] [--key KEY] [--trace ID] FILE ... | --bytes N"
	bad "claim --bogus" "$UC"
	bad "claim -x" "$UC"
	bad "claim --lease" "$UC"
	bad "claim stray" "$UC"
	bad "claim -d $SPOOL_DIR" "$UC"
	bad "renew" "$UR"
	bad "renew j2" "$UR"
	bad "renew j2 3 stray" "$UR"
	bad "renew --bogus j2 3" "$UR"
	bad "finish" "$UF"
	bad "finish j2 3" "$UF"
	bad "finish j2 3 ok stray" "$UF"
	bad "finish - " "$UF"
	bad "finish --bogus j2 3 ok" "$UF"
	bad "enqueue" "$UE"
	bad "enqueue --id j9" "$UE"
	bad "enqueue --bogus $BATS_TEST_TMPDIR/f1" "$UE"
	# IDs, tokens, outcomes, classes.
	bad "renew a/b 3" "$(said 100 spool-renew a/b 3)"
	bad "renew .. 3" "$(said 100 spool-renew .. 3)"
	bad 'renew "" 3' "$(said 100 spool-renew '' 3)"
	bad "finish j2,3 3 ok" "$(said 100 spool-finish j2,3 3 ok)"
	bad "renew j2 x" "$(said 100 spool-renew j2 x)"
	bad "renew j2 0" "$(said 100 spool-renew j2 0)"
	bad "renew j2 -3" "$(said 100 spool-renew j2 -3)"
	bad "finish j2 -1 ok" "$(said 100 spool-finish j2 -1 ok)"
	bad "finish --delay 1s j2 -1 retry" "$(said 100 spool-finish --delay 1s j2 -1 retry)"
	bad "finish j2 1000000000000000000 ok" "$(said 100 spool-finish j2 1000000000000000000 ok)"
	bad "finish j2 3 maybe" "$(said 100 spool-finish j2 3 maybe)"
	bad "finish j2 3 OK" "$(said 100 spool-finish j2 3 OK)"
	bad "finish --class transient j2 3 ok" "$(said 100 spool-finish --class transient j2 3 ok)"
	bad "finish --class transient j2 3 release" "$(said 100 spool-finish --class transient j2 3 release)"
	# enqueue's FILEs: stdin is the requests'; a missing file; a directory.
	bad "enqueue -" "spool-enqueue: -: standard input carries the requests: give the payload with --bytes N"
	bad "enqueue --id j9 -" "spool-enqueue: -: standard input carries the requests: give the payload with --bytes N"
	bad "enqueue $BATS_TEST_TMPDIR/missing" "$(said 100 spool-enqueue "$BATS_TEST_TMPDIR/missing")"
	bad "enqueue --id j9 $BATS_TEST_TMPDIR/dir" "$(said 100 spool-enqueue --id j9 "$BATS_TEST_TMPDIR/dir")"
	bad "enqueue --id j9 $BATS_TEST_TMPDIR/f1 $BATS_TEST_TMPDIR/f1" "spool-enqueue: --id names one job: give one FILE"
	# The session's own stdin (these requests) and stdout (its answers).
	bad "enqueue /dev/stdin" "spool-enqueue: /dev/stdin: the session's own standard input or output"
	bad "enqueue --id j9 $R" "spool-enqueue: $R: the session's own standard input or output"
	bad "enqueue --id j9 /proc/self/fd/1" "spool-enqueue: /proc/self/fd/1: the session's own standard input or output"
	# The commands' own refusals, whole.
	bad "ls --bogus" "$(said 100 spool-ls --bogus)"
	bad "redrive --by ops j3" "$(said 100 spool-redrive --by ops j3)"
	bad "pause --by ops" "$(said 100 spool-pause --by ops)"
	bad "show a/b" "$(said 100 spool-show a/b)"
	# Too many words: 1,025.
	bad "renew$(printf ' x%.0s' {1..1024})" "$B too many words"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "$(cat "$BATS_TEST_TMPDIR/expected")"
	equals "$(snapshot)" "$before"
	# A bad request inside a group is answered in its place as well.
	run -0 --separate-stderr spool-batch --group 256 <"$R"
	equals "$stderr" ""
	equals "$output" "$(cat "$BATS_TEST_TMPDIR/expected")"
	equals "$(snapshot)" "$before"
	fsck_clean
}

@test "a request's NUL byte, and every bad payload: one answer of 100, the stream stays in step, the spool untouched" {
	nothing_claimable
	printf 'x\n' >"$BATS_TEST_TMPDIR/f1"
	before=$(snapshot)
	NEXT=$'claim --owner w9\n'
	# A NUL byte in a line.  A payload is read past whenever enqueue
	# gives a count, the request good or not: --bytes with a FILE too, a
	# bad option, a bad --id, --bytes=N; and when a line that is no
	# request does.  A payload not followed by a newline: the rest of its
	# line is its end.  Past "--", --bytes is a FILE.  Another request
	# takes no payload: its --bytes is a bad option, and a value that
	# reads "--bytes=5" is a value.
	{
		printf 'claim\0 --owner w9\n%s' "$NEXT"
		printf 'enqueue --bytes 3 %s\nabc\n%s' "$BATS_TEST_TMPDIR/f1" "$NEXT"
		printf 'enqueue --bytes 16 --bogus\nclaim --owner w9\n%s' "$NEXT"
		printf 'enqueue --id .x --bytes=2\n\n\n\n%s' "$NEXT"
		printf 'enqueue --bytes 2\nabclaim --owner w9\n%s' "$NEXT"
		printf 'enqueue --bytes 0\nx\n%s' "$NEXT"
		printf 'enqueue --bytes 1 -- --bytes 3\nx\n%s' "$NEXT"
		printf 'claim --bytes 17\n%s' "$NEXT"
		printf 'bogus --bytes=3\nabc\n%s' "$NEXT"
		printf 'finish --detail --bytes=5 j9 1 ok\n%s' "$NEXT"
	} >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	ans=$'1 0 0'
	equals "$output" "spool-batch 1
100 0 1
spool-batch: malformed request: a NUL byte
$ans
100 0 1
spool-enqueue: --bytes is the payload: give no FILE
$ans
100 0 1
usage: enqueue [--id ID] [--max-attempts N] [--deadline DUR] [--delay DUR] [--key KEY] [--trace ID] FILE ... | --bytes N
$ans
100 0 1
spool-enqueue: --id: bad value (letters, digits, '.', '_', '-', starting with a letter or digit, at most 128 bytes)
$ans
100 0 1
spool-batch: the payload is not followed by a newline
$ans
100 0 1
spool-batch: the payload is not followed by a newline
$ans
100 0 1
spool-enqueue: --bytes is the payload: give no FILE
$ans
100 0 1
usage: claim [--lease DUR] [--owner NAME] [-n N] [--wait DUR]
$ans
100 0 1
spool-batch: unknown request 'bogus' (its payload was read and dropped)
$ans
1 0 1
spool-finish: j9: no such job
$ans"
	equals "$(snapshot)" "$before"
	# A payload shorter than its count at the end of the input; then
	# one not followed by anything.
	printf 'claim --owner w9\nenqueue --id j9 --bytes 10\nabc' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
1 0 0
100 0 1
spool-batch: the payload is shorter than its count"
	printf 'enqueue --id j9 --bytes 3\nabc' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" "spool-batch 1
100 0 1
spool-batch: the payload is not followed by a newline"
	# A line that is no request cannot say where a payload ends: what
	# follows it is read as requests.
	printf 'enqueue --id "j9 --bytes 3\nclaim --owner w9\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" "spool-batch 1
100 0 1
spool-batch: malformed request: a quote not closed
1 0 0"
	printf 'enqueue --id j9 --bytes 3\n' >"$R"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$output" '{"protocol":"spool-batch","version":1}
{"status":100,"out":[],"err":["spool-batch: malformed request: not a JSON array of strings"]}'
	printf '["enqueue","--id","j9","--bytes","3"]\nab' >"$R"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$output" '{"protocol":"spool-batch","version":1}
{"status":100,"out":[],"err":["spool-batch: the payload is shorter than its count"]}'
	equals "$(snapshot)" "$before"
	# An abbreviation that enqueue takes is --bytes too: its payload kept.
	printf 'enqueue --id j9 --byt 3\nabc\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" $'spool-batch 1\n0 1 0\nj9'
	cmp <(printf abc) "$(path_of j9)"
	fsck_clean
}

@test "a request line of 65,536 bytes is read; one of 65,537 or more is refused, read to its end, and the session goes on" {
	nothing_claimable
	before=$(snapshot)
	x=$(printf '%65536s' '' | tr ' ' x)
	pad=$(printf '%65520s' '')
	{
		echo "$x"			# 65536: an unknown word
		echo "claim --owner w9$pad"	# 65536: a request
		echo "${x}x"			# 65537
		echo "claim --owner w9$pad "	# 65537
		echo "$x$x$x"			# 196608, longer than the buffer
		echo "claim --owner w9"
		printf '%s' "x$x"		# 65537 at the end of input
	} >"$R"
	[ "$(sed -n 2p "$R" | wc -c)" -eq 65537 ]
	[ "$(sed -n 4p "$R" | wc -c)" -eq 65538 ]
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
100 0 1
spool-batch: unknown request '${x:0:40}'
1 0 0
100 0 1
spool-batch: request longer than 65536 bytes
100 0 1
spool-batch: request longer than 65536 bytes
100 0 1
spool-batch: request longer than 65536 bytes
1 0 0
100 0 1
spool-batch: request longer than 65536 bytes"
	# In JSON too: a line, not its words, is what is measured.
	{
		printf '["claim","--owner","w9"]%65512s\n' ''
		printf '["claim","--owner","w9"]%65513s\n' ''
		echo '["claim","--owner","w9"]'
	} >"$R"
	[ "$(head -n 1 "$R" | wc -c)" -eq 65537 ]
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$stderr" ""
	equals "$output" '{"protocol":"spool-batch","version":1}
{"status":1,"out":[],"err":[]}
{"status":100,"out":[],"err":["spool-batch: request longer than 65536 bytes"]}
{"status":1,"out":[],"err":[]}'
	equals "$(snapshot)" "$before"
}

@test "JSON: a line that is not an array of strings, a lone surrogate, \\u0000, text after the array: one answer of 100 each" {
	nothing_claimable
	before=$(snapshot)
	: >"$R"
	good='["claim","--owner","w9"]'
	ok='{"status":1,"out":[],"err":[]}'
	echo '{"protocol":"spool-batch","version":1}' >"$BATS_TEST_TMPDIR/expected"
	while IFS='|' read -r line why; do
		printf '%s\n%s\n' "$line" "$good" >>"$R"
		printf '{"status":100,"out":[],"err":["spool-batch: %s"]}\n%s\n' \
		    "$why" "$ok" >>"$BATS_TEST_TMPDIR/expected"
	done <<'EOF'
{"claim":1}|malformed request: not a JSON array of strings
"claim"|malformed request: not a JSON array of strings
claim|malformed request: not a JSON array of strings
|malformed request: not a JSON array of strings
["claim",1]|malformed request: not a JSON array of strings
[1]|malformed request: not a JSON array of strings
["claim",null]|malformed request: not a JSON array of strings
["claim",["-n"]]|malformed request: not a JSON array of strings
["claim",]|malformed request: not a JSON array of strings
["claim" "-n"]|malformed request: not a JSON array of strings
["claim"|malformed request: not a JSON array of strings
['claim']|malformed request: not a JSON array of strings
[]|malformed request: no words
 [ ] |malformed request: no words
["\udc00"]|malformed request: a lone surrogate
["claim\ud800"]|malformed request: a lone surrogate
["\ud800\u0041"]|malformed request: a lone surrogate
["\u0000"]|malformed request: a NUL in a string
["claim","--owner","w\u0000"]|malformed request: a NUL in a string
["claim"] x|malformed request: text after the array
["claim"]["claim"]|malformed request: text after the array
["claim"],|malformed request: text after the array
["cla|malformed request: a string not closed
["claim\|malformed request: a string not closed
["\x"]|malformed request: an unknown escape in a string
["\'"]|malformed request: an unknown escape in a string
["\u12"]|malformed request: a \\u escape without four hex digits
["\u12g4"]|malformed request: a \\u escape without four hex digits
["bogus"]|unknown request 'bogus'
["claim "]|unknown request 'claim '
[""]|unknown request ''
EOF
	# Raw control characters in a string: JSON wants them escaped.
	printf '["claim","--owner","w\t9"]\n%s\n["\001"]\n%s\n' "$good" "$good" >>"$R"
	printf '{"status":100,"out":[],"err":["spool-batch: malformed request: a control character in a string"]}\n%s\n' \
	    "$ok" "$ok" >>"$BATS_TEST_TMPDIR/expected"
	# A NUL byte anywhere in the line.
	printf '["claim"]\0\n%s\n' "$good" >>"$R"
	printf '{"status":100,"out":[],"err":["spool-batch: malformed request: a NUL byte"]}\n%s\n' \
	    "$ok" >>"$BATS_TEST_TMPDIR/expected"
	# The commands' own refusals, as JSON strings; escapes decoded.
	printf '%s\n' '["claim","--lease","forever"]' '["renew","j2","\u002d1"]' \
	    '["finish","j\/2","3","ok"]' '["redrive","--by","ops","j3"]' >>"$R"
	for m in "$(said 100 spool-claim --lease forever)" \
	    "$(said 100 spool-renew j2 -1)" "$(said 100 spool-finish j/2 3 ok)" \
	    "$(said 100 spool-redrive --by ops j3)"; do
		printf '{"status":100,"out":[],"err":["%s"]}\n' "$m"
	done >>"$BATS_TEST_TMPDIR/expected"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$stderr" ""
	equals "$output" "$(cat "$BATS_TEST_TMPDIR/expected")"
	equals "$(snapshot)" "$before"
	# Escapes that are good: the words arrive decoded.
	printf '%s\n' '["claim","--owner","\u0077\u0039"]' \
	    '["\u0063laim",  "--owner" ,"w9"  ]' '	["claim"]	' >"$R"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$output" "{\"protocol\":\"spool-batch\",\"version\":1}
$ok
$ok
$ok"
	equals "$(snapshot)" "$before"
}

@test "quoting in text mode: a quoted part keeps its blanks, \\\" and \\\\ stand for \" and \\, as the command's argument would" {
	export SPOOL_TEST_NOW=$T
	for id in a b c d; do	# a token each: a 1, b 2, c 3, d 4
		spool-enqueue --id "$id" </dev/null >/dev/null
		spool-claim --owner w1 >/dev/null
	done
	# The same details, by the command and through the session.
	spool-finish --detail 'HTTP "503" now' a 1 retry >/dev/null
	spool-finish --detail 'C:\dir	and  two' c 3 retry >/dev/null
	cat >"$R" <<'EOF'
finish --detail "HTTP \"503\" now" b 2 retry
"finish" --det"ail" "C:\\dir	and  two" d "4" ret"r"y
renew "" 1
renew j" "1 1
EOF
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
0 1 0
b
0 1 0
d
100 0 1
$(said 100 spool-renew '' 1)
100 0 1
$(said 100 spool-renew 'j 1' 1)"
	equals "$(spool-show b | grep '^detail')" 'detail       HTTP "503" now'
	equals "$(last_rec b detail)" "$(last_rec a detail)"
	equals "$(last_rec d detail)" "$(last_rec c detail)"
	equals "$(spool-show d | grep '^detail')" "$(spool-show c | grep '^detail')"
	# Outside quotes a backslash is a byte like any other.
	printf 'renew a\\b 1\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" "spool-batch 1
100 0 1
spool-renew: a\\b: bad ID"
}

@test "--group 16: 16 enqueues written ahead make the syncs of one spool-enqueue of 16 files; --group 1 makes more; answers in order" {
	export SPOOL_TEST_NOW=$T
	q=$BATS_TEST_TMPDIR/req16
	awk -v d="$BATS_TEST_TMPDIR" -v q="$q" 'BEGIN {
		for (i = 1; i <= 16; i++) {
			printf "p%02d\n", i >(d "/p" sprintf("%02d", i))
			printf "enqueue --id g%d --bytes 4\np%02d\n\n", i, i >q
		}
	}'
	expected=$(echo "spool-batch 1"
	    for i in $(seq 16); do printf '0 1 0\ng%s\n' "$i"; done)
	R=$q
	g16=$(syncs spool-batch --group 16)
	equals "$(cat "$BATS_TEST_TMPDIR/syncs.out")" "$expected"
	for i in $(seq 16); do
		cmp "$BATS_TEST_TMPDIR/p$(printf %02d "$i")" "$(path_of "g$i")"
	done
	fsck_clean
	# The same 16 payloads by spool-enqueue, on a spool like the first.
	export SPOOL_DIR=$BATS_TEST_TMPDIR/s2
	spool-init
	R=/dev/null
	one=$(syncs spool-enqueue "$BATS_TEST_TMPDIR"/p??)
	equals "$(wc -l <"$BATS_TEST_TMPDIR/syncs.out")" 16
	equals "$(ids_in new | wc -l)" 16
	# And by --group 1, a wait a request.
	export SPOOL_DIR=$BATS_TEST_TMPDIR/s3
	spool-init
	R=$q
	g1=$(syncs spool-batch --group 1)
	equals "$(cat "$BATS_TEST_TMPDIR/syncs.out")" "$expected"
	echo "fsync+fdatasync: --group 16: $g16, spool-enqueue: $one, --group 1: $g1"
	[ "$g16" -gt 0 ]
	equals "$g16" "$one"
	[ "$g1" -gt "$g16" ]
}

# grouped_spool DIR: the spool of the group tests: "old" leased (token 1,
# owner w1), then x1 to x4 queued, each in a 16 ms bucket of new/ of its
# own, so that claims take them in this order.
grouped_spool() {
	local i
	[ -d "$1" ] || spool-init -d "$1"
	at_ms $((T - 5000)) spool-enqueue -d "$1" --id old <<<old >/dev/null
	at_ms $((T - 5000)) spool-claim -d "$1" --owner w1 >/dev/null
	for i in 1 2 3 4; do
		at_ms $((T - 5000 + i * 1000)) spool-enqueue -d "$1" --id "x$i" \
		    <<<"x$i" >/dev/null
	done
}

@test "--group: a run of mixed requests is answered in order, each as alone, a bad one in its place, on a spool left the same" {
	export SPOOL_TEST_NOW=$T
	printf 'one\n' >"$BATS_TEST_TMPDIR/f1"
	grouped_spool "$SPOOL_DIR"
	# The new jobs wait an hour: the claims take x1 to x4.
	{
		printf 'enqueue --id e1 --delay 1h --bytes 2\ne1\n'
		echo "bogus"
		printf 'enqueue --id e1 --bytes 2\nxx\n'
		echo "enqueue --id e2 --delay 1h $BATS_TEST_TMPDIR/f1"
		echo "enqueue $BATS_TEST_TMPDIR/missing"
		printf 'enqueue --id e3 --delay 1h --bytes 0\n\n'
		echo "claim -n 2 --owner w1"
		echo ""
		echo "claim --owner w1"
		echo "claim --owner w2"
		echo "finish old 1 ok"
		echo "finish x1 2 ok"
		echo "finish x1 2 ok"
		echo "finish x1 2 retry"
		echo "finish e9 1 ok"
		echo "claim --owner w1"
		echo "claim -n 0"
		echo "claim --owner w1"
		echo "renew x3 4"
		echo "renew x3 9"
		echo "finish --class transient x2 3 retry"
		echo "show e9"
		echo "finish --class invalid-input x3 4 permanent"
		echo "finish --delay 1h x4 5 release"
		echo "claim --owner w2 -n 256"
		echo "claim --owner w2 -n 256"
	} >"$R"
	run -0 --separate-stderr spool-batch --group 1 <"$R"
	equals "$stderr" ""
	alone=$output
	equals "$alone" "spool-batch 1
0 1 0
e1
100 0 1
spool-batch: unknown request 'bogus'
1 0 1
spool-enqueue: e1: duplicate ID: the job is in new/
0 1 0
e2
100 0 1
spool-enqueue: $BATS_TEST_TMPDIR/missing: No such file or directory
0 1 0
e3
0 2 0
$(lease_line x1 2 1)
$(lease_line x2 3 1)
100 0 1
spool-batch: malformed request: no words
0 1 0
$(lease_line x3 4 1)
0 1 0
$(lease_line x4 5 1)
0 1 0
old
0 1 0
x1
0 1 0
x1
1 0 1
spool-finish: x1: not leased: the job is in done/
1 0 1
spool-finish: e9: no such job
1 0 0
100 0 1
spool-claim: -n: bad number '0' (1 to 256)
1 0 0
0 0 0
1 0 1
spool-renew: x3: stale token: the current token is 4 and the job is in leased/
0 1 0
x2
1 0 1
spool-show: e9: no such job
0 1 0
x3
0 1 0
x4
1 0 0
1 0 0"
	states() { job_files | LC_ALL=C sort; audit_events; }
	want=$(states)
	fsck_clean
	# The same requests written ahead, in groups of 256 and of 3, on
	# spools made the same way: the same answers, the same end.
	for g in 256 3; do
		export SPOOL_DIR=$BATS_TEST_TMPDIR/g$g
		grouped_spool "$SPOOL_DIR"
		run -0 --separate-stderr spool-batch --group "$g" <"$R"
		equals "$stderr" ""
		equals "$output" "$(sed "s|$P/|$(realpath "$SPOOL_DIR")/|" <<<"$alone")"
		equals "$(states)" "$want"
		fsck_clean
	done
}

@test "--group: a job finished in a run of finishes and claims is not claimed by the same run, as alone it is" {
	export SPOOL_TEST_NOW=$T
	grouped_spool "$SPOOL_DIR"
	printf '%s\n' "finish old 1 release" "claim --owner w1 -n 256" >"$R"
	# In one run: the claim takes the four others, not old.
	run -0 --separate-stderr spool-batch --group 2 <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
0 1 0
old
0 4 0
$(lease_line x1 2 1)
$(lease_line x2 3 1)
$(lease_line x3 4 1)
$(lease_line x4 5 1)"
	equals "$(state_of old)" new
	# A request at a time: the claim takes the released job too, last
	# (eligible again at $T).
	export SPOOL_DIR=$BATS_TEST_TMPDIR/alone
	grouped_spool "$SPOOL_DIR"
	run -0 --separate-stderr spool-batch --group 1 <"$R"
	p=$(realpath "$SPOOL_DIR")
	equals "$output" "spool-batch 1
0 1 0
old
0 5 0
$(printf 'x%s\t%s\t1\t%s/leased/x%s,%s\n' 1 2 "$p" 1 2 2 3 "$p" 2 3 3 4 "$p" 3 4 4 5 "$p" 4 5)
$(printf 'old\t6\t1\t%s/leased/old,6' "$p")"
}

@test "--group: a claim that waits first writes the answers before it, and a transition on the spool ends its wait" {
	spool-enqueue --id w <<<w >/dev/null
	spool-claim --owner w1 >/dev/null
	session --group 8
	# Written at once: a renew, then a claim that waits for work.
	printf '%s\n' "renew w 1" "claim --owner w2 --wait 1h" >&"$SW"
	recv
	equals "$ANSWER" "0 0 0"
	# Answered while the claim waits; then a job arrives, and the claim
	# takes it.
	spool-enqueue --id late <<<late >/dev/null
	recv
	equals "$ANSWER" "0 1 0
$(lease_line late 2 1)"
	# Paused, a claim that waits does not say "spool paused": it waits,
	# and the resume's audit line ends the wait.
	spool-enqueue --id next <<<next >/dev/null
	spool-pause
	echo "claim --owner w2 --wait 1h" >&"$SW"
	polling "$BPID"
	spool-resume
	recv
	equals "$ANSWER" "0 1 0
$(lease_line next 3 1)"
	end_session
}

@test "the operator's requests run the commands: pause, resume, cancel, redrive, drop, purge, ls, stat, fsck, each answer the command's own" {
	export SPOOL_TEST_NOW=$T
	# Two spools made alike: the session works on one, the commands by
	# themselves on the other.
	twin=$BATS_TEST_TMPDIR/twin
	spool-init -d "$twin"
	# p1 and p2 parked, d1 done, q1 and q2 queued, in this order.
	for s in "$SPOOL_DIR" "$twin"; do
		i=0
		for id in p1 p2 d1 q1 q2; do
			i=$((i + 1))
			at_ms $((T - 6000 + i * 1000)) spool-enqueue -d "$s" --id "$id" \
			    <<<"$id" >/dev/null
		done
		at_ms $((T - 500)) spool-claim -d "$s" -n 3 --owner w1 >/dev/null
		spool-finish -d "$s" p1 1 permanent >/dev/null
		spool-finish -d "$s" --class transient p2 2 permanent >/dev/null
		spool-finish -d "$s" d1 3 ok >/dev/null
	done
	equals "$(ids_in dead | paste -sd' ') $(ids_in done) $(ids_in new | paste -sd' ')" \
	    "p1 p2 d1 q1 q2"
	: >"$R"
	expected="spool-batch 1"
	while read -r -a words; do
		echo "${words[*]}" >>"$R"
		expected+=$'\n'$(direct env SPOOL_DIR="$twin" "spool-${words[0]}" "${words[@]:1}")
	done <<'EOF'
stat
pause --by ops --note INC-1
claim --owner w1
stat
pause
resume --by ops --note INC-1
claim --owner w1
cancel --by ops --note INC-2 q2
redrive --by ops --note INC-3 p1
redrive --by ops --note INC-3 q1
redrive --by ops --note INC-3 --dry-run --all
drop --by ops --note INC-4 p2
drop --by ops --note INC-4 q1
drop --by ops --note INC-4 -
cancel --by ops --note INC-4 -0 -
ls dead
ls -l
ls --reason cancelled dead
purge done --older-than 0
purge --by ops --note INC-5 dead q2
purge --by ops --note INC-5 dead q1
ls done dead
stat
stat -a
fsck
fsck --verify
redrive
ls --bogus
EOF
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "${expected//"$(realpath "$twin")/"/$P/}"
	# Not empty answers: the commands did what they do.
	equals "$(printf '%s\n' "$output" | grep -c '^spool-claim: spool paused$')" 1
	# Both spools ended alike, job for job and event for event.
	equals "$(job_files | LC_ALL=C sort)" \
	    "$(SPOOL_DIR=$twin job_files | LC_ALL=C sort)"
	equals "$(audit_events)" "$(SPOOL_DIR=$twin audit_events)"
	equals "$(audit_events | cut -d' ' -f1,2 | tail -n 8 | paste -sd' ')" \
	    "pause - resume - claim q1 cancel q2 redrive p1 drop p2 purge d1 purge q2"
	equals "$(state_of p1) $(state_of p2)" "new done"
	# A NUL in a command's output ends a line, as a newline does: one
	# line an ID, no more.
	ids=$(spool-ls -0 new done | tr '\0' '\n')
	equals "$(LC_ALL=C sort <<<"$ids" | paste -sd' ')" "p1 p2"
	printf 'ls -0 new done\nls --json dead\n' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
0 2 0
$ids
$(direct spool-ls --json dead)"
	fsck_clean
}

@test "the end of input in the middle of a request line still answers it; then exit 0" {
	export SPOOL_TEST_NOW=$T
	printf 'enqueue --id e --bytes 2\nhi\nclaim --owner w1' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
0 1 0
e
0 1 0
$(lease_line e 1 1)"
	printf 'finish e 1 ok' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" $'spool-batch 1\n0 1 0\ne'
	equals "$(state_of e)" done
	printf '["show","e"' >"$R"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$output" '{"protocol":"spool-batch","version":1}
{"status":100,"out":[],"err":["spool-batch: malformed request: not a JSON array of strings"]}'
	printf '["renew","e","1"]' >"$R"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$output" '{"protocol":"spool-batch","version":1}
{"status":1,"out":[],"err":["spool-renew: e: not leased: the job is in done/"]}'
	# A last line of blanks is a request of no words.
	printf 'renew e 1\n  ' >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" "spool-batch 1
1 0 1
spool-renew: e: not leased: the job is in done/
100 0 1
spool-batch: malformed request: no words"
	fsck_clean
}

@test "a closed stdout: exit 111 with one line that names show; every enqueue answered or not is done or absent, never half" {
	awk 'BEGIN { for (i = 1; i <= 100; i++)
		printf "enqueue --id j%d --bytes 4\nj%03d\n", i, i
	    for (i = 0; i < 3000; i++) print "" }' >"$R"
	# The answers to come (3,000 of 53 bytes) are more than a pipe holds:
	# a write meets the closed pipe, whenever head ends.
	run -0 bash -c 'spool-batch <"$1" 2>"$2.err" | head -n 3 >"$2.out"
	    echo "${PIPESTATUS[*]}"' - "$R" "$BATS_TEST_TMPDIR/b"
	equals "$output" "111 0"
	equals "$(cat "$BATS_TEST_TMPDIR/b.out")" $'spool-batch 1\n0 1 0\nj1'
	equals "$(cat "$BATS_TEST_TMPDIR/b.err")" "spool-batch: standard output: Broken pipe (the last answers may be lost, not their effects: show ID says what became of a job)"
	# j1 to jK were enqueued, whole, and none after.
	k=$(ids_in new | wc -l)
	echo "enqueued before the write failed: $k"
	[ "$k" -ge 1 ]
	[ "$k" -le 100 ]
	equals "$(job_files | LC_ALL=C sort)" "$(for ((i = 1; i <= k; i++)); do
		printf 'new\tj%s\n' "$i"; done | LC_ALL=C sort)"
	equals "$(find "$SPOOL_DIR/new" -type f -exec awk '{
		n = FILENAME; sub(/.*\//, "", n); sub(/,.*/, "", n); print n, $0 }' {} + |
	    LC_ALL=C sort)" "$(for ((i = 1; i <= k; i++)); do
		printf 'j%s j%03d\n' "$i" "$i"; done | LC_ALL=C sort)"
	if [ "$k" -lt 100 ]; then
		run -1 --separate-stderr spool-show "j$((k + 1))"
		equals "$stderr" "spool-show: j$((k + 1)): no such job"
	fi
	fsck_clean
}

@test "memory stays flat over 100,000 requests: VmHWM at the end at most 256 kB above VmRSS after the first 1,000" {
	# The spool on a tmpfs if there is one: its syncs cost nothing, and
	# memory, not the disk, is what is measured here.
	if SHM=$(mktemp -d /dev/shm/spool-test.XXXXXX 2>/dev/null); then
		export SPOOL_DIR=$SHM/s
		spool-init
	fi
	a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
	# Requests 1 to 1,000 in a, the rest in b, each part ended by a mark
	# (an unknown request).  Every 200th: an enqueue, a claim, a finish;
	# else claims of an empty spool, renews of a missing job, finishes
	# with a bad token, malformed lines.  What each part's answers must
	# tally by status, in a.want and b.want; how many lines they are, in
	# a.lines and b.lines.
	awk -v n=100000 -v A="$a" -v B="$b" '
	function req(line, status, lines) {
		f = i <= 1000 ? A : B
		print line >f
		t[f, status]++
		l[f] += lines
	}
	BEGIN {
		for (i = 1; i <= n; i++) {
			k = i % 200
			if (k == 0) {
				c++
				req(sprintf("enqueue --id m%d --bytes 5\nm%04d", c, c), 0, 2)
				i++; req("claim --owner w1", 0, 2)
				i++; req(sprintf("finish m%d %d ok", c, c), 0, 2)
			} else if (k % 50 == 1)
				req("claim --owner w1", 1, 1)
			else if (k % 5 == 2)
				req("renew nosuch 1", 1, 2)
			else if (k % 2 == 1)
				req("finish nosuch x ok", 100, 2)
			else
				req("finish \"nosuch 1 ok", 100, 2)
		}
		i = 0; req("mark-a", 100, 2)
		i = n; req("mark-b", 100, 2)
		for (p = 1; p <= 2; p++) {
			f = p == 1 ? A : B
			printf "0=%d 1=%d 100=%d\n", t[f, 0], t[f, 1], t[f, 100] >(f ".want")
			print l[f] >(f ".lines")
		}
	}'
	# The answers of FILE, tallied by status.
	tally() {
		awk 'skip > 0 { skip--; next } { n[$1]++; skip = $2 + $3 }
		    END { printf "0=%d 1=%d 100=%d\n", n[0], n[1], n[100] }' "$1"
	}
	mkfifo "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	# Under make check SAN=1: AddressSanitizer's quarantine holds what is
	# freed, 256 MB of it, and would count as growth.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0" \
	    spool-batch <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" \
	    2>"$BATS_TEST_TMPDIR/err" 3>&- &
	BPID=$!
	exec {w}>"$BATS_TEST_TMPDIR/in" {r}<"$BATS_TEST_TMPDIR/out"
	IFS= read -r -t 20 -u "$r" greeting
	equals "$greeting" "spool-batch 1"
	# Part a written, its answers read (head ends at their last line:
	# nothing more is written until part b is).
	cat "$a" >&"$w" 3>&- &
	timeout 60 head -n "$(cat "$a.lines")" <&"$r" >"$a.answers"
	equals "$(tail -n 1 "$a.answers")" "spool-batch: unknown request 'mark-a'"
	equals "$(tally "$a.answers")" "$(cat "$a.want")"
	rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$BPID/status")
	cat "$b" >&"$w" 3>&- &
	timeout 120 head -n "$(cat "$b.lines")" <&"$r" >"$b.answers"
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$BPID/status")
	echo "VmRSS after the first 1,000 answers: $rss kB; VmHWM at the end: $hwm kB"
	equals "$(tail -n 1 "$b.answers")" "spool-batch: unknown request 'mark-b'"
	equals "$(tally "$b.answers")" "$(cat "$b.want")"
	[ -n "$rss" ]
	[ -n "$hwm" ]
	[ "$hwm" -le $((rss + 256)) ]
	exec {w}>&-
	st=0
	wait "$BPID" || st=$?
	BPID=
	equals "$(timeout 20 cat <&"$r")" ""
	exec {r}<&-
	equals "$st" 0
	equals "$(cat "$BATS_TEST_TMPDIR/err")" ""
	equals "$(ids_in done | wc -l)" 500
	equals "$(ids_in new; ids_in leased; ids_in dead)" ""
	fsck_clean
}

@test "--help as a request answers its usage with 0; as an option's value it is that value, as the commands read it" {
	export SPOOL_TEST_NOW=$T
	printf '%s\n' "claim --help" "renew j1 --help" "finish -- --help" \
	    "enqueue --bytes 2 --help" >"$R"
	printf 'xy\n' >>"$R"
	before=$(snapshot)
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
0 1 0
usage: claim [--lease DUR] [--owner NAME] [-n N] [--wait DUR]
0 1 0
usage: renew [--lease DUR] ID TOKEN
100 0 1
usage: finish [--class CLASS] [--detail TEXT] [--delay DUR] ID TOKEN ok|retry|permanent|release
0 1 0
usage: enqueue [--id ID] [--max-attempts N] [--deadline DUR] [--delay DUR] [--key KEY] [--trace ID] FILE ... | --bytes N"
	equals "$(snapshot)" "$before"
	# The value of --detail, --owner or --id: spool-finish finishes with
	# the detail "--help"; spool-claim and spool-enqueue refuse the word.
	spool-enqueue --id a </dev/null >/dev/null
	spool-enqueue --id b </dev/null >/dev/null
	spool-claim -n 2 --owner w1 >/dev/null
	spool-finish --detail --help a 1 retry >/dev/null
	printf '%s\n' "finish --detail --help b 2 retry" "claim --owner --help" \
	    "enqueue --id --help --bytes 0" "" >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
0 1 0
b
100 0 1
$(said 100 spool-claim --owner --help)
100 0 1
$(said 100 spool-enqueue --id --help)"
	equals "$(last_rec b detail)" "$(last_rec a detail)"
	equals "$(state_of b)" new
}

@test "-d that names another spool is refused by every command a request runs, however it is spelt" {
	export SPOOL_TEST_NOW=$T
	other=$BATS_TEST_TMPDIR/other
	spool-init -d "$other"
	spool-enqueue -d "$other" --id elsewhere </dev/null >/dev/null
	spool-claim -d "$other" >/dev/null
	spool-finish -d "$other" elsewhere 1 permanent >/dev/null
	spool-enqueue --id here </dev/null >/dev/null
	spool-claim >/dev/null
	spool-finish here 1 permanent >/dev/null
	# A word that only starts like -d, an option's value, is that value.
	printf '%s\n' "pause --by ops --note -dup" "resume --by ops --note -d" >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" $'spool-batch 1\n0 0 0\n0 0 0'
	equals "$(audit_events | tail -n 2)" "pause - 0 0 0 ops - - -dup
resume - 0 0 0 ops - - -d"
	before=$(snapshot; SPOOL_DIR=$other snapshot)
	: >"$R"
	: >"$BATS_TEST_TMPDIR/expected"
	while read -r cmd args; do
		echo "$cmd $args" >>"$R"
		printf '100 0 1\nspool-%s: -d: the session'\''s spool is %s, no other\n' \
		    "$cmd" "$SPOOL_DIR" >>"$BATS_TEST_TMPDIR/expected"
	done <<EOF
ls -d $other dead
ls -d$other dead
ls -ld $other dead
ls dead -d $other
show -d $other elsewhere
stat -d $other
stat -ad $other
stat --json -d $other
fsck -d $other
fsck --repair -d$other
pause -d $other
resume -d $other
redrive -d $other --by ops --note INC-1 elsewhere
drop -d $other --by ops --note INC-1 elsewhere
cancel -d $other --by ops --note INC-1 elsewhere
purge -d $other --by ops --note INC-1 dead elsewhere
EOF
	run -0 --separate-stderr spool-batch <"$R"
	equals "$stderr" ""
	equals "$output" "spool-batch 1
$(cat "$BATS_TEST_TMPDIR/expected")"
	equals "$(snapshot; SPOOL_DIR=$other snapshot)" "$before"
	# The session's own spool, named: as if not named.
	printf '%s\n' "ls -d $SPOOL_DIR dead" "stat -d $SPOOL_DIR --json" >"$R"
	run -0 --separate-stderr spool-batch <"$R"
	equals "$output" "spool-batch 1
0 1 0
here
$(direct spool-stat --json)"
}

@test "JSON: strings over 128 bytes and UTF-8 are written as they are: a long ID and its path, a message of non-ASCII bytes" {
	export SPOOL_TEST_NOW=$T
	long=$(printf 'x%.0s' {1..128})
	e=$(printf '\303\251%.0s' {1..100})
	printf '["enqueue","--id","%s","--bytes","0"]\n\n["claim","--owner","w1"]\n["renew","%s","1"]\n' \
	    "$long" "$e" >"$R"
	run -0 --separate-stderr spool-batch --json <"$R"
	equals "$stderr" ""
	m=$(said 100 spool-renew "$e" 1)
	equals "${#m}" $((13 + 70 + 8))
	equals "$output" "{\"protocol\":\"spool-batch\",\"version\":1}
{\"status\":0,\"out\":[\"$long\"],\"err\":[]}
{\"status\":0,\"out\":[{\"id\":\"$long\",\"token\":1,\"attempt\":1,\"cycle\":1,\"lease_until\":$((T + 30000)),\"trace\":null,\"path\":\"$P/leased/$long,1\"}],\"err\":[]}
{\"status\":100,\"out\":[],\"err\":[\"$m\"]}"
}
