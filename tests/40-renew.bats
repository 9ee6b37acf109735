#!/usr/bin/env bats
# spool-renew: the holder of the current token moves its lease's expiry
# later (never earlier); anyone else is refused and changes nothing.

load helpers

T=1000000

@test "renew extends the lease: no reclaim at the old expiry, one at the new" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 1s >/dev/null
	run -0 --separate-stderr at_ms $((T + 500)) spool-renew --lease 1s j1 1
	equals "$output" ""
	equals "$stderr" ""
	diff -u - <(last_rec j1 t ev at tok att own until) <<EOT
t=$((T + 500))
ev=renew
at=leased
tok=1
att=1
own=w1
until=$((T + 1500))
EOT
	equals "$(audit_events | tail -n 1)" "renew j1 1 1 1 w1 - - -"

	run -1 --separate-stderr at_ms $((T + 1000)) spool-claim --owner w2
	equals "$output" ""
	equals "$stderr" ""
	run -1 at_ms $((T + 1499)) spool-claim --owner w2
	equals "$output" ""
	equals "$(cd "$SPOOL_DIR" && find leased -type f)" "leased/j1,1"
	run -0 at_ms $((T + 1500)) spool-claim --owner w2
	diff -u <(lease_line j1 2 2) <(printf '%s\n' "$output")
	equals "$(audit_events | tail -n 1)" "reclaim j1 2 2 1 w2 - lease-expired 1"
}

@test "renew without --lease extends by the spool's lease length" {
	cat >"$SPOOL_DIR/config" <<EOT
lease=2s
EOT
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	equals "$(last_rec j1 until)" "until=$((T + 2000))"
	run -0 --separate-stderr at_ms $((T + 1000)) spool-renew j1 1
	equals "$output" ""
	equals "$stderr" ""
	equals "$(last_rec j1 until)" "until=$((T + 3000))"
	run -1 at_ms $((T + 2999)) spool-claim --owner w2
	run -0 at_ms $((T + 3000)) spool-claim --owner w2
	diff -u <(lease_line j1 2 2) <(printf '%s\n' "$output")
}

@test "renew never shortens a lease" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 10s >/dev/null
	run -0 --separate-stderr at_ms $((T + 1)) spool-renew --lease 1ms j1 1
	equals "$output" ""
	equals "$stderr" ""
	equals "$(last_rec j1 until)" "until=$((T + 10000))"
	run -1 at_ms $((T + 2)) spool-claim --owner w2
	run -1 at_ms $((T + 9999)) spool-claim --owner w2
	equals "$output" ""
	run -0 at_ms $((T + 10000)) spool-claim --owner w2
	diff -u <(lease_line j1 2 2) <(printf '%s\n' "$output")
}

@test "renew with a stale token is refused and changes nothing" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	at_ms $((T + 300)) spool-claim --owner w2 --lease 300ms >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 400)) spool-renew --lease 1h j1 1
	equals "$output" ""
	equals "$stderr" "spool-renew: j1: stale token: the current token is 2 and the job is in leased/"
	equals "$(snapshot)" "$before"
	# The new holder's lease was not extended by it.
	run -0 at_ms $((T + 600)) spool-claim --owner w3
	diff -u <(lease_line j1 3 3) <(printf '%s\n' "$output")
}

@test "renew of a job that is not leased is refused: not leased" {
	at_ms $T spool-enqueue --id done1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish done1 1 ok >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 1)) spool-renew done1 1
	equals "$output" ""
	equals "$stderr" "spool-renew: done1: not leased: the job is in done/"
	equals "$(snapshot)" "$before"

	at_ms $T spool-enqueue --id new1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish --delay 1m new1 2 retry >/dev/null
	run -1 --separate-stderr at_ms $((T + 1)) spool-renew new1 2
	equals "$output" ""
	equals "$stderr" "spool-renew: new1: not leased: the job is in new/"

	at_ms $T spool-enqueue --id dead1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	at_ms $T spool-finish dead1 3 permanent >/dev/null
	run -1 --separate-stderr at_ms $((T + 1)) spool-renew dead1 3
	equals "$output" ""
	equals "$stderr" "spool-renew: dead1: not leased: the job is in dead/"
	equals "$(state_of done1)" done
	equals "$(state_of new1)" new
	equals "$(state_of dead1)" dead
}

@test "renew of an unknown job is refused: no such job" {
	before=$(snapshot)
	run -1 --separate-stderr spool-renew nope 1
	equals "$output" ""
	equals "$stderr" "spool-renew: nope: no such job"
	equals "$(snapshot)" "$before"
}

@test "a renew after the expiry is accepted while no claim has taken the job" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 --lease 300ms >/dev/null
	run -0 --separate-stderr at_ms $((T + 500)) spool-renew --lease 1s j1 1
	equals "$output" ""
	equals "$stderr" ""
	equals "$(last_rec j1 until)" "until=$((T + 1500))"
	run -1 at_ms $((T + 1000)) spool-claim --owner w2
	equals "$(cd "$SPOOL_DIR" && find leased -type f)" "leased/j1,1"
	run -0 at_ms $((T + 1001)) spool-finish j1 1 ok
	equals "$(state_of j1)" done
}

@test "renew refuses bad arguments with status 100" {
	at_ms $T spool-enqueue --id j1 </dev/null >/dev/null
	at_ms $T spool-claim --owner w1 >/dev/null
	before=$(snapshot)
	run -100 --separate-stderr spool-renew j1 0
	equals "$output" ""
	equals "$stderr" "spool-renew: j1: bad token '0' (a number from 1 to 10^18-1)"
	run -100 --separate-stderr spool-renew --lease 0 j1 1
	equals "$output" ""
	equals "$stderr" "spool-renew: --lease: bad duration '0' (use e.g. 500ms, 30s, 5m, 2h, 7d)"
	run -100 --separate-stderr spool-renew j1
	equals "$output" ""
	equals "$stderr" "usage: spool-renew [-d DIR] [--lease DUR] ID TOKEN"
	equals "$(snapshot)" "$before"
}
