#!/usr/bin/env bats
# The files of lib/ call only the files listed before them in internal.h
# (make check-layers, tests/layers), and the check sees a call that does
# not.

load helpers

# A header whose opening comment lists FILES in order, and an object of
# each: a.o calls b(), defined in b.o.
two_files() {
	cd "$BATS_TEST_TMPDIR" || return
	printf '/*\n * %s\n */\n' "$*" >order.h
	echo 'int b(void); int a(void); int a(void) { return b(); }' >a.c
	echo 'int b(void); int b(void) { return 1; }' >b.c
	cc -c a.c b.c
}

@test "every call between the files of lib/ points up internal.h's order" {
	local objs=("$BATS_TEST_DIRNAME"/../lib/*.c)
	run -0 "$BATS_TEST_DIRNAME/layers" "$BATS_TEST_DIRNAME/../lib/internal.h" \
	    "${objs[@]/%.c/.o}"
	equals "$output" ""
}

@test "the check finds a call down the order, and a file the order lacks" {
	two_files b.c a.c
	run -0 "$BATS_TEST_DIRNAME/layers" order.h a.o b.o
	two_files a.c b.c
	run -1 "$BATS_TEST_DIRNAME/layers" order.h a.o b.o
	equals "$output" "lib/a.c calls b of lib/b.c, which comes after it"
	two_files b.c
	run -1 "$BATS_TEST_DIRNAME/layers" order.h a.o b.o
	equals "$output" "lib/a.c is not in the order of internal.h"
	run -100 "$BATS_TEST_DIRNAME/layers" order.h
	equals "$output" "usage: tests/layers HEADER OBJECT..."
}

@test "tests/cites resolves every citation, and fails on one that does not" {
	local t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/man" "$t/lib"
	printf '%s\n' '# Guide' '## Crashes' '### claim (new -> leased)' >"$t/guide.md"
	printf '%s\n' '.Sh FILES' '.Ss Several hosts' >"$t/man/spool.7"
	printf '%s\n' '/* guide.md, "Crashes"; guide.md, "claim"; lib/a.c;' \
	    ' * (see spool(7), Several hosts); spool(7), FILES; a.c;' \
	    ' * bash(1), "set -e"; lib/*.c */' >"$t/lib/a.c"
	run -0 "$BATS_TEST_DIRNAME/cites" "$t"
	equals "$output" ""
	printf '%s\n' '/* guide.md, "Crash"; gone.md, "Crashes"; lib/b.c;' \
	    ' * (see spool(7), Several Hosts); spool(7), FILE LIST; b.c */' \
	    >"$t/lib/a.c"
	run -1 "$BATS_TEST_DIRNAME/cites" "$t"
	equals "$output" 'lib/a.c:1: guide.md, "Crash": no such section
lib/a.c:1: gone.md, "Crashes": no such file
lib/a.c:1: lib/b.c: no such file
lib/a.c:2: spool(7), "Several Hosts": no such section
lib/a.c:2: spool(7), "FILE LIST": no such section
lib/a.c:2: b.c: no such file in lib/ or bin/'
	run -100 "$BATS_TEST_DIRNAME/cites"
	equals "$output" "usage: tests/cites TOP"
}
