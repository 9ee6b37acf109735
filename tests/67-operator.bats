#!/usr/bin/env bats
# The operator's actions: bulk redrive at a bounded rate, drop, cancel,
# purge, pause and resume.  Each names who and why, leaves refused jobs as
# they were, and never moves a job twice.

load helpers

T=1000000

# park ID [FINISH OPTIONS...]: enqueue, claim and finish permanent, at the
# pinned time $AT (default T: long ago), so the job is old when parked.
park() {
	local id=$1 at=${AT:-$T} tok
	shift
	at_ms "$at" spool-enqueue --id "$id" <<<"payload of $id" >/dev/null
	tok=$(at_ms "$at" spool-claim --owner w1 | cut -f2)
	at_ms "$at" spool-finish "$@" "$id" "$tok" permanent >/dev/null
	equals "$(state_of "$id")" dead
}

# finished ID: a job that ran and is in done/, finished at $AT.
finished() {
	local at=${AT:-$T} tok
	at_ms "$at" spool-enqueue --id "$1" <<<"payload of $1" >/dev/null
	tok=$(at_ms "$at" spool-claim --owner w1 | cut -f2)
	at_ms "$at" spool-finish "$1" "$tok" ok >/dev/null
	equals "$(state_of "$1")" done
}

# park_many N: N parked jobs, fast: one enqueue of N files, claims of many
# jobs each, one finish reading "ID TOKEN permanent" lines from stdin.
park_many() {
	local d=$BATS_TEST_TMPDIR/payloads k
	mkdir "$d"
	for k in $(seq 1 "$1"); do
		echo "job $k" >"$d/$k"
	done
	(cd "$d" && spool-enqueue $(seq 1 "$1")) >/dev/null
	while spool-claim -n 100 --owner w1 >>"$BATS_TEST_TMPDIR/claims"; do
		:
	done
	cut -f1,2 "$BATS_TEST_TMPDIR/claims" | sed 's/\t/ /; s/$/ permanent/' |
	    spool-finish - >/dev/null
	[ "$(ids_in dead | wc -l)" -eq "$1" ]
}

# The IDs of the audit log's EVENT lines, one a line, sorted.
audited() {
	audit_events | awk -v ev="$1" '$1 == ev { print $2 }' | LC_ALL=C sort
}

sum_re='in [0-9]+\.[0-9]s'

@test "bulk redrive of 1000 jobs at 200/s takes at least 4.5 s and moves each once" {
	park_many 1000
	ids_in dead >"$BATS_TEST_TMPDIR/parked"
	t0=$(date +%s%N)
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --rate 200/s
	t1=$(date +%s%N)
	# 999 gaps of 5 ms at least: a lower bound only, never an upper one.
	[ $((t1 - t0)) -ge 4500000000 ]
	diff -u "$BATS_TEST_TMPDIR/parked" <(printf '%s\n' "$output" | LC_ALL=C sort)
	[[ $stderr =~ ^"spool-redrive: redrove 1000 of 1000 (0 refused) "$sum_re$ ]]
	diff -u "$BATS_TEST_TMPDIR/parked" <(audited redrive)
	equals "$(ids_in dead)" ""
	diff -u "$BATS_TEST_TMPDIR/parked" <(ids_in new)
	check_invariants
}

@test "two bulk redrives racing never move a job twice" {
	park_many 300
	ids_in dead >"$BATS_TEST_TMPDIR/parked"
	for k in 1 2; do
		spool-redrive --by op$k --note INC-$k --all --rate 10000/s \
		    >"$BATS_TEST_TMPDIR/out$k" 2>"$BATS_TEST_TMPDIR/err$k" 3>&- &
		eval p$k=$!
	done
	rc1=0 rc2=0
	wait $p1 || rc1=$?
	wait $p2 || rc2=$?
	[ "$rc1" -le 1 ]
	[ "$rc2" -le 1 ]
	diff -u "$BATS_TEST_TMPDIR/parked" \
	    <(cat "$BATS_TEST_TMPDIR/out1" "$BATS_TEST_TMPDIR/out2" | LC_ALL=C sort)
	diff -u "$BATS_TEST_TMPDIR/parked" <(audited redrive)
	# Each refusal is of a job the other run moved; then one summary.
	for k in 1 2; do
		other=$((3 - k))
		n=$(wc -l <"$BATS_TEST_TMPDIR/out$k")
		r=$(($(wc -l <"$BATS_TEST_TMPDIR/err$k") - 1))
		head -n "$r" "$BATS_TEST_TMPDIR/err$k" | while read -r line; do
			id=${line#spool-redrive: }
			id=${id%%: *}
			equals "$line" "spool-redrive: $id: not parked: the job is in new/"
			grep -qxF "$id" "$BATS_TEST_TMPDIR/out$other"
		done
		[[ $(tail -n 1 "$BATS_TEST_TMPDIR/err$k") =~ ^"spool-redrive: redrove $n of $((n + r)) ($r refused) "$sum_re$ ]]
	done
	check_invariants
}

@test "--dry-run lists what would move, reports refusals, and changes nothing" {
	park a
	AT=$((T + 1)) park b --class unknown-side-effect
	AT=$((T + 2)) park c
	before=$(snapshot)
	run -1 --separate-stderr spool-redrive --by ops --note INC-1 --all --dry-run
	diff -u - <(printf '%s\n' "$output") <<EOT
a
c
EOT
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-redrive: b: its side effect may have happened: reconcile it, then redrive with --reconciled
spool-redrive: dry run: would redrive 2 of 3 (1 refused)
EOT
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --reconciled --dry-run - <<<"c
b"
	diff -u - <(printf '%s\n' "$output") <<EOT
c
b
EOT
	equals "$stderr" "spool-redrive: dry run: would redrive 2 of 2 (0 refused)"
	equals "$(snapshot)" "$before"
	# Named IDs, as a redrive of them would go.
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --dry-run c b nope ../x
	equals "$output" c
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-redrive: ../x: bad ID
spool-redrive: b: its side effect may have happened: reconcile it, then redrive with --reconciled
spool-redrive: nope: no such job
spool-redrive: dry run: would redrive 1 of 4 (3 refused)
EOT
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --reconciled --dry-run a b
	diff -u - <(printf '%s\n' "$output") <<EOT
a
b
EOT
	equals "$stderr" "spool-redrive: dry run: would redrive 2 of 2 (0 refused)"
	equals "$(snapshot)" "$before"
	equals "$(audited redrive)" ""
}

@test "--all --reason, --class and --older-than select only what matches" {
	park p1
	park p2 --class invalid-input
	at_ms $T spool-enqueue --id x1 --max-attempts 1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish --class dependency-down --delay 0 x1 "$(lease_token x1)" retry >/dev/null
	equals "$(last_rec x1 reason)" reason=exhausted
	at_ms $T spool-enqueue --id c1 </dev/null >/dev/null
	at_ms $T spool-cancel --by ops --note INC-0 c1 >/dev/null
	# Parked now, not long ago.
	AT=$(date +%s%3N) park p3
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --reason exhausted --dry-run
	equals "$output" x1
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --class invalid-input --dry-run
	equals "$output" p2
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --reason permanent --older-than 1h --dry-run
	diff -u - <(printf '%s\n' "$output") <<EOT
p1
p2
EOT
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --reason cancelled --rate 1000/s
	equals "$output" c1
	[[ $stderr =~ ^"spool-redrive: redrove 1 of 1 (0 refused) "$sum_re$ ]]
	diff -u - <(audited redrive) <<<c1
	diff -u - <(ids_in dead) <<EOT
p1
p2
p3
x1
EOT
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all --reason nonsense
	equals "$stderr" "spool-redrive: --reason: unknown reason 'nonsense' (permanent, exhausted, deadline, side-effect or cancelled)"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all --class rate_limited
	equals "$output" ""
	equals "$stderr" "spool-redrive: --class: unknown class 'rate_limited': did you mean 'rate-limited'?"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all --reason Side_Effect
	equals "$stderr" "spool-redrive: --reason: unknown reason 'Side_Effect': did you mean 'side-effect'?"
}

@test "on an empty spool, bulk redrive and purge do nothing and say so" {
	before=$(snapshot)
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all
	equals "$output" ""
	[[ $stderr =~ ^"spool-redrive: redrove 0 of 0 (0 refused) "$sum_re$ ]]
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --dry-run - </dev/null
	equals "$stderr" "spool-redrive: dry run: would redrive 0 of 0 (0 refused)"
	for kind in done dropped; do
		run -0 --separate-stderr spool-purge $kind --older-than 0
		equals "$output" ""
		equals "$stderr" ""
	done
	run -0 --separate-stderr spool-purge dead --by ops --note INC-1 --older-than 0
	equals "$output" ""
	equals "$stderr" ""
	equals "$(snapshot)" "$before"
}

@test "IDs from stdin: bad lines and refusals one line each, then the summary" {
	park a
	park b
	at_ms $T spool-enqueue --id q </dev/null >/dev/null
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --rate 1000/s - <<EOT
a
q

x/y
nope
b
EOT
	diff -u - <(printf '%s\n' "$output") <<EOT
a
b
EOT
	[ "${#stderr_lines[@]}" -eq 4 ]
	equals "${stderr_lines[0]}" "spool-redrive: x/y: bad ID"
	equals "${stderr_lines[1]}" "spool-redrive: q: not parked: the job is in new/"
	equals "${stderr_lines[2]}" "spool-redrive: nope: no such job"
	[[ ${stderr_lines[3]} =~ ^"spool-redrive: redrove 2 of 5 (3 refused) "$sum_re$ ]]
	diff -u - <(audited redrive) <<EOT
a
b
EOT
}

@test "bulk forms are checked: one of - or --all, filters only with --all" {
	park a
	before=$(snapshot)
	bulk_usage="usage: spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] [--dry-run] [--rate N/s] [-0] - | --all [--reason R] [--class C] [--key KEY] [--older-than DUR]"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all a
	equals "$stderr" "$bulk_usage"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --rate 5/s a
	equals "$stderr" "$bulk_usage"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --reason permanent -
	equals "$stderr" "$bulk_usage"
	run -100 --separate-stderr spool-redrive --note INC-1 --all a
	equals "$stderr" "$bulk_usage"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all --rate 0/s
	equals "$stderr" "spool-redrive: --rate: bad number '0' (1 to 10000)"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all --rate 5/m
	equals "$stderr" "spool-redrive: --rate: bad rate '5/m' (jobs a second, as 10/s)"
	equals "$output" ""
	equals "$(snapshot)" "$before"
}

@test "redrive, drop and cancel say which of --by and --note is missing" {
	park a
	at_ms $T spool-enqueue --id q <<<"payload of q" >/dev/null
	before=$(snapshot)
	for cmd in spool-redrive spool-drop spool-cancel; do
		id=a
		[ $cmd != spool-cancel ] || id=q
		run -100 --separate-stderr $cmd $id
		equals "$output" ""
		equals "$stderr" "$cmd: --by WHO and --note TICKET are needed; missing: --by and --note"
		run -100 --separate-stderr $cmd --note INC-1 $id
		equals "$stderr" "$cmd: --by WHO and --note TICKET are needed; missing: --by"
		run -100 --separate-stderr $cmd --by ops - <<<"$id"
		equals "$stderr" "$cmd: --by WHO and --note TICKET are needed; missing: --note"
	done
	run -100 --separate-stderr spool-redrive --by ops --all
	equals "$output" ""
	equals "$stderr" "spool-redrive: --by WHO and --note TICKET are needed; missing: --note"
	# With nothing to act on, the usage says what is wanted.
	run -100 --separate-stderr spool-redrive
	equals "$stderr" "usage: spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] [--dry-run] ID ..."
	equals "$(snapshot)" "$before"
}

# interrupt SIG: a bulk run stopped by SIG after its first job.  The
# redriven IDs come through a FIFO, so the signal is sent once one job has
# moved, without sleeping; SIGINT is given its default disposition, which
# a background job of a script does not have.
interrupt() {
	local fifo=$BATS_TEST_TMPDIR/fifo pid first rc=0
	mkfifo "$fifo"
	env --default-signal=INT spool-redrive --by ops --note INC-1 --all --rate 20/s \
	    >"$fifo" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	exec 4<"$fifo"
	read -r first <&4
	kill -"$1" $pid
	{ echo "$first"; cat <&4; } >"$BATS_TEST_TMPDIR/out"
	exec 4<&-
	wait $pid || rc=$?
	rm "$fifo"
	[ "$rc" -eq 111 ]
}

@test "SIGINT or SIGTERM stops a bulk run between jobs; a second run goes on" {
	park_many 200
	ids_in dead >"$BATS_TEST_TMPDIR/parked"
	interrupt INT
	n=$(wc -l <"$BATS_TEST_TMPDIR/out")
	[ "$n" -ge 1 ]
	[ "$n" -lt 200 ]
	# shellcheck disable=SC2027 # $sum_re is a regex, unquoted
	[[ $(cat "$BATS_TEST_TMPDIR/err") =~ ^"spool-redrive: interrupted: redrove $n of 200 (0 refused) "$sum_re", $((200 - n)) not tried"$ ]]
	# Stopped between jobs: what it printed is exactly what moved.
	diff -u <(LC_ALL=C sort "$BATS_TEST_TMPDIR/out") <(audited redrive)
	diff -u <(LC_ALL=C sort "$BATS_TEST_TMPDIR/out") <(ids_in new)
	[ "$(ids_in dead | wc -l)" -eq $((200 - n)) ]
	check_invariants
	cp "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/first"
	interrupt TERM
	m=$(wc -l <"$BATS_TEST_TMPDIR/out")
	# shellcheck disable=SC2027 # $sum_re is a regex, unquoted
	[[ $(cat "$BATS_TEST_TMPDIR/err") =~ ^"spool-redrive: interrupted: redrove $m of $((200 - n)) (0 refused) "$sum_re", $((200 - n - m)) not tried"$ ]]
	cat "$BATS_TEST_TMPDIR/out" >>"$BATS_TEST_TMPDIR/first"
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --rate 10000/s
	[[ $stderr =~ ^"spool-redrive: redrove $((200 - n - m)) of $((200 - n - m)) (0 refused) "$sum_re$ ]]
	diff -u "$BATS_TEST_TMPDIR/parked" \
	    <({ cat "$BATS_TEST_TMPDIR/first"; printf '%s\n' "$output"; } | LC_ALL=C sort)
	diff -u "$BATS_TEST_TMPDIR/parked" <(audited redrive)
	equals "$(ids_in dead)" ""
}

@test "progress is shown while stderr is a terminal, and erased" {
	park_many 12
	# script(1) gives the command a terminal; its output ends lines in CR LF.
	run -0 script -qec "spool-redrive --by ops --note INC-1 --all --rate 50/s >/dev/null" /dev/null
	[[ $output = *$'\rspool-redrive: 12 of 12, '*'/s, ETA 0m00s '* ]]
	cr=$'\r'
	end="$cr +${cr}spool-redrive: redrove 12 of 12 \(0 refused\) $sum_re$cr\$"
	[[ $output =~ $end ]]
	equals "$(ids_in dead)" ""
}

@test "a flagged job in bulk is refused with its reason, then redriven once reconciled" {
	park a
	AT=$((T + 1)) park b --class unknown-side-effect
	run -1 --separate-stderr spool-redrive --by ops --note INC-1 --all --rate 1000/s
	equals "$output" a
	equals "${stderr_lines[0]}" "spool-redrive: b: its side effect may have happened: reconcile it, then redrive with --reconciled"
	[[ ${stderr_lines[1]} =~ ^"spool-redrive: redrove 1 of 2 (1 refused) "$sum_re$ ]]
	equals "$(state_of b)" dead
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --reconciled
	equals "$output" b
	equals "$(state_of b)" new
}

@test "drop keeps the payload and the record, and the job is no longer parked" {
	printf 'bytes \001\002\377\000 and\nmore' >"$BATS_TEST_TMPDIR/payload"
	at_ms $T spool-enqueue --id order-1844 "$BATS_TEST_TMPDIR/payload" >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish --class invalid-input --detail 'amount missing' \
	    order-1844 "$(lease_token order-1844)" permanent >/dev/null
	at_ms $T spool-enqueue --id q </dev/null >/dev/null
	meta=$(cat "$SPOOL_DIR/meta/order-1844")
	run -100 --separate-stderr at_ms $((T + 10)) spool-drop --by ops --note INC-4415 \
	    order-1844 q nope ../x
	equals "$output" order-1844
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-drop: ../x: bad ID
spool-drop: q: not parked: the job is in new/
spool-drop: nope: no such job
EOT
	equals "$(ls "$SPOOL_DIR/dead")" ""
	cmp "$BATS_TEST_TMPDIR/payload" "$SPOOL_DIR/done/order-1844"
	# The record is kept: the old lines, then the drop.
	equals "$(head -n "$(wc -l <<<"$meta")" "$SPOOL_DIR/meta/order-1844")" "$meta"
	diff -u - <(last_rec order-1844 ev at reason cls detail by note) <<EOT
ev=drop
at=done
reason=permanent
cls=invalid-input
detail=amount%20missing
by=ops
note=INC-4415
EOT
	# The listing shows why it was parked, and that it was dropped.
	equals "$(spool-ls --json done | jq -c '[.disposition, .reason, .class, .detail]')" '["dropped","permanent","invalid-input","amount missing"]'
	equals "$(audit_events | tail -n 1)" "drop order-1844 1 1 1 ops permanent invalid-input INC-4415"
	equals "$(state_of q)" new
	check_invariants
	run -1 --separate-stderr spool-drop --by ops --note INC-4415 order-1844
	equals "$stderr" "spool-drop: order-1844: not parked: the job is in done/"
}

@test "drop reads IDs from stdin and needs --by and --note" {
	park a
	park b
	before=$(snapshot)
	run -100 --separate-stderr spool-drop --by ops a
	equals "$stderr" "spool-drop: --by WHO and --note TICKET are needed; missing: --note"
	run -100 --separate-stderr spool-drop --by ops --note INC-1
	equals "$stderr" "usage: spool-drop [-d DIR] --by WHO --note TICKET ID ... | [-0] -"
	run -100 --separate-stderr spool-drop --by ops --note $'see\tmail' a
	equals "$stderr" "spool-drop: --note: bad value (printable text, 1 to 128 bytes, not '-')"
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr spool-drop --by ops --note INC-1 - <<<"b
a"
	diff -u - <(printf '%s\n' "$output") <<EOT
b
a
EOT
	equals "$stderr" ""
	diff -u - <(ids_in done) <<EOT
a
b
EOT
}

@test "drop and purge read IDs from stdin a batch at a time: 600 jobs, three batches" {
	park_many 600
	ids_in dead >"$BATS_TEST_TMPDIR/ids"
	# One unknown ID in the middle batch: reported, the rest go on.
	sed -i '300a no-such-job' "$BATS_TEST_TMPDIR/ids"
	run -1 --separate-stderr spool-drop --by ops --note INC-9 - \
	    <"$BATS_TEST_TMPDIR/ids"
	equals "$stderr" "spool-drop: no-such-job: no such job"
	diff -u <(grep -v no-such-job "$BATS_TEST_TMPDIR/ids") \
	    <(printf '%s\n' "$output")
	[ "$(ids_in dead | wc -l)" -eq 0 ]
	diff -u <(grep -v no-such-job "$BATS_TEST_TMPDIR/ids") <(ids_in done)
	run -0 --separate-stderr bash -c 'spool-ls dropped | spool-purge done -'
	equals "$stderr" ""
	equals "$(LC_ALL=C sort <<<"$output")" "$(grep -v no-such-job "$BATS_TEST_TMPDIR/ids")"
	[ "$(ids_in done | wc -l)" -eq 0 ]
	[ "$(audited drop | wc -l)" -eq 600 ]
	[ "$(audited purge | wc -l)" -eq 600 ]
	fsck_clean
}

@test "cancel of a queued job parks it at once as cancelled; it is never delivered" {
	at_ms $T spool-enqueue --id q1 <<<"mail" >/dev/null
	at_ms $T spool-enqueue --id q2 --delay 1h <<<"later" >/dev/null
	run -0 --separate-stderr at_ms $((T + 5)) spool-cancel --by ops --note INC-4420 q1 q2
	diff -u - <(printf '%s\n' "$output") <<EOT
q1
q2
EOT
	equals "$stderr" ""
	diff -u - <(ids_in dead) <<EOT
q1
q2
EOT
	diff -u - <(last_rec q1 ev at reason cls se by note) <<EOT
ev=cancel
at=dead
reason=cancelled
cls=cancelled
se=
by=ops
note=INC-4420
EOT
	diff -u - <(audit_events | grep '^cancel') <<EOT
cancel q1 0 0 1 ops cancelled cancelled INC-4420
cancel q2 0 0 1 ops cancelled cancelled INC-4420
EOT
	run -1 --separate-stderr at_ms $((T + 7200000)) spool-claim
	equals "$output" ""
	equals "$stderr" ""
	check_invariants
}

@test "cancel of a leased job: the holder's finish and renew are refused" {
	at_ms $T spool-enqueue --id j1 <<<"mail" >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	run -0 at_ms $((T + 5)) spool-cancel --by ops --note INC-4420 j1
	equals "$output" j1
	equals "$(state_of j1)" dead
	diff -u - <(last_rec j1 ev reason cls se own) <<EOT
ev=cancel
reason=cancelled
cls=cancelled
se=1
own=w1
EOT
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 6)) spool-finish j1 1 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: j1: not leased: the job is in dead/"
	run -1 --separate-stderr at_ms $((T + 6)) spool-renew j1 1
	equals "$stderr" "spool-renew: j1: not leased: the job is in dead/"
	equals "$(snapshot)" "$before"
	equals "$(audit_events | tail -n 1)" "cancel j1 1 1 1 ops cancelled cancelled INC-4420"
	# It may have run: a redrive must say it was reconciled.
	run -1 --separate-stderr at_ms $((T + 7)) spool-redrive --by ops --note INC-4420 j1
	equals "$stderr" "spool-redrive: j1: its side effect may have happened: reconcile it, then redrive with --reconciled"
	run -0 at_ms $((T + 7)) spool-redrive --by ops --note INC-4420 --reconciled j1
	equals "$output" j1
	run -0 at_ms $((T + 8)) spool-claim --owner w2
	equals "$(cut -f1-3 <<<"$output")" "$(printf 'j1\t2\t1')"
}

@test "cancel refuses done and parked jobs, and reports each one" {
	finished d
	park p
	before=$(snapshot)
	run -1 --separate-stderr spool-cancel --by ops --note INC-1 - <<<"d
p
nope"
	equals "$output" ""
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-cancel: d: not queued: the job is in done/
spool-cancel: p: not queued: the job is in dead/
spool-cancel: nope: no such job
EOT
	equals "$(snapshot)" "$before"
}

# dead/ and the sidecars of the jobs in it.
dead_snapshot() {
	(cd "$SPOOL_DIR" && find dead -type f | LC_ALL=C sort | while read -r f; do
		sha256sum "$f" "meta/${f#dead/}"
	done)
}

@test "purge never touches dead/ without the explicit form" {
	park p1
	park p2
	finished d1
	finished d2
	spool-drop --by ops --note INC-1 p2 >/dev/null
	park p3
	before=$(dead_snapshot)
	run -0 --separate-stderr spool-purge done --older-than 0
	[ "$output" = $'d1\nd2' ] || [ "$output" = $'d2\nd1' ]
	run -0 --separate-stderr spool-purge dropped --older-than 0
	equals "$output" p2
	run -1 --separate-stderr spool-purge done p1 p3
	diff -u - <(printf '%s\n' "$stderr") <<EOT
spool-purge: p1: not done: the job is in dead/
spool-purge: p3: not done: the job is in dead/
EOT
	run -100 --separate-stderr spool-purge dead --older-than 0
	equals "$stderr" "spool-purge: dead: --by WHO and --note TICKET are needed; missing: --by and --note"
	run -100 --separate-stderr spool-purge dead --by ops --older-than 0
	equals "$stderr" "spool-purge: dead: --by WHO and --note TICKET are needed; missing: --note"
	run -100 --separate-stderr spool-purge --by ops --note INC-1 dead
	[[ $stderr = "usage: spool-purge "* ]]
	run -100 --separate-stderr spool-purge parked --older-than 0
	[[ $stderr = "usage: spool-purge "* ]]
	equals "$output" ""
	equals "$(dead_snapshot)" "$before"
	equals "$(ids_in done)" ""
	# The explicit form, dry run first.
	run -0 --separate-stderr spool-purge --dry-run dead --by ops --note INC-2 --older-than 0
	diff -u - <(printf '%s\n' "$output") <<EOT
p1
p3
EOT
	equals "$(dead_snapshot)" "$before"
	run -0 --separate-stderr spool-purge dead --by ops --note INC-2 --older-than 0
	diff -u - <(printf '%s\n' "$output") <<EOT
p1
p3
EOT
	equals "$stderr" ""
	equals "$(ids_in dead)" ""
	diff -u - <(audit_events | grep '^purge') <<EOT
purge d1 3 1 1 - - - -
purge d2 4 1 1 - - - -
purge p2 2 1 1 - permanent - -
purge p1 1 1 1 ops permanent - INC-2
purge p3 5 1 1 ops permanent - INC-2
EOT
	check_invariants
}

@test "purge --older-than --keep removes the old ones but keeps the N newest" {
	for k in 1 2 3 4 5; do
		AT=$((T + k)) finished d$k
	done
	AT=$((T + 6)) park x
	spool-drop --by ops --note INC-1 x >/dev/null
	AT=$(date +%s%3N) finished fresh
	# The 3 newest are fresh, d5 and d4.
	run -0 --separate-stderr spool-purge --dry-run done --older-than 1h --keep 3
	diff -u - <(printf '%s\n' "$output") <<EOT
d1
d2
d3
EOT
	run -0 --separate-stderr spool-purge done --older-than 1h --keep 3
	diff -u - <(printf '%s\n' "$output") <<EOT
d1
d2
d3
EOT
	equals "$stderr" ""
	diff -u - <(ids_in done) <<EOT
d4
d5
fresh
x
EOT
	# The sidecars go too (format 2): the audit log keeps the history.
	[ ! -e "$SPOOL_DIR/meta/d1" ]
	run -0 spool-purge done --older-than 1h --keep 2
	equals "$output" d4
	# Young jobs stay whatever --keep says; a dropped job is not "done".
	run -0 spool-purge done --older-than 1h
	equals "$output" d5
	run -0 spool-purge dropped --older-than 0 --keep 1
	equals "$output" ""
	diff -u - <(ids_in done) <<EOT
fresh
x
EOT
	run -0 spool-purge dropped --older-than 1h
	equals "$output" ""
	run -0 spool-purge dropped --older-than 0
	equals "$output" x
	run -0 spool-purge done --older-than 0
	equals "$output" fresh
}

@test "purge sweeps tmp/ files older than a day, except on a dry run" {
	touch -d '2 days ago' "$SPOOL_DIR/tmp/stale,4121.1"
	touch -d '23 hours ago' "$SPOOL_DIR/tmp/recent,4121.2"
	run -0 --separate-stderr spool-purge --dry-run done --older-than 7d
	[ -e "$SPOOL_DIR/tmp/stale,4121.1" ]
	run -0 --separate-stderr spool-purge done --older-than 7d
	equals "$output" ""
	equals "$stderr" ""
	equals "$(ls "$SPOOL_DIR/tmp")" "recent,4121.2"
}

@test "a purged ID can be enqueued again: a new first cycle, and a higher token" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 1s >/dev/null
	at_ms $((T + 1000)) spool-claim --owner w2 >/dev/null
	at_ms $((T + 1001)) spool-finish j1 "$(lease_token j1)" ok >/dev/null
	run -0 spool-purge done j1
	equals "$output" j1
	[ ! -e "$SPOOL_DIR/done/j1" ]
	run -1 --separate-stderr spool-purge done j1
	equals "$stderr" "spool-purge: j1: no such job"
	run -0 spool-enqueue --id j1 <<<"again"
	run -0 spool-claim --owner w3
	equals "$(cut -f1-3 <<<"$output")" "$(printf 'j1\t3\t1')"
	equals "$(cat "$(cut -f4 <<<"$output")")" again
	equals "$(last_rec j1 cyc)" cyc=1
}

@test "pause: claims answer 'spool paused' while enqueue goes on; resume restores" {
	spool-enqueue --id a </dev/null >/dev/null
	run -0 --separate-stderr spool-pause --by ops --note CHG-311
	equals "$output" ""
	equals "$stderr" ""
	equals "$(cat "$SPOOL_DIR/paused")" "ops CHG-311"
	run -0 spool-enqueue --id b </dev/null
	equals "$output" b
	run -1 --separate-stderr spool-claim --owner w1
	equals "$output" ""
	equals "$stderr" "spool-claim: spool paused"
	diff -u - <(ids_in new) <<EOT
a
b
EOT
	# Pausing again changes nothing.
	before=$(snapshot)
	run -0 spool-pause
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr spool-resume --by ops --note CHG-311
	equals "$stderr" ""
	[ ! -e "$SPOOL_DIR/paused" ]
	run -0 spool-resume
	run -0 spool-claim --owner w1 -n 2
	equals "$(cut -f1 <<<"$output" | LC_ALL=C sort | tr '\n' ' ')" "a b "
	run -1 --separate-stderr spool-claim --owner w1
	equals "$stderr" ""
	diff -u - <(audit_events | grep -E '^(pause|resume)') <<EOT
pause - 0 0 0 ops - - CHG-311
resume - 0 0 0 ops - - CHG-311
EOT
	run -100 --separate-stderr spool-pause --by ops
	equals "$stderr" "spool-pause: --by WHO and --note TICKET go together; missing: --note"
	run -100 --separate-stderr spool-resume --note CHG-311
	equals "$stderr" "spool-resume: --by WHO and --note TICKET go together; missing: --by"
	[ ! -e "$SPOOL_DIR/paused" ]
	run -100 --separate-stderr spool-resume extra
	equals "$stderr" "usage: spool-resume [-d DIR] [--by WHO --note TICKET]"
}

# hold_shared ID: take a shared lock on ID's sidecar, on fd 8, as a reader
# does; a command that changes the job waits for it.  release drops it.
hold_shared() {
	exec 8<"$SPOOL_DIR/meta/$1"
	flock -s 8
}

release() {
	flock -u 8
	exec 8<&-
}

# waits_for_lock PID: until PID waits for a flock(2) (/proc/locks says so).
waits_for_lock() {
	local k
	for k in $(seq 1 1000); do
		grep -q -- "-> FLOCK  *ADVISORY  *WRITE $1 " /proc/locks && return 0
		sleep 0.01
	done
	echo "process $1 never waited for a lock" >&2
	return 1
}

@test "bulk redrive --all leaves a job that changed after the selection" {
	park a
	AT=$((T + 1)) park b
	# The run selects a and b, then waits for a's lock ...
	hold_shared a
	spool-redrive --by ops --note INC-1 --all --rate 1000/s \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- 8<&- &
	pid=$!
	waits_for_lock $pid
	# ... while b is redriven by someone else and parks again: a new
	# failure that nobody has looked at.
	spool-redrive --by alice --note INC-2 b >/dev/null
	tok=$(spool-claim --owner w2 | cut -f2)
	spool-finish --class invalid-input b "$tok" permanent >/dev/null
	release
	rc=0
	wait $pid || rc=$?
	[ "$rc" -eq 1 ]
	equals "$(cat "$BATS_TEST_TMPDIR/out")" a
	equals "$(head -n 1 "$BATS_TEST_TMPDIR/err")" "spool-redrive: b: changed since it was selected: the job is in dead/"
	[[ $(tail -n 1 "$BATS_TEST_TMPDIR/err") =~ ^"spool-redrive: redrove 1 of 2 (1 refused) "$sum_re$ ]]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -eq 2 ]
	# b stays parked, as alice's redrive and its new failure left it.
	equals "$(state_of a)" new
	equals "$(state_of b)" dead
	equals "$(last_rec b ev cyc cls)" $'ev=park\ncyc=2\ncls=invalid-input'
	diff -u - <(audit_events | grep '^redrive') <<EOT
redrive b 2 0 2 alice - - INC-2
redrive a 1 0 2 ops - - INC-1
EOT
	# The next run, a new selection, sees b as it is now.
	run -0 --separate-stderr spool-redrive --by ops --note INC-1 --all --dry-run
	equals "$output" b
	check_invariants
}

@test "purge --older-than leaves a job that changed after the selection" {
	finished a
	AT=$((T + 1)) finished b
	# The purge selects a and b, then waits for a's lock ...
	hold_shared a
	spool-purge done --older-than 1h \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- 8<&- &
	pid=$!
	waits_for_lock $pid
	# ... while b is enqueued again and finishes: a new cycle, not past
	# its retention.
	spool-enqueue --id b <<<"b again" >/dev/null
	tok=$(spool-claim --owner w2 | cut -f2)
	spool-finish b "$tok" ok >/dev/null
	release
	rc=0
	wait $pid || rc=$?
	[ "$rc" -eq 1 ]
	equals "$(cat "$BATS_TEST_TMPDIR/out")" a
	equals "$(cat "$BATS_TEST_TMPDIR/err")" "spool-purge: b: changed since it was selected: the job is in done/"
	[ ! -e "$SPOOL_DIR/done/a" ]
	equals "$(cat "$SPOOL_DIR/done/b")" "b again"
	equals "$(last_rec b ev cyc)" $'ev=ok\ncyc=2'
	diff -u - <(audited purge) <<<a
	check_invariants
}

@test "the nightly purge of contrib/crontab removes old jobs and mails nothing" {
	cron_purge=$(grep -E '^15 3 ' "$BATS_TEST_DIRNAME/../contrib/crontab" | cut -f2-)
	finished old
	AT=$((T + 1)) park gone
	at_ms $((T + 2)) spool-drop --by ops --note INC-1 gone >/dev/null
	AT=$(date +%s%3N) finished young
	run -0 --separate-stderr sh -c "$cron_purge"
	equals "$output" ""
	equals "$stderr" ""
	equals "$(ids_in done)" young
	diff -u - <(audited purge) <<EOT
gone
old
EOT
}

# The audit log's last line, its writer's PID as PID.
last_audit() {
	tail -n 1 "$SPOOL_DIR/audit/$SPOOL_HOST.log" | sed -E 's/:[0-9]+$/:PID/'
}

@test "--by and --note take text: a redrive by Jane Doe, upstream fixed" {
	park a
	run -0 --separate-stderr at_ms $((T + 5000)) spool-redrive \
	    --by "Jane Doe" --note "upstream fixed" a
	equals "$output" a
	equals "$stderr" ""
	# The sidecar has them percent-encoded, as it has a detail.
	equals "$(tail -n 1 "$SPOOL_DIR/meta/a")" "t=$((T + 5000)) ev=redrive at=new:$((T + 5000)) tok=1 att=0 cyc=2 max=5 dl=$((T + 5000 + 604800000)) ttl=604800000 created=$T payload=13:$(printf 'payload of a\n' | xxh_of -) by=Jane%20Doe note=upstream%20fixed"
	# So has the audit line, which awk still splits into eleven fields.
	equals "$(last_audit)" "1970-01-01T00:16:45.000Z redrive a 1 0 2 Jane%20Doe - - upstream%20fixed testhost:PID"
	equals "$(awk '$2 == "redrive" { print NF, $7, $10 }' "$SPOOL_DIR"/audit/*.log)" \
	    "11 Jane%20Doe upstream%20fixed"
	# The commands that show them show them as written.
	run -0 --separate-stderr at_ms $((T + 6000)) spool-show a
	equals "$stderr" ""
	diff -u - <(grep -E '^(acted|by|note) ' <<<"$output") <<'EOT'
acted        1970-01-01T00:16:45.000Z
by           Jane Doe
note         upstream fixed
EOT
	run -0 --separate-stderr at_ms $((T + 6000)) spool-ls -l new
	diff -u - <(printf '%s\n' "$output") <<'EOT'
ID  DELIV  DISP      DUE  CLASS  AGE  CYC  BY        NOTE            DETAIL
a   #0     redriven  now  -      1s   2    Jane Doe  upstream fixed  -
EOT
	run -0 --separate-stderr at_ms $((T + 6000)) spool-ls --json new
	equals "$(jq -c '[.by, .note, .acted]' <<<"$output")" \
	    "[\"Jane Doe\",\"upstream fixed\",$((T + 5000))]"
	run -0 --separate-stderr at_ms $((T + 6000)) spool-show --json a
	equals "$(jq -c '[.by, .note, (.audit[-1] | .actor, .note)]' <<<"$output")" \
	    '["Jane Doe","upstream fixed","Jane Doe","upstream fixed"]'
	run -0 --separate-stderr spool-stat
	[[ $output == *"last_action                     redrive by Jane Doe at 1970-01-01T00:16:45.000Z ("* ]]
	fsck_clean
}

@test "UTF-8, quotes and backslashes in --by and --note come back as written" {
	park a --detail 'no such account'
	park b
	at_ms $T spool-enqueue --id q <<<"payload of q" >/dev/null
	at_ms $((T + 5000)) spool-cancel --by "Jöns" --note "ticket № 5" q >/dev/null
	at_ms $((T + 6000)) spool-drop --by 'Ann "A" \x' --note 'said "no" \o/' a \
	    >/dev/null
	equals "$(last_rec q by note)" $'by=J%C3%B6ns\nnote=ticket%20%E2%84%96%205'
	equals "$(last_rec a by note)" $'by=Ann%20"A"%20\\x\nnote=said%20"no"%20\\o/'
	diff -u - <(audit_events | grep -E '^(cancel|drop) ') <<'EOT'
cancel q 0 0 1 J%C3%B6ns cancelled cancelled ticket%20%E2%84%96%205
drop a 1 1 1 Ann%20"A"%20\x permanent - said%20"no"%20\o/
EOT
	run -0 --separate-stderr at_ms $((T + 7000)) spool-show q
	diff -u - <(grep -E '^(by|note) ' <<<"$output") <<'EOT'
by           Jöns
note         ticket № 5
EOT
	# The audit table too, by characters.
	diff -u - <(sed -n '/^TIME /,$p' <<<"$output" |
	    sed -E 's/testhost:[0-9]+$/testhost:PID/') <<'EOT'
TIME                      EVENT    TOKEN  ATTEMPT  CYCLE  ACTOR  REASON     CLASS      PREV  NOTE        WRITER
1970-01-01T00:16:40.000Z  enqueue  0      0        1      -      -          -          -     -           testhost:PID
1970-01-01T00:16:45.000Z  cancel   0      0        1      Jöns   cancelled  cancelled  -     ticket № 5  testhost:PID
EOT
	# A column is as wide as its widest cell in characters, not bytes.
	run -0 --separate-stderr at_ms $((T + 7000)) spool-ls -l dead
	diff -u - <(printf '%s\n' "$output") <<'EOT'
ID  DELIV  DISP    SE  REASON     CLASS      AGE  CYC  BY    NOTE        DETAIL
b   #1     parked  -   permanent  -          7s   1    -     -           -
q   #0     parked  -   cancelled  cancelled  2s   1    Jöns  ticket № 5  -
EOT
	# JSON keeps UTF-8 as it is, and escapes quotes and backslashes.
	run -0 --separate-stderr at_ms $((T + 7000)) spool-ls --json dead
	[[ $output == *'"by":"Jöns","note":"ticket № 5"'* ]]
	run -0 --separate-stderr at_ms $((T + 7000)) spool-ls --json done
	[[ $output == *'"by":"Ann \"A\" \\x","note":"said \"no\" \\o/"'* ]]
	equals "$(jq -r '.by, .note' <<<"$output")" $'Ann "A" \\x\nsaid "no" \\o/'
	run -0 --separate-stderr spool-show --json a
	equals "$(jq -r '.audit[-1] | .actor, .note' <<<"$output")" \
	    $'Ann "A" \\x\nsaid "no" \\o/'
	# The pause names them in "paused" the way the audit log does.
	run -0 --separate-stderr spool-pause --by "Jöns" --note "db failover, 10 min"
	equals "$(cat "$SPOOL_DIR/paused")" "J%C3%B6ns db%20failover,%2010%20min"
	equals "$(audit_events | tail -n 1)" \
	    "pause - 0 0 0 J%C3%B6ns - - db%20failover,%2010%20min"
	run -0 --separate-stderr spool-stat --prom
	[[ $output == *'by="Jöns"} '* ]]
	fsck_clean
}

@test "the longest ID, trace, owner, detail, --by and --note, all encoded, fit" {
	# Every byte of by, note and detail encoded as three; the longest host.
	SPOOL_HOST=$(printf 'h%.0s' {1..64})
	export SPOOL_HOST
	id=$(printf 'i%.0s' {1..128})
	id2=$(printf 'k%.0s' {1..128})
	trace=$(printf 't%.0s' {1..128})
	owner=$(printf 'o%.0s' {1..127})@
	detail=$(printf '%%%.0s' {1..200})
	by=$(printf '%%%.0s' {1..128})
	note=$(printf 'é%.0s' {1..64})
	equals "$(printf %s "$note" | wc -c)" 128
	enc_by=$(printf '%%25%.0s' {1..128})
	enc_note=$(printf '%%C3%%A9%.0s' {1..64})
	enc_detail=$(printf '%%25%.0s' {1..200})
	at_ms $T spool-enqueue --id "$id" --trace "$trace" <<<x >/dev/null
	at_ms $T spool-claim --owner "$owner" >/dev/null
	at_ms $T spool-finish --class unknown-side-effect --detail "$detail" \
	    "$id" "$(lease_token "$id")" permanent >/dev/null
	run -0 --separate-stderr at_ms $((T + 1000)) spool-drop --by "$by" \
	    --note "$note" "$id"
	equals "$output" "$id"
	equals "$stderr" ""
	equals "$(last_rec "$id" trace by note detail)" \
	    "$(printf 'trace=%s\nby=%s\nnote=%s\ndetail=%s' "$trace" "$enc_by" \
	    "$enc_note" "$enc_detail")"
	# Its audit line is longer than the 1 KiB once thought ample.
	line=$(grep " drop " "$SPOOL_DIR/audit/$SPOOL_HOST.log")
	equals "$(sed -E 's/:[0-9]+$/:PID/' <<<"$line")" \
	    "1970-01-01T00:16:41.000Z drop $id 1 1 1 $enc_by side-effect unknown-side-effect $enc_note $SPOOL_HOST:PID"
	[ "${#line}" -gt 1024 ]
	# A cancel of a leased job records its holder with by and note.
	at_ms $((T + 2000)) spool-enqueue --id "$id2" --trace "$trace" <<<x >/dev/null
	at_ms $((T + 2000)) spool-claim --owner "$owner" >/dev/null
	run -0 --separate-stderr at_ms $((T + 3000)) spool-cancel --by "$by" \
	    --note "$note" "$id2"
	equals "$stderr" ""
	equals "$(last_rec "$id2" own by note)" \
	    "$(printf 'own=%s\nby=%s\nnote=%s' "$owner" "$enc_by" "$enc_note")"
	run -0 --separate-stderr spool-show --json "$id2"
	equals "$(jq -r '.by == $by and .note == $note and .trace == $trace and
	    .audit[-1].actor == $by and .audit[-1].note == $note' \
	    --arg by "$by" --arg note "$note" --arg trace "$trace" <<<"$output")" true
	run -0 --separate-stderr spool-show --json "$id"
	equals "$(jq -r '.detail == $detail and .by == $by' --arg by "$by" \
	    --arg detail "$detail" <<<"$output")" true
	run -0 --separate-stderr at_ms $((T + 4000)) spool-pause --by "$by" \
	    --note "$note"
	equals "$(cat "$SPOOL_DIR/paused")" "$enc_by $enc_note"
	run -0 --separate-stderr at_ms $((T + 5000)) spool-purge --by "$by" \
	    --note "$note" done "$id"
	equals "$output" "$id"
	equals "$(tail -n 1 "$SPOOL_DIR/audit/$SPOOL_HOST.log" | cut -d' ' -f2,7,10)" \
	    "purge $enc_by $enc_note"
	fsck_clean
}
