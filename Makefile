# spool: a Unix filesystem job spool.  GNU make (wildcard, patsubst, if,
# include); see README.md.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
CC ?= cc
CFLAGS ?= -O2 -g
# Warnings are errors only when asked (make WERROR=1, as .ci/run does): a
# newer compiler's new warning must not break a user's build.
WERROR_FLAG = $(if $(filter 1,$(WERROR)),-Werror)
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
    $(WERROR_FLAG)
CPPFLAGS += -Ilib
LDLIBS = -luuid
ifeq ($(SAN),1)
CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

LIBOBJ = $(patsubst %.c,%.o,$(wildcard lib/*.c))
CMDS = $(patsubst bin/%.c,%,$(wildcard bin/spool-*.c))
BINS = $(addprefix bin/,$(CMDS))
# What the commands share (bin/common.h), as an archive: each command
# links only the parts it calls.
CMDOBJ = bin/cmd.o bin/json.o bin/opmain.o bin/picks.o bin/view.o

all: $(BINS)

lib/libspool.a: $(LIBOBJ)
	$(AR) rcs $@ $(LIBOBJ)

$(LIBOBJ): lib/spool.h lib/internal.h
$(CMDOBJ) $(BINS:=.o): bin/common.h lib/spool.h

bin/common.a: $(CMDOBJ)
	$(AR) rcs $@ $(CMDOBJ)

.c.o:
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -c -o $@ $<

$(BINS): %: %.o bin/common.a lib/libspool.a
	$(CC) $(LDFLAGS) -o $@ $@.o bin/common.a lib/libspool.a $(LDLIBS)

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
	rm -f lib/*.o lib/libspool.a bin/*.o bin/common.a $(BINS)

.PHONY: all deps check demo install clean

# Test tools (fault-injection shim, fuzz targets, stress) add their rules
# here, each in a file of its own.
-include tests/*.mk
-include bench/*.mk
