# The fault-injection shim (tests/shim/faultshim.c): an LD_PRELOAD library
# for tests/74-faults.bats and tests/76-syscrash.bats.  It is built with its
# own flags, never with the sanitizers of SAN=1: it is preloaded into
# sanitized binaries and the tests tell ASan so (verify_asan_link_order=0).
#
# make torture runs the full sweeps: every call number of every family
# with every errno, and the k-th-call crash walk, where make check samples.
# Each test tool adds its own part to torture with a double-colon rule.

SHIM = tests/shim/faultshim.so
SHIM_CFLAGS = -O2 -g -fPIC -Wall -Wextra $(WERROR_FLAG)

all: $(SHIM)

$(SHIM): tests/shim/faultshim.c
	$(CC) $(SHIM_CFLAGS) -shared -o $@ tests/shim/faultshim.c -ldl

torture:: test-build
	TESTS="tests/74-faults.bats tests/76-syscrash.bats" FULL=1 tests/run

clean: shim-clean

shim-clean:
	rm -f $(SHIM)

.PHONY: torture shim-clean
