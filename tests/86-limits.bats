#!/usr/bin/env bats
# Keys and limits: a job's key is kept for its life and shown; a claim
# passes over a job whose key is at its limit (limit.KEY=N) or its rate
# (rate.KEY=N/DUR) and takes the others; a slot comes back when its lease
# ends, or runs out; a bad key, limit or rate is refused and changes
# nothing.  The stress of many runners under one limit is at the end.

load helpers

BATS_TEST_TIMEOUT=300

T=1000000

# enq ID MS [OPTION...]: a job enqueued at time MS.
enq() {
	local id=$1 ms=$2
	shift 2
	printf '%s\n' "$id" | at_ms "$ms" spool-enqueue --id "$id" "$@" >/dev/null
}

# The names in slots/KEY/, but its lock.
slots_of() {
	find "$SPOOL_DIR/slots/$1" -mindepth 1 -maxdepth 1 ! -name .lock \
	    -printf '%f\n' | LC_ALL=C sort
}

@test "a job's key is kept in every record, and shown by spool-show, spool-ls -l (a table with a key) and --json" {
	enq mail-1 $T --key mail
	enq plain $((T + 100))
	equals "$(last_rec mail-1 key)" key=mail
	run -0 at_ms $((T + 1000)) spool-claim --owner w1
	equals "$(cut -f1 <<<"$output")" mail-1
	equals "$(last_rec mail-1 ev key)" "$(printf '%s\n' ev=claim key=mail)"
	run -0 at_ms $((T + 2000)) spool-show mail-1
	equals "$(grep -E '^(trace|key) ' <<<"$output")" "$(printf '%s\n' 'trace        -' 'key          mail')"
	run -0 at_ms $((T + 2000)) spool-show plain
	equals "$(grep -c '^key ' <<<"$output")" 0
	run -0 at_ms $((T + 2000)) spool-ls -l leased new
	equals "$output" "leased:
ID      DELIV  DISP  KEY   OWNER  EXPIRES  AGE  CYC  BY  NOTE
mail-1  #1     -     mail  w1     in 29s   1s   1    -   -

new:
ID     DELIV  DISP  DUE  CLASS  AGE  CYC  BY  NOTE  DETAIL
plain  #0     -     now  -      1s   1    -   -     -"
	run -0 spool-ls --json leased new
	equals "$(jq -c .key <<<"$output")" "$(printf '%s\n' '"mail"' null)"
}

@test "a bad key is refused with status 100 and one line, and changes nothing" {
	local long
	long=$(printf 'k%.0s' {1..65})
	before=$(snapshot)
	for key in '' 'a b' -lead "$long" 'ö'; do
		run -100 --separate-stderr spool-enqueue --key "$key" <<<x
		equals "$output" ""
		equals "$stderr" "spool-enqueue: --key: bad value (letters, digits, '.', '_', '-', starting with a letter or digit, at most 64 bytes)"
	done
	equals "$(snapshot)" "$before"
	# 64 bytes is the longest.
	run -0 spool-enqueue --id j --key "${long%k}" <<<x
}

@test "a claim passes over a job whose key is at its limit, and takes the others" {
	echo 'limit.k=2' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	enq k3 $((T + 200)) --key k
	enq u1 $((T + 300))
	enq m1 $((T + 400)) --key m
	run -0 at_ms $((T + 1000)) spool-claim -n 10 --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'k1\t1\nk2\t2\nu1\t3\nm1\t4')"
	equals "$(slots_of k)" "$(printf '%s\n' k1 k2)"
	# No limit for m: no slots.
	[ ! -e "$SPOOL_DIR/slots/m" ]
	run -1 at_ms $((T + 1100)) spool-claim -n 10 --owner w1
	equals "$output" ""
	# A finish gives the slot back: the next claim takes k3.
	run -0 at_ms $((T + 1200)) spool-finish k1 1 ok
	run -0 at_ms $((T + 1300)) spool-claim -n 10 --owner w2
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'k3\t5')"
	equals "$(slots_of k)" "$(printf '%s\n' k2 k3)"
	check_invariants
	fsck_clean
}

@test "a limit changed in config counts at the next claim; 0 holds a key back" {
	echo 'limit.k=0' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	run -1 at_ms $((T + 1000)) spool-claim -n 10
	sed -i 's/^limit\.k=0$/limit.k=1/' "$SPOOL_DIR/config"
	run -0 at_ms $((T + 1100)) spool-claim -n 10 --owner w1
	equals "$(cut -f1 <<<"$output")" k1
	# Without the line, the key has no limit.
	sed -i '/^limit\.k=/d' "$SPOOL_DIR/config"
	run -0 at_ms $((T + 1200)) spool-claim -n 10 --owner w1
	equals "$(cut -f1 <<<"$output")" k2
}

@test "spool-run --idle-exit does not wait for a job its key's limit holds back" {
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	echo 1 | spool-enqueue --id k1 --key k >/dev/null
	echo 2 | spool-enqueue --id k2 --key k >/dev/null
	echo 3 | spool-enqueue --id u1 >/dev/null
	run -0 spool-claim --lease 1h
	equals "$(cut -f1 <<<"$output")" k1
	run -0 --separate-stderr spool-run --idle-exit 0 -- cat
	equals "$output" 3
	[[ $stderr =~ ^"spool-run: "[^\ ]+" u1 token=2 attempt=1 exit=0 " ]]
	equals "$(ids_in new)" k2
	equals "$(ids_in leased)" k1
	equals "$(ids_in done)" u1
}

@test "a finish and a claim in one call: the slot the finished job held is the claim's" {
	local now
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	now=$(date +%s%3N)
	echo 1 | at_ms $((now - 1000)) spool-enqueue --id k1 --key k >/dev/null
	echo 2 | at_ms $((now - 900)) spool-enqueue --id k2 --key k >/dev/null
	run -0 spool-claim -n 2
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'k1\t1')"
	run -0 "$BATS_TEST_DIRNAME/lib/finishclaim" "$SPOOL_DIR" k1 1 ok 2
	equals "$output" "finish k1: done
claim: 1
claimed k2 2"
	equals "$(slots_of k)" k2
	fsck_clean
}

@test "a slot comes back when its lease runs out: the job is taken over, and a crashed claim's slot goes" {
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	run -0 at_ms $((T + 1000)) spool-claim --lease 10s --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'k1\t1')"
	run -1 at_ms $((T + 5000)) spool-claim --owner w2
	# After the lease, k1 is taken over first: it keeps the one slot.
	run -0 at_ms $((T + 12000)) spool-claim --lease 10s --owner w2
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'k1\t2')"
	equals "$(slots_of k)" k1
	# A claimer killed after it made its slot, before its rename: the job
	# is still in new/, and its slot is its own to take again.
	run -0 at_ms $((T + 13000)) spool-finish k1 2 ok
	run -137 env SPOOL_TEST_CRASH=claim-recorded SPOOL_TEST_NOW=$((T + 14000)) spool-claim --lease 10s --owner w3
	equals "$(slots_of k)" k2
	equals "$(state_of k2)" new
	run -0 at_ms $((T + 15000)) spool-claim --owner w4
	equals "$(cut -f1 <<<"$output")" k2
	# A slot whose job is no longer leased goes at the next claim.
	run -0 at_ms $((T + 16000)) spool-finish k2 "$(lease_token k2)" ok
	enq k3 $((T + 16100)) --key k
	run -0 at_ms $((T + 17000)) spool-claim --owner w4
	equals "$(cut -f1 <<<"$output")" k3
	equals "$(slots_of k)" k3
	check_invariants
	fsck_clean
}

@test "a lease renewed past its until keeps its slot until a claim takes the job over" {
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	run -0 at_ms $((T + 1000)) spool-claim --lease 1s --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'k1\t1')"
	# Past k1's until, while its holder renews (its sidecar locked), a
	# claim passes over k1 as busy, and k2 as its key is full.
	exec {lk}<"$SPOOL_DIR/meta/k1"
	flock -x "$lk"
	run -1 at_ms $((T + 5000)) spool-claim --owner w2
	exec {lk}<&-
	equals "$(slots_of k)" k1
	run -0 at_ms $((T + 5100)) spool-renew --lease 1m k1 1
	run -1 at_ms $((T + 5200)) spool-claim --owner w2
	equals "$(ids_in leased)" k1
	check_invariants
	fsck_clean
}

@test "a claim killed after its slot, before its record: the slot holds until the lease it asked for would end" {
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	enq k3 $((T + 200)) --key k
	size=$(stat -c %s "$SPOOL_DIR/meta/k1")
	run -137 env SPOOL_TEST_CRASH=claim-slotted SPOOL_TEST_NOW=$((T + 1000)) spool-claim --lease 10s --owner w1
	equals "$(slots_of k)" k1
	equals "$(cat "$SPOOL_DIR/slots/k/k1")" "0 $size $((T + 11000))"
	equals "$(state_of k1)" new
	# k1 cannot be claimed (a hand took its mode): its slot holds k2 back
	# until the lease the dead claim asked for would have ended.
	chmod 000 "$(find "$SPOOL_DIR/new" -name 'k1,*')"
	run -1 at_ms $((T + 5000)) spool-claim --owner w2
	run -0 at_ms $((T + 11001)) spool-claim --owner w2
	equals "$(cut -f1 <<<"$output")" k2
	equals "$(slots_of k)" k2
	# Once the job has a record after the slot's, the slot goes by it:
	# k1 cancelled, its dead slot is no bar.
	chmod 644 "$(find "$SPOOL_DIR/new" -name 'k1,*')"
	run -0 at_ms $((T + 12000)) spool-finish k2 "$(lease_token k2)" ok
	run -137 env SPOOL_TEST_CRASH=claim-slotted SPOOL_TEST_NOW=$((T + 13000)) spool-claim --lease 10s --owner w1
	equals "$(slots_of k)" k1
	run -0 at_ms $((T + 14000)) spool-cancel --by ops --note T-1 k1
	run -0 at_ms $((T + 15000)) spool-claim --owner w3
	equals "$(cut -f1 <<<"$output")" k3
	equals "$(slots_of k)" k3
	check_invariants
	fsck_clean
}

# Another claim counts the slot while its claim writes the record.  It
# may read the sidecar as the record is half there: the slot holds, as
# before the record.  (A stat after the read saw a record that the read
# had not, and the slot went: four leases under limit.k=3 in the stress.)
@test "a claim's record half written, as a reader may see it: its slot still holds" {
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	size=$(stat -c %s "$SPOOL_DIR/meta/k1")
	run -137 env SPOOL_TEST_CRASH=claim-slotted SPOOL_TEST_NOW=$((T + 1000)) spool-claim --lease 10s --owner w1
	printf 't=1796025601000 ev=claim' >>"$SPOOL_DIR/meta/k1"
	# k1 cannot be claimed: the count of k2's claim is what is seen.
	chmod 000 "$(find "$SPOOL_DIR/new" -name 'k1,*')"
	run -1 --separate-stderr at_ms $((T + 5000)) spool-claim --owner w2
	equals "$output" ""
	equals "$(slots_of k)" k1
	equals "$(state_of k2)" new
	truncate -s "$size" "$SPOOL_DIR/meta/k1"
	chmod 644 "$(find "$SPOOL_DIR/new" -name 'k1,*')"
	check_invariants
	fsck_clean
}

@test "a slip in config does not stop a running worker: it keeps the limits it had" {
	echo 'limit.k=1' >>"$SPOOL_DIR/config"
	H=$BATS_TEST_TMPDIR/h
	printf '#!/bin/sh\nwhile [ ! -e "%s/go" ]; do sleep 0.05; done\n' "$BATS_TEST_TMPDIR" >"$H"
	chmod +x "$H"
	echo 1 | spool-enqueue --id j1 --key k >/dev/null
	echo 2 | spool-enqueue --id j2 --key k >/dev/null
	spool-run -j 2 --idle-exit 0 -- "$H" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	for _ in $(seq 400); do
		[ "$(ids_in leased | wc -l)" -eq 1 ] && break
		sleep 0.05
	done
	equals "$(ids_in leased | wc -l)" 1
	echo 'limt.k=2' >>"$SPOOL_DIR/config"
	touch "$BATS_TEST_TMPDIR/go"
	rc=0
	wait "$pid" || rc=$?
	equals "$rc" 0
	equals "$(ids_in done)" "$(printf '%s\n' j1 j2)"
	# A command started now refuses the spool, naming the line.
	run -100 spool-stat
	equals "$output" "spool-stat: $SPOOL_DIR/config:$(wc -l <"$SPOOL_DIR/config"): limt.k: unknown key (see spool(7), FILES)"
}

@test "rate.KEY=N/DUR: at most N claims of the key in any window of DUR" {
	echo 'rate.r=2/1m' >>"$SPOOL_DIR/config"
	for i in 1 2 3 4; do enq "r$i" $((T + i * 100)) --key r; done
	run -0 at_ms $((T + 1000)) spool-claim -n 10 --owner w1
	equals "$(cut -f1 <<<"$output")" "$(printf '%s\n' r1 r2)"
	run -0 at_ms $((T + 2000)) spool-finish r1 1 ok
	# A finished claim still counts in its window.
	run -1 at_ms $((T + 60999)) spool-claim -n 10 --owner w1
	run -0 at_ms $((T + 61001)) spool-claim -n 10 --owner w1
	equals "$(cut -f1 <<<"$output")" "$(printf '%s\n' r3 r4)"
	equals "$(slots_of r)" "$(printf '%s\n' "@$((T + 61001)),r3" "@$((T + 61001)),r4")"
}

@test "rate.KEY=N/UNIT: a unit alone is one of it, as 2/m is 2/1m" {
	echo 'rate.r=2/m' >>"$SPOOL_DIR/config"
	for i in 1 2 3; do enq "r$i" $((T + i * 100)) --key r; done
	run -0 at_ms $((T + 1000)) spool-claim -n 10 --owner w1
	equals "$(cut -f1 <<<"$output")" "$(printf '%s\n' r1 r2)"
	run -1 at_ms $((T + 60999)) spool-claim -n 10 --owner w1
	run -0 at_ms $((T + 61001)) spool-claim -n 10 --owner w1
	equals "$(cut -f1 <<<"$output")" r3
}

@test "a bad limit or rate in config is refused with status 100, naming its line, and changes nothing" {
	local line
	enq j $T
	before=$(snapshot)
	cp "$SPOOL_DIR/config" "$BATS_TEST_TMPDIR/config"
	n=$(($(wc -l <"$SPOOL_DIR/config") + 1))
	N='not a whole number from 0 to 1000000'
	R='not N/DUR, N from 1 to 1000000, such as 5/1s, 100/m or 10/30s'
	K="not a key of letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 bytes"
	for line in 'limit.k=-1' 'limit.k=x' 'limit.k=' 'limit.k=1000001' \
	    'limit.a b=1' 'limit.=1' 'rate.k=5' 'rate.k=0/1s' 'rate.k=5/0' \
	    'rate.k=5/x' 'rate.k=/1s' 'rate.k=5/sec' 'rate.k=5/ s' 'rate.k=5/'; do
		cp "$BATS_TEST_TMPDIR/config" "$SPOOL_DIR/config"
		printf '%s\n' "$line" >>"$SPOOL_DIR/config"
		case $line in
		'limit.a b=1' | limit.=1) why="${line%=*}: $K" ;;
		limit.*) why="$line: $N" ;;
		*) why="$line: $R" ;;
		esac
		run -100 --separate-stderr spool-claim
		equals "$output" ""
		equals "$stderr" "spool-claim: $SPOOL_DIR/config:$n: $why (see spool(7), FILES)"
	done
	cp "$BATS_TEST_TMPDIR/config" "$SPOOL_DIR/config"
	# The test wrote config again: its bytes, not its ctime, are as before.
	equals "$(snapshot | grep -v ' \./config$')" \
	    "$(grep -v ' \./config$' <<<"$before")"
	cmp "$BATS_TEST_TMPDIR/config" "$SPOOL_DIR/config"
}

@test "spool-stat shows each key with a limit or a rate: leased, the bound, waiting and the oldest's age" {
	printf '%s\n' 'limit.k=2' 'rate.r=5/1m' >>"$SPOOL_DIR/config"
	enq k1 $T --key k
	enq k2 $((T + 100)) --key k
	enq k3 $((T + 200)) --key k
	enq r1 $((T + 300)) --key r
	enq other $((T + 400)) --key other
	run -0 at_ms $((T + 1000)) spool-claim -n 2 --owner w1
	run -0 --separate-stderr at_ms $((T + 61200)) spool-stat
	equals "$stderr" ""
	equals "$(grep '^key ' <<<"$output")" "$(printf '%-31s %s\n' \
	    'key k' '2 leased of 2, 1 waiting, oldest 1m01s' \
	    'key r' '0 leased, rate 5/1m, 1 waiting, oldest 1m00s')"
	run -0 at_ms $((T + 61200)) spool-stat --json
	equals "$(jq -c .keys <<<"$output")" '{"k":{"leased":2,"limit":2,"rate":null,"window_ms":null,"waiting":1,"oldest_waiting_ms":61000},"r":{"leased":0,"limit":null,"rate":5,"window_ms":60000,"waiting":1,"oldest_waiting_ms":60900}}'
	run -0 at_ms $((T + 61200)) spool-stat --prom
	promtool check metrics <<<"$output"
	equals "$(grep '^spool_key_' <<<"$output" | sed "s|$(realpath "$SPOOL_DIR")|S|")" 'spool_key_leased_jobs{spool="S",key="k"} 2
spool_key_leased_jobs{spool="S",key="r"} 0
spool_key_limit{spool="S",key="k"} 2
spool_key_waiting_jobs{spool="S",key="k"} 1
spool_key_waiting_jobs{spool="S",key="r"} 1
spool_key_oldest_waiting_seconds{spool="S",key="k"} 61
spool_key_oldest_waiting_seconds{spool="S",key="r"} 60.900'
}

@test "spool-redrive --all --key redrives the parked jobs of one key" {
	enq a1 $T --key a --max-attempts 1
	enq a2 $((T + 100)) --key a --max-attempts 1
	enq b1 $((T + 200)) --key b --max-attempts 1
	run -0 at_ms $((T + 1000)) spool-claim -n 3 --owner w1
	for id in a1 a2 b1; do
		run -0 at_ms $((T + 2000)) spool-finish "$id" "$(lease_token "$id")" permanent
	done
	run -0 --separate-stderr at_ms $((T + 3000)) spool-redrive --by ops --note INC-9 --all --key a
	equals "$output" "$(printf '%s\n' a1 a2)"
	equals "$(ids_in new)" "$(printf '%s\n' a1 a2)"
	equals "$(ids_in dead)" b1
	run -100 --separate-stderr spool-redrive --by ops --note INC-9 --all --key 'a b'
	equals "$stderr" "spool-redrive: --key: bad value (letters, digits, '.', '_', '-', starting with a letter or digit, at most 64 bytes)"
}

# The stress's counter (tests/limithandler) must not count the file of a
# handler killed with its worker once that PID names another process.
@test "the stress's counter counts running handlers, not a killed one's PID given to another" {
	c=$BATS_TEST_TMPDIR/count
	mkdir -p "$c/k"
	started() { local s; read -r s <"/proc/$1/stat"; set -- ${s##*) }; echo "${20}"; }
	sleep 60 &
	pa=$!
	a=$pa.$(started $pa)
	sleep 60 &
	pb=$!
	b=$pb.$(started $pb)
	# Two running, a killed handler's PID now the test's own, one gone.
	files=$(printf '%s\n' "J1.$a" "J2.$b" "J3.$$.1" J4.999999.1)
	for f in $files; do : >"$c/k/$f"; done
	COUNT=$c SPOOL_JOB_ID=J5 run -0 "$BATS_TEST_DIRNAME/limithandler" <<<k-5
	# By PID: bats's timeout watcher is this shell's job %1.
	kill "$pa" "$pb"
	equals "$(cat "$c/k.max")" 3
	[ -e "$c/k.seen" ]
	equals "$(cat "$c/done")" k-5
	equals "$(ls "$c/k")" "$files"
}

# The stress: four runners of -j 8 share limit.k=3, runners killed at
# random (tests/limitstress says what it checks).  make torture runs it
# longer; make check-multihost runs it on three hosts.
@test "stress: four runners of -j 8 under limit.k=3, killed at random: never more than 3, nothing lost" {
	run "$BATS_TEST_DIRNAME/limitstress" -d "$SPOOL_DIR" -c "$BATS_TEST_TMPDIR/count"
	# Its figures, and what failed if something did.
	sed 's/^/# /' <<<"$output" >&3
	[ "$status" -eq 0 ]
	[[ ${lines[0]} =~ ^"limitstress: jobs 300, runners 4 on 1 host(s), kills "[1-6]", " ]]
}
