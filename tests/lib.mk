# Programs the command tests run against the library itself, where no
# command does what a test needs (tests/lib/*.c; each says what it is for).

LIB_TESTS = tests/lib/handles tests/lib/defaults tests/lib/finishclaim

all: $(LIB_TESTS)

$(LIB_TESTS): %: %.c lib/libspool.a lib/spool.h
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $(LDFLAGS) -o $@ $< \
	    lib/libspool.a $(LDLIBS)

clean: lib-tests-clean

lib-tests-clean:
	rm -f $(LIB_TESTS)

.PHONY: lib-tests-clean
