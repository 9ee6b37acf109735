#!/usr/bin/env bats
# The alerting pack: contrib/spool-alerts.yml (checked and unit-tested by
# promtool, then run on what spool-stat --prom really prints) and
# contrib/spool-dashboard.json, whose every query must name metrics that
# spool-stat --prom emits.

load helpers

CONTRIB="$BATS_TEST_DIRNAME/../contrib"
T=1796000000000

# The metric names that PromQL expressions (one a line on stdin) name:
# strings, label matchers, ranges and grouping clauses removed, function
# and aggregation names dropped (a name before "("), keywords too.
# Grafana's label_values(METRIC, LABEL) names METRIC.
promql_metrics() {
	sed -E 's/"([^"\\]|\\.)*"//g; s/\{[^}]*\}//g; s/\[[^]]*\]//g
	    s/\<(by|without|on|ignoring|group_left|group_right) *\([^)]*\)//g
	    s/\<label_values\(([^,)]*),[^)]*\)/(\1)/g
	    s/[a-zA-Z_:][a-zA-Z0-9_:]* *\(/(/g' |
	    grep -oE '(^|[^a-zA-Z0-9_:.])[a-zA-Z_:][a-zA-Z0-9_:]*' |
	    sed -E 's/^[^a-zA-Z_:]//' |
	    grep -vxE 'and|or|unless|bool|offset' | LC_ALL=C sort -u
}

# Every query of a dashboard: the panels' and the variables'.
dashboard_queries() {
	jq -r '.. | objects | (.expr?, .query?.query?) // empty' "$1"
}

# A multi-host spool at T, its clock not synchronised: p1 parked 5 hours
# ago, p2 parked and redriven by an operator (then claimed again and
# leased), r1 ready and due for 10 minutes.  Its --prom output in
# $BATS_TEST_TMPDIR/prom.
busy_prom() {
	printf 'multi-host=yes\nskew=5s\n' >>"$SPOOL_DIR/config"
	export SPOOL_TEST_CLOCK=unsynced
	at_ms $((T - 18000000)) spool-enqueue --id p1 <<<p1 >/dev/null
	at_ms $((T - 17999000)) spool-claim >/dev/null
	at_ms $((T - 17998000)) spool-finish p1 "$(lease_token p1)" permanent >/dev/null
	at_ms $((T - 1000000)) spool-enqueue --id p2 <<<p2 >/dev/null
	at_ms $((T - 999000)) spool-claim >/dev/null
	at_ms $((T - 998000)) spool-finish p2 "$(lease_token p2)" permanent >/dev/null
	at_ms $((T - 997000)) spool-redrive --by ops --note INC-1 p2 >/dev/null
	at_ms $((T - 996000)) spool-claim >/dev/null
	at_ms $((T - 600000)) spool-enqueue --id r1 <<<r1 >/dev/null
	at_ms "$T" spool-stat --prom >"$BATS_TEST_TMPDIR/prom"
}

# The metric names in a --prom output.
prom_names() {
	grep -v '^#' "$1" | sed 's/[{ ].*//' | LC_ALL=C sort -u
}

@test "promtool accepts the alert rules" {
	run -0 --separate-stderr promtool check rules "$CONTRIB/spool-alerts.yml"
	equals "$output" "$(printf '%s\n' "Checking $CONTRIB/spool-alerts.yml" \
	    "  SUCCESS: 9 rules found")"
	equals "$stderr" ""
}

@test "the alert rules pass their unit tests (promtool test rules)" {
	cd "$CONTRIB"
	run -0 promtool test rules spool-alerts.test.yml
	equals "$output" "$(printf '%s\n' "Unit Testing:  spool-alerts.test.yml" \
	    "  SUCCESS")"
}

@test "the unit tests fail when a threshold is off" {
	sed 's/spool_oldest_parked_age_seconds > 4 \* 3600/spool_oldest_parked_age_seconds > 5 * 3600/' \
	    "$CONTRIB/spool-alerts.yml" >"$BATS_TEST_TMPDIR/spool-alerts.yml"
	cp "$CONTRIB/spool-alerts.test.yml" "$BATS_TEST_TMPDIR/"
	cd "$BATS_TEST_TMPDIR"
	run -1 promtool test rules spool-alerts.test.yml
	[[ $output == *"alertname: SpoolParkedJobOld, time: 3m"* ]]
}

@test "the rules fire on what spool-stat --prom prints" {
	busy_prom
	# Every name the rules use is one spool-stat prints, or the textfile
	# collector's own.
	sed -n 's/^ *expr: //p' "$CONTRIB/spool-alerts.yml" | promql_metrics \
	    >"$BATS_TEST_TMPDIR/used"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/used")" -eq 9 ]
	{ prom_names "$BATS_TEST_TMPDIR/prom"; echo node_textfile_mtime_seconds; } |
	    LC_ALL=C sort >"$BATS_TEST_TMPDIR/known"
	run -0 --separate-stderr comm -23 "$BATS_TEST_TMPDIR/used" "$BATS_TEST_TMPDIR/known"
	equals "$output" ""
	# The rules without their annotations (the unit tests check those),
	# fed the output as a host's series for 20 minutes.
	awk '/^ *annotations:/ { skip = index($0, "a"); next }
	    skip && (index($0, $1) > skip || /^ *$/) { next }
	    { skip = 0; print }' "$CONTRIB/spool-alerts.yml" \
	    >"$BATS_TEST_TMPDIR/rules.yml"
	S=$SPOOL_DIR
	{
		printf 'rule_files: [rules.yml]\nevaluation_interval: 1m\n'
		printf 'tests:\n  - interval: 1m\n    input_series:\n'
		grep -v '^#' "$BATS_TEST_TMPDIR/prom" |
		    sed -E 's/^([a-z_]+)\{(.*)\} (.*)$/\1{instance="h1",\2} \3/' |
		    while read -r series value; do
			printf "      - series: '%s'\n        values: '%s+0x20'\n" \
			    "$series" "$value"
		done
		cat <<EOF
    alert_rule_test:
      - eval_time: 15m
        alertname: SpoolJobsParked
        exp_alerts:
          - exp_labels: {severity: warning, instance: h1, spool: "$S", state: dead}
      - eval_time: 15m
        alertname: SpoolParkedJobOld
        exp_alerts:
          - exp_labels: {severity: critical, instance: h1, spool: "$S"}
      - eval_time: 15m
        alertname: SpoolBacklogLag
        exp_alerts:
          - exp_labels: {severity: critical, instance: h1, spool: "$S"}
      - eval_time: 15m
        alertname: SpoolClockUnsynchronised
        exp_alerts:
          - exp_labels: {severity: critical, instance: h1, spool: "$S"}
      - eval_time: 15m
        alertname: SpoolDamagedJobs
        exp_alerts: []
      - eval_time: 15m
        alertname: SpoolPausedLong
        exp_alerts: []
      - eval_time: 15m
        alertname: SpoolLeasesOverdue
        exp_alerts: []
EOF
	} >"$BATS_TEST_TMPDIR/real.test.yml"
	# The spool's figures, as the rules see them.
	grep -xE 'spool_jobs\{spool="[^"]*",state="dead"\} 1|spool_oldest_parked_age_seconds\{spool="[^"]*"\} 17998|spool_backlog_lag_seconds\{spool="[^"]*"\} 600|spool_clock_synchronised\{spool="[^"]*"\} 0' \
	    "$BATS_TEST_TMPDIR/prom" | wc -l | grep -qx 4
	cd "$BATS_TEST_TMPDIR"
	run -0 promtool test rules real.test.yml
	equals "$output" "$(printf '%s\n' "Unit Testing:  real.test.yml" "  SUCCESS")"
}

@test "every query of the Grafana dashboard names only metrics that spool-stat --prom emits" {
	busy_prom
	dash="$CONTRIB/spool-dashboard.json"
	jq -e '.panels | length > 0' "$dash" >/dev/null
	# Each panel has a query, and each query names a metric.
	[ "$(jq '[.panels[] | select((.targets // []) | length == 0)] | length' "$dash")" -eq 0 ]
	dashboard_queries "$dash" | while IFS= read -r q; do
		[ -n "$(promql_metrics <<<"$q")" ] || { echo "no metric: $q" >&2; exit 1; }
	done
	dashboard_queries "$dash" | promql_metrics >"$BATS_TEST_TMPDIR/used"
	prom_names "$BATS_TEST_TMPDIR/prom" >"$BATS_TEST_TMPDIR/emitted"
	run -0 --separate-stderr comm -23 "$BATS_TEST_TMPDIR/used" "$BATS_TEST_TMPDIR/emitted"
	equals "$output" ""
	# It shows every family spool-stat emits.
	run -0 --separate-stderr comm -13 "$BATS_TEST_TMPDIR/used" "$BATS_TEST_TMPDIR/emitted"
	equals "$output" ""
	# The panels' queries are PromQL (Grafana's variables put aside):
	# promtool checks them as recording rules.
	{
		printf 'groups:\n  - name: dashboard\n    rules:\n'
		jq -r '.panels[].targets[].expr' "$dash" |
		    sed 's/\$__rate_interval/5m/g' | jq -R . | while read -r q; do
			printf '      - record: q\n        expr: %s\n' "$q"
		done
	} >"$BATS_TEST_TMPDIR/queries.yml"
	run -0 promtool check rules "$BATS_TEST_TMPDIR/queries.yml"
}

@test "the dashboard check catches a query of a metric that spool-stat does not emit" {
	busy_prom
	jq '.panels[1].targets[0].expr = "spool_oldest_parked_seconds{spool=~\"$spool\"}"' \
	    "$CONTRIB/spool-dashboard.json" >"$BATS_TEST_TMPDIR/bad.json"
	dashboard_queries "$BATS_TEST_TMPDIR/bad.json" | promql_metrics >"$BATS_TEST_TMPDIR/used"
	prom_names "$BATS_TEST_TMPDIR/prom" >"$BATS_TEST_TMPDIR/emitted"
	run -0 comm -23 "$BATS_TEST_TMPDIR/used" "$BATS_TEST_TMPDIR/emitted"
	equals "$output" spool_oldest_parked_seconds
	# And the names in the expressions, read right.
	equals "$(promql_metrics <<<'sum by (spool, event) (rate(spool_audit_events_total{a="b(c)"}[5m])) > bool 0 and on (x) up')" \
	    "$(printf '%s\n' spool_audit_events_total up)"
	equals "$(promql_metrics <<<'label_values(spool_jobs{instance=~"$instance"}, spool)')" spool_jobs
}
