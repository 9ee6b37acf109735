# spool: a Unix filesystem job spool.  Plain make; see README.md.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
CC ?= cc
OBJCOPY ?= objcopy
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -Ilib
LDLIBS = -luuid
ifeq ($(SAN),1)
CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

LIBOBJ = $(patsubst %.c,%.o,$(wildcard lib/*.c))
CMDS = $(patsubst bin/%.c,%,$(wildcard bin/spool-*.c))
BINS = $(addprefix bin/,$(CMDS))

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
bin/common.o $(BINS:=.o): bin/common.h lib/spool.h

.c.o:
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -c -o $@ $<

$(BINS): %: %.o bin/common.o lib/libspool.a
	$(CC) $(LDFLAGS) -o $@ $@.o bin/common.o lib/libspool.a $(LDLIBS)

# Installs what is missing (as root) or says what to install: everything
# the tests use, or (deps-build) a compiler and libuuid alone.
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
	rm -f lib/*.o lib/libspool.a bin/*.o $(BINS)

.PHONY: all deps deps-build check demo clean

# make install, make uninstall, the shared library: install.mk.
include install.mk

# Test tools (fault-injection shim, fuzz targets, stress) add their rules
# here, each in a file of its own.
-include tests/*.mk
-include bench/*.mk
