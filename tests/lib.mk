# Programs the command tests run against the library itself, where no
# command does what a test needs (tests/lib/*.c; each says what it is for).

LIB_TESTS = tests/lib/defaults tests/lib/errors
# With the test build's hooks (tests/README.md): bench/fsyncs.sh counts
# finishclaim's syncs with the clock pinned, and tests/88-multihost.bats
# bounds handles' wait for a lock with SPOOL_TEST_LOCK_WAIT, not 30 s.
HOOKED_TESTS = tests/lib/finishclaim tests/lib/handles

all: $(LIB_TESTS) $(HOOKED_TESTS)

$(LIB_TESTS): %: %.c lib/libspool.a lib/spool.h tests/lib.mk
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $(LDFLAGS) -o $@ $< \
	    lib/libspool.a $(LDLIBS)

$(HOOKED_TESTS): %: %.c tests/libspool-test.a lib/spool.h tests/lib.mk
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $(LDFLAGS) -o $@ $< \
	    tests/libspool-test.a $(LDLIBS)

clean: lib-tests-clean

lib-tests-clean:
	rm -f $(LIB_TESTS) $(HOOKED_TESTS)

.PHONY: lib-tests-clean
