# make torture: the long runs.  Each test tool adds its own part with a
# double-colon rule.
torture:: test-build
	STRESS_SECONDS=300 bats tests/79-stress.bats
.PHONY: torture
