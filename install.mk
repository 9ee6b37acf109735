# Installing spool like any Unix tool, with the GNU and BSD variables:
#
#	make install [DESTDIR=/tmp/stage] [PREFIX=/usr/local] [BINDIR=...]
#	    [LIBDIR=...] [INCLUDEDIR=...] [MANDIR=...] [STRIP=]
#	make uninstall (with the same variables)
#
# What goes where (HACKING.md, "Installing"):
#	BINDIR		the commands, stripped (STRIP= keeps their symbols,
#			for a packager whose own tools strip them)
#	LIBDIR		libspool.a, libspool.so.VERSION and its links
#	PKGCONFIGDIR	spool.pc
#	INCLUDEDIR	spool.h
#	MANDIR		spool-*(1), libspool(3), spool(7)
#	LIBEXECDIR/spool	contrib/'s spool-run handlers
#	UNITDIR		the systemd units and timers; nothing enables them
#	DOCDIR/examples	the crontabs, the alert rules, the dashboard, the demo
#	BASHCOMPDIR	the bash completion, one name per command
# The units, crontabs and man pages name the commands and handlers by the
# paths of this install (they say /usr/local in the source).

# The soname's number: 0 while the interface may still change
# (libspool(3), "ABI").
SOMAJOR = 0
SONAME = libspool.so.$(SOMAJOR)
SHLIB = lib/libspool.so.$(SPOOL_VERSION)

LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LIBEXECDIR ?= $(PREFIX)/libexec
DATADIR ?= $(PREFIX)/share
DOCDIR ?= $(DATADIR)/doc/spool
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
UNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
INSTALL ?= install
# Not ?=: a cross toolchain's environment often sets STRIP to a program.
STRIP = -s

# What contrib/ holds: handlers, units, and the rest is examples (but the
# alert rules' unit tests, which only promtool reads).
HANDLERS = $(wildcard contrib/handler-*.sh)
UNITS = $(wildcard contrib/*.service contrib/*.timer)
EXAMPLES = $(filter-out $(HANDLERS) $(UNITS) %.test.yml,$(wildcard contrib/*))
MAN1 = $(wildcard man/*.1)
MAN3 = $(wildcard man/*.3)
MAN7 = $(wildcard man/*.7)
COMPLETION = completion/spool.bash

# The library again, compiled as position-independent code, for the
# shared object: the commands link the archive, built from lib/*.o.
PICOBJ = $(patsubst lib/%.c,lib/pic/%.o,$(wildcard lib/*.c))

lib/pic/%.o: lib/%.c lib/spool.h lib/internal.h
	@mkdir -p lib/pic
	$(CC) $(CFLAGS) -fPIC $(WARN) $(CPPFLAGS) -c -o $@ $<

# lib/libspool.map exports spool_* alone (the archive reads the same
# list: see Makefile); -z defs refuses a library that would leave a name
# for its user to provide.
$(SHLIB): $(PICOBJ) lib/libspool.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) \
	    -Wl,--version-script=lib/libspool.map -Wl,-z,defs \
	    -o $@ $(PICOBJ) $(LDLIBS)

lib/spool.pc: lib/spool.pc.in VERSION
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(SPOOL_VERSION)|' lib/spool.pc.in >$@

# The pc file holds the paths: make it again for every install.
.PHONY: lib/spool.pc

libs: lib/libspool.a $(SHLIB) lib/spool.pc

# Paths in the units, crontabs and man pages, from /usr/local to this
# install's.
SUBST = sed -e 's|/usr/local/bin|$(BINDIR)|g' \
    -e 's|/usr/local/libexec/spool/|$(LIBEXECDIR)/spool/|g'

install: all libs
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
	    $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(LIBEXECDIR)/spool \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/examples \
	    $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 755 $(STRIP) $(BINS) $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 644 lib/libspool.a $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 644 $(STRIP) $(SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libspool.so.$(SPOOL_VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libspool.so
	$(INSTALL) -m 644 lib/spool.pc $(DESTDIR)$(PKGCONFIGDIR)/
	$(INSTALL) -m 644 lib/spool.h $(DESTDIR)$(INCLUDEDIR)/
	for f in $(MAN1); do t=$(DESTDIR)$(MANDIR)/man1/$${f#man/}; \
	    $(SUBST) $$f >$$t && chmod 644 $$t || exit; done
	# spool-resume has no page of its own: spool-pause.1 documents both.
	ln -sf spool-pause.1 $(DESTDIR)$(MANDIR)/man1/spool-resume.1
	$(INSTALL) -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/
	# 0.1.0 installed the library's page as spool.3, which man spool
	# would open before spool(7).
	rm -f $(DESTDIR)$(MANDIR)/man3/spool.3
	$(INSTALL) -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/
	$(INSTALL) -m 755 $(HANDLERS) $(DESTDIR)$(LIBEXECDIR)/spool/
	for f in $(UNITS) contrib/crontab contrib/spool-run.cron; do \
	    case $$f in *.service|*.timer) d=$(UNITDIR) ;; *) d=$(DOCDIR)/examples ;; esac; \
	    t=$(DESTDIR)$$d/$${f#contrib/}; $(SUBST) $$f >$$t && chmod 644 $$t || exit; \
	done
	$(INSTALL) -m 644 $(filter-out contrib/crontab contrib/spool-run.cron,$(EXAMPLES)) \
	    $(DESTDIR)$(DOCDIR)/examples/
	$(INSTALL) -m 644 $(COMPLETION) $(DESTDIR)$(BASHCOMPDIR)/spool
	# bash-completion loads a command's completion from a file of its name.
	for c in $(CMDS); do ln -sf spool $(DESTDIR)$(BASHCOMPDIR)/$$c || exit; done
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
	    echo ldconfig; ldconfig; fi

# Every file that install makes, and the directories of spool's own; the
# shared ones (bin/, man1/ ...) stay, as they may hold other files.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(CMDS))
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,libspool.a libspool.so \
	    $(SONAME) libspool.so.$(SPOOL_VERSION))
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/spool.pc $(DESTDIR)$(INCLUDEDIR)/spool.h
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1)) spool-resume.1)
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(MAN3)) spool.3)
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(MAN7)))
	rm -f $(addprefix $(DESTDIR)$(LIBEXECDIR)/spool/,$(notdir $(HANDLERS)))
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNITS)))
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES)))
	rm -f $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,spool $(CMDS))
	for d in $(LIBEXECDIR)/spool $(DOCDIR)/examples $(DOCDIR); do \
	    [ ! -d $(DESTDIR)$$d ] || rmdir $(DESTDIR)$$d || exit; done
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
	    echo ldconfig; ldconfig; fi

install-clean:
	rm -rf lib/pic lib/libspool.so.* lib/spool.pc

clean: install-clean

.PHONY: libs install uninstall install-clean

# The Debian packages, built from a copy of the tree, checked by lintian,
# installed, run and purged (tests/pkg/95-debian.bats; as root, a few
# minutes).
check-deb:
	@tests/deps.sh deb
	@TESTS=tests/pkg/95-debian.bats tests/run

.PHONY: check-deb
