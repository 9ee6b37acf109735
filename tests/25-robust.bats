#!/usr/bin/env bats
# Defects found in review, kept fixed: a burnt token must not leak into the
# holder's records, one bad job must not stop the queue, a full batch must
# fit the descriptor limit, and a long program name must not overflow.

load helpers

teardown() {
	[ -z "${SHARED:-}" ] || rm -rf "$SHARED"
}

T=1000000

@test "after a reclaim died on its record, the holder's renew holds and its finish repeats" {
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 </dev/null >/dev/null
	SPOOL_TEST_NOW=$T spool-claim --owner w1 --lease 1s >/dev/null
	# A reclaim at expiry dies after writing its record: token 2 is burnt.
	rc=0
	SPOOL_TEST_NOW=$((T + 1000)) SPOOL_TEST_CRASH=claim-recorded \
	    spool-claim --owner w2 >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 137 ]
	# Nobody took the job over, so token 1 still holds it.
	run -0 env SPOOL_TEST_NOW=$((T + 1100)) spool-renew --lease 60s j1 1
	# The renew counts: a claim before the new expiry finds nothing.
	run -1 env SPOOL_TEST_NOW=$((T + 30000)) spool-claim --owner w3
	equals "$(tail -1 "$SPOOL_DIR/meta/j1" | grep -o ' tok=[0-9]*')" " tok=1"
	run -0 env SPOOL_TEST_NOW=$((T + 31000)) spool-finish j1 1 ok
	run -0 env SPOOL_TEST_NOW=$((T + 32000)) spool-finish j1 1 ok
	equals "$output" j1
	equals "$(audit_events | tail -1)" "ok j1 1 1 1 w1 - - -"
	# and the next cycle's first token is above the burnt one
	spool-enqueue --id j1 </dev/null >/dev/null
	equals "$(spool-claim | cut -f2)" 3
}

@test "a job that cannot be read is passed over: later jobs are still claimed" {
	[ "$(id -u)" -eq 0 ] || { echo "needs root to make a sidecar unreadable" >&2; false; }
	# nobody cannot reach into bats's private directories
	SHARED=$(mktemp -d /tmp/spool-robust.XXXXXX)
	chmod 755 "$SHARED"
	export SPOOL_DIR="$SHARED/spool"
	spool-init
	spool-enqueue --id a1 </dev/null >/dev/null
	spool-enqueue --id b2 </dev/null >/dev/null
	chown -R nobody "$SPOOL_DIR"
	# a1's sidecar belongs to root and nobody may read it
	chown root "$SPOOL_DIR/meta/a1"
	chmod 600 "$SPOOL_DIR/meta/a1"
	run -0 setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    env PATH="$PATH" SPOOL_DIR="$SPOOL_DIR" SPOOL_HOST=testhost \
	    spool-claim -n 2 --owner w1
	equals "$(cut -f1 <<<"$output")" b2
	# with nothing else to claim, the error is reported, not "nothing"
	run -111 --separate-stderr setpriv --reuid=nobody --regid=nogroup \
	    --clear-groups env PATH="$PATH" SPOOL_DIR="$SPOOL_DIR" \
	    SPOOL_HOST=testhost spool-claim --owner w1
	equals "$stderr" "spool-claim: Permission denied"
	equals "$(state_of a1)" new
}

@test "a finish of 1000 jobs from stdin fits 1024 descriptors" {
	local i
	mkdir "$BATS_TEST_TMPDIR/in"
	for i in $(seq 1 1000); do : >"$BATS_TEST_TMPDIR/in/f$i"; done
	(cd "$BATS_TEST_TMPDIR/in" && ulimit -n 1024 && spool-enqueue f*) >/dev/null
	for i in 1 2 3 4; do spool-claim -n 256; done |
	    awk -F'\t' '{ print $1, $2, "ok" }' >"$BATS_TEST_TMPDIR/fin"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/fin")" -eq 1000 ]
	run -0 bash -c 'ulimit -n 1024 && spool-finish - <"$1" | wc -l' sh \
	    "$BATS_TEST_TMPDIR/fin"
	[ "$output" -eq 1000 ]
	[ "$(ids_in done | wc -l)" -eq 1000 ]
}

@test "a long program name cannot overflow a message" {
	run -100 --separate-stderr bash -c 'exec -a "$(printf "x%.0s" $(seq 1 1100))" spool-claim -n 0'
	[ "${#stderr_lines[@]}" -eq 1 ]
}
