#!/usr/bin/env bats
# The stress driver, short: producers, workers and a killer for 20 seconds;
# tests/stress checks the invariants itself (see its opening comment).
# make torture runs it for five minutes.

load helpers

@test "stress: 2 producers, 8 workers, random SIGKILLs: no violation" {
	run -0 "$BATS_TEST_DIRNAME/stress" -t "${STRESS_SECONDS:-20}"
	echo "# ${lines[-1]}" >&3
	[[ ${lines[-1]} =~ jobs\ ([0-9]+),.*kills\ ([0-9]+),\ lock\ timeouts\ 0,\ violations\ 0$ ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	[ "${BASH_REMATCH[2]}" -gt 0 ]
}
