# spool: a Unix filesystem job spool.  Plain make; see README.md.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
CC ?= cc
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

lib/libspool.a: $(LIBOBJ)
	$(AR) rcs $@ $(LIBOBJ)

$(LIBOBJ): lib/spool.h lib/internal.h
bin/common.o $(BINS:=.o): bin/common.h lib/spool.h

.c.o:
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -c -o $@ $<

$(BINS): %: %.o bin/common.o lib/libspool.a
	$(CC) $(LDFLAGS) -o $@ $@.o bin/common.o lib/libspool.a $(LDLIBS)

# Installs what is missing (as root) or says what to install.
deps:
	@tests/deps.sh

check: deps
	@$(MAKE) --no-print-directory all
	@tests/run

demo: deps
	@$(MAKE) --no-print-directory all
	@contrib/demo.sh

# spool-resume has no page of its own: spool-pause.1 documents both.
install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	cp $(BINS) $(DESTDIR)$(BINDIR)/
	cp man/*.1 $(DESTDIR)$(MANDIR)/man1/
	echo '.so man1/spool-pause.1' >$(DESTDIR)$(MANDIR)/man1/spool-resume.1
	cp man/*.7 $(DESTDIR)$(MANDIR)/man7/

clean: $(EXTRA_CLEAN)
	rm -f lib/*.o lib/libspool.a bin/*.o $(BINS)

.PHONY: all deps check demo install clean

# Test tools (fault-injection shim, fuzz targets, stress) add their rules
# here, each in a file of its own.
-include tests/*.mk
-include bench/*.mk
