#!/usr/bin/env bats
# The listings read each sidecar once, without its lock (spool-layout.md,
# "Readers"): they answer while a writer holds a job, and a sidecar caught
# between a record and its move, or with half a line appended, shows the
# job where it is, as a reader under the lock would.

load helpers

T=1796000000000

# Two jobs queued at T: a and b.
two() {
	at_ms $T spool-enqueue --id a <<<"payload of a" >/dev/null
	at_ms $T spool-enqueue --id b <<<"payload of b" >/dev/null
}

# What the listings and spool-stat say of the spool, clock pinned.
views() {
	echo "-- new"
	at_ms $((T + 5000)) spool-ls new | LC_ALL=C sort
	echo "-- leased"
	at_ms $((T + 5000)) spool-ls leased
	echo "-- -l new"
	at_ms $((T + 5000)) spool-ls -l new
	echo "-- stat"
	at_ms $((T + 5000)) spool-stat | grep -E '^(new|ready|leased|damaged) '
}

# The value of one metric of spool-stat's plain output.
metric() {
	at_ms $((T + 5000)) spool-stat | awk -v m="$1" '$1 == m { print $2 }'
}

@test "spool-ls and spool-stat answer while a writer holds a job's lock" {
	two
	# The test holds a's sidecar's lock exclusively, as a claimer would.
	exec {lk}<"$SPOOL_DIR/meta/a"
	flock -x "$lk"
	run -0 timeout 20 spool-ls new
	exec {lk}<&-
	equals "$(printf '%s\n' "${lines[@]}" | LC_ALL=C sort | tr '\n' ' ')" \
	    "a b "
	exec {lk}<"$SPOOL_DIR/meta/b"
	flock -x "$lk"
	run -0 timeout 20 spool-stat
	exec {lk}<&-
	equals "$(printf '%s\n' "${lines[@]}" | awk '$1 == "new" { print $2 }')" 2
}

@test "a claim cut short after its record, before its move: the job is where it was" {
	two
	want=$(views)
	run -137 env SPOOL_TEST_NOW=$((T + 1000)) \
	    SPOOL_TEST_CRASH=record-written spool-claim --owner w1
	equals "$(ids_in new | tr '\n' ' ')" "a b "
	# The sidecar of the job it took ends in a claim record.
	grep -l ' ev=claim ' "$SPOOL_DIR"/meta/* >"$BATS_TEST_TMPDIR/claimed"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/claimed")" -eq 1 ]
	equals "$(views)" "$want"
	# A void line after it, the start of the next command's append,
	# says so too: the sidecar's last line is then not the job's state.
	printf 't=%s ev=void tok=1\n' $((T + 2000)) \
	    >>"$(cat "$BATS_TEST_TMPDIR/claimed")"
	equals "$(views)" "$want"
}

@test "half a record appended to a sidecar is not read" {
	two
	want=$(views)
	printf 't=%s ev=claim at=leased tok=1' $((T + 1000)) \
	    >>"$SPOOL_DIR/meta/a"
	equals "$(views)" "$want"
}

@test "a job's file made unreadable by hand: listed, damaged, and counted so by spool-stat" {
	two
	chmod 000 "$SPOOL_DIR"/new/*/*/*/a,*
	run -100 --separate-stderr at_ms $((T + 5000)) spool-ls new
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' a b)"
	equals "$stderr" "spool-ls: a: damaged job: its file or its sidecar is not where it should be: spool-fsck --repair settles it or says how; a file removed on purpose is recorded with spool-purge --missing --by WHO --note TICKET a (spool(7), EDITING THE SPOOL BY HAND)"
	run -100 --separate-stderr at_ms $((T + 5000)) spool-ls --json new
	equals "$(jq -c 'select(.id == "a") | [.damaged, .damage]' <<<"$output")" '[true,"its file may not be read: a hand took its mode away"]'
	# A copy of it elsewhere is a second file: not listed.
	cp "$SPOOL_DIR"/new/*/*/*/a,* "$SPOOL_DIR/dead/a"
	run -100 --separate-stderr at_ms $((T + 5000)) spool-ls new dead
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' a b)"
	rm "$SPOOL_DIR/dead/a"
	equals "$(metric new)" 1
	equals "$(metric damaged)" 1
}

@test "a sidecar longer than a read's buffer: read whole without the lock, the job shown as a reader under the lock shows it" {
	at_ms $T spool-enqueue --id a <<<"payload of a" >/dev/null
	at_ms $((T + 1000)) spool-claim --owner w1 >/dev/null
	tok=$(lease_token a)
	# 60 renews: some 10 KiB of records, more than twice the first buffer.
	for k in $(seq 1 60); do
		at_ms $((T + 1000 + k)) spool-renew a "$tok" >/dev/null
	done
	[ "$(stat -c %s "$SPOOL_DIR/meta/a")" -gt 8192 ]
	# No flock(2): the listings and spool-stat took the lean look.
	ASAN_OPTIONS=detect_leaks=0 strace -f -e trace=flock \
	    -o "$BATS_TEST_TMPDIR/trace" sh -c "SPOOL_TEST_NOW=$((T + 5000));
	    export SPOOL_TEST_NOW; spool-ls leased; spool-ls -l leased;
	    spool-stat -a" >"$BATS_TEST_TMPDIR/out"
	equals "$(grep -c 'flock(' "$BATS_TEST_TMPDIR/trace")" 0
	# Its age is the claim's: a renew keeps the job where it was.
	diff -u - <(grep -E '^(a$|ID |a  |leased |damaged )' \
	    "$BATS_TEST_TMPDIR/out") <<'EOT'
a
ID  DELIV  DISP  OWNER  EXPIRES  AGE  CYC  BY  NOTE
a   #1     -     w1     in 26s   4s   1    -   -
leased                          1
damaged                         0
EOT
	# spool-fsck reads it under the lock, as long as it is.
	run -0 at_ms $((T + 5000)) spool-fsck
	equals "$output" ""
}
