#!/usr/bin/env bats
# Power cuts (spool-layout.md, "Crashes"): tests/powercut/explore builds
# every state a power cut may leave during a command, repairs it with
# spool-fsck --repair and checks it.  make check samples the states
# (bound 3 a cut point); POWERCUT_FULL=1 (make check-powercut) enumerates
# every state of the single-job commands, samples the batches (bound 12),
# samples everything again at three seeds drawn afresh, and skips every
# sync of every command in turn.  The seeds are printed.

load helpers

EXPLORE="$BATS_TEST_DIRNAME/powercut/explore"
SEED=${POWERCUT_SEED:-14}

# The table, reduced to what must hold: the command, the violations in
# each rename model (split-rename losses of a job's name apart: no fsync
# order can prevent them; spool-layout.md, "Crashes").
violations() {
	awk 'NR <= 2 || /^  / { next }
	    NF == 9 { print $1, $5, $8 } NF != 9 { print }' <<<"$output"
}

@test "an append after a torn audit line starts a line of its own" {
	export SPOOL_TEST_NOW=1796026336000
	spool-enqueue --id j1 </dev/null >/dev/null
	# a power cut kept the first 30 bytes of the line
	truncate -s 30 "$SPOOL_DIR/audit/testhost.log"
	spool-enqueue --id j2 </dev/null >/dev/null
	run -0 "$BATS_TEST_DIRNAME/powercut/audit-lines" "$SPOOL_DIR"
	diff -u - <(printf '%s\n' "$output") <<'EOF'
unparsed 2026-11-30T08:12:16.000Z enque 
enqueue j2 0 0 1 - - - -
EOF
	run -0 spool-fsck --repair
	equals "$output" "j1: no audit line for its enqueue at 1796026336000 ms (appended)"
	fsck_clean
}

@test "a line torn inside its writer, the last field, is not read as whole after the next append" {
	local log="$SPOOL_DIR/audit/testhost.log"
	export SPOOL_TEST_NOW=1796026336000
	spool-enqueue --id j1 </dev/null >/dev/null
	spool-enqueue --id j2 </dev/null >/dev/null
	# a power cut kept j2's line but for the last digit of its writer's
	# pid and the newline: what is left would parse
	truncate -s "$(($(stat -c %s "$log") - 2))" "$log"
	run -1 spool-fsck
	equals "$output" "j2: no audit line for its enqueue at 1796026336000 ms"
	run -0 spool-fsck --repair
	equals "$output" "j2: no audit line for its enqueue at 1796026336000 ms (appended)"
	fsck_clean
	# read with the library's parser: the torn line is refused
	run -0 "$BATS_TEST_DIRNAME/powercut/audit-lines" "$SPOOL_DIR"
	diff -u - <(grep -v '^unparsed ' <<<"$output") <<'EOF'
enqueue j1 0 0 1 - - - -
enqueue j2 0 0 1 - - - -
EOF
	equals "$(grep -c '^unparsed .* enqueue j2 0 0 1 - - - - testhost:[0-9]* $' <<<"$output")" 1
}

@test "a purge cut short before its unlink or its audit line: one repair ends it, its line first" {
	local point
	export SPOOL_TEST_NOW=1796026336000
	for point in purge-recorded purge-moved; do
		spool-enqueue --id j1 </dev/null >/dev/null
		spool-claim >/dev/null
		spool-finish j1 "$(lease_token j1)" ok >/dev/null
		run -137 env SPOOL_TEST_CRASH=$point spool-purge done j1
		run -1 spool-fsck
		grep -Fxq "j1: no audit line for its purge at 1796026336000 ms" <<<"$output"
		run -0 spool-fsck --repair
		diff -u - <(printf '%s\n' "$output") <<'EOF'
j1: no audit line for its purge at 1796026336000 ms (appended)
j1: purged, but its sidecar is still in meta/ (removed)
EOF
		fsck_clean
		[ ! -e "$SPOOL_DIR/meta/j1" ]
		[ ! -e "$SPOOL_DIR/done/j1" ]
		equals "$(audit_events | tail -1 | cut -d' ' -f1,2)" "purge j1"
	done
}

@test "a new cycle cut short after removing the old done file: supersede is logged" {
	export SPOOL_TEST_NOW=1796026336000
	spool-enqueue --id j1 </dev/null >/dev/null
	spool-claim >/dev/null
	spool-finish j1 1 ok >/dev/null
	run -137 env SPOOL_TEST_CRASH=enqueue-synced spool-enqueue --id j1
	# what came next: the removal, then (not reached) the supersede line
	rm "$SPOOL_DIR/done/j1"
	run -1 spool-fsck
	diff -u - <(printf '%s\n' "$output") <<'EOF'
j1: no audit line for the removal of its previous cycle's file
j1: no audit line for its enqueue at 1796026336000 ms
EOF
	run -0 spool-fsck --repair
	fsck_clean
	diff -u - <(audit_events | tail -2 | cut -d' ' -f1-5,7-) <<'EOF'
supersede j1 1 1 1 - - -
enqueue j1 1 0 2 - - -
EOF
}

@test "a pause or a resume without its audit line: repair appends it" {
	export SPOOL_TEST_NOW=1796026336000
	# a pause cut short after its rename: "paused" and no line
	printf 'ops T-1\n' >"$SPOOL_DIR/paused"
	run -1 spool-fsck
	equals "$output" "paused: present, but the audit log's last pause or resume says otherwise"
	run -0 spool-fsck --repair
	equals "$output" "paused: present, but the audit log's last pause or resume says otherwise (pause appended)"
	fsck_clean
	equals "$(audit_events)" "pause - 0 0 0 ops - - T-1"
	# a resume cut short after its unlink
	rm "$SPOOL_DIR/paused"
	run -1 spool-fsck
	equals "$output" "paused: absent, but the audit log's last pause or resume says otherwise"
	run -0 spool-fsck --repair
	fsck_clean
	equals "$(audit_events | tail -1)" "resume - 0 0 0 - - - -"
	spool-pause --by ops --note T-2
	spool-resume
	fsck_clean
}

# The explorer's table holds no violation for any command.
no_violation() {
	printf '%s\n' "$output" >&3
	diff -u - <(violations) <<'EOF'
enqueue-first 0 0
enqueue 0 0
enqueue-join 0 0
enqueue-cycle 0 0
claim 0 0
reclaim 0 0
claim-sameboot 0 0
reclaim-sameboot 0 0
finish-ok 0 0
finish-fail 0 0
finish-retry 0 0
retry-full 0 0
claim-full 0 0
claim-keyed 0 0
finish-keyed 0 0
renew 0 0
redrive 0 0
drop 0 0
cancel 0 0
cancel-leased 0 0
purge 0 0
purge-newhost 0 0
pause 0 0
resume 0 0
fsck-repair 0 0
fsck-repair-more 0 0
fsck-restored 0 0
upgrade 0 0
group-enqueue 0 0
enqueue-newhost 0 0
run-reclaim 0 0
run-finish-claim 0 0
enqueue-batch 0 0
claim-batch 0 0
finish-batch 0 0
enqueue-syncfs 0 0
claim-syncfs 0 0
finish-syncfs 0 0
0 violations
EOF
}

# With POWERCUT_FULL, the whole enumeration at SEED and then the sample
# at three seeds drawn afresh: a seed samples the batches' states, and a
# state that one seed never draws may be the one that breaks a rule (a
# line torn inside its last field was found so).  Each seed is printed
# first in its table: POWERCUT_SEED=N make check samples it again.
@test "the explorer: no violation in any state of any command" {
	local seeds=("$SEED") s
	if [ -n "${POWERCUT_FULL:-}" ]; then
		run -0 "$EXPLORE" --seed "$SEED" --full --bound 12
		no_violation
		mapfile -t seeds < <(shuf -i 100-99999 -n 3)
	fi
	for s in "${seeds[@]}"; do
		run -0 "$EXPLORE" --seed "$s" --bound 3
		no_violation
	done
}

# Each sync spool-layout.md calls necessary ("Why each is needed"), skipped
# alone: the explorer must find a state it breaks, sampling 12 states a
# cut point (at 3, a reclaim's record sync showed as needed for some seeds
# only).  With POWERCUT_FULL,
# every sync of every command, against tests/powercut/teeth: a sync that
# no state shows is needed is one that layout says buys no safety, or one
# that a record and spool-fsck --repair stand in for (spool-powercuts.md,
# "The explorer").
@test "the explorer's teeth: without each necessary sync, a violation" {
	if [ -n "${POWERCUT_FULL:-}" ]; then
		run -0 "$EXPLORE" --teeth --seed "$SEED" --bound 12
		printf '%s\n' "$output" >&3
		diff -u "$BATS_TEST_DIRNAME/powercut/teeth" - <<<"$output"
		return
	fi
	run -0 "$EXPLORE" --teeth --seed "$SEED" --bound 12 \
	    enqueue-first:1 enqueue-first:2 enqueue-first:3 enqueue-first:4 \
	    enqueue-first:6 enqueue-first:7 enqueue-first:8 enqueue-first:9 \
	    enqueue-join:6 enqueue-join:7 enqueue-join:8 enqueue-cycle:7 claim:1 claim:4 \
	    claim-sameboot:2 reclaim-sameboot:2 finish-ok:3 \
	    finish-fail:3 drop:3 purge-newhost:2 purge-newhost:4 pause:1 pause:2 \
	    resume:1 fsck-restored:2 upgrade:3 upgrade:4 group-enqueue:9 \
	    enqueue-newhost:5 run-reclaim:7 \
	    run-finish-claim:5 enqueue-syncfs:1 \
	    enqueue-syncfs:2 claim-syncfs:2 finish-syncfs:1
	diff -u - <(printf '%s\n' "$output") <<'EOF'
enqueue-first 1 fdatasync(tmp/j1,PID.N): violation
enqueue-first 2 fdatasync(meta/j1): violation
enqueue-first 3 fsync(tmp): violation
enqueue-first 4 fsync(meta): violation
enqueue-first 6 fsync(new): violation
enqueue-first 7 fsync(new/00001a22): violation
enqueue-first 8 fsync(new/00001a22/b83): violation
enqueue-first 9 fsync(new/00001a22/b83/64a): violation
enqueue-join 6 fsync(new): violation
enqueue-join 7 fsync(new/00001a22): violation
enqueue-join 8 fsync(new/00001a22/b83): violation
enqueue-cycle 7 fsync(done): violation
claim 1 fdatasync(tokens): violation
claim 4 fsync(leased): violation
claim-sameboot 2 fdatasync(tokens): violation
reclaim-sameboot 2 fdatasync(tokens): violation
finish-ok 3 fsync(done): violation
finish-fail 3 fsync(dead): violation
drop 3 fsync(done): violation
purge-newhost 2 fdatasync(audit/h.log): violation
purge-newhost 4 fsync(audit): violation
pause 1 fdatasync(tmp/paused,PID): violation
pause 2 fsync(.): violation
resume 1 fsync(.): violation
fsck-restored 2 fdatasync(tokens): violation
upgrade 3 fdatasync(tmp/format,PID): violation
upgrade 4 fsync(.): violation
group-enqueue 9 fsync(new/00001a22/b83/64a): violation
enqueue-newhost 5 fsync(meta): violation
run-reclaim 7 fsync(done): violation
run-finish-claim 5 fdatasync(meta/j1): violation
enqueue-syncfs 1 syncfs(/): violation
enqueue-syncfs 2 syncfs(/): violation
claim-syncfs 2 syncfs(/): violation
finish-syncfs 1 syncfs(/): violation
EOF
}

# A claim's line, record and move reach the disk in one wait
# (spool-layout.md, "Transitions"): a power cut may keep any of them.
# Each state is built by putting back, from a copy taken before the claim,
# what the power cut lost.
claimed_then_lost() {
	SPOOL_TEST_NOW=1796026336000 spool-enqueue --id j1 </dev/null >/dev/null
	cp -a "$SPOOL_DIR/meta/j1" "$BATS_TEST_TMPDIR/j1.before"
	new=$(cd "$SPOOL_DIR" && find new -type f)
	SPOOL_TEST_NOW=1796026337000 spool-claim --owner w1 >/dev/null
	cp "$BATS_TEST_TMPDIR/j1.before" "$SPOOL_DIR/meta/j1"
}

@test "a claim whose audit line outlived its transition: repair voids the line" {
	claimed_then_lost
	mv "$SPOOL_DIR/leased/j1,1" "$SPOOL_DIR/$new"
	run -1 spool-fsck
	equals "$output" "j1: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition)"
	run -0 spool-fsck --repair
	equals "$output" "j1: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition) (void line appended)"
	fsck_clean
	diff -u - <(audit_events) <<'EOT'
enqueue j1 0 0 1 - - - -
claim j1 1 1 1 w1 - - -
void j1 1 1 1 w1 - - claim
EOT
	run -0 spool-stat --json
	equals "$(jq -c '.audit_events | {enqueue, claim}' <<<"$output")" '{"enqueue":1,"claim":0}'
	# The token the line names is never handed out again.
	run -0 at_ms 1796026338000 spool-claim --owner w2
	equals "$(lease_token j1)" 2
	fsck_clean
}

@test "a batch claim's lines outlived it: every line reported and voided, the log read twice, not once a line" {
	local i out
	for i in $(seq -w 1 40); do
		SPOOL_TEST_NOW=1796026336000 spool-enqueue --id "j$i" </dev/null >/dev/null
	done
	cp -a "$SPOOL_DIR/meta" "$BATS_TEST_TMPDIR/meta.before"
	(cd "$SPOOL_DIR" && find new -type f | sort) >"$BATS_TEST_TMPDIR/new"
	SPOOL_TEST_NOW=1796026337000 spool-claim --owner w1 -n 40 >/dev/null
	# The power cut kept the lines, lost the records and the moves.
	cp "$BATS_TEST_TMPDIR/meta.before"/* "$SPOOL_DIR/meta/"
	while read -r out; do
		i=${out##*/}
		mv "$SPOOL_DIR/leased/${i%%,*},"* "$SPOOL_DIR/$out"
	done <"$BATS_TEST_TMPDIR/new"
	equals "$(ls "$SPOOL_DIR/leased")" ""
	for i in $(seq -w 1 40); do
		echo "j$i: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition)"
	done >"$BATS_TEST_TMPDIR/expected"
	run -1 strace -f -qq -e trace=openat -o "$BATS_TEST_TMPDIR/trace" spool-fsck
	diff -u "$BATS_TEST_TMPDIR/expected" - <<<"$output"
	equals "$(grep -c '\.log", O_RDONLY' "$BATS_TEST_TMPDIR/trace")" 2
	run -0 spool-fsck --repair
	diff -u <(sed 's/$/ (void line appended)/' "$BATS_TEST_TMPDIR/expected") - <<<"$output"
	fsck_clean
	equals "$(audit_events | grep -c '^void ')" 40
}

@test "a power cut kept a batch's records, lost their lines: every line reported and appended, the log read once, not once a line" {
	local i sz
	export SPOOL_TEST_NOW=1796026336000
	spool-enqueue --id j00 </dev/null >/dev/null
	sz=$(stat -c %s "$SPOOL_DIR/audit/testhost.log")
	for i in $(seq -w 1 40); do
		spool-enqueue --id "j$i" </dev/null >/dev/null
	done
	# The power cut kept the records and the moves, lost the lines.
	truncate -s "$sz" "$SPOOL_DIR/audit/testhost.log"
	for i in $(seq -w 1 40); do
		echo "j$i: no audit line for its enqueue at 1796026336000 ms"
	done >"$BATS_TEST_TMPDIR/expected"
	run -1 strace -f -qq -e trace=openat -o "$BATS_TEST_TMPDIR/trace" spool-fsck
	diff -u "$BATS_TEST_TMPDIR/expected" - <<<"$output"
	equals "$(grep -c '\.log", O_RDONLY' "$BATS_TEST_TMPDIR/trace")" 1
	run -0 spool-fsck --repair
	diff -u <(sed 's/$/ (appended)/' "$BATS_TEST_TMPDIR/expected") - <<<"$output"
	fsck_clean
	equals "$(audit_events | grep -c '^enqueue ')" 41
}

@test "a claim whose move outlived its record: the job is damaged until repair puts it back" {
	claimed_then_lost
	# Not absent: an enqueue of its ID would make it two jobs.
	damaged="j1: damaged job: its file or its sidecar is not where it should be: spool-fsck --repair settles it or says how; a file removed on purpose is recorded with spool-purge --missing --by WHO --note TICKET j1 (spool(7), EDITING THE SPOOL BY HAND)"
	run -100 spool-finish j1 1 ok
	equals "$output" "spool-finish: $damaged"
	run -100 spool-enqueue --id j1 </dev/null
	equals "$output" "spool-enqueue: $damaged"
	run -1 spool-fsck
	diff -u - <(printf '%s\n' "$output") <<EOT
j1: moved by hand from new/ to leased/j1,1: spool-fsck --repair puts it back
j1: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition)
EOT
	run -0 spool-fsck --repair
	diff -u - <(printf '%s\n' "$output") <<EOT
j1: moved by hand from new/ to leased/j1,1: put back
j1: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition) (void line appended)
EOT
	fsck_clean
	equals "$(cd "$SPOOL_DIR" && find new leased -type f)" "$new"
	run -0 at_ms 1796026338000 spool-claim --owner w2
	equals "$(lease_token j1)" 2
	fsck_clean
}

@test "a move kept under both names, its record lost: repair removes the second name" {
	claimed_then_lost
	ln "$SPOOL_DIR/leased/j1,1" "$SPOOL_DIR/$new"
	run -1 spool-fsck
	diff -u - <(printf '%s\n' "$output") <<EOT
leased/j1,1: a second name of job j1's file, left by a move cut short
j1: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition)
EOT
	run -0 spool-fsck --repair
	diff -u - <(printf '%s\n' "$output") <<EOT
leased/j1,1: a second name of job j1's file, left by a move cut short (removed)
j1: its claim at 1796026337000 ms is in the audit log but did not happen (a power cut kept the line, not the transition) (void line appended)
EOT
	fsck_clean
	equals "$(cd "$SPOOL_DIR" && find new leased -type f)" "$new"
}

@test "an enqueue whose line outlived its rename: repair publishes the payload from tmp/" {
	export SPOOL_TEST_NOW=1796026336000
	printf 'payload\n' >"$BATS_TEST_TMPDIR/p"
	spool-enqueue --id j1 "$BATS_TEST_TMPDIR/p" >/dev/null
	new=$(cd "$SPOOL_DIR" && find new -type f)
	# kept: the record, tmp/'s name, the line; lost: the rename
	mv "$SPOOL_DIR/$new" "$SPOOL_DIR/tmp/j1,999999.1"
	run -1 spool-fsck
	equals "$output" "j1: its enqueue was cut short before its rename, after its audit line: spool-fsck --repair publishes it from tmp/"
	run -0 spool-fsck --repair
	equals "$output" "j1: its enqueue was cut short before its rename, after its audit line: published from tmp/"
	fsck_clean
	equals "$(cd "$SPOOL_DIR" && find new tmp -type f)" "$new"
	cmp "$BATS_TEST_TMPDIR/p" "$SPOOL_DIR/$new"
	equals "$(audit_events)" "enqueue j1 0 0 1 - - - -"
}
