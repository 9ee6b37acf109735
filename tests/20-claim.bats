#!/usr/bin/env bats
# spool-claim: leases in eligible-time order, the attempt counted, expired
# leases taken over with a higher token, jobs past their deadline or out of
# attempts parked rather than delivered.

load helpers

# The new/ bucket of an eligible time, as spool-layout.md files it.
bucket_of() {
	local slot=$(($1 >> 4))
	printf 'new/%08x/%03x/%03x\n' $((slot >> 24)) $(((slot >> 12) & 0xfff)) \
	    $((slot & 0xfff))
}

T=1000000

@test "claim prints ID, token, attempt and an absolute path to the payload" {
	printf 'line one\n\001\377 binary\000 tail' >"$BATS_TEST_TMPDIR/payload"
	at_ms $T spool-enqueue --id order-1842 "$BATS_TEST_TMPDIR/payload" >/dev/null
	run -0 --separate-stderr at_ms $T spool-claim --owner w1
	diff -u <(lease_line order-1842 1 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
	path=$(cut -f4 <<<"$output")
	[[ $path = /* ]]
	[ -r "$path" ]
	cmp "$BATS_TEST_TMPDIR/payload" "$path"
	equals "$(state_of order-1842)" leased
	check_invariants
	equals "$(audit_events)" "$(printf '%s\n' \
	    "enqueue order-1842 0 0 1 - - - -" \
	    "claim order-1842 1 1 1 w1 - - -")"
	diff -u - <(last_rec order-1842 ev at tok att own until) <<EOT
ev=claim
at=leased
tok=1
att=1
own=w1
until=$((T + 30000))
EOT
}

@test "the path is absolute when the spool is named by a relative path" {
	spool-enqueue --id j1 <<<"x" >/dev/null
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr env SPOOL_DIR=spool spool-claim --owner w1
	diff -u <(lease_line j1 1 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
	spool-enqueue --id j2 <<<"y" >/dev/null
	run -0 --separate-stderr env -u SPOOL_DIR spool-claim -d ./spool --owner w1
	diff -u <(lease_line j2 2 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
}

@test "nothing eligible: exit 1 with empty stdout and stderr" {
	run -1 --separate-stderr spool-claim --owner w1
	equals "$output" ""
	equals "$stderr" ""

	at_ms $T spool-enqueue --id later --delay 1m </dev/null >/dev/null
	at_ms $T spool-enqueue --id taken </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	run -1 --separate-stderr at_ms $((T + 1000)) spool-claim --owner w2
	equals "$output" ""
	equals "$stderr" ""
	equals "$(state_of later)" new
	equals "$(state_of taken)" leased
	equals "$(audit_events | tail -n 1)" "claim taken 1 1 1 w1 - - -"
}

@test "a leaf bucket removed while a claim lists it reads as empty" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	leaf=$SPOOL_DIR/$(bucket_of $T)
	# w1 opens j1's leaf and stops there.
	SPOOL_TEST_PAUSE=leaf-opened SPOOL_TEST_NOW=$((T + 10000)) \
	    spool-claim --owner w1 >"$BATS_TEST_TMPDIR/out" \
	    2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	end=$((SECONDS + 20))
	until [ "$(cut -d' ' -f3 "/proc/$pid/stat")" = T ]; do
		[ "$SECONDS" -lt "$end" ] || { echo "w1 never stopped" >&2; false; }
		sleep 0.05
	done
	# w2 takes j1; w3 finds the leaf empty and long past, and removes it.
	at_ms $((T + 10000)) spool-claim --owner w2 >/dev/null
	run -1 --separate-stderr at_ms $((T + 10000)) spool-claim --owner w3
	[ ! -e "$leaf" ]
	kill -CONT $pid
	rc=0
	wait $pid || rc=$?
	equals "$rc" 1
	equals "$(cat "$BATS_TEST_TMPDIR/out")" ""
	equals "$(cat "$BATS_TEST_TMPDIR/err")" ""
	equals "$(state_of j1)" leased
	equals "$(audit_events | tail -n 1)" "claim j1 1 1 1 w2 - - -"
}

@test "-n N claims up to N jobs and prints one line each" {
	for k in 1 2 3 4 5; do
		at_ms $((T + k * 100)) spool-enqueue --id j$k <<<"job $k" >/dev/null
	done
	run -0 --separate-stderr at_ms $((T + 1000)) spool-claim --owner w1 -n 3
	diff -u <(lease_line j1 1 1; lease_line j2 2 1; lease_line j3 3 1) \
	    <(printf '%s\n' "$output")
	equals "$stderr" ""
	equals "$(ids_in leased)" "$(printf '%s\n' j1 j2 j3)"
	equals "$(ids_in new)" "$(printf '%s\n' j4 j5)"

	run -0 --separate-stderr at_ms $((T + 1000)) spool-claim --owner w1 -n 10
	diff -u <(lease_line j4 4 1; lease_line j5 5 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
	equals "$(ids_in new)" ""

	run -1 --separate-stderr at_ms $((T + 1000)) spool-claim --owner w1 -n 2
	equals "$output" ""
	equals "$stderr" ""
	check_invariants
}

@test "a job delayed 10s is not claimable at +9999ms and is at +10000ms" {
	at_ms $T spool-enqueue --id j1 --delay 10s <<<"later" >/dev/null
	E=$((T + 10000))
	equals "$(cd "$SPOOL_DIR" && find new -type f)" "$(bucket_of $E)/j1,$E"
	run -1 --separate-stderr at_ms $((E - 1)) spool-claim --owner w1
	equals "$output" ""
	equals "$stderr" ""
	equals "$(state_of j1)" new
	run -0 --separate-stderr at_ms $E spool-claim --owner w1
	diff -u <(lease_line j1 1 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
}

@test "earlier eligible times are claimed first, whatever the enqueue order" {
	# Enqueued late-first with delays: eligible at 3000, 1000, 2000.
	at_ms 1000 spool-enqueue --id c --delay 2000ms </dev/null >/dev/null
	at_ms 1000 spool-enqueue --id a </dev/null >/dev/null
	at_ms 1000 spool-enqueue --id b --delay 1000ms </dev/null >/dev/null
	for tok in 1 2 3; do
		id=$(printf '%s' abc | cut -c$tok)
		run -0 --separate-stderr at_ms 5000 spool-claim --owner w1
		diff -u <(lease_line $id $tok 1) <(printf '%s\n' "$output")
		equals "$stderr" ""
	done
	run -1 at_ms 5000 spool-claim --owner w1
}

@test "jobs enqueued at 3000, 2000, 1000 are claimed in time order in one batch" {
	at_ms 3000 spool-enqueue --id t3000 </dev/null >/dev/null
	at_ms 2000 spool-enqueue --id t2000 </dev/null >/dev/null
	at_ms 1000 spool-enqueue --id t1000 </dev/null >/dev/null
	run -0 --separate-stderr at_ms 5000 spool-claim --owner w1 -n 3
	diff -u <(lease_line t1000 1 1; lease_line t2000 2 1; lease_line t3000 3 1) \
	    <(printf '%s\n' "$output")
	equals "$stderr" ""
}

@test "time order holds across leaf, middle and top buckets" {
	# 2^28 ms starts top bucket 1; 2^16 ms later is its middle bucket 1.
	at_ms $((268435456 + 65536)) spool-enqueue --id m1 </dev/null >/dev/null
	at_ms $((268435456 + 16)) spool-enqueue --id l1 </dev/null >/dev/null
	at_ms 268435455 spool-enqueue --id top0 </dev/null >/dev/null
	at_ms 268435456 spool-enqueue --id top1 </dev/null >/dev/null
	equals "$(cd "$SPOOL_DIR" && find new -type f | LC_ALL=C sort)" "$(printf '%s\n' \
	    "new/00000000/fff/fff/top0,268435455" \
	    "new/00000001/000/000/top1,268435456" \
	    "new/00000001/000/001/l1,268435472" \
	    "new/00000001/001/000/m1,268500992")"
	run -0 --separate-stderr at_ms 300000000 spool-claim --owner w1 -n 10
	diff -u <(lease_line top0 1 1; lease_line top1 2 1; lease_line l1 3 1;
	    lease_line m1 4 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
}

@test "a job whose deadline passed while it waited is parked, and the next is delivered" {
	at_ms $T spool-enqueue --id late --deadline 1s <<<"too late" >/dev/null
	at_ms $((T + 500)) spool-enqueue --id fresh <<<"in time" >/dev/null
	run -0 --separate-stderr at_ms $((T + 1000)) spool-claim --owner w1
	diff -u <(lease_line fresh 1 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
	equals "$(state_of late)" dead
	equals "$(state_of fresh)" leased
	assert_file "$SPOOL_DIR/dead/late" "too late
"
	diff -u - <(audit_events) <<EOT
enqueue late 0 0 1 - - - -
enqueue fresh 0 0 1 - - - -
park late 0 0 1 - deadline - -
claim fresh 1 1 1 w1 - - -
EOT
	diff -u - <(last_rec late ev at tok att reason se) <<EOT
ev=park
at=dead
tok=0
att=0
reason=deadline
se=
EOT
}

@test "a job is still delivered one millisecond before its deadline" {
	at_ms $T spool-enqueue --id j1 --deadline 1s </dev/null >/dev/null
	run -0 --separate-stderr at_ms $((T + 999)) spool-claim --owner w1
	diff -u <(lease_line j1 1 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
}

@test "an expired lease is reclaimed at its expiry, with token 2 and attempt 2" {
	at_ms $T spool-enqueue --id j1 <<<"work" >/dev/null
	run -0 at_ms $T spool-claim --owner w1 --lease 300ms
	diff -u <(lease_line j1 1 1) <(printf '%s\n' "$output")

	run -1 --separate-stderr at_ms $((T + 299)) spool-claim --owner w2
	equals "$output" ""
	equals "$stderr" ""
	equals "$(cd "$SPOOL_DIR" && find leased -type f)" "leased/j1,1"

	run -0 --separate-stderr at_ms $((T + 300)) spool-claim --owner w2 --lease 5s
	diff -u <(lease_line j1 2 2) <(printf '%s\n' "$output")
	equals "$stderr" ""
	equals "$(cd "$SPOOL_DIR" && find leased -type f)" "leased/j1,2"
	assert_file "$(cut -f4 <<<"$output")" "work
"
	check_invariants
	diff -u - <(audit_events) <<EOT
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
reclaim j1 2 2 1 w2 - lease-expired 1
EOT
	diff -u - <(last_rec j1 ev at tok att own until prev) <<EOT
ev=claim
at=leased
tok=2
att=2
own=w2
until=$((T + 5300))
prev=1
EOT
}

@test "after a reclaim the old holder's finish and renew are refused and change nothing" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	at_ms $((T + 300)) spool-claim --owner w2 >/dev/null
	before=$(snapshot)
	for outcome in ok retry permanent release; do
		run -1 --separate-stderr at_ms $((T + 400)) spool-finish j1 1 $outcome
		equals "$output" ""
		equals "$stderr" "spool-finish: j1: stale token: the current token is 2 and the job is in leased/"
	done
	run -1 --separate-stderr at_ms $((T + 400)) spool-renew j1 1
	equals "$output" ""
	equals "$stderr" "spool-renew: j1: stale token: the current token is 2 and the job is in leased/"
	equals "$(snapshot)" "$before"
}

@test "the last attempt's expired lease parks the job as exhausted, lease-expired, se=1" {
	at_ms $T spool-enqueue --id j1 --max-attempts 2 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $((T + 10)) spool-finish --delay 0 j1 1 retry >/dev/null
	run -0 at_ms $((T + 10)) spool-claim --owner w2 --lease 300ms
	diff -u <(lease_line j1 2 2) <(printf '%s\n' "$output")

	run -1 --separate-stderr at_ms $((T + 310)) spool-claim --owner w3
	equals "$output" ""
	equals "$stderr" ""
	equals "$(state_of j1)" dead
	check_invariants
	diff -u - <(last_rec j1 ev at tok att reason cls se) <<EOT
ev=park
at=dead
tok=2
att=2
reason=exhausted
cls=lease-expired
se=1
EOT
	# Columns EVENT ID TOKEN ATTEMPT CYCLE, then REASON CLASS NOTE.
	equals "$(audit_events | tail -n 1 | cut -d' ' -f1-5,7-9)" \
	    "park j1 2 2 1 exhausted lease-expired -"
}

@test "the park of an expired lease names the holder whose lease ran out" {
	# spool-layout.md, "The audit log", ACTOR: "the operator (by) for redrive; else
	# the lease holder".  The delivery that ended was w1's.
	at_ms $T spool-enqueue --id j1 --max-attempts 1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	run -1 at_ms $((T + 300)) spool-claim --owner w2
	equals "$(audit_events | tail -n 1)" "park j1 1 1 1 w1 exhausted lease-expired -"
}

@test "a lease that runs out past the deadline parks as deadline, lease-expired, se=1" {
	at_ms $T spool-enqueue --id j1 --deadline 1s </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 2s >/dev/null
	run -1 --separate-stderr at_ms $((T + 2000)) spool-claim --owner w2
	equals "$output" ""
	equals "$stderr" ""
	equals "$(state_of j1)" dead
	diff -u - <(last_rec j1 ev at reason cls se) <<EOT
ev=park
at=dead
reason=deadline
cls=lease-expired
se=1
EOT
}

@test "a job busy under another process's lock is skipped and later jobs pass it" {
	at_ms $T spool-enqueue --id first </dev/null >/dev/null
	at_ms $((T + 100)) spool-enqueue --id second </dev/null >/dev/null
	# flock(1) holds the sidecar's lock, as a claimer or finisher would.
	run -0 --separate-stderr at_ms $((T + 200)) \
	    flock "$SPOOL_DIR/meta/first" spool-claim --owner w1 -n 2
	diff -u <(lease_line second 1 1) <(printf '%s\n' "$output")
	equals "$stderr" ""
	equals "$(state_of first)" new
	run -0 at_ms $((T + 200)) spool-claim --owner w2
	diff -u <(lease_line first 2 1) <(printf '%s\n' "$output")
}

@test "expired leases are taken over before new jobs" {
	at_ms $T spool-enqueue --id old </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	at_ms $((T + 100)) spool-enqueue --id young </dev/null >/dev/null
	run -0 at_ms $((T + 300)) spool-claim --owner w2
	diff -u <(lease_line old 2 2) <(printf '%s\n' "$output")
	run -0 at_ms $((T + 300)) spool-claim --owner w2
	diff -u <(lease_line young 3 1) <(printf '%s\n' "$output")
}

@test "concurrent claimers deliver each job exactly once" {
	for k in $(seq 1 30); do
		spool-enqueue --id j$k <<<"job $k" >/dev/null
	done
	claimer() {
		local rc
		while :; do
			rc=0
			spool-claim --owner "$1" >>"$BATS_TEST_TMPDIR/out.$1" || rc=$?
			[ "$rc" -eq 0 ] || break
		done
		[ "$rc" -eq 1 ]
	}
	pids=()
	for w in w1 w2 w3 w4; do
		claimer $w &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	cat "$BATS_TEST_TMPDIR"/out.* | cut -f1 | LC_ALL=C sort >"$BATS_TEST_TMPDIR/got"
	diff -u <(seq 1 30 | sed 's/^/j/' | LC_ALL=C sort) "$BATS_TEST_TMPDIR/got"
	# Attempt 1 each; tokens 1 to 30 from the one counter, each once.
	equals "$(cat "$BATS_TEST_TMPDIR"/out.* | cut -f3 | sort -u)" 1
	diff -u <(seq 1 30) <(cat "$BATS_TEST_TMPDIR"/out.* | cut -f2 | sort -n)
	equals "$(ids_in new)" ""
	[ "$(ids_in leased | wc -l)" -eq 30 ]
	check_invariants
}

@test "bad options are refused with status 100 and nothing is claimed" {
	spool-enqueue --id j1 </dev/null >/dev/null
	before=$(snapshot)
	run -100 --separate-stderr spool-claim --owner 'bad owner'
	equals "$output" ""
	[[ $stderr = "spool-claim: --owner: bad value ("* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -100 --separate-stderr spool-claim --owner w1 -n 0
	equals "$output" ""
	equals "$stderr" "spool-claim: -n: bad number '0' (1 to 256)"
	run -100 --separate-stderr spool-claim --owner w1 --lease 0
	equals "$output" ""
	equals "$stderr" "spool-claim: --lease: bad duration '0' (use e.g. 500ms, 30s, 5m, 2h, 7d)"
	run -100 --separate-stderr spool-claim --owner w1 extra
	equals "$output" ""
	equals "$stderr" "usage: spool-claim [-d DIR] [--lease DUR] [--owner NAME] [-n N]"
	equals "$(snapshot)" "$before"
}

@test "a claim of more than one group: a group whose sync failed hands out none of its leases" {
	local i
	for i in $(seq 70); do echo "p$i"; done >"$BATS_TEST_TMPDIR/ids"
	while read -r i; do
		spool-enqueue --id "$i" </dev/null >/dev/null
	done <"$BATS_TEST_TMPDIR/ids"
	# leased/'s fsync fails the second time: the second group of 64
	run -0 --separate-stderr shimmed SHIM_ROOT="$SPOOL_DIR/leased" \
	    SHIM_FAMILY=fsync SHIM_NTH=2 SHIM_ERRNO=EIO spool-claim -n 70 --lease 1h
	[ "${#lines[@]}" -eq 64 ]
	equals "$stderr" ""
	# The other six are in leased/ with a lease no one was given.
	[ "$(ls "$SPOOL_DIR/leased" | wc -l)" -eq 70 ]
	fsck_clean
}
