# The power-cut explorer (tests/powercut/explore): its audit-line reader,
# make check-powercut, the full enumeration (spool-layout.md, Crashes),
# and the same checks of power cuts on real kernels.

POWERCUT_AUDIT = tests/powercut/audit-lines

all: $(POWERCUT_AUDIT)

$(POWERCUT_AUDIT): tests/powercut/audit-lines.c lib/libspool.a lib/spool.h
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $(LDFLAGS) -o $@ \
	    tests/powercut/audit-lines.c lib/libspool.a $(LDLIBS)

check-powercut: test-build
	@POWERCUT_FULL=1 TESTS=tests/58-powercut.bats tests/run

clean: powercut-clean

powercut-clean:
	rm -f $(POWERCUT_AUDIT)

.PHONY: check-powercut powercut-clean

# make check-powercut-real: every cut point of every command on real
# kernels (tests/powercut/realfs: loop-mounted ext4 and xfs images, as
# root); check-powercut-real-sampled: two kills a command and its end.
check-powercut-real: test-build tests/shim/faultshim.so
	@POWERCUT_REAL_FULL=1 TESTS=tests/powercut/realfs.bats tests/run

check-powercut-real-sampled: test-build tests/shim/faultshim.so
	@TESTS=tests/powercut/realfs.bats tests/run

.PHONY: check-powercut-real check-powercut-real-sampled
