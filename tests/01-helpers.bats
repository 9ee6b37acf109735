#!/usr/bin/env bats
# The suite's own helpers.

load helpers

@test "equals fails on differing texts, with a diff that names the line" {
	run -0 --separate-stderr equals $'a\nb\nc' $'a\nb\nc'
	equals "$output$stderr" ""
	run -1 --separate-stderr equals $'a\nB\nc' $'a\nb\nc'
	equals "$output" ""
	equals "$stderr" "--- expected
+++ actual
@@ -1,3 +1,3 @@
 a
-b
+B
 c"
	run -2 --separate-stderr equals a
	equals "$stderr" "usage: equals ACTUAL EXPECTED"
	# Under bats, a difference fails the test where it is found.
	printf '%s\n' "load $BATS_TEST_DIRNAME/helpers" 'setup() { :; }' \
	    '@test t {' "equals \$'a\\nB' \$'a\\nb'" 'echo not reached' '}' \
	    >"$BATS_TEST_TMPDIR/t.bats"
	run -1 env -i PATH="$PATH" "$BATS_ROOT/bin/bats" --tap "$BATS_TEST_TMPDIR/t.bats" 3>&-
	equals "${lines[1]}" "not ok 1 t"
	# The diff ends the report: the test stopped there.
	equals "$(sed -n '/^# --- expected$/,$p' <<<"$output")" "# --- expected
# +++ actual
# @@ -1,2 +1,2 @@
#  a
# -b
# +B"
}

@test "a failure names the test's line, in the body or in a helper it calls" {
	# The helpers' own setup(), which calls trace_test_only.
	printf '%s\n' "load $BATS_TEST_DIRNAME/helpers" 'fails() { false; }' \
	    '@test body {' '	true' '	false' '}' \
	    '@test helper {' '	true' '	fails' '	true' '}' \
	    >"$BATS_TEST_TMPDIR/t.bats"
	run -1 env -i PATH="$PATH" "$BATS_ROOT/bin/bats" --tap \
	    "$BATS_TEST_TMPDIR/t.bats" 3>&-
	equals "$output" "1..2
not ok 1 body
# (in test file $BATS_TEST_TMPDIR/t.bats, line 5)
#   \`false' failed
not ok 2 helper
# (in test file $BATS_TEST_TMPDIR/t.bats, line 9)
#   \`fails' failed"
}

@test "snapshot changes when a file is written, even with its own bytes, moved or made" {
	local before t
	before=$(snapshot)
	equals "$(snapshot)" "$before"
	# The same bytes, written again once the file system's clock has
	# ticked since config was made: ctime moves a tick at a time.
	t=$(stat -c %z "$SPOOL_DIR/config")
	until : >"$BATS_TEST_TMPDIR/tick" &&
	    [ "$(stat -c %z "$BATS_TEST_TMPDIR/tick")" != "$t" ]; do :; done
	cat "$SPOOL_DIR/config" >"$BATS_TEST_TMPDIR/c"
	cat "$BATS_TEST_TMPDIR/c" >"$SPOOL_DIR/config"
	[ "$(snapshot)" != "$before" ]
	before=$(snapshot)
	chmod 600 "$SPOOL_DIR/config"
	[ "$(snapshot)" != "$before" ]
	before=$(snapshot)
	: >"$SPOOL_DIR/tmp/x"
	[ "$(snapshot)" != "$before" ]
	before=$(snapshot)
	mv "$SPOOL_DIR/tmp/x" "$SPOOL_DIR/tmp/y"
	[ "$(snapshot)" != "$before" ]
}

@test "lock_waiter sees a wait for its file's lock, and not for another file's" {
	local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
	touch "$a" "$b"
	exec {la}<"$a" {lb}<"$b"
	flock -x "$la"
	flock -x "$lb"
	flock -x "$b" true {la}<&- {lb}<&- 3>&- &
	run -1 --separate-stderr lock_waiter "$a" 1
	equals "$stderr" "no process waits for the lock of $a"
	lock_waiter "$b"
	exec {la}<&- {lb}<&-
	wait $!
}

@test "tests/run runs each file once, a list on lines too, and refuses a bad TEST_JOBS" {
	local d=$BATS_TEST_TMPDIR/t
	mkdir "$d"
	for f in 57-hand 10-a; do
		printf '@test "%s" {\n\ttrue\n}\n' "$f" >"$d/$f.bats"
	done
	# 57-hand is on the runner's list of long files: it starts first.
	run -0 env -u LINT TESTS="$d/10-a.bats
$d/57-hand.bats" TEST_JOBS=2 "$BATS_TEST_DIRNAME/run"
	equals "$(grep -c '^ok 1 57-hand$' <<<"$output")" 1
	equals "$(grep -c '^ok 1 10-a$' <<<"$output")" 1
	equals "$(sed -n 's/^# .*\/\(.*\.bats\): [0-9]* s, CPU [0-9]* s$/\1/p' <<<"$output" | LC_ALL=C sort | tr '\n' ' ')" "10-a.bats 57-hand.bats "
	equals "${lines[${#lines[@]} - 1]}" "2 passed, 0 failed"
	run -100 --separate-stderr env TEST_JOBS=0 "$BATS_TEST_DIRNAME/run"
	equals "$stderr" "tests/run: TEST_JOBS must be a number above 0"
}

@test "tests/andand finds a && list of tests that a command follows, and no other" {
	local d=$BATS_TEST_TMPDIR
	# Under bats, the first half's failure goes unseen.
	printf '%s\n' '@test t {' '	[ 1 -eq 2 ] && [ 1 -eq 1 ]' '	true' '}' >"$d/t.bats"
	run -0 bats "$d/t.bats"
	printf '%s\n' 'f() {' '	[ -d x ] && [ -f y ]' '	echo done' '}' \
	    'g() {' '	[ -d x ] && [ -f y ]' '}' \
	    'h() {' '	[ -d x ] && [ -f y ] || return 1' '	[ -d x ] ||' \
	    '	    [ -d y ] && [ -d z ]' '	[ a = b ] && x=1' '	true' '}' \
	    '	[[ $a = b ]] && [ -e c ] && [[ -n $d ]]' '' '	# a comment' \
	    '	true' >"$d/planted"
	run -1 "$BATS_TEST_DIRNAME/andand" "$d/planted" "$d/t.bats"
	equals "$output" "$d/planted:2: [ -d x ] && [ -f y ]
$d/planted:15: [[ \$a = b ]] && [ -e c ] && [[ -n \$d ]]
$d/t.bats:2: [ 1 -eq 2 ] && [ 1 -eq 1 ]"
	run -100 "$BATS_TEST_DIRNAME/andand"
	equals "$output" "usage: tests/andand FILE..."
}

@test "ShellCheck, as .shellcheckrc sets it, finds a planted fault and not the state done" {
	local d=$BATS_TEST_TMPDIR
	cp "$BATS_TEST_DIRNAME/../.shellcheckrc" "$d/"
	printf '%s\n' '#!/bin/bash' 'f() {' '	cd "$1"' '	spool-ls done' '}' >"$d/planted"
	run -1 shellcheck -S warning -f gcc "$d/planted"
	equals "$output" "$d/planted:3:2: warning: Use 'cd ... || exit' or 'cd ... || return' in case cd fails. [SC2164]"
	printf '%s\n' '#!/bin/bash' 'f() {' '	cd "$1" || return' '	spool-ls done' '}' >"$d/planted"
	run -0 shellcheck -S warning -f gcc "$d/planted"
	equals "$output" ""
}

@test "tests/go-tap --lint finds a planted go vet fault and a file gofmt would change, and nothing in go/" {
	local d=$BATS_TEST_TMPDIR/pkg
	mkdir "$d"
	printf '%s\n' 'module planted' '' 'go 1.19' >"$d/go.mod"
	printf '%s\n' 'package planted' '' 'import "fmt"' '' \
	    'func F() string {return fmt.Sprintf("%d", "x")}' >"$d/f.go"
	run -0 tests/go-tap --lint "$d"
	equals "$output" "# planted
./f.go:5:25: fmt.Sprintf format %d has arg \"x\" of wrong type string
f.go"
	run -0 tests/go-tap --lint
	equals "$output" ""
}
