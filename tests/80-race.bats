#!/usr/bin/env bats
# Races: four claimer processes against one spool of 1,000 jobs with short
# leases (RACE_JOBS=N: N jobs; CI's run under the sanitizers takes 250,
# make torture 10,000).
# Worker 0 is slow on purpose: on every fourth job it waits past its
# lease before finishing, so that takeovers and stale finishes really happen.
# Everything is judged from what the workers saw and what the spool wrote,
# never from how long it took.

load helpers

JOBS=${RACE_JOBS:-1000}
WORKERS=4

# worker N: claim, read the payload, finish ok; log "ID TOKEN STATUS".
worker() {
	local n=$1 line id tok path rc i=0 idle=0 got
	trap - DEBUG	# bats's trap runs on every command: a third of the CPU
	while :; do
		rc=0
		line=$(spool-claim --owner "w$n" --lease 500ms) || rc=$?
		if [ "$rc" -eq 1 ]; then
			# Nothing due: done when every job is, else a lease has
			# yet to run out.
			[ "$(find "$SPOOL_DIR/done" -type f | wc -l)" -lt "$JOBS" ] || return 0
			idle=$((idle + 1))
			[ "$idle" -lt 3000 ] || { echo "w$n: gave up" >&2; return 1; }
			sleep 0.02
			continue
		fi
		[ "$rc" -eq 0 ] || { echo "w$n: claim exit $rc" >&2; return 1; }
		IFS=$'\t' read -r id tok _ path <<<"$line"
		# The payload names the job: a claimer must get the right file.
		got=
		read -r got <"$path" || true
		[ "$got" = "${PAYLOAD[$id]}" ] || echo "BADPAYLOAD $id $tok"
		i=$((i + 1))
		if [ "$n" -eq 0 ] && [ $((i % 4)) -eq 0 ]; then
			sleep 0.8	# outlive the lease: the work of a slow worker
		fi
		rc=0
		spool-finish "$id" "$tok" ok >/dev/null 2>"$BATS_TEST_TMPDIR/err.$n" || rc=$?
		echo "FINISH $id $tok $rc"
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
			cat "$BATS_TEST_TMPDIR/err.$n" >&2
			return 1
		fi
	done
}

@test "4 claimers, 1000 jobs or RACE_JOBS, leases outlived: every job once, stale finishes refused" {
	local i id n
	mkdir "$BATS_TEST_TMPDIR/in"
	seq -w 1 "$JOBS" | (cd "$BATS_TEST_TMPDIR/in" &&
	    awk '{ f = "job-" $0; print "payload of " f > f; close(f) }')
	# One command, 256 jobs a sync; the IDs it prints, in the order of
	# the files, say which payload each job must have.
	(cd "$BATS_TEST_TMPDIR/in" && spool-enqueue --max-attempts 100 job-*) \
	    >"$BATS_TEST_TMPDIR/ids"
	declare -gA PAYLOAD=()
	i=0
	while read -r id n; do
		PAYLOAD[$id]="payload of job-$n"
		i=$((i + 1))
	done < <(paste "$BATS_TEST_TMPDIR/ids" <(seq -w 1 "$JOBS"))
	[ "$i" -eq "$JOBS" ]

	for i in $(seq 0 $((WORKERS - 1))); do
		worker "$i" >"$BATS_TEST_TMPDIR/log.$i" &
	done
	for i in $(seq 0 $((WORKERS - 1))); do
		wait %$((i + 1)) || { echo "worker $i failed" >&2; return 1; }
	done
	cat "$BATS_TEST_TMPDIR"/log.* >"$BATS_TEST_TMPDIR/log"

	# Every job is delivered and done, exactly once in the spool.
	[ "$(ids_in done | wc -l)" -eq "$JOBS" ]
	equals "$(ids_in new)$(ids_in leased)$(ids_in dead)" ""
	check_invariants
	equals "$(grep BADPAYLOAD "$BATS_TEST_TMPDIR/log")" ""

	# Each job finished ok once, by exactly one token, in the audit log.
	[ "$(awk '$2 == "ok"' "$SPOOL_DIR"/audit/*.log | wc -l)" -eq "$JOBS" ]
	equals "$(awk '$2 == "ok" { print $3 }' "$SPOOL_DIR"/audit/*.log | sort | uniq -d)" ""

	# A finish succeeded (0) exactly when its token was the one that
	# finished the job; it was refused (1) exactly when its lease had been
	# taken over: the job's sidecar has a claim superseding that token.
	local ok stale bad
	ok=$(awk '$1 == "FINISH" && $4 == 0 { print $2, $3 }' "$BATS_TEST_TMPDIR/log" | sort)
	diff -u <(awk '$2 == "ok" { print $3, $4 }' "$SPOOL_DIR"/audit/*.log | sort) - <<<"$ok"
	stale=$(awk '$1 == "FINISH" && $4 == 1 { print $2, $3 }' "$BATS_TEST_TMPDIR/log")
	bad=$(while read -r id tok; do
		[ -n "$id" ] || continue
		grep -q " ev=claim .* prev=$tok\( \|$\)" "$SPOOL_DIR/meta/$id" ||
		    echo "$id $tok refused but never superseded"
	done <<<"$stale")
	[ -z "$bad" ] || { echo "$bad" >&2; return 1; }

	# No job had two live leases: a claim that superseded token T came at
	# or after T's expiry (last claim or renew record of T).
	bad=$(awk '
	    FNR == 1 { delete until }
	    / ev=(claim|renew) / {
		t = tok = u = p = ""
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "t") t = kv[2]
			if (kv[1] == "tok") tok = kv[2]
			if (kv[1] == "until") u = kv[2]
			if (kv[1] == "prev") p = kv[2]
		}
		if (p != "" && t + 0 < until[p] + 0)
			print FILENAME, "token", tok, "at", t, "before", p, "expired at", until[p]
		until[tok] = u
	    }' "$SPOOL_DIR"/meta/*)
	[ -z "$bad" ] || { echo "$bad" >&2; return 1; }

	# And it was a real race: takeovers and stale finishes both happened.
	local reclaims refused
	reclaims=$(awk '$2 == "reclaim"' "$SPOOL_DIR"/audit/*.log | wc -l)
	refused=$(grep -c '^FINISH .* 1$' "$BATS_TEST_TMPDIR/log")
	echo "# jobs $JOBS, reclaims $reclaims, stale finishes refused $refused" >&3
	[ "$reclaims" -gt 0 ]
	[ "$refused" -gt 0 ]
	# Nothing crashed: the spool is consistent as it stands.
	fsck_clean
}
