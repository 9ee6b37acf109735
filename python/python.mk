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

$(PY_MOD): python/spool/_spool.c lib/spool.h lib/$(SONAME) python/python.mk
	$(CC) $(CFLAGS) -fPIC -shared $(WARN) -Wno-missing-field-initializers \
	    -I$(PY_INC) $(LDFLAGS) -o $@ python/spool/_spool.c \
	    -Llib -l:$(notdir $(SHLIB)) -Wl,-rpath,$(CURDIR)/lib

python: $(PY_MOD)

python-clean:
	rm -f python/spool/_spool*.so lib/$(SONAME)
	rm -rf python/spool/__pycache__ python/tests/__pycache__

clean: python-clean

.PHONY: python python-clean
