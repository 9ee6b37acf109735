# The power-cut explorer (tests/powercut/explore): its audit-line reader,
# and make check-powercut, the full enumeration (spool-layout.md, Crashes).

POWERCUT_AUDIT = tests/powercut/audit-lines

all: $(POWERCUT_AUDIT)

$(POWERCUT_AUDIT): tests/powercut/audit-lines.c lib/libspool.a lib/spool.h
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $(LDFLAGS) -o $@ \
	    tests/powercut/audit-lines.c lib/libspool.a $(LDLIBS)

check-powercut: all
	@POWERCUT_FULL=1 TESTS=tests/58-powercut.bats tests/run

clean: powercut-clean

powercut-clean:
	rm -f $(POWERCUT_AUDIT)

.PHONY: check-powercut powercut-clean
