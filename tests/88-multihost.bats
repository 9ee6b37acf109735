#!/usr/bin/env bats
# Multi-host mode on one machine: the config keys, the skew allowance
# before a takeover, host IDs registered in hosts/ and collisions refused,
# the file-system check, and the clock shown and warned about.  The same
# across real hosts on GlusterFS: make check-multihost (tests/multihost).

load helpers

T=1796000000000

multi() {
	printf 'multi-host=yes\nskew=%s\n' "$1" >>"$SPOOL_DIR/config"
}

@test "multi-host=yes needs a skew above 0; a bad value is refused" {
	before=$(snapshot)
	echo 'multi-host=yes' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-ls
	[ "$stderr" = "spool-ls: $SPOOL_DIR/config:10: malformed (see spool(7), FILES)" ]
	echo 'skew=0' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-ls
	[ "$stderr" = "spool-ls: $SPOOL_DIR/config:10: malformed (see spool(7), FILES)" ]
	sed -i '/^multi-host\|^skew/d' "$SPOOL_DIR/config"
	echo 'multi-host=maybe' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-ls
	[ "$stderr" = "spool-ls: $SPOOL_DIR/config:10: malformed (see spool(7), FILES)" ]
	sed -i '/^multi-host/d' "$SPOOL_DIR/config"
	[ "$(snapshot)" = "$before" ]
	[ ! -e "$SPOOL_DIR/hosts" ]
}

@test "a lease is taken over only skew after it ends, by the taker's clock" {
	multi 5s
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null
	run -0 env SPOOL_TEST_NOW=$T spool-claim --owner w1 --lease 10s
	[ "$(cut -f1,2 <<<"$output")" = "$(printf 'j1\t1')" ]
	# Ended, but not skew ago: not taken, and not due for spool-run.
	run -1 env SPOOL_TEST_NOW=$((T + 14999)) spool-claim --owner w2
	[ "$output" = "" ]
	[ "$(state_of j1)" = leased ]
	run -0 env SPOOL_TEST_NOW=$((T + 15000)) spool-claim --owner w2
	[ "$(cut -f1,2,3 <<<"$output")" = "$(printf 'j1\t2\t2')" ]
	grep -q ' ev=claim .* until=1796000045000 prev=1 cls=lease-expired' \
	    "$SPOOL_DIR/meta/j1"
	[ "$(audit_events | tail -n 1)" = "reclaim j1 2 2 1 w2 - lease-expired 1" ]
	fsck_clean
}

@test "without multi-host, a lease is taken over as soon as it ends" {
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null
	SPOOL_TEST_NOW=$T spool-claim --owner w1 --lease 10s >/dev/null
	run -0 env SPOOL_TEST_NOW=$((T + 10000)) spool-claim --owner w2
	[ "$(cut -f1,2 <<<"$output")" = "$(printf 'j1\t2')" ]
	[ ! -e "$SPOOL_DIR/hosts" ]
}

@test "each host registers its ID with its machine; fsck knows hosts/" {
	multi 2s
	run -0 spool-ls
	SPOOL_HOST=other run -0 spool-ls
	[ "$(ls "$SPOOL_DIR/hosts")" = "$(printf 'other\ntesthost')" ]
	mine=$(cat "$SPOOL_DIR/hosts/testhost")
	[[ $mine =~ ^machine=[0-9a-f-]+$'\n'?$ ]] || [[ $mine =~ ^machine=hostid-[0-9a-f]+$ ]]
	[ "$(cat "$SPOOL_DIR/hosts/other")" = "$mine" ]
	fsck_clean
}

@test "an ID that another machine used lately is refused; one idle 10 minutes passes" {
	multi 2s
	mkdir "$SPOOL_DIR/hosts"
	echo 'machine=00000000000000000000000000000bad' >"$SPOOL_DIR/hosts/testhost"
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null 2>&1 || true
	before=$(snapshot)
	run -100 --separate-stderr spool-enqueue --id j2 <<<"job"
	[ "$output" = "" ]
	[ "$stderr" = "spool-enqueue: $SPOOL_DIR: host ID 'testhost' is in use by another machine (see hosts/ in spool-layout.md): set SPOOL_HOST" ]
	run -100 --separate-stderr spool-claim
	[ "$stderr" = "spool-claim: $SPOOL_DIR: host ID 'testhost' is in use by another machine (see hosts/ in spool-layout.md): set SPOOL_HOST" ]
	[ "$(snapshot)" = "$before" ]
	[ ! -e "$SPOOL_DIR/meta/j2" ]
	# Another ID works from this machine at once.
	SPOOL_HOST=mine run -0 spool-enqueue --id j2 <<<"job"
	# Idle for ten minutes, the ID passes to this machine.
	touch -d '11 minutes ago' "$SPOOL_DIR/hosts/testhost"
	run -0 spool-enqueue --id j3 <<<"job"
	[ "$(cat "$SPOOL_DIR/hosts/testhost")" = "$(cat "$SPOOL_DIR/hosts/mine")" ]
	[ "$(ids_in new)" = "$(printf 'j2\nj3')" ]
}

@test "spool-stat shows the mode and the clock; --json and --prom too" {
	multi 5s
	run -0 env SPOOL_TEST_CLOCK=synced spool-stat
	[ "${lines[-2]}" = "multi_host                      testhost, skew 5s" ]
	[ "${lines[-1]}" = "clock                           synchronised, max error 16ms" ]
	run -0 env SPOOL_TEST_CLOCK=unsynced spool-stat
	[ "${lines[-1]}" = "clock                           NOT synchronised: leases need NTP or chrony" ]
	run -0 env SPOOL_TEST_CLOCK=unsynced spool-stat --json
	[ "$(jq -c .multi_host <<<"$output")" = '{"host":"testhost","skew_ms":5000,"clock_synchronised":false,"clock_maxerror_ms":16}' ]
	run -0 env SPOOL_TEST_CLOCK=synced spool-stat --prom
	grep -qx 'spool_clock_synchronised{spool="'"$(realpath "$SPOOL_DIR")"'"} 1' <<<"$output"
	promtool check metrics <<<"$output"
}

@test "without multi-host, spool-stat says nothing of hosts or clocks" {
	run -0 env SPOOL_TEST_CLOCK=unsynced spool-stat
	[[ ${lines[-1]} = last_action* ]]
	run -0 spool-stat --json
	[ "$(jq -c 'has("multi_host")' <<<"$output")" = false ]
	run -0 spool-stat --prom
	! grep -q clock <<<"$output"
}

@test "spool-run warns when the clock is not synchronised on a multi-host spool" {
	multi 5s
	spool-enqueue --id j1 <<<"job" >/dev/null
	run -0 --separate-stderr env SPOOL_TEST_CLOCK=unsynced spool-run --once -- cat
	[ "$output" = "job" ]
	[ "$stderr" = "spool-run: warning: the system clock is not synchronised (adjtimex); on this multi-host spool leases are judged by every host's clock, to within skew=5000ms: run NTP or chrony" ]
	spool-enqueue --id j2 <<<"job" >/dev/null
	run -0 --separate-stderr env SPOOL_TEST_CLOCK=synced spool-run --once -- cat
	[ "$stderr" = "" ]
	[ "$(ids_in done)" = "$(printf 'j1\nj2')" ]
}
