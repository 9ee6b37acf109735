#!/usr/bin/env bats
# spool-redrive: an operator puts parked jobs back in new/, byte for byte,
# with attempts reset, a fresh deadline, one more cycle and the token kept;
# only jobs parked now, and flagged ones only once reconciled.

load helpers

# park ID [ENQUEUE OPTIONS...]: enqueue ID at T, claim it, finish permanent.
park() {
	local id=$1
	shift
	at_ms $T spool-enqueue --id "$id" "$@" <<<"payload of $id" >/dev/null
	equals "$(at_ms $T spool-claim --owner w1 | cut -f1)" "$id"
	at_ms $((T + 10)) spool-finish "$id" "$(lease_token "$id")" permanent >/dev/null
	equals "$(state_of "$id")" dead
}

T=1000000

@test "redrive puts the very same job back in new/, eligible at once" {
	printf 'bytes \001\002\377\000 and\nmore' >"$BATS_TEST_TMPDIR/payload"
	at_ms $T spool-enqueue --id order-1842 "$BATS_TEST_TMPDIR/payload" >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $((T + 10)) spool-finish --class invalid-input order-1842 1 permanent >/dev/null
	cmp "$BATS_TEST_TMPDIR/payload" "$SPOOL_DIR/dead/order-1842"
	run -0 --separate-stderr at_ms $((T + 20)) spool-redrive --by ops --note INC-4411 order-1842
	equals "$output" order-1842
	equals "$stderr" ""
	equals "$(state_of order-1842)" new
	equals "$(find "$SPOOL_DIR/new" -type f -printf '%f\n')" "order-1842,$((T + 20))"
	cmp "$BATS_TEST_TMPDIR/payload" "$(path_of order-1842)"
	equals "$(ids_in dead)" ""
	check_invariants
	equals "$(audit_events | tail -n 1)" "redrive order-1842 1 0 2 ops - - INC-4411"
	run -0 --separate-stderr at_ms $((T + 20)) spool-claim --owner w2
	diff -u <(lease_line order-1842 2 1) <(printf '%s\n' "$output")
	cmp "$BATS_TEST_TMPDIR/payload" "$(cut -f4 <<<"$output")"
}

@test "redrive resets attempts: an exhausted job gets its whole budget again" {
	at_ms $T spool-enqueue --id j1 --max-attempts 2 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish --delay 0 j1 1 retry >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish --delay 0 j1 2 retry >/dev/null
	equals "$(state_of j1)" dead
	equals "$(last_rec j1 reason)" reason=exhausted
	run -0 at_ms $((T + 10)) spool-redrive --by ops --note INC-1 j1
	diff -u - <(last_rec j1 ev at tok att cyc by note) <<EOT
ev=redrive
at=new:$((T + 10))
tok=2
att=0
cyc=2
by=ops
note=INC-1
EOT
	run -0 at_ms $((T + 10)) spool-claim --owner w2
	diff -u <(lease_line j1 3 1) <(printf '%s\n' "$output")
	run -0 at_ms $((T + 10)) spool-finish --delay 0 j1 3 retry
	equals "$(state_of j1)" new
	run -0 at_ms $((T + 10)) spool-claim --owner w2
	diff -u <(lease_line j1 4 2) <(printf '%s\n' "$output")
}

@test "redrive never lowers the token and adds a cycle each time" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 100ms >/dev/null
	at_ms $((T + 100)) spool-claim --owner w2 --lease 100ms >/dev/null
	at_ms $((T + 200)) spool-claim --owner w3 >/dev/null
	at_ms $((T + 210)) spool-finish j1 3 permanent >/dev/null
	run -0 at_ms $((T + 300)) spool-redrive --by ops --note INC-1 j1
	run -0 at_ms $((T + 300)) spool-claim --owner w4
	diff -u <(lease_line j1 4 1) <(printf '%s\n' "$output")
	at_ms $((T + 310)) spool-finish j1 4 permanent >/dev/null
	run -0 at_ms $((T + 400)) spool-redrive --by ops --note INC-2 j1
	diff -u - <(audit_events | grep '^redrive') <<EOT
redrive j1 3 0 2 ops - - INC-1
redrive j1 4 0 3 ops - - INC-2
EOT
	run -0 at_ms $((T + 400)) spool-claim --owner w5
	diff -u <(lease_line j1 5 1) <(printf '%s\n' "$output")
}

@test "redrive gives a fresh deadline: redrive time plus the job's ttl" {
	at_ms $T spool-enqueue --id j1 --deadline 2s </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $((T + 100)) spool-finish --delay 5s j1 1 retry >/dev/null
	equals "$(last_rec j1 reason)" reason=deadline
	R=$((T + 60000))
	run -0 at_ms $R spool-redrive --by ops --note INC-4411 j1
	diff -u - <(last_rec j1 ev dl ttl) <<EOT
ev=redrive
dl=$((R + 2000))
ttl=2000
EOT
	# Delivered up to the new deadline, not parked as deadline.
	run -0 at_ms $((R + 1999)) spool-claim --owner w2
	diff -u <(lease_line j1 2 1) <(printf '%s\n' "$output")
}

@test "a second redrive is refused: not parked, and changes nothing" {
	park j1
	run -0 at_ms $((T + 20)) spool-redrive --by ops --note INC-4411 j1
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 30)) spool-redrive --by ops --note INC-4411 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: j1: not parked: the job is in new/"
	equals "$(snapshot)" "$before"
}

@test "redrive of a done or leased job is refused and changes nothing" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr spool-redrive --by ops --note INC-4411 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: j1: not parked: the job is in leased/"
	equals "$(snapshot)" "$before"
	at_ms $T spool-finish j1 1 ok >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr spool-redrive --by ops --note INC-4411 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: j1: not parked: the job is in done/"
	equals "$(snapshot)" "$before"
	equals "$(state_of j1)" done
}

@test "several IDs: the redriven are printed, each refusal reported, worst status" {
	park a
	park b
	at_ms $T spool-enqueue --id c </dev/null >/dev/null	# in new/
	run -100 --separate-stderr at_ms $((T + 20)) spool-redrive --by ops --note INC-4411 \
	    a c nope 'x/y' b
	diff -u - <(printf '%s\n' "$output") <<EOT
a
b
EOT
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-redrive: x/y: bad ID
spool-redrive: c: not parked: the job is in new/
spool-redrive: nope: no such job
EOT
	equals "$(state_of a)" new
	equals "$(state_of b)" new
	equals "$(state_of c)" new
	[ ! -e "$SPOOL_DIR/meta/nope" ]
	check_invariants
	diff -u - <(audit_events | grep '^redrive') <<EOT
redrive a 1 0 2 ops - - INC-4411
redrive b 2 0 2 ops - - INC-4411
EOT
}

@test "several IDs with only negative answers exit 1" {
	park a
	at_ms $T spool-enqueue --id c </dev/null >/dev/null
	run -1 --separate-stderr at_ms $((T + 20)) spool-redrive --by ops --note INC-4411 c a nope
	equals "$output" a
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-redrive: c: not parked: the job is in new/
spool-redrive: nope: no such job
EOT
}

@test "a job flagged se=1 is redriven only with --reconciled" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $((T + 10)) spool-finish --class unknown-side-effect j1 1 retry >/dev/null
	equals "$(last_rec j1 se)" se=1
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 20)) spool-redrive --by ops --note INC-4411 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: j1: its side effect may have happened: reconcile it, then redrive with --reconciled"
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr at_ms $((T + 20)) spool-redrive --by ops --note INC-4411 --reconciled j1
	equals "$output" j1
	equals "$stderr" ""
	equals "$(state_of j1)" new
	equals "$(audit_events | tail -n 1)" "redrive j1 1 0 2 ops - - INC-4411"
}

@test "a job parked by its last lease running out needs --reconciled too" {
	at_ms $T spool-enqueue --id j1 --max-attempts 1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	run -1 at_ms $((T + 300)) spool-claim --owner w2
	equals "$(state_of j1)" dead
	run -1 --separate-stderr at_ms $((T + 400)) spool-redrive --by ops --note INC-7 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: j1: its side effect may have happened: reconcile it, then redrive with --reconciled"
	run -0 at_ms $((T + 400)) spool-redrive --by ops --note INC-7 --reconciled j1
	equals "$output" j1
	run -0 at_ms $((T + 400)) spool-claim --owner w3
	diff -u <(lease_line j1 2 1) <(printf '%s\n' "$output")
}

@test "redrive needs --by and --note, each printable text" {
	park j1
	before=$(snapshot)
	run -100 --separate-stderr spool-redrive --by ops j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: --by WHO and --note TICKET are needed; missing: --note"
	run -100 --separate-stderr spool-redrive --note INC-1 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: --by WHO and --note TICKET are needed; missing: --by"
	run -100 --separate-stderr spool-redrive --by ops --note $'disk full\non db-3' j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: --note: bad value (printable text, 1 to 128 bytes, not '-')"
	run -100 --separate-stderr spool-redrive --by $'Jane\tDoe' --note INC-1 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: --by: bad value (printable text, 1 to 128 bytes, not '-')"
	equals "$(snapshot)" "$before"
}

@test "two operators redriving at once: exactly one wins each job" {
	for k in $(seq 1 20); do
		park j$k
	done
	ids=$(seq 1 20 | sed 's/^/j/')
	spool-redrive --by op1 --note INC-1 $ids >"$BATS_TEST_TMPDIR/out1" \
	    2>"$BATS_TEST_TMPDIR/err1" &
	p1=$!
	spool-redrive --by op2 --note INC-2 $ids >"$BATS_TEST_TMPDIR/out2" \
	    2>"$BATS_TEST_TMPDIR/err2" &
	p2=$!
	rc1=0 rc2=0
	wait $p1 || rc1=$?
	wait $p2 || rc2=$?
	[ "$rc1" -le 1 ]
	[ "$rc2" -le 1 ]
	# Every job redriven once: by one operator, refused to the other.
	diff -u <(echo "$ids" | LC_ALL=C sort) \
	    <(cat "$BATS_TEST_TMPDIR/out1" "$BATS_TEST_TMPDIR/out2" | LC_ALL=C sort)
	cat "$BATS_TEST_TMPDIR/out1" | while read -r id; do
		echo "spool-redrive: $id: not parked: the job is in new/"
	done | diff -u - "$BATS_TEST_TMPDIR/err2"
	cat "$BATS_TEST_TMPDIR/out2" | while read -r id; do
		echo "spool-redrive: $id: not parked: the job is in new/"
	done | diff -u - "$BATS_TEST_TMPDIR/err1"
	[ "$(audit_events | grep -c '^redrive')" -eq 20 ]
	[ "$(ids_in new | wc -l)" -eq 20 ]
	check_invariants
}

@test "a whole life in the audit log: enqueue, retry, park, redrive, ok" {
	at_ms $T spool-enqueue --id j1 --max-attempts 2 <<<"job" >/dev/null
	at_ms $((T + 1)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 2)) spool-finish --class transient --delay 0 j1 1 retry >/dev/null
	at_ms $((T + 3)) spool-claim --owner w2 >/dev/null
	at_ms $((T + 4)) spool-finish --class transient --delay 0 j1 2 retry >/dev/null
	at_ms $((T + 5)) spool-redrive --by ops --note INC-4411 j1 >/dev/null
	at_ms $((T + 6)) spool-claim --owner w3 >/dev/null
	at_ms $((T + 7)) spool-finish j1 3 ok >/dev/null
	equals "$(state_of j1)" done
	diff -u - <(audit_events) <<EOT
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
retry j1 1 1 1 w1 - transient -
claim j1 2 2 1 w2 - - 1
park j1 2 2 1 w2 exhausted transient -
redrive j1 2 0 2 ops - - INC-4411
claim j1 3 1 2 w3 - - 2
ok j1 3 1 2 w3 - - -
EOT
	# TIME is the pinned clock, UTC with milliseconds; WRITER is HOST:PID.
	diff -u - <(cut -d' ' -f1 "$SPOOL_DIR"/audit/*.log) <<EOT
1970-01-01T00:16:40.000Z
1970-01-01T00:16:40.001Z
1970-01-01T00:16:40.002Z
1970-01-01T00:16:40.003Z
1970-01-01T00:16:40.004Z
1970-01-01T00:16:40.005Z
1970-01-01T00:16:40.006Z
1970-01-01T00:16:40.007Z
EOT
	equals "$(cut -d' ' -f11- "$SPOOL_DIR"/audit/*.log | grep -Ev '^testhost:[0-9]+$')" ""
	equals "$(awk '{ print NF }' "$SPOOL_DIR"/audit/*.log | sort -u)" 11
}
