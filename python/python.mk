# The Python package (python/spool): its C part, _spool, built in the tree
# for one interpreter, PYTHON, Debian's unless told.  It links
# libspool.so.0: lib/libspool.a is not position-independent.  In the tree
# it finds the library in lib/ by its run path; make install builds it
# again for PREFIX.

PYTHON ?= /usr/bin/python3
PY_EXT := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INC := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_MOD = python/spool/_spool$(PY_EXT)

lib/$(SONAME): $(SHLIB)
	ln -sf $(notdir $(SHLIB)) $@

# The extension, linked to lib/'s shared library; the tree's copy also
# finds it there by its run path.
# spool-stat's counting and JSON (bin/stat.c) are compiled in, so that
# Spool.stat() says what spool-stat --json says, and the commands' words
# for durations (bin/view.c) and the watch a wait makes (bin/watch.c);
# only PyInit__spool is exported.
PY_SRC = python/spool/_spool.c bin/stat.c bin/json.c bin/view.c \
    bin/watch.c
PY_DEPS = $(PY_SRC) lib/spool.h bin/common.h bin/stat.h python/python.mk
PY_LINK = $(CC) $(CFLAGS) -fPIC -fvisibility=hidden -shared $(WARN) \
    -Wno-missing-field-initializers -Ilib -Ibin -I$(PY_INC) $(LDFLAGS) \
    -o $@ $(PY_SRC) -Llib -l:$(notdir $(SHLIB))

$(PY_MOD): $(PY_DEPS) lib/$(SONAME)
	$(PY_LINK) -Wl,-rpath,$(CURDIR)/lib

python: $(PY_MOD)

python-clean:
	rm -f python/spool/_spool*.so lib/$(SONAME)
	rm -rf python/build
	rm -rf python/spool/__pycache__ python/tests/__pycache__

clean: python-clean

.PHONY: python python-clean

# make install: the package where the system Python looks, for PREFIX:
# Debian's own directory under /usr, the versioned one under any other
# prefix (/usr/local/lib/python3.11/dist-packages).  The extension is
# built again, with no run path: the installed libspool.so.0 is found
# where the dynamic linker looks.
PY_VER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifeq ($(PREFIX),/usr)
PYDIR ?= $(PREFIX)/lib/python3/dist-packages
else
PYDIR ?= $(PREFIX)/lib/python$(PY_VER)/dist-packages
endif

python/build/_spool$(PY_EXT): $(PY_DEPS) $(SHLIB)
	@mkdir -p python/build
	$(PY_LINK)

# PYTHON= installs without it.
ifneq ($(PYTHON),)
install: install-python
uninstall: uninstall-python
endif

install-python: python/build/_spool$(PY_EXT)
	$(INSTALL) -d $(DESTDIR)$(PYDIR)/spool
	$(INSTALL) -m 644 python/spool/__init__.py python/spool/_work.py \
	    python/spool/_spool.pyi \
	    python/spool/py.typed \
	    $(DESTDIR)$(PYDIR)/spool/
	$(INSTALL) -m 644 $(STRIP) python/build/_spool$(PY_EXT) \
	    $(DESTDIR)$(PYDIR)/spool/

uninstall-python:
	rm -rf $(DESTDIR)$(PYDIR)/spool

.PHONY: install-python uninstall-python
