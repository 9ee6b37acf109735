# spool: a Unix filesystem job spool.  GNU make (wildcard, patsubst, if,
# include); see README.md.
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
CMDOBJ = bin/cmd.o bin/json.o bin/opmain.o bin/picks.o bin/progress.o \
    bin/view.o

all: $(BINS)

# The archive holds one object linked from lib/*.o in which every global
# name but spool_* is made local: the functions of internal.h still call
# each other across files, but a program sees only the API, and its own
# names (failed, now_ms ...) cannot clash with the library's.  A section
# per function lets a command's link drop what it does not call.
$(LIBOBJ): override CFLAGS += -ffunction-sections -fdata-sections
$(BINS): override LDFLAGS += -Wl,--gc-sections
lib/libspool.a: $(LIBOBJ)
	$(LD) -r -o lib/libspool.o $(LIBOBJ)
	$(OBJCOPY) --wildcard --keep-global-symbol='spool_*' lib/libspool.o
	rm -f $@
	$(AR) rcs $@ lib/libspool.o

$(LIBOBJ): lib/spool.h lib/internal.h
$(CMDOBJ) $(BINS:=.o): bin/common.h lib/spool.h

# What --version prints: every build of bin/cmd.c needs it.
VERSION_DEF = -DSPOOL_VERSION='"$(SPOOL_VERSION)"'
bin/cmd.o: VERSION
bin/cmd.o: CPPFLAGS += $(VERSION_DEF)

bin/common.a: $(CMDOBJ)
	$(AR) rcs $@ $(CMDOBJ)

.c.o:
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -c -o $@ $<

$(BINS): %: %.o bin/common.a lib/libspool.a
	$(CC) $(LDFLAGS) -o $@ $@.o bin/common.a lib/libspool.a $(LDLIBS)

# Installs what is missing (as root) or says what to install: everything
# the tests use, or (deps-build) a compiler, libuuid, libxxhash and
# liburing alone.
deps:
	@tests/deps.sh

deps-build:
	@tests/deps.sh build

check: deps
	@$(MAKE) --no-print-directory all
	@tests/run

demo: deps-build
	@$(MAKE) --no-print-directory all
	@contrib/demo.sh

clean: $(EXTRA_CLEAN)
	rm -f lib/*.o lib/libspool.a bin/*.o bin/common.a $(BINS)

.PHONY: all deps deps-build check demo clean

# make install, make uninstall, the shared library: install.mk.
include install.mk

# Test tools (fault-injection shim, fuzz targets, stress) add their rules
# here, each in a file of its own.
-include tests/*.mk
-include bench/*.mk
