# spool: a Unix filesystem job spool.  Plain make; see README.md.
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
CC ?= cc
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -Ilib
LDLIBS = -luuid
ifeq ($(SAN),1)
CFLAGS += -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

LIBSRC = $(wildcard lib/*.c)
LIBOBJ = $(LIBSRC:.c=.o)
CMDS = spool-init spool-enqueue spool-claim spool-renew spool-finish spool-redrive
BINS = $(addprefix bin/,$(CMDS))

all: $(BINS)

lib/libspool.a: $(LIBOBJ)
	$(AR) rcs $@ $(LIBOBJ)

$(LIBOBJ): lib/spool.h lib/internal.h
bin/common.o: bin/common.h lib/spool.h

%.o: %.c
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -c -o $@ $<

bin/spool-%: bin/spool-%.o bin/common.o lib/libspool.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

clean:
	rm -f lib/*.o lib/libspool.a bin/*.o $(BINS)

.PHONY: all clean
