# Valgrind: tests/77-valgrind.bats runs every command under memcheck.
# valgrind cannot run what make check SAN=1 builds (ASan), so the commands
# are built a second time, plain (-O1 -g, no sanitizer), into a directory
# of their own:
#
#	make valgrind-build [VG_DIR=tests/valgrind/obj]
#		lib/*.c and bin/*.c into VG_DIR/obj/, the commands into VG_DIR/.
#		tests/77-valgrind.bats builds into its own $BATS_FILE_TMPDIR.
VG_DIR = tests/valgrind/obj
VG_CC = $(CC)
VG_CFLAGS = -O1 -g -fno-omit-frame-pointer -DSPOOL_TESTING
# The normal build is the one that keeps -Werror; warnings here are not fatal.
VG_WARN = $(filter-out -Werror,$(WARN))
VG_LIBOBJ = $(patsubst lib/%.c,$(VG_DIR)/obj/%.o,$(wildcard lib/*.c))
VG_BINS = $(addprefix $(VG_DIR)/,$(CMDS))
clean: valgrind-clean

$(VG_DIR)/obj/%.o: lib/%.c lib/spool.h lib/internal.h
	@mkdir -p $(@D)
	$(VG_CC) $(VG_CFLAGS) $(VG_WARN) -Ilib -c -o $@ $<

$(VG_DIR)/obj/bin-%.o: bin/%.c bin/common.h lib/spool.h
	@mkdir -p $(@D)
	$(VG_CC) $(VG_CFLAGS) $(VG_WARN) -Ilib -c -o $@ $<

VG_CMDOBJ = $(patsubst bin/%.o,$(VG_DIR)/obj/bin-%.o,$(CMDOBJ))
$(VG_DIR)/obj/bin-cmd.o: VERSION
$(VG_DIR)/obj/bin-cmd.o: VG_CFLAGS += $(VERSION_DEF)

$(VG_BINS): $(VG_DIR)/%: $(VG_DIR)/obj/bin-%.o $(VG_CMDOBJ) $(VG_LIBOBJ)
	$(VG_CC) -o $@ $^ $(CMD_LIBS)

valgrind-build: $(VG_BINS)

valgrind-clean:
	rm -rf tests/valgrind/obj
	rmdir tests/valgrind 2>/dev/null || true

.PHONY: valgrind-build valgrind-clean
