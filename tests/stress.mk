# make torture: the long runs.  Each test tool adds its own part with a
# double-colon rule.
torture:: test-build
	STRESS_SECONDS=300 bats tests/79-stress.bats
.PHONY: torture

# The claimers' race, ten times make check's jobs.
torture:: test-build
	RACE_JOBS=10000 tests/run tests/80-race.bats

# Runners under one limit, longer: 2,000 keyed jobs, eight runners, 40
# kills (tests/limitstress).
torture:: test-build
	@d=$$(mktemp -d) && tests/bin/spool-init -d "$$d/spool" && \
	    tests/limitstress -d "$$d/spool" -c "$$d/count" -r 8 -j 2000 \
	    -k 40 -t 900 && rm -rf "$$d"
