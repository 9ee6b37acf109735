# spool: a Unix filesystem job spool.  GNU make (wildcard, patsubst, if,
# include); see HACKING.md, "Targets".
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
CC ?= cc
OBJCOPY ?= objcopy
CFLAGS ?= -O2 -g
# Warnings are errors only when asked (make WERROR=1, as .ci/run does): a
# newer compiler's new warning must not break a user's build.
WERROR_FLAG = $(if $(filter 1,$(WERROR)),-Werror)
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
    $(WERROR_FLAG)
CPPFLAGS += -Ilib
LDLIBS = -luuid -lxxhash -luring
# The commands take those three from their static archives and libc as a
# shared library: a command then starts without loading three libraries
# (bench/README.md, row 2), and LD_PRELOAD tools and the name service
# still work.  make STATIC_DEPS=0 links them shared.
CMD_LIBS = $(if $(filter 0,$(STATIC_DEPS)),$(LDLIBS),\
    -Wl,-Bstatic $(LDLIBS) -Wl,-Bdynamic)
# One VERSION file: spool.pc, debian/changelog and every command's
# --version (tests/92-install.bats checks that they agree).
SPOOL_VERSION := $(shell cat VERSION)
ifeq ($(SAN),1)
CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

LIBOBJ = $(patsubst %.c,%.o,$(wildcard lib/*.c))
CMDS = $(patsubst bin/%.c,%,$(wildcard bin/spool-*.c))
BINS = $(addprefix bin/,$(CMDS))
# What the commands share (bin/common.h), as an archive: each command
# links only the parts it calls.
CMDOBJ = bin/cmd.o bin/json.o bin/keeper.o bin/opmain.o bin/picks.o \
    bin/progress.o bin/relay.o bin/request.o bin/stat.o bin/view.o \
    bin/watch.o
# The test build: the same objects but lib/hooks.c compiled with
# -DSPOOL_TESTING, whose SPOOL_TEST_* variables crash, pause or pin a
# command (tests/README.md).  The suite runs its commands, tests/bin/;
# make install and the packages ship bin/ and lib/libspool.a, which have
# no hooks.
TESTLIBOBJ = $(filter-out lib/hooks.o,$(LIBOBJ)) lib/hooks-test.o
TBINS = $(addprefix tests/bin/,$(CMDS))

all: $(BINS)

# An archive holds one object linked from the library's objects, in which
# every global name but the exports of lib/libspool.map (one list, which
# the shared library uses too) is made local: the functions of internal.h
# still call each other across files, but a program sees only the API, and
# its own names (failed, now_ms ...) cannot clash with the library's.  A
# section per function lets a command's link drop what it does not call.
EXPORTS = $$(sed -n '/global:/,/local:/s/^[[:space:]]*\([a-z_*]*\);$$/--keep-global-symbol=\1/p' lib/libspool.map)
$(LIBOBJ) lib/hooks-test.o: override CFLAGS += -ffunction-sections -fdata-sections
$(BINS) $(TBINS): override LDFLAGS += -Wl,--gc-sections
lib/libspool.a tests/libspool-test.a: lib/libspool.map
	$(LD) -r -o $(@:.a=.o) $(filter %.o,$^)
	$(OBJCOPY) --wildcard $(EXPORTS) $(@:.a=.o)
	rm -f $@
	$(AR) rcs $@ $(@:.a=.o)
lib/libspool.a: $(LIBOBJ)
tests/libspool-test.a: $(TESTLIBOBJ)

lib/hooks-test.o: lib/hooks.c
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -DSPOOL_TESTING -c -o $@ lib/hooks.c

$(LIBOBJ) lib/hooks-test.o: lib/spool.h lib/internal.h
lib/fsck.o lib/fsck_audit.o lib/fsck_repair.o: lib/fsck.h
$(CMDOBJ) $(BINS:=.o): bin/common.h lib/spool.h
bin/stat.o bin/spool-stat.o: bin/stat.h
bin/request.o bin/spool-batch.o: bin/request.h

# What --version prints: every build of bin/cmd.c needs it.
VERSION_DEF = -DSPOOL_VERSION='"$(SPOOL_VERSION)"'
bin/cmd.o: VERSION
bin/cmd.o: CPPFLAGS += $(VERSION_DEF)

bin/common.a: $(CMDOBJ)
	$(AR) rcs $@ $(CMDOBJ)

.c.o:
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -c -o $@ $<

$(BINS): %: %.o bin/common.a lib/libspool.a
	$(CC) $(LDFLAGS) -o $@ $@.o bin/common.a lib/libspool.a $(CMD_LIBS)

$(TBINS): tests/bin/%: bin/%.o bin/common.a tests/libspool-test.a
	@mkdir -p tests/bin
	$(CC) $(LDFLAGS) -o $@ bin/$*.o bin/common.a tests/libspool-test.a \
	    $(CMD_LIBS)

test-build: all $(TBINS)

# Every call between the files of lib/ points up the order of the files
# that internal.h gives (tests/layers).
check-layers: $(LIBOBJ)
	@tests/layers lib/internal.h $(LIBOBJ) && echo "1 passed, 0 failed"

# Installs what is missing (as root) or says what to install: everything
# the tests use, or (deps-build) a compiler, libuuid, libxxhash and
# liburing alone.
deps:
	@tests/deps.sh

deps-build:
	@tests/deps.sh build

# The shim too: test files that run at once would each build it.  One
# compiler a core: the build is a tenth of the suite's time when serial.
check: deps
	@$(MAKE) --no-print-directory -j$$(nproc) test-build $(SHIM) python
	@PYTHON=$(PYTHON) tests/run

demo: deps-build
	@$(MAKE) --no-print-directory all
	@contrib/demo.sh

clean: $(EXTRA_CLEAN)
	rm -f lib/*.o lib/libspool.a bin/*.o bin/common.a $(BINS) \
	    tests/libspool-test.[ao]
	rm -rf tests/bin

.PHONY: all test-build check-layers deps deps-build check demo clean

# make install, make uninstall, the shared library: install.mk.
include install.mk

# Test tools (fault-injection shim, fuzz targets, stress) add their rules
# here, each in a file of its own.
-include tests/*.mk
-include bench/*.mk
-include python/*.mk
