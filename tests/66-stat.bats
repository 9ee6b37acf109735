#!/usr/bin/env bats
# spool-stat: counts and ages for people, Prometheus and monitoring checks.
# Exact output on an empty and on a busy spool (the clock pinned), the
# exposition format checked by promtool, the check's statuses, 10,000
# parked jobs counted without opening a payload, and the contrib/ jobs.

load helpers

T=1796000000000

synopsis() {
	mandoc -Tascii "$BATS_TEST_DIRNAME/../man/$1.1" | col -b |
	    awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
	    tr -s ' \n\t' '   ' | sed 's/^ //; s/ $//'
}

# park ID CLASS AT: enqueue ID at AT, claim it at AT + 1s, finish it
# permanent with CLASS at AT + 2s.  Only ID may be eligible meanwhile.
park() {
	local tok
	at_ms "$3" spool-enqueue --id "$1" <<<"payload of $1" >/dev/null
	tok=$(at_ms $(($3 + 1000)) spool-claim --owner w1 | cut -f2)
	[ "$tok" != "" ]
	at_ms $(($3 + 2000)) spool-finish --class "$2" "$1" "$tok" permanent \
	    >/dev/null
}

# A spool with jobs in every state and every disposition; see the
# expected counts in the test below.  One job is eligible at a time, so
# each claim takes the job meant.
busy() {
	park d-perm invalid-input $T
	park d-drop transient $((T + 10000))
	park r-done transient $((T + 20000))
	at_ms $((T + 23000)) spool-redrive --by ops --note INC-1 r-done >/dev/null
	at_ms $((T + 24000)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 25000)) spool-finish r-done "$(lease_token r-done)" ok >/dev/null
	park r-parked transient $((T + 30000))
	at_ms $((T + 33000)) spool-redrive --by ops --note INC-1 r-parked >/dev/null
	at_ms $((T + 34000)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 35000)) spool-finish --class dependency-down r-parked \
	    "$(lease_token r-parked)" permanent >/dev/null
	park r-dropped transient $((T + 40000))
	at_ms $((T + 43000)) spool-redrive --by ops --note INC-1 r-dropped >/dev/null
	at_ms $((T + 44000)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 45000)) spool-finish r-dropped "$(lease_token r-dropped)" permanent >/dev/null
	at_ms $((T + 46000)) spool-drop --by ops --note INC-2 r-dropped >/dev/null
	at_ms $((T + 50000)) spool-enqueue --id d-exh --max-attempts 1 <<<"x" >/dev/null
	at_ms $((T + 51000)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 52000)) spool-finish d-exh "$(lease_token d-exh)" retry >/dev/null
	at_ms $((T + 60000)) spool-enqueue --id ok1 <<<"x" >/dev/null
	at_ms $((T + 61000)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 62000)) spool-finish ok1 "$(lease_token ok1)" ok >/dev/null
	at_ms $((T + 70000)) spool-drop --by ops --note INC-3 d-drop >/dev/null
	at_ms $((T + 80000)) spool-enqueue --id held <<<"x" >/dev/null
	at_ms $((T + 81000)) spool-claim --owner w9 --lease 1h >/dev/null
	at_ms $((T + 90000)) spool-renew held "$(lease_token held)" >/dev/null
	at_ms $((T + 100000)) spool-enqueue --id se1 <<<"x" >/dev/null
	at_ms $((T + 101000)) spool-claim --owner w1 >/dev/null
	at_ms $((T + 102000)) spool-finish --class unknown-side-effect se1 "$(lease_token se1)" retry \
	    >/dev/null
	at_ms $((T + 105000)) spool-enqueue --id q1 <<<"x" >/dev/null
	at_ms $((T + 106000)) spool-cancel --by oncall --note INC-4 q1 >/dev/null
	park r-queued transient $((T + 110000))
	at_ms $((T + 113000)) spool-redrive --by ops --note INC-5 r-queued >/dev/null
	at_ms $((T + 120000)) spool-enqueue --id waiting <<<"x" >/dev/null
	at_ms $((T + 125000)) spool-enqueue --id later --delay 1h <<<"x" >/dev/null
	at_ms $((T + 150000)) spool-pause --by ops --note INC-6 >/dev/null
}

# What plain spool-stat prints with the given values; "name=value" words.
plain() {
	local names="paused new ready leased done dropped dead damaged
	    quarantined hand_edits cycles2
	    lag oldest_dead oldest_lease overdue redriven_queued redriven_done
	    redriven_parked redriven_dropped dead_permanent dead_exhausted
	    dead_deadline dead_side_effect dead_cancelled dead_class_none
	    dead_class_transient dead_class_rate_limited
	    dead_class_dependency_down dead_class_invalid_input
	    dead_class_permission dead_class_cancelled
	    dead_class_unknown_side_effect dead_class_crashed dead_class_timeout
	    dead_class_lease_expired last_action timeout" name kv v
	for name in $names; do
		v=0
		case $name in
		lag | oldest_*) v=0s ;;
		last_action) v=- ;;
		timeout) v=1h00m ;;
		esac
		for kv; do
			[ "${kv%%=*}" = "$name" ] && v=${kv#*=}
		done
		printf '%-31s %s\n' "$name" "$v"
	done
}

@test "the usage line is the man page's SYNOPSIS" {
	run -100 --separate-stderr spool-stat --no-such-option
	equals "$output" ""
	equals "$stderr" "usage: $(synopsis spool-stat)"
	run -100 --separate-stderr spool-stat --json --prom
	equals "$stderr" "usage: $(synopsis spool-stat)"
	run -100 --separate-stderr spool-stat -a --json
	equals "$stderr" "usage: $(synopsis spool-stat)"
	run -100 --separate-stderr spool-stat extra
	equals "$stderr" "usage: $(synopsis spool-stat)"
}

@test "an empty spool: every metric 0, exactly; plain shows none of them, -a all" {
	run -0 --separate-stderr spool-stat
	equals "$stderr" ""
	equals "$output" "$(printf '%-31s %s\n' last_action - timeout 1h00m)"
	run -0 --separate-stderr spool-stat -a
	equals "$stderr" ""
	diff -u <(plain) <(printf '%s\n' "$output")
	run -0 --separate-stderr at_ms $T spool-stat --json
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<EOF
{"now":$T,"paused":false,"timeout_ms":3600000,"new":0,"ready":0,"leased":0,"done":0,"dropped":0,"dead":0,"damaged":0,"quarantined":0,"hand_edits":0,"cycles2":0,"lag":0,"oldest_dead":0,"oldest_lease":0,"overdue":0,"redriven_queued":0,"redriven_done":0,"redriven_parked":0,"redriven_dropped":0,"dead_by_reason":{"permanent":0,"exhausted":0,"deadline":0,"side-effect":0,"cancelled":0},"dead_by_class":{"none":0,"transient":0,"rate-limited":0,"dependency-down":0,"invalid-input":0,"permission":0,"cancelled":0,"unknown-side-effect":0,"crashed":0,"timeout":0,"lease-expired":0},"audit_events":{"enqueue":0,"claim":0,"reclaim":0,"renew":0,"ok":0,"retry":0,"release":0,"park":0,"supersede":0,"redrive":0,"drop":0,"cancel":0,"purge":0,"pause":0,"resume":0,"restore":0,"rebuild":0},"keys":{},"last_action":null}
EOF
	jq -e . <<<"$output" >/dev/null
}

@test "--prom on an empty spool: exact, and promtool accepts it" {
	run -0 --separate-stderr spool-stat --prom
	equals "$stderr" ""
	s="spool=\"$(realpath "$SPOOL_DIR")\""
	diff -u - <(printf '%s\n' "$output") <<EOF
# HELP spool_jobs Jobs in each state directory (done includes dropped jobs).
# TYPE spool_jobs gauge
spool_jobs{$s,state="new"} 0
spool_jobs{$s,state="leased"} 0
spool_jobs{$s,state="done"} 0
spool_jobs{$s,state="dead"} 0
# HELP spool_ready_jobs Jobs in new/ that are due now.
# TYPE spool_ready_jobs gauge
spool_ready_jobs{$s} 0
# HELP spool_dropped_jobs Jobs in done/ that were dropped, not run.
# TYPE spool_dropped_jobs gauge
spool_dropped_jobs{$s} 0
# HELP spool_damaged_jobs Jobs whose sidecar and file disagree: run spool-fsck.
# TYPE spool_damaged_jobs gauge
spool_damaged_jobs{$s} 0
# HELP spool_quarantined_files Files spool-fsck --repair moved to quarantine/: look at each.
# TYPE spool_quarantined_files gauge
spool_quarantined_files{$s} 0
# HELP spool_overdue_leases Leases held longer than the spool's timeout: a handler that hangs, renewing its lease?
# TYPE spool_overdue_leases gauge
spool_overdue_leases{$s} 0
# HELP spool_hand_edits_total Moves made by hand in the spool that spool-fsck --repair adopted, in the audit logs kept.
# TYPE spool_hand_edits_total counter
spool_hand_edits_total{$s} 0
# HELP spool_multi_cycle_jobs Jobs in their second cycle or later.
# TYPE spool_multi_cycle_jobs gauge
spool_multi_cycle_jobs{$s} 0
# HELP spool_parked_jobs Jobs in dead/, by park reason.
# TYPE spool_parked_jobs gauge
spool_parked_jobs{$s,reason="permanent"} 0
spool_parked_jobs{$s,reason="exhausted"} 0
spool_parked_jobs{$s,reason="deadline"} 0
spool_parked_jobs{$s,reason="side-effect"} 0
spool_parked_jobs{$s,reason="cancelled"} 0
# HELP spool_parked_jobs_by_class Jobs in dead/, by the class of their last failure.
# TYPE spool_parked_jobs_by_class gauge
spool_parked_jobs_by_class{$s,class="none"} 0
spool_parked_jobs_by_class{$s,class="transient"} 0
spool_parked_jobs_by_class{$s,class="rate-limited"} 0
spool_parked_jobs_by_class{$s,class="dependency-down"} 0
spool_parked_jobs_by_class{$s,class="invalid-input"} 0
spool_parked_jobs_by_class{$s,class="permission"} 0
spool_parked_jobs_by_class{$s,class="cancelled"} 0
spool_parked_jobs_by_class{$s,class="unknown-side-effect"} 0
spool_parked_jobs_by_class{$s,class="crashed"} 0
spool_parked_jobs_by_class{$s,class="timeout"} 0
spool_parked_jobs_by_class{$s,class="lease-expired"} 0
# HELP spool_redriven_jobs Jobs whose current cycle began with a redrive, by what became of them.
# TYPE spool_redriven_jobs gauge
spool_redriven_jobs{$s,outcome="queued"} 0
spool_redriven_jobs{$s,outcome="done"} 0
spool_redriven_jobs{$s,outcome="parked"} 0
spool_redriven_jobs{$s,outcome="dropped"} 0
# HELP spool_backlog_lag_seconds How long the oldest ready job has been due.
# TYPE spool_backlog_lag_seconds gauge
spool_backlog_lag_seconds{$s} 0
# HELP spool_oldest_parked_age_seconds How long the oldest parked job has been in dead/.
# TYPE spool_oldest_parked_age_seconds gauge
spool_oldest_parked_age_seconds{$s} 0
# HELP spool_oldest_lease_age_seconds How long the oldest lease has been held.
# TYPE spool_oldest_lease_age_seconds gauge
spool_oldest_lease_age_seconds{$s} 0
# HELP spool_paused 1 if claims are paused.
# TYPE spool_paused gauge
spool_paused{$s} 0
# HELP spool_audit_events_total Lines in the audit logs kept, by event; falls when old logs are removed.
# TYPE spool_audit_events_total counter
spool_audit_events_total{$s,event="enqueue"} 0
spool_audit_events_total{$s,event="claim"} 0
spool_audit_events_total{$s,event="reclaim"} 0
spool_audit_events_total{$s,event="renew"} 0
spool_audit_events_total{$s,event="ok"} 0
spool_audit_events_total{$s,event="retry"} 0
spool_audit_events_total{$s,event="release"} 0
spool_audit_events_total{$s,event="park"} 0
spool_audit_events_total{$s,event="supersede"} 0
spool_audit_events_total{$s,event="redrive"} 0
spool_audit_events_total{$s,event="drop"} 0
spool_audit_events_total{$s,event="cancel"} 0
spool_audit_events_total{$s,event="purge"} 0
spool_audit_events_total{$s,event="pause"} 0
spool_audit_events_total{$s,event="resume"} 0
spool_audit_events_total{$s,event="restore"} 0
spool_audit_events_total{$s,event="rebuild"} 0
EOF
	run -0 --separate-stderr promtool check metrics <<<"$output"
	equals "$output" ""
	equals "$stderr" ""
}

@test "a busy spool: counts, ages, reasons, classes, redrives, the last action" {
	busy
	# The lease, held 1m59s, is overdue past a timeout of a minute.
	sed -i 's/^timeout=.*/timeout=1m/' "$SPOOL_DIR/config"
	run -0 --separate-stderr at_ms $((T + 200000)) spool-stat -a
	equals "$stderr" ""
	diff -u <(plain paused=1 new=3 ready=2 leased=1 done=4 dropped=2 dead=5 \
	    cycles2=4 lag=1m27s oldest_dead=3m18s oldest_lease=1m59s overdue=1 \
	    redriven_queued=1 redriven_done=1 redriven_parked=1 \
	    redriven_dropped=1 dead_permanent=2 dead_exhausted=1 \
	    dead_side_effect=1 dead_cancelled=1 dead_class_none=1 \
	    dead_class_dependency_down=1 dead_class_invalid_input=1 \
	    dead_class_cancelled=1 dead_class_unknown_side_effect=1 \
	    "last_action=pause by ops at 2026-11-30T00:55:50.000Z (50s ago)" \
	    timeout=1m00s) <(printf '%s\n' "$output")
	# Without -a, the same lines but those of 0.
	run -0 --separate-stderr at_ms $((T + 200000)) spool-stat
	diff -u <(at_ms $((T + 200000)) spool-stat -a | grep -Ev ' (0|0s)$') \
	    <(printf '%s\n' "$output")
	equals "$(wc -l <<<"$output")" 27
	# The counts agree with the directories.
	for state in new leased done dead; do
		equals "$(grep "^$state " <<<"$output" | awk '{ print $2 }')" \
		    "$(ids_in $state | wc -l)"
	done
	run -0 --separate-stderr at_ms $((T + 200000)) spool-stat --json
	equals "$stderr" ""
	jq -e . <<<"$output" >/dev/null
	equals "$(jq -c '[.paused, .timeout_ms, .new, .ready, .leased, .done, .dropped, .dead, .cycles2, .lag, .oldest_dead, .oldest_lease, .overdue]' <<<"$output")" "[true,60000,3,2,1,4,2,5,4,87000,198000,119000,1]"
	equals "$(jq -c '.dead_by_reason' <<<"$output")" '{"permanent":2,"exhausted":1,"deadline":0,"side-effect":1,"cancelled":1}'
	equals "$(jq -c '.dead_by_class | with_entries(select(.value > 0))' <<<"$output")" '{"none":1,"dependency-down":1,"invalid-input":1,"cancelled":1,"unknown-side-effect":1}'
	equals "$(jq -c '.last_action' <<<"$output")" "{\"event\":\"pause\",\"by\":\"ops\",\"time\":$((T + 150000))}"
	# Every audit line is counted under its event.
	equals "$(jq '[.audit_events[]] | add' <<<"$output")" "$(cat "$SPOOL_DIR"/audit/*.log | wc -l)"
	for ev in enqueue claim park redrive drop cancel pause; do
		equals "$(jq ".audit_events.\"$ev\"" <<<"$output")" \
		    "$(cut -d' ' -f2 "$SPOOL_DIR"/audit/*.log | grep -cx "$ev")"
	done
}

@test "--prom on a busy spool: promtool accepts it; the values agree" {
	busy
	run -0 --separate-stderr at_ms $((T + 200000)) spool-stat --prom
	equals "$stderr" ""
	prom=$output
	run -0 --separate-stderr promtool check metrics <<<"$prom"
	equals "$output" ""
	equals "$stderr" ""
	s="spool=\"$(realpath "$SPOOL_DIR")\""
	diff -u - <(grep -v '^#' <<<"$prom" | grep -Ev '} 0$' | grep -v audit_events) <<EOF
spool_jobs{$s,state="new"} 3
spool_jobs{$s,state="leased"} 1
spool_jobs{$s,state="done"} 4
spool_jobs{$s,state="dead"} 5
spool_ready_jobs{$s} 2
spool_dropped_jobs{$s} 2
spool_multi_cycle_jobs{$s} 4
spool_parked_jobs{$s,reason="permanent"} 2
spool_parked_jobs{$s,reason="exhausted"} 1
spool_parked_jobs{$s,reason="side-effect"} 1
spool_parked_jobs{$s,reason="cancelled"} 1
spool_parked_jobs_by_class{$s,class="none"} 1
spool_parked_jobs_by_class{$s,class="dependency-down"} 1
spool_parked_jobs_by_class{$s,class="invalid-input"} 1
spool_parked_jobs_by_class{$s,class="cancelled"} 1
spool_parked_jobs_by_class{$s,class="unknown-side-effect"} 1
spool_redriven_jobs{$s,outcome="queued"} 1
spool_redriven_jobs{$s,outcome="done"} 1
spool_redriven_jobs{$s,outcome="parked"} 1
spool_redriven_jobs{$s,outcome="dropped"} 1
spool_backlog_lag_seconds{$s} 87
spool_oldest_parked_age_seconds{$s} 198
spool_oldest_lease_age_seconds{$s} 119
spool_paused{$s} 1
spool_last_operator_action_timestamp_seconds{$s,event="pause",by="ops"} $(((T + 150000) / 1000))
EOF
	grep -qx "spool_audit_events_total{$s,event=\"redrive\"} 4" <<<"$prom"
	# Fractions of a second are kept, and a resume is an action too.
	at_ms $((T + 160250)) spool-resume >/dev/null
	run -0 at_ms $((T + 200500)) spool-stat --prom
	grep -qx "spool_backlog_lag_seconds{$s} 87.500" <<<"$output"
	grep -qx "spool_paused{$s} 0" <<<"$output"
	grep -qx "spool_last_operator_action_timestamp_seconds{$s,event=\"resume\",by=\"-\"} $(((T + 160250) / 1000)).250" <<<"$output"
	run -0 promtool check metrics <<<"$output"
}

@test "spool-stat reads rotated audit logs: the last action may be in one" {
	park p1 transient $T
	at_ms $((T + 5000)) spool-redrive --by ops --note INC-8 p1 >/dev/null
	mv "$SPOOL_DIR/audit/testhost.log" "$SPOOL_DIR/audit/testhost.log.1"
	at_ms $((T + 6000)) spool-claim --owner w1 >/dev/null
	run -0 --separate-stderr at_ms $((T + 7000)) spool-stat --json
	equals "$stderr" ""
	equals "$(jq -c '[.last_action, .audit_events.enqueue, .audit_events.claim, .audit_events.redrive, .cycles2, .redriven_queued]' <<<"$output")" "[{\"event\":\"redrive\",\"by\":\"ops\",\"time\":$((T + 5000))},1,2,1,1,1]"
	run -0 at_ms $((T + 7000)) spool-stat
	equals "$(grep '^last_action ' <<<"$output")" "$(printf '%-31s %s' last_action 'redrive by ops at 2026-11-30T00:53:25.000Z (2s ago)')"
}

@test "a label value is escaped: a spool path with a quote and a backslash" {
	dir="$BATS_TEST_TMPDIR/odd \"dir\" \\ x"
	spool-init -d "$dir"
	run -0 --separate-stderr spool-stat -d "$dir" --prom
	equals "$stderr" ""
	grep -qF "spool_paused{spool=\"$BATS_TEST_TMPDIR/odd \\\"dir\\\" \\\\ x\"} 0" <<<"$output"
	run -0 promtool check metrics <<<"$output"
}

@test "a check: OK, WARNING and CRITICAL, one status line, exit 0, 1, 2" {
	busy
	run -0 --separate-stderr at_ms $((T + 200000)) spool-stat --warn 'dead>5' \
	    --crit 'oldest_dead>1h'
	equals "$stderr" ""
	equals "$output" "SPOOL OK - dead=5, oldest_dead=3m18s | dead=5 oldest_dead=198s"
	run -1 --separate-stderr at_ms $((T + 200000)) spool-stat --warn 'dead>0' \
	    --crit 'oldest_dead>1h' --warn 'lag>=87s'
	equals "$stderr" ""
	equals "$output" "SPOOL WARNING - dead=5 (>0), lag=1m27s (>=87s), oldest_dead=3m18s | dead=5 lag=87s oldest_dead=198s"
	run -2 --separate-stderr at_ms $((T + 200000)) spool-stat --warn 'dead>0' \
	    --crit 'oldest_dead>3m' --warn 'lag>88s' --crit 'paused=1' \
	    --warn 'dead_side_effect>0' --crit 'dead>4'
	equals "$stderr" ""
	equals "$output" "SPOOL CRITICAL - oldest_dead=3m18s (>3m), paused=1 (=1), dead=5 (>4), dead_side_effect=1 (>0), lag=1m27s | oldest_dead=198s paused=1 dead=5 dead_side_effect=1 lag=87s"
	# Only --crit, and < and <=.
	run -2 at_ms $((T + 200000)) spool-stat --crit 'redriven_done<2'
	equals "$output" "SPOOL CRITICAL - redriven_done=1 (<2) | redriven_done=1"
	run -0 at_ms $((T + 200000)) spool-stat --crit 'ready<=1'
	equals "$output" "SPOOL OK - ready=2 | ready=2"
}

@test "a check that cannot be made is UNKNOWN, exit 3, on stdout" {
	run -3 --separate-stderr spool-stat --warn 'dead>>0'
	equals "$output" "SPOOL UNKNOWN - dead: bad number '>0'"
	equals "$stderr" ""
	run -3 spool-stat --warn 'dead~0'
	equals "$output" "SPOOL UNKNOWN - bad expression 'dead~0': the operator is one of > >= < <= ="
	run -3 spool-stat --crit '>0'
	equals "$output" "SPOOL UNKNOWN - bad expression '>0' (want NAME OP VALUE, e.g. dead>0)"
	run -3 spool-stat --crit 'parked>0'
	equals "$output" "SPOOL UNKNOWN - no metric 'parked' (see spool-stat(1), METRICS)"
	run -3 spool-stat --crit 'lag>soon'
	equals "$output" "SPOOL UNKNOWN - lag: bad duration 'soon' (use e.g. 500ms, 30s, 5m, 2h, 7d)"
	run -3 spool-stat --crit 'dead>0' --json
	equals "$output" "SPOOL UNKNOWN - usage: $(synopsis spool-stat)"
	run -3 spool-stat --crit 'dead>0' --bogus
	equals "$output" "SPOOL UNKNOWN - usage: $(synopsis spool-stat)"
	run -3 spool-stat -d "$BATS_TEST_TMPDIR/nowhere" --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - $BATS_TEST_TMPDIR/nowhere: No such file or directory"
	run -3 spool-stat -d "$BATS_TEST_TMPDIR" --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - $BATS_TEST_TMPDIR: not a spool (no format file; see spool-init(1))"
	run -3 env -u SPOOL_DIR spool-stat --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - no spool: give -d DIR or set SPOOL_DIR"
	# Without a check, the usual statuses.
	run -100 --separate-stderr env -u SPOOL_DIR spool-stat
	equals "$output" ""
	equals "$stderr" "spool-stat: no spool: give -d DIR or set SPOOL_DIR"
}

@test "10,000 parked jobs: counted, fast, and no payload opened" {
	local in="$BATS_TEST_TMPDIR/in" leases="$BATS_TEST_TMPDIR/leases" p
	mkdir "$in"
	(cd "$in" && seq -f 'job-%05g' 10000 | xargs touch)
	# Four producers, workers and finishers at a time, each call with
	# many jobs: 2,500 files an enqueue (the IDs are made: UUIDs), 256
	# leases a claim, and finishes from stdin.  A claimer stops when it
	# finds nothing; the last to stop has found nothing left.  The leases
	# outlast a loaded machine's run, so that none is taken over.
	(cd "$in" && printf '%s\0' * | xargs -0 -P 4 -n 2500 spool-enqueue) >/dev/null
	for p in 1 2 3 4; do
		(while spool-claim --owner w$p -n 256 --lease 1h >>"$leases.$p"; do :; done) &
	done
	wait
	cat "$leases".* | awk '{ print $1, $2, "permanent" }' >"$leases"
	[ "$(wc -l <"$leases")" -eq 10000 ]
	[ "$(cut -d' ' -f1 "$leases" | sort -u | wc -l)" -eq 10000 ]
	split -n l/4 --filter='spool-finish --class invalid-input - >/dev/null' \
	    "$leases"
	[ "$(ids_in dead | wc -l)" -eq 10000 ]
	run -0 --separate-stderr spool-stat
	equals "$stderr" ""
	grep -qx 'dead                            10000' <<<"$output"
	grep -qx 'dead_permanent                  10000' <<<"$output"
	grep -qx 'dead_class_invalid_input        10000' <<<"$output"
	run -0 spool-stat -a
	grep -qx 'new                             0' <<<"$output"
	run -2 spool-stat --crit 'dead>9999'
	equals "${output%% |*}" "SPOOL CRITICAL - dead=10000 (>9999)"
	# One job of each other state, so that every directory is read.
	spool-enqueue --id q-1 <<<"x" >/dev/null
	spool-enqueue --id q-2 <<<"x" >/dev/null
	spool-claim --owner w >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -f -y -e trace=openat,open \
	    -o "$BATS_TEST_TMPDIR/trace" spool-stat --prom >"$BATS_TEST_TMPDIR/prom"
	grep -qx "spool_jobs{spool=\"$(realpath "$SPOOL_DIR")\",state=\"dead\"} 10000" \
	    "$BATS_TEST_TMPDIR/prom"
	promtool check metrics <"$BATS_TEST_TMPDIR/prom"
	# Every sidecar was read: the trace saw them ...
	[ "$(grep -c '/meta/[^/>]*>$' "$BATS_TEST_TMPDIR/trace")" -eq 10002 ]
	# ... and nothing under a state directory but directories (buckets).
	opened=$(grep -E '= [0-9]+<[^>]*/(new|leased|done|dead)/' \
	    "$BATS_TEST_TMPDIR/trace" | grep -v O_DIRECTORY || true)
	equals "$opened" ""
	[ "$(grep -c '/dead/' "$BATS_TEST_TMPDIR/trace" || true)" -eq 0 ]
}

@test "contrib/crontab and the systemd check mail only when not OK" {
	contrib="$BATS_TEST_DIRNAME/../contrib"
	mkdir "$BATS_TEST_TMPDIR/fake"
	# mail(1) that records what it was asked to send.
	cat >"$BATS_TEST_TMPDIR/fake/mail" <<EOF
#!/bin/sh
{ echo "to \$3: \$2"; cat; } >>"$BATS_TEST_TMPDIR/mailed"
EOF
	chmod +x "$BATS_TEST_TMPDIR/fake/mail"
	cron_check=$(grep -E '^\*/5 ' "$contrib/crontab" | cut -f2-)
	unit_check=$(sed -n "s/^ExecStart=:\/bin\/sh -c '\(.*\)'$/\1/p" \
	    "$contrib/spool-check.service" | sed 's|/usr/local/bin/||g')
	export PATH="$BATS_TEST_TMPDIR/fake:$PATH" MAILTO=ops@example.com
	# All is well: cron gets no output, the unit succeeds, no mail.
	run -0 --separate-stderr sh -c "$cron_check"
	equals "$output" ""
	run -0 sh -c "$unit_check"
	[ ! -e "$BATS_TEST_TMPDIR/mailed" ]
	park p1 transient $(($(date +%s) * 1000 - 60000))
	run -0 --separate-stderr sh -c "$cron_check"
	[[ $output = "SPOOL WARNING - dead=1 (>0), oldest_dead="* ]]
	run -1 sh -c "$unit_check"
	equals "$(head -n 1 "$BATS_TEST_TMPDIR/mailed")" "to ops@example.com: $(tail -n 1 "$BATS_TEST_TMPDIR/mailed")"
	[[ $(tail -n 1 "$BATS_TEST_TMPDIR/mailed") = "SPOOL WARNING - dead=1 (>0), "* ]]
	# The every-minute job writes a file promtool accepts.
	mkdir "$BATS_TEST_TMPDIR/textfile"
	stat_job=$(grep -E '^\* \* \* \* \*' "$contrib/crontab" | cut -f2- |
	    sed "s|/var/lib/prometheus/node-exporter|$BATS_TEST_TMPDIR/textfile|")
	run -0 --separate-stderr sh -c "$stat_job"
	equals "$output" ""
	equals "$(ls "$BATS_TEST_TMPDIR/textfile")" spool.prom
	promtool check metrics <"$BATS_TEST_TMPDIR/textfile/spool.prom"
}

@test "--ages: jobs by state and parked reason, and by how long they have been there" {
	park p1 invalid-input $T		# parked at T + 2s
	at_ms $T spool-enqueue --id n1 <<<"n1" >/dev/null
	at_ms $((T + 3600000)) spool-enqueue --id n2 <<<"n2" >/dev/null
	at_ms $((T + 7000000)) spool-enqueue --id n3 <<<"n3" >/dev/null
	at_ms $((T + 7100000)) spool-claim --owner w1 >/dev/null	# n1
	# At T + 2h: p1 119m58s parked, n2 60m queued, n3 3m20s, n1 leased
	# 1m40s; 5 minutes is in the first column, 80 in the fifth.
	run -0 --separate-stderr at_ms $((T + 7200000)) spool-stat --ages
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOT'
STATE                   TOTAL     5m    10m    20m    40m    80m   160m   320m   640m  1280m  1280m+
new                         2      1      0      0      0      1      0      0      0      0      0
leased                      1      1      0      0      0      0      0      0      0      0      0
done                        0      0      0      0      0      0      0      0      0      0      0
dead                        1      0      0      0      0      0      1      0      0      0      0
dead permanent              1      0      0      0      0      0      1      0      0      0      0
dead exhausted              0      0      0      0      0      0      0      0      0      0      0
dead deadline               0      0      0      0      0      0      0      0      0      0      0
dead side-effect            0      0      0      0      0      0      0      0      0      0      0
dead cancelled              0      0      0      0      0      0      0      0      0      0      0
EOT
	run -100 --separate-stderr spool-stat --ages --json
	equals "$stderr" "usage: $(synopsis spool-stat)"
}
