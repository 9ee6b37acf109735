#!/usr/bin/env bats
# spool-enqueue: one job per file, IDs printed, duplicates refused by state.

load helpers

@test "enqueue from stdin prints the ID and files the payload in new/" {
	run -0 spool-enqueue --id order-1842 <<<"pay me"
	equals "$output" order-1842
	equals "$(state_of order-1842)" new
	assert_file "$(path_of order-1842)" "pay me
"
	equals "$(audit_events)" "enqueue order-1842 0 0 1 - - - -"
}

@test "enqueue without --id makes a UUID per file, in argument order" {
	printf a >"$BATS_TEST_TMPDIR/a"
	printf b >"$BATS_TEST_TMPDIR/b"
	run -0 spool-enqueue "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]]
	assert_file "$(path_of "${lines[0]}")" a
	assert_file "$(path_of "${lines[1]}")" b
}

@test "a queued, leased or parked ID is refused and the message says where" {
	spool-enqueue --id j1 </dev/null
	before=$(snapshot)
	run -1 --separate-stderr spool-enqueue --id j1 <<<"other"
	equals "$output" ""
	equals "$stderr" "spool-enqueue: j1: duplicate ID: the job is in new/"
	equals "$(snapshot)" "$before"

	spool-claim --owner w1 >/dev/null
	run -1 --separate-stderr spool-enqueue --id j1 </dev/null
	equals "$stderr" "spool-enqueue: j1: duplicate ID: the job is in leased/"

	spool-finish j1 1 permanent >/dev/null
	run -1 --separate-stderr spool-enqueue --id j1 </dev/null
	equals "$stderr" "spool-enqueue: j1: duplicate ID: the job is in dead/"
}

@test "enqueue of a done ID starts a new cycle and removes the old done/ file" {
	spool-enqueue --id j1 <<<"one" >/dev/null
	spool-claim --owner w1 >/dev/null
	spool-finish j1 1 ok >/dev/null
	run -0 spool-enqueue --id j1 <<<"two"
	equals "$(state_of j1)" new
	assert_file "$(path_of j1)" "two
"
	equals "$(ids_in done)" ""
	run -0 spool-claim --owner w1
	equals "$(cut -f1-3 <<<"$output")" "$(printf 'j1\t2\t1')"
	diff -u - <(audit_events) <<'EOT'
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
ok j1 1 1 1 w1 - - -
enqueue j1 1 0 2 - - - -
supersede j1 1 1 1 w1 - - -
claim j1 2 1 2 w1 - - 1
EOT
}

@test "a move into a bucket removed under it (ENOENT, or ESTALE from a network file system): the bucket is made again, the job queued" {
	local e
	for e in 2 116; do
		run -0 --separate-stderr shimmed SHIM_ROOT="$SPOOL_DIR" \
		    SHIM_FAMILY=rename SHIM_NTH=1 SHIM_ERRNO=$e SHIM_COUNT="$BATS_TEST_TMPDIR/count.$e" \
		    spool-enqueue --id "j$e" <<<"payload"
		equals "$output" "j$e"
		equals "$stderr" ""
		grep -q "^fired rename 1 " "$BATS_TEST_TMPDIR/count.$e"
		equals "$(state_of "j$e")" new
		assert_file "$(path_of "j$e")" "payload
"
	done
	fsck_clean
}
