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
