#!/usr/bin/env bats
# spool-finish: ok to done/, permanent to dead/, retry back to new/ (or
# parked when attempts or deadline are spent), release without spending the
# attempt; only the current token may, and a repeat changes nothing.

load helpers

# The eligible time in the new/ file name of ID (ID,ELIGIBLE).
eligible_of() {
	local name
	name=$(find "$SPOOL_DIR/new" -type f -name "$1,*" -printf '%f\n')
	[ -n "$name" ] || { echo "$1 is not in new/" >&2; return 1; }
	echo "${name#"$1",}"
}

# enqueue_claim ID [ENQUEUE OPTIONS...]: enqueue ID at T and claim it as w1;
# TOK is its token (one spool-wide counter: 1 for the test's first claim).
enqueue_claim() {
	local id=$1 line
	shift
	at_ms $T spool-enqueue --id "$id" "$@" <<<"payload of $id" >/dev/null
	line=$(at_ms $T spool-claim --owner w1)
	TOK=$(cut -f2 <<<"$line")
	equals "$(cut -f1,3 <<<"$line")" "$(printf '%s\t1' "$id")"
}

T=1000000

@test "ok moves the job to done/ID with its payload" {
	enqueue_claim j1
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish j1 1 ok
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" done
	[ -f "$SPOOL_DIR/done/j1" ]
	assert_file "$SPOOL_DIR/done/j1" "payload of j1
"
	equals "$(ids_in leased)" ""
	check_invariants
	equals "$(audit_events | tail -n 1)" "ok j1 1 1 1 w1 - - -"
	diff -u - <(last_rec j1 t ev at tok att out) <<EOT
t=$((T + 100))
ev=ok
at=done
tok=1
att=1
out=ok
EOT
}

@test "permanent parks the job in dead/ID with reason permanent and its class" {
	enqueue_claim j1
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish --class invalid-input j1 1 permanent
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" dead
	assert_file "$SPOOL_DIR/dead/j1" "payload of j1
"
	equals "$(audit_events | tail -n 1)" "park j1 1 1 1 w1 permanent invalid-input -"
	diff -u - <(last_rec j1 ev at out reason cls se) <<EOT
ev=park
at=dead
out=permanent
reason=permanent
cls=invalid-input
se=
EOT
}

@test "retry --delay 0 puts the job back in new/, claimable at once with the next token" {
	enqueue_claim j1
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish --delay 0 --class transient j1 1 retry
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" new
	equals "$(eligible_of j1)" $((T + 100))
	run -0 --separate-stderr at_ms $((T + 100)) spool-claim --owner w2
	diff -u <(lease_line j1 2 2) <(printf '%s\n' "$output")
	equals "$stderr" ""
	assert_file "$(cut -f4 <<<"$output")" "payload of j1
"
	diff -u - <(audit_events) <<EOT
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
retry j1 1 1 1 w1 - transient -
claim j1 2 2 1 w2 - - 1
EOT
}

@test "retry without --delay waits for backoff: half to all of backoff * 2^(n-1)" {
	cat >"$SPOOL_DIR/config" <<EOT
lease=30s
max-attempts=5
deadline=7d
backoff=1s
backoff-max=1500ms
EOT
	enqueue_claim j1
	now=$((T + 100)) tok=1
	# Retry n waits within [lo, hi]: 1s, then 2s and 4s capped at 1.5s.
	for range in "500 1000" "750 1500" "750 1500"; do
		set -- $range
		run -0 --separate-stderr at_ms $now spool-finish j1 $tok retry
		equals "$output" j1
		equals "$stderr" ""
		e=$(eligible_of j1)
		echo "retry at $now: eligible $e, want $((now + $1)) .. $((now + $2))"
		[ "$e" -ge $((now + $1)) ]
		[ "$e" -le $((now + $2)) ]
		run -1 at_ms $((e - 1)) spool-claim --owner w1
		equals "$output" ""
		tok=$((tok + 1))
		run -0 at_ms $e spool-claim --owner w1
		diff -u <(lease_line j1 $tok $tok) <(printf '%s\n' "$output")
		now=$((e + 100))
	done
}

@test "the first retry's backoff with backoff=1s lands between now+500 and now+1000" {
	cat >"$SPOOL_DIR/config" <<EOT
backoff=1s
EOT
	# (The loop variable is not "i": bats 1.8's run with flags sets it.)
	for k in 1 2 3 4 5 6 7 8; do
		at_ms $T spool-enqueue --id j$k </dev/null >/dev/null
	done
	[ "$(at_ms $T spool-claim --owner w1 -n 8 | wc -l)" -eq 8 ]
	for k in 1 2 3 4 5 6 7 8; do
		tok=$(lease_token j$k)
		run -0 at_ms $((T + 10)) spool-finish j$k "$tok" retry
		equals "$output" j$k
		e=$(eligible_of j$k)
		[ "$e" -ge $((T + 510)) ]
		[ "$e" -le $((T + 1010)) ]
	done
	# Not claimable at once.
	run -1 --separate-stderr at_ms $((T + 10)) spool-claim --owner w2
	equals "$output" ""
	equals "$stderr" ""
	[ "$(ids_in new | wc -l)" -eq 8 ]
}

@test "backoff counts deliveries: a retry after a reclaim waits the second backoff" {
	# spool-layout.md, "config": "a retry that ends attempt n waits between
	# half and all of min(backoff * 2^(n-1), backoff-max)".  A delivery
	# whose lease ran out was attempt 1; the retry ends attempt 2.
	cat >"$SPOOL_DIR/config" <<EOT
backoff=1s
EOT
	for k in 1 2 3 4; do
		at_ms $T spool-enqueue --id j$k </dev/null >/dev/null
	done
	at_ms $T spool-claim --owner w1 --lease 300ms -n 4 >/dev/null
	equals "$(at_ms $((T + 300)) spool-claim --owner w2 -n 4 | cut -f3 | sort -u)" 2
	for k in 1 2 3 4; do
		run -0 at_ms $((T + 400)) spool-finish j$k "$(lease_token j$k)" retry
		equals "$output" j$k
		e=$(eligible_of j$k)
		echo "j$k: eligible $e, want $((T + 1400)) .. $((T + 2400))"
		[ "$e" -ge $((T + 1400)) ]
		[ "$e" -le $((T + 2400)) ]
	done
}

@test "retry when the attempts are spent parks the job as exhausted" {
	enqueue_claim j1 --max-attempts 1
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish --delay 0 --class dependency-down j1 1 retry
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" dead
	equals "$(audit_events | tail -n 1)" "park j1 1 1 1 w1 exhausted dependency-down -"
	diff -u - <(last_rec j1 ev at att out reason cls) <<EOT
ev=park
at=dead
att=1
out=retry
reason=exhausted
cls=dependency-down
EOT
}

@test "retry whose next eligible time passes the deadline parks the job as deadline" {
	enqueue_claim j1 --deadline 2s
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish --delay 5s j1 1 retry
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" dead
	equals "$(audit_events | tail -n 1)" "park j1 1 1 1 w1 deadline - -"
	diff -u - <(last_rec j1 ev at out reason) <<EOT
ev=park
at=dead
out=retry
reason=deadline
EOT

	# A delay that stays inside the deadline retries.
	enqueue_claim j2 --deadline 2s
	run -0 at_ms $((T + 100)) spool-finish --delay 1s j2 "$TOK" retry
	equals "$(state_of j2)" new
	equals "$(eligible_of j2)" $((T + 1100))
}

@test "release puts the job back in new/ without spending the attempt" {
	enqueue_claim j1 --max-attempts 1
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish j1 1 release
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" new
	equals "$(eligible_of j1)" $((T + 100))
	# The only attempt is still there: delivered again, as attempt 1.
	run -0 --separate-stderr at_ms $((T + 100)) spool-claim --owner w2
	diff -u <(lease_line j1 2 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
	diff -u - <(audit_events) <<EOT
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
release j1 1 0 1 w1 - - -
claim j1 2 1 1 w2 - - 1
EOT
}

@test "release --delay makes the job eligible after that delay" {
	enqueue_claim j1
	run -0 at_ms $((T + 100)) spool-finish --delay 2s j1 1 release
	equals "$(eligible_of j1)" $((T + 2100))
	run -1 at_ms $((T + 2099)) spool-claim --owner w2
	run -0 at_ms $((T + 2100)) spool-claim --owner w2
	diff -u <(lease_line j1 2 1) <(printf '%s\n' "$output")
}

@test "class unknown-side-effect parks at once, reason side-effect, se=1, even for retry" {
	enqueue_claim j1
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish --class unknown-side-effect --delay 0 j1 1 retry
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" dead
	equals "$(audit_events | tail -n 1)" "park j1 1 1 1 w1 side-effect unknown-side-effect -"
	diff -u - <(last_rec j1 ev at out reason cls se) <<EOT
ev=park
at=dead
out=retry
reason=side-effect
cls=unknown-side-effect
se=1
EOT
}

@test "class unknown-side-effect with permanent also flags the job se=1" {
	enqueue_claim j1
	run -0 at_ms $((T + 100)) spool-finish --class unknown-side-effect j1 1 permanent
	equals "$(state_of j1)" dead
	diff -u - <(last_rec j1 ev at cls se) <<EOT
ev=park
at=dead
cls=unknown-side-effect
se=1
EOT
}

@test "repeating a finish with the same token and outcome succeeds and changes nothing" {
	for outcome in ok permanent retry release; do
		enqueue_claim j-$outcome
		delay=()
		[ $outcome = retry ] && delay=(--delay 1s)
		run -0 at_ms $((T + 100)) spool-finish "${delay[@]}" j-$outcome "$TOK" $outcome
		before=$(snapshot)
		run -0 --separate-stderr at_ms $((T + 200)) spool-finish "${delay[@]}" j-$outcome "$TOK" $outcome
		equals "$output" j-$outcome
		equals "$stderr" ""
		equals "$(snapshot)" "$before"
	done
}

@test "a repeated retry is still a no-op after the job was claimed again" {
	enqueue_claim j1
	at_ms $((T + 100)) spool-finish --delay 0 j1 1 retry >/dev/null
	at_ms $((T + 100)) spool-claim --owner w2 >/dev/null
	before=$(snapshot)
	run -0 --separate-stderr at_ms $((T + 200)) spool-finish --delay 0 j1 1 retry
	equals "$output" j1
	equals "$stderr" ""
	equals "$(snapshot)" "$before"
	equals "$(state_of j1)" leased
}

@test "repeating a finish with another outcome is refused and changes nothing" {
	enqueue_claim j1
	at_ms $((T + 100)) spool-finish j1 1 ok >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 200)) spool-finish j1 1 permanent
	equals "$output" ""
	equals "$stderr" "spool-finish: j1: not leased: the job is in done/"
	run -1 --separate-stderr at_ms $((T + 200)) spool-finish --delay 0 j1 1 retry
	equals "$output" ""
	equals "$stderr" "spool-finish: j1: not leased: the job is in done/"
	equals "$(snapshot)" "$before"
	equals "$(state_of j1)" done
}

@test "a stale token is refused with the exact message and changes nothing" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	at_ms $((T + 300)) spool-claim --owner w2 >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 301)) spool-finish j1 1 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: j1: stale token: the current token is 2 and the job is in leased/"
	equals "$(snapshot)" "$before"
	# The current holder still can.
	run -0 at_ms $((T + 302)) spool-finish j1 2 ok
	equals "$output" j1
	equals "$(state_of j1)" done
}

@test "a finish for an unknown ID is refused: no such job" {
	before=$(snapshot)
	run -1 --separate-stderr spool-finish nope 1 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: nope: no such job"
	equals "$(snapshot)" "$before"
}

@test "bad arguments are refused with status 100 and change nothing" {
	enqueue_claim j1
	before=$(snapshot)
	run -100 --separate-stderr spool-finish j1 1 maybe
	equals "$output" ""
	equals "$stderr" "spool-finish: j1: bad outcome 'maybe' (ok, retry, permanent or release)"
	run -100 --separate-stderr spool-finish j1 0 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: j1: bad token '0' (a number from 1 to 10^18-1)"
	run -100 --separate-stderr spool-finish ../j1 1 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: ../j1: bad ID"
	run -100 --separate-stderr spool-finish --class bogus j1 1 retry
	equals "$output" ""
	equals "$stderr" "spool-finish: --class: unknown class 'bogus' (transient, rate-limited, dependency-down, invalid-input, permission, cancelled, unknown-side-effect, crashed, timeout or lease-expired)"
	run -100 --separate-stderr spool-finish --class rate_limited j1 1 retry
	equals "$output" ""
	equals "$stderr" "spool-finish: --class: unknown class 'rate_limited': did you mean 'rate-limited'?"
	equals "$(snapshot)" "$before"
	equals "$(state_of j1)" leased
}

@test "finish - reads ID TOKEN OUTCOME lines and reports each refusal" {
	at_ms $T spool-enqueue --id a </dev/null >/dev/null
	at_ms $((T + 20)) spool-enqueue --id b </dev/null >/dev/null
	at_ms $((T + 40)) spool-enqueue --id c </dev/null >/dev/null
	at_ms $((T + 60)) spool-enqueue --id d </dev/null >/dev/null
	equals "$(at_ms $((T + 60)) spool-claim --owner w1 -n 3 | cut -f1 | tr '\n' ' ')" "a b c "
	at_ms $((T + 60)) spool-claim --owner w1 --lease 300ms >/dev/null
	at_ms $((T + 360)) spool-claim --owner w2 >/dev/null	# d: token 5
	run -100 --separate-stderr at_ms $((T + 400)) spool-finish - <<EOT
a 1 ok
b 2 retry
this is not a finish
d 4 ok
c 3 permanent
EOT
	diff -u - <(printf '%s\n' "$output") <<EOT
a
b
c
EOT
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-finish: stdin line 3: want ID TOKEN OUTCOME
spool-finish: d: stale token: the current token is 5 and the job is in leased/
EOT
	equals "$(state_of a)" done
	equals "$(state_of b)" new
	equals "$(state_of c)" dead
	equals "$(state_of d)" leased
	check_invariants
	diff -u - <(audit_events | tail -n 3) <<EOT
ok a 1 1 1 w1 - - -
retry b 2 1 1 w1 - - -
park c 3 1 1 w1 permanent - -
EOT
}

@test "finish - with only a stale line exits 1" {
	at_ms $T spool-enqueue --id a </dev/null >/dev/null
	at_ms $T spool-enqueue --id b </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 -n 2 >/dev/null
	run -1 --separate-stderr at_ms $((T + 1)) spool-finish - <<EOT
a $(lease_token a) ok
b 7 ok
EOT
	equals "$output" a
	equals "$stderr" "spool-finish: b: stale token: the current token is $(lease_token b) and the job is in leased/"
}

@test "finish - naming one job twice handles it twice, in order" {
	enqueue_claim j1
	run -1 --separate-stderr at_ms $((T + 100)) spool-finish - <<EOT
j1 1 permanent
j1 1 ok
EOT
	equals "$output" j1
	equals "$stderr" "spool-finish: j1: not leased: the job is in dead/"
	equals "$(state_of j1)" dead

	enqueue_claim j2
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish - <<EOT
j2 $TOK ok
j2 $TOK ok
EOT
	diff -u - <(printf '%s\n' "$output") <<EOT
j2
j2
EOT
	equals "$stderr" ""
	equals "$(state_of j2)" done
	[ "$(audit_events | grep -c '^ok j2 ')" -eq 1 ]
}

@test "--detail is stored sanitised and percent-encoded, and never in the audit log" {
	enqueue_claim j1
	detail=$'disk full:\tsda1\x01 at 99% \xc3\xa9'
	run -0 --separate-stderr at_ms $((T + 100)) spool-finish --class transient --detail "$detail" --delay 0 j1 1 retry
	equals "$output" j1
	equals "$stderr" ""
	# Printable ASCII, '?' for each other byte; %XX for space and '%'.
	diff -u - <(last_rec j1 ev detail) <<EOT
ev=retry
detail=disk%20full:?sda1?%20at%2099%25%20??
EOT
	run -1 grep -r -e disk -e sda1 -e full "$SPOOL_DIR/audit"
	equals "$output" ""
	equals "$(audit_events | tail -n 1)" "retry j1 1 1 1 w1 - transient -"
}

@test "--detail is cut to 200 bytes" {
	enqueue_claim j1
	run -0 at_ms $((T + 100)) spool-finish --detail "$(printf 'x%.0s' $(seq 300))" j1 1 permanent
	equals "$(last_rec j1 detail)" "detail=$(printf 'x%.0s' $(seq 200))"
}

@test "spool_finish_claim ends a delivery and claims in one call, never a job it names" {
	local fc=$BATS_TEST_DIRNAME/lib/finishclaim now k
	now=$(date +%s%3N)
	for k in 1 2 3; do
		echo $k | at_ms $((now - 1000 + k * 100)) spool-enqueue --id j$k >/dev/null
	done
	run -0 spool-claim --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j1\t1')"
	run -0 "$fc" "$SPOOL_DIR" j1 1 ok 1
	equals "$output" "finish j1: done
claim: 1
claimed j2 2"
	equals "$(audit_events | tail -n 2 | head -n 1)" "ok j1 1 1 1 w1 - - -"
	[[ $(audit_events | tail -n 1) =~ ^"claim j2 2 1 1 testhost:"[0-9]+" - - -"$ ]]
	# Retried at once, j2 is due, but locked by the call: not its claim's.
	run -0 "$fc" "$SPOOL_DIR" j2 2 retry 2
	equals "$output" "finish j2: new
claim: 1
claimed j3 3"
	equals "$(ids_in new)" j2
	# A stale token is refused; the claim goes on.
	run -0 "$fc" "$SPOOL_DIR" j3 1 ok 1
	equals "$output" "finish j3: refused
claim: 1
claimed j2 4"
	# No room to claim: nothing is done, and each finish says why.
	run -0 "$fc" "$SPOOL_DIR" j2 4 ok 0
	equals "$output" "finish j2: Invalid argument
claim: -1"
	equals "$(ids_in leased)" "j2
j3"
	fsck_clean
}

@test "spool_finish_claim: a round that cannot begin reports its finishes failed" {
	local fc=$BATS_TEST_DIRNAME/lib/finishclaim
	enqueue_claim j1
	# The first round cannot begin: nothing is done, nothing claimed.
	run -0 env SPOOL_TEST_ENOMEM=round "$fc" "$SPOOL_DIR" j1 1 ok 1
	equals "$output" "finish j1: Cannot allocate memory
claim: -1"
	equals "$(ids_in leased)" j1
	# j1 named twice: its second finish is a round of its own, which
	# cannot begin.  It says so, where it used to read as done.
	run -0 env SPOOL_TEST_ENOMEM=round:2 "$fc" "$SPOOL_DIR" j1 1 ok 1 \
	    j1 1 ok
	equals "$output" "finish j1: done
finish j1: Cannot allocate memory
claim: 0"
	equals "$(ids_in done)" j1
	fsck_clean
}

@test "the library's structs, zeroed, name only what matters: defaults fill the rest" {
	printf 'payload\n' >"$BATS_TEST_TMPDIR/p"
	run -0 "$BATS_TEST_DIRNAME/lib/defaults" "$SPOOL_DIR" "$BATS_TEST_TMPDIR/p"
	equals "$output" "enqueue a: 0 ok
enqueue b: 0 ok
deadline: 604800000 ms after creation
claimed 2
finish a: 0 done
finish b: 0 dead"
	run -0 spool-show --json a
	[[ $output == *'"owner":null'* ]]
	# (a claim gives a token 1 or 2: one bucket's jobs come in any order)
	run -0 grep -c " claim a [12] 1 1 testhost:[0-9]* " "$SPOOL_DIR/audit/testhost.log"
}
