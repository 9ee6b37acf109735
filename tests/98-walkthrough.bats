#!/usr/bin/env bats
# The operator's first hour: what a shell-script user who does
# on-call types in a first hour with spool, each step as it is typed, with
# its exit status and its whole output, stdout and stderr apart, and the
# state on disk where it matters.  The hour, and where each part is:
#
#   1. build, and make demo: tests/96-demo.bats
#   2. spool-init (on a small file system it warns): tests/68-reserve.bats,
#      which mounts a tmpfs
#   3. a producer, and spool-run -j 4 with a handler that fails in every
#      way: ok, a transient failure, a permanent one, a crash by a signal,
#      a hang stopped by --timeout, lines on stderr: here
#   4. on-call looks: spool-stat, spool-stat --ages, spool-ls with several
#      states, --class and --reason, spool-ls -l, spool-show: here
#   5. on-call acts: redrive, drop and cancel without and with --by and
#      --note, redrive --dry-run with IDs, a flagged job reconciled, pause
#      and resume, spool-run --once on a paused spool: here
#   6. the disk fills, by another program: here, in short (as root: it
#      mounts a tmpfs); every transition, and an ext4 image:
#      tests/68-reserve.bats
#   7. a note as a person writes it, --by "Jane Doe" --note "upstream
#      fixed": here; every field it reaches: tests/67-operator.bats
#   8. a C program with designated initialisers: here; built with
#      pkg-config against an install in a prefix: tests/92-install.bats
#   9. bad inputs: a class misspelt, a bad token, --help, a bad ID, an
#      option after the handler: here
#  10. hand edits: a payload edited, jobs moved by hand, spool-fsck: here
#  11. man spool, and the pages under groff: tests/97-manpages.bats
#
# Each test makes its own spool.  Outputs are made the same on every run
# thus: the library's clock is pinned (SPOOL_TEST_NOW) at the times of the
# hour, on the pages' day (at HH:MM:SS, tests/examples.bash); jobs are
# enqueued five seconds apart, so that each is in a leaf of new/ of its own
# and claims take them in time order, which fixes their tokens (jobs of one
# 16 ms leaf come in any order); the workers are named (--owner), since the
# default HOST:PID would change the columns' widths.  What is truly variable
# is normalised with sed, and only that: spool-run's log lines' time and
# duration (spool-run's own clock, not the library's), the process IDs in
# the audit lines' WRITER, and the order in which jobs run at once end.
# No duration is asserted: the hang's --timeout 3s is far above what the
# other handlers take on a loaded machine, and nothing waits by sleeping.

load helpers
load examples

BATS_TEST_TIMEOUT=60

eval "helpers_$(declare -f setup)"

setup() {
	helpers_setup
	export SPOOL_HOST=testhost
	# spool-run's private directory of results goes with the test's files.
	export TMPDIR=$BATS_TEST_TMPDIR
	cd "$BATS_TEST_TMPDIR" || return
	# The user's handler: what each delivery does is in its payload.
	cat >handler.sh <<'EOF'
#!/bin/sh
case $(cat) in
ok)	echo "sent $SPOOL_JOB_ID" ;;
flaky)	if [ "$SPOOL_ATTEMPT" -eq 1 ]; then
		echo "upstream 503" >&2
		echo delay=5m >"$SPOOL_RESULT"	# the upstream's Retry-After
		exit 75
	fi
	echo "sent $SPOOL_JOB_ID" ;;
bad)	echo "no such customer" >&2; exit 65 ;;
crash)	echo "about to die" >&2; kill -KILL $$ ;;
hang)	exec sleep 60 ;;
esac
EOF
	chmod +x handler.sh
}

# spool-run's log lines with their time as T and their duration as D.
runlog() {
	sed -E 's/^spool-run: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z /spool-run: T /
	    s/ duration=[0-9]+\.[0-9]{3}s / duration=D /'
}

# spool-run's stderr as runlog gives it, each job's lines together in the
# order they came, the jobs in byte order: jobs that run at once end in any
# order.  A handler's line is "ID: ...", a log line "spool-run: T ID ...".
by_job() {
	runlog | awk '{
		id = $1 == "spool-run:" ? $3 : substr($1, 1, length($1) - 1)
		print id "\t" NR "\t" $0
	}' | LC_ALL=C sort -t "$(printf '\t')" -k1,1 -k2,2n | cut -f3-
}

# The audit lines' writers' process IDs as PID.
pids() {
	sed -E 's/ testhost:[0-9]+$/ testhost:PID/'
}

# The producer's six jobs, five seconds apart from 08:00:05 (job-report is
# for 10:00:30); then, at 08:01, spool-run -j 4 runs the five that are due.
# The first test runs these steps one by one and checks each.
morning() {
	echo ok | at 08:00:05 spool-enqueue --id job-ok >/dev/null
	echo flaky | at 08:00:10 spool-enqueue --id job-flaky >/dev/null
	echo bad | at 08:00:15 spool-enqueue --id job-bad >/dev/null
	echo crash | at 08:00:20 spool-enqueue --id job-crash --max-attempts 1 >/dev/null
	echo hang | at 08:00:25 spool-enqueue --id job-hang --max-attempts 1 >/dev/null
	echo ok | at 08:00:30 spool-enqueue --id job-report --delay 2h >/dev/null
	at 08:01:00 spool-run -j 4 --max-jobs 5 --timeout 3s --owner worker-1 \
	    ./handler.sh >/dev/null 2>&1
}

@test "the hour, 3: a producer, and spool-run -j 4 with a handler that fails in every way" {
	run -0 --separate-stderr at 08:00:05 spool-enqueue --id job-ok <<<ok
	equals "$output" job-ok
	equals "$stderr" ""
	run -0 --separate-stderr at 08:00:10 spool-enqueue --id job-flaky <<<flaky
	equals "$output" job-flaky
	equals "$stderr" ""
	run -0 --separate-stderr at 08:00:15 spool-enqueue --id job-bad <<<bad
	equals "$output" job-bad
	equals "$stderr" ""
	# One attempt each: a crash or a hang may have had its effect.
	run -0 --separate-stderr at 08:00:20 spool-enqueue --id job-crash --max-attempts 1 <<<crash
	equals "$output" job-crash
	equals "$stderr" ""
	run -0 --separate-stderr at 08:00:25 spool-enqueue --id job-hang --max-attempts 1 <<<hang
	equals "$output" job-hang
	equals "$stderr" ""
	run -0 --separate-stderr at 08:00:30 spool-enqueue --id job-report --delay 2h <<<ok
	equals "$output" job-report
	equals "$stderr" ""
	# The worker, stopped after five deliveries (a real one runs on): a
	# handler's stdout passes through; its stderr comes after its job's
	# ID; one line a delivery when it ends.
	run -0 --separate-stderr at 08:01:00 spool-run -j 4 --max-jobs 5 \
	    --timeout 3s --owner worker-1 ./handler.sh
	equals "$output" "sent job-ok"
	diff -u - <(by_job <<<"$stderr") <<'EOF'
job-bad: no such customer
spool-run: T job-bad token=3 attempt=1 exit=65 duration=D outcome=permanent class=invalid-input state=dead reason=permanent
job-crash: about to die
spool-run: T job-crash token=4 attempt=1 signal=9 duration=D outcome=retry class=crashed state=dead reason=exhausted
job-flaky: upstream 503
spool-run: T job-flaky token=2 attempt=1 exit=75 duration=D outcome=retry class=transient state=new
spool-run: T job-hang token=5 attempt=1 signal=15 duration=D outcome=retry class=timeout state=dead reason=exhausted stopped=timeout
spool-run: T job-ok token=1 attempt=1 exit=0 duration=D outcome=ok class=- state=done
EOF
	# On disk: each job where its outcome put it.
	equals "$(ids_in new)" "$(printf '%s\n' job-flaky job-report)"
	equals "$(ids_in leased)" ""
	equals "$(ids_in done)" job-ok
	equals "$(ids_in dead)" "$(printf '%s\n' job-bad job-crash job-hang)"
	equals "$(cat "$SPOOL_DIR/done/job-ok")" ok
	# The Retry-After was honoured: due again 5 minutes after, at 08:06.
	equals "$(last_rec job-flaky ev at cls detail)" "$(printf '%s\n' ev=retry \
	    "at=new:$((T0 + 360000))" cls=transient detail=exit%2075:%20upstream%20503)"
	# The crash and the hang are flagged: their effect may have happened.
	equals "$(last_rec job-crash reason cls se detail)" "$(printf '%s\n' \
	    reason=exhausted cls=crashed se=1 detail=signal%209:%20about%20to%20die)"
	equals "$(last_rec job-hang reason cls se detail)" "$(printf '%s\n' \
	    reason=exhausted cls=timeout se=1 detail=timed%20out%20after%203s)"
	equals "$(last_rec job-bad reason cls se)" "$(printf '%s\n' \
	    reason=permanent cls=invalid-input se=)"
	check_invariants
	fsck_clean
}

@test "the hour, 4: on-call looks: spool-stat, --ages, spool-ls, spool-ls -l, spool-show" {
	morning
	run -0 --separate-stderr at 09:00:00 spool-stat
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new                             2
ready                           1
done                            1
dead                            3
lag                             54m00s
oldest_dead                     59m00s
dead_permanent                  1
dead_exhausted                  2
dead_class_invalid_input        1
dead_class_crashed              1
dead_class_timeout              1
last_action                     -
timeout                         1h00m
EOF
	run -0 --separate-stderr at 09:00:00 spool-stat --ages
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
STATE                   TOTAL     5m    10m    20m    40m    80m   160m   320m   640m  1280m  1280m+
new                         2      0      0      0      0      2      0      0      0      0      0
leased                      0      0      0      0      0      0      0      0      0      0      0
done                        1      0      0      0      0      1      0      0      0      0      0
dead                        3      0      0      0      0      3      0      0      0      0      0
dead permanent              1      0      0      0      0      1      0      0      0      0      0
dead exhausted              2      0      0      0      0      2      0      0      0      0      0
dead deadline               0      0      0      0      0      0      0      0      0      0      0
dead side-effect            0      0      0      0      0      0      0      0      0      0      0
dead cancelled              0      0      0      0      0      0      0      0      0      0      0
EOF
	# The plain lists come in directory order: sorted here.
	run -0 --separate-stderr spool-ls
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' job-bad job-crash job-hang)"
	equals "$stderr" ""
	run -0 --separate-stderr spool-ls new leased
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' job-flaky job-report)"
	equals "$stderr" ""
	run -0 --separate-stderr spool-ls dead --class crashed
	equals "$output" job-crash
	equals "$stderr" ""
	run -0 --separate-stderr spool-ls --reason exhausted
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' job-crash job-hang)"
	equals "$stderr" ""
	# A second worker, by hand, takes the retry, now due.
	run -0 --separate-stderr at 09:00:00 spool-claim --owner worker-2 --lease 10m
	equals "$output" "$(lease_line job-flaky 6 2)"
	equals "$stderr" ""
	# Each state its columns.
	run -0 --separate-stderr at 09:01:00 spool-ls -l new leased dead
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new:
ID          DELIV  DISP  DUE        CLASS  AGE    CYC  BY  NOTE  DETAIL
job-report  #0     -     in 59m30s  -      1h00m  1    -   -     -

leased:
ID         DELIV  DISP  OWNER     EXPIRES   AGE    CYC  BY  NOTE
job-flaky  #2     -     worker-2  in 9m00s  1m00s  1    -   -

dead:
ID         DELIV  DISP    SE   REASON     CLASS          AGE    CYC  BY  NOTE  DETAIL
job-bad    #1     parked  -    permanent  invalid-input  1h00m  1    -   -     exit 65: no such customer
job-crash  #1     parked  yes  exhausted  crashed        1h00m  1    -   -     signal 9: about to die
job-hang   #1     parked  yes  exhausted  timeout        1h00m  1    -   -     timed out after 3s
EOF
	run -0 --separate-stderr at 09:02:00 spool-show job-crash
	equals "$stderr" ""
	diff -u - <(pids <<<"$output") <<'EOF'
id           job-crash
state        dead
disposition  parked
since        2026-11-30T08:01:00.000Z (1h01m ago)
created      2026-11-30T08:00:20.000Z
deadline     2026-12-07T08:00:20.000Z
trace        -
payload      6 bytes, xxh3 149c2a8b381372e1
token        4
attempts     1 of 1
cycles       1
reason       exhausted
class        crashed
detail       signal 9: about to die
side-effect  may have happened: reconcile, then redrive with --reconciled
acted        -

CYC  ATT  TOKEN  OWNER     CLAIMED                   ENDED                     END    CLASS    DETAIL
1    1    4      worker-1  2026-11-30T08:01:00.000Z  2026-11-30T08:01:00.000Z  retry  crashed  signal 9: about to die

TIME                      EVENT    TOKEN  ATTEMPT  CYCLE  ACTOR     REASON     CLASS    PREV  NOTE  WRITER
2026-11-30T08:00:20.000Z  enqueue  0      0        1      -         -          -        -     -     testhost:PID
2026-11-30T08:01:00.000Z  claim    4      1        1      worker-1  -          -        -     -     testhost:PID
2026-11-30T08:01:00.000Z  park     4      1        1      worker-1  exhausted  crashed  -     -     testhost:PID
EOF
	# Looking changed nothing but the claim.
	equals "$(ids_in leased)" job-flaky
	equals "$(ids_in dead)" "$(printf '%s\n' job-bad job-crash job-hang)"
}

@test "the hour, 5: on-call acts: redrive, drop, cancel, a dry run, pause, spool-run --once paused, resume" {
	morning
	before=$(snapshot)
	# Who and why are needed, and the message says which is missing.
	run -100 --separate-stderr at 09:05:00 spool-redrive job-crash
	equals "$output" ""
	equals "$stderr" "spool-redrive: --by WHO and --note TICKET are needed; missing: --by and --note"
	run -100 --separate-stderr at 09:05:00 spool-redrive --by jane job-crash
	equals "$output" ""
	equals "$stderr" "spool-redrive: --by WHO and --note TICKET are needed; missing: --note"
	# A dry run of named IDs: what would move, and why the others would not.
	run -1 --separate-stderr at 09:05:00 spool-redrive --by jane --note INC-3 \
	    --dry-run job-bad job-crash job-hang job-nope
	equals "$output" job-bad
	diff -u - <(printf '%s\n' "$stderr") <<'EOF'
spool-redrive: job-crash: its side effect may have happened: reconcile it, then redrive with --reconciled
spool-redrive: job-hang: its side effect may have happened: reconcile it, then redrive with --reconciled
spool-redrive: job-nope: no such job
spool-redrive: dry run: would redrive 1 of 4 (3 refused)
EOF
	equals "$(snapshot)" "$before"
	run -1 --separate-stderr at 09:05:00 spool-redrive --by jane --note INC-3 job-crash
	equals "$output" ""
	equals "$stderr" "spool-redrive: job-crash: its side effect may have happened: reconcile it, then redrive with --reconciled"
	equals "$(snapshot)" "$before"
	# Reconciled: the charge was not made.
	run -0 --separate-stderr at 09:05:00 spool-redrive --by jane --note INC-3 \
	    --reconciled job-crash
	equals "$output" job-crash
	equals "$stderr" ""
	run -100 --separate-stderr at 09:06:00 spool-drop job-hang
	equals "$output" ""
	equals "$stderr" "spool-drop: --by WHO and --note TICKET are needed; missing: --by and --note"
	run -0 --separate-stderr at 09:06:00 spool-drop --by jane --note INC-3 job-hang
	equals "$output" job-hang
	equals "$stderr" ""
	run -100 --separate-stderr at 09:07:00 spool-cancel job-report
	equals "$output" ""
	equals "$stderr" "spool-cancel: --by WHO and --note TICKET are needed; missing: --by and --note"
	run -0 --separate-stderr at 09:07:00 spool-cancel --by jane --note INC-3 job-report
	equals "$output" job-report
	equals "$stderr" ""
	# Pause: no claim, by a worker or by hand, says nothing but that.
	run -0 --separate-stderr at 09:08:00 spool-pause --by jane --note INC-3
	equals "$output$stderr" ""
	equals "$(cat "$SPOOL_DIR/paused")" "jane INC-3"
	run -0 --separate-stderr at 09:08:30 spool-stat
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
paused                          1
new                             2
ready                           2
done                            2
dropped                         1
dead                            2
cycles2                         1
lag                             1h02m
oldest_dead                     1h07m
redriven_queued                 1
dead_permanent                  1
dead_cancelled                  1
dead_class_invalid_input        1
dead_class_cancelled            1
last_action                     pause by jane at 2026-11-30T09:08:00.000Z (30s ago)
timeout                         1h00m
EOF
	run -1 --separate-stderr at 09:09:00 spool-run --once --owner worker-1 ./handler.sh
	equals "$output" ""
	equals "$stderr" "spool-run: spool paused"
	run -1 --separate-stderr at 09:09:00 spool-claim --owner worker-2
	equals "$output" ""
	equals "$stderr" "spool-claim: spool paused"
	run -0 --separate-stderr at 09:10:00 spool-resume --by jane --note INC-3
	equals "$output$stderr" ""
	[ ! -e "$SPOOL_DIR/paused" ]
	# The oldest due job first: the retry, due since 08:06, now succeeds.
	run -0 --separate-stderr at 09:10:00 spool-run --once --owner worker-1 ./handler.sh
	equals "$output" "sent job-flaky"
	equals "$(runlog <<<"$stderr")" "spool-run: T job-flaky token=6 attempt=2 exit=0 duration=D outcome=ok class=- state=done"
	run -0 --separate-stderr at 09:11:00 spool-ls -l new dead done
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new:
ID         DELIV  DISP      DUE  CLASS  AGE    CYC  BY    NOTE   DETAIL
job-crash  #0     redriven  now  -      6m00s  2    jane  INC-3  -

dead:
ID          DELIV  DISP    SE  REASON     CLASS          AGE    CYC  BY    NOTE   DETAIL
job-bad     #1     parked  -   permanent  invalid-input  1h10m  1    -     -      exit 65: no such customer
job-report  #0     parked  -   cancelled  cancelled      4m00s  1    jane  INC-3  -

done:
ID         DELIV  DISP     AGE    CYC  BY    NOTE   DETAIL
job-flaky  #2     -        1m00s  1    -     -      -
job-hang   #1     dropped  5m00s  1    jane  INC-3  timed out after 3s
job-ok     #1     -        1h10m  1    -     -      -
EOF
	# Each action in the audit log, with who and why.
	diff -u - <(audit_events | grep -E '^(redrive|drop|cancel|pause|resume) ') <<'EOF'
redrive job-crash 4 0 2 jane - - INC-3
drop job-hang 5 1 1 jane exhausted timeout INC-3
cancel job-report 0 0 1 jane cancelled cancelled INC-3
pause - 0 0 0 jane - - INC-3
resume - 0 0 0 jane - - INC-3
EOF
	check_invariants
	fsck_clean
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
}

@test "the hour, 6: another program fills the disk; the drain goes on" {
	local k=0
	if [ "$(id -u)" -ne 0 ]; then
		[ "${CI:-}" != true ] || { echo "needs root in CI" >&2; return 1; }
		skip "not root: this step mounts a tmpfs (with CI=true, a failure)"
	fi
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir "$MNT"
	mount -t tmpfs -o size=4m,nr_inodes=200 tmpfs "$MNT"
	export SPOOL_DIR=$MNT/spool
	spool-init 2>/dev/null
	printf 'reserve=1M\nreserve-inodes=50\n' >"$SPOOL_DIR/config"
	for id in mail-1 mail-2; do
		echo ok | at "09:00:0${id#mail-}" spool-enqueue --id $id >/dev/null
	done
	at 09:01:00 spool-claim --owner worker-1 -n 2 >/dev/null
	# Someone else's log fills every block and every inode.
	: >"$MNT/big.log"
	mkdir "$MNT/cache"
	while : 2>/dev/null >"$MNT/cache/$k"; do k=$((k + 1)); done
	head -c 8M /dev/zero 2>/dev/null >>"$MNT/big.log" || true
	run -0 df --output=avail,iavail "$MNT"
	equals "$(tail -1 <<<"$output" | tr -s ' ')" " 0 0"

	run -111 --separate-stderr at 09:02:00 spool-enqueue --id mail-3 <<<ok
	equals "$output" ""
	equals "$stderr" "spool-enqueue: free space is below the spool's reserve: 0 free, reserve 1.0M; 0 inodes free, reserve 50 (see reserve and reserve-inodes in spool(7))"
	run -0 --separate-stderr at 09:02:01 spool-finish mail-1 1 ok
	equals "$output$stderr" mail-1
	run -0 --separate-stderr at 09:02:02 spool-finish --class transient \
	    --delay 1d mail-2 2 retry
	equals "$output$stderr" mail-2
	run -0 --separate-stderr at 09:02:03 spool-pause --by jane --note INC-7
	equals "$output$stderr" ""
	run -0 --separate-stderr at 09:02:04 spool-resume --by jane --note INC-7
	equals "$output$stderr" ""
	# What the reserve gave: an inode and 64K a time (four here, for the
	# retry's new buckets and the pause; counted from reserve/).
	held=$(find "$SPOOL_DIR/reserve" -type f ! -name space | wc -l)
	kb=$(($(stat -c %s "$SPOOL_DIR/reserve/space") / 1024))
	[ "$held" -lt 16 ]
	equals "$kb" $((1024 - (16 - held) * 64))
	run -0 --separate-stderr at 09:02:05 spool-stat
	equals "$(grep -e '^reserve' -e '^done' -e '^new' <<<"$output")" \
	    "$(printf '%-31s %s\n' new 1 done 1 reserve \
	    "${kb}K of 1.0M held, $held of 16 inodes: the disk was full, or is small; an enqueue with room makes it whole")"
	equals "$stderr" ""

	# The log rotated away: the next enqueue makes the reserve whole.
	rm -r "$MNT/big.log" "$MNT/cache"
	run -0 --separate-stderr at 09:03:00 spool-enqueue --id mail-3 <<<ok
	equals "$output$stderr" mail-3
	run -0 --separate-stderr at 09:03:01 spool-stat
	equals "$(grep -c '^reserve' <<<"$output")" 0
}

@test "the hour, 7: a note as a person writes it" {
	echo bad | at 10:00:00 spool-enqueue --id job-sms >/dev/null
	at 10:00:01 spool-claim --owner worker-1 >/dev/null
	at 10:00:02 spool-finish --class dependency-down job-sms 1 permanent >/dev/null
	run -0 --separate-stderr at 10:05:00 spool-redrive --by "Jane Doe" \
	    --note "upstream fixed" job-sms
	equals "$output$stderr" job-sms
	run -0 --separate-stderr at 10:05:01 spool-ls -l new
	equals "$output" "$(cat <<'EOF'
ID       DELIV  DISP      DUE  CLASS  AGE  CYC  BY        NOTE            DETAIL
job-sms  #0     redriven  now  -      1s   2    Jane Doe  upstream fixed  -
EOF
)"
	equals "$stderr" ""
	run -0 --separate-stderr at 10:05:02 spool-show job-sms
	equals "$(grep -e '^by' -e '^note' <<<"$output")" "$(printf '%s\n' \
	    'by           Jane Doe' 'note         upstream fixed')"
	equals "$stderr" ""
	# The audit line keeps eleven words: the text is percent-encoded.
	equals "$(grep ' redrive ' "$SPOOL_DIR/audit/testhost.log" |
	    cut -d' ' -f2,3,7,10)" "redrive job-sms Jane%20Doe upstream%20fixed"
}

@test "the hour, 8: a C program with designated initialisers works on a spool" {
	# The program a user writes, naming only what matters in each
	# structure.  Built against the build tree's archive, one short
	# compile: the install in a prefix and pkg-config are
	# tests/92-install.bats's (which also runs libspool(3)'s example).
	cat >worker.c <<'EOF'
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <spool.h>

/* worker DIR ID ok|permanent: enqueue ID from stdin, claim, finish. */
int
main(int argc, char *argv[])
{
	struct spool_claim_opts o = { 0 };
	struct spool_lease lease;
	struct spool *sp;
	size_t n;
	int ok;

	if (argc != 4)
		errx(100, "usage: worker DIR ID ok|permanent");
	ok = strcmp(argv[3], "ok") == 0;
	if ((sp = spool_open(argv[1])) == NULL)
		err(111, "%s", argv[1]);

	struct spool_job job = { .id = argv[2], .fd = 0 };
	if (spool_enqueue(sp, &job, 1) == -1 || job.res.status != 0)
		errx(111, "enqueue %s: status %d: %s", job.id, job.res.status,
		    strerror(job.res.err));

	if (spool_claim(sp, &o, &lease, 1, &n) != 1)
		errx(111, "claim: nothing");

	struct spool_finish f = { .id = lease.id, .token = lease.token,
	    .outcome = SPOOL_OK };
	struct spool_finish p = { .id = lease.id, .token = lease.token,
	    .outcome = SPOOL_PERMANENT, .class = SPOOL_CLASS_INVALID_INPUT };
	if (!ok)
		f = p;
	if (spool_finish(sp, &f, 1) == -1 || f.res.status != 0)
		errx(111, "finish %s: status %d: %s", f.id, f.res.status,
		    strerror(f.res.err));
	printf("%s: token %" PRIu64 ", attempt %d: %s\n", lease.id,
	    lease.token, lease.attempt, spool_state_name(f.res.state));
	spool_free_leases(&lease, n);
	spool_close(sp);
	return 0;
}
EOF
	top=$BATS_TEST_DIRNAME/..
	# (under make check SAN=1 the archive is sanitized: so is the program)
	san=
	if nm "$top/lib/libspool.a" | grep -q '__asan_'; then
		san=-fsanitize=address,undefined
	fi
	run -0 --separate-stderr cc -std=c99 -Wall -Wextra -Werror $san -I"$top/lib" \
	    -o worker worker.c "$top/lib/libspool.a" -luuid -lxxhash -luring
	equals "$output$stderr" ""
	run -0 --separate-stderr ./worker "$SPOOL_DIR" c-1 ok <<<"hello"
	equals "$output" "c-1: token 1, attempt 1: done"
	equals "$stderr" ""
	run -0 --separate-stderr ./worker "$SPOOL_DIR" c-2 permanent <<<"no amount"
	equals "$output" "c-2: token 2, attempt 1: dead"
	equals "$stderr" ""
	# Every default taken: the deadline the spool's 7 days, the owner
	# HOST:PID, and no delay asked of an outcome that has none.
	run -0 spool-show --json c-1
	equals "$(jq -c '[.state, .deadline - .created, .attempts, .max_attempts]' <<<"$output")" '["done",604800000,1,5]'
	[[ $(jq -r '.history[0].owner' <<<"$output") =~ ^.+:[0-9]+$ ]]
	run -0 spool-show --json c-2
	equals "$(jq -c '[.state, .reason, .class]' <<<"$output")" '["dead","permanent","invalid-input"]'
	equals "$(cat "$SPOOL_DIR/done/c-1")" hello
	fsck_clean
}

@test "the hour, 9: bad inputs: a class misspelt, a bad token, --help, a bad ID, an option after the handler" {
	echo ok | spool-enqueue --id B >/dev/null
	spool-claim --owner jane >/dev/null
	before=$(snapshot)
	run -100 --separate-stderr spool-finish --class rate_limited B 1 retry
	equals "$output" ""
	equals "$stderr" "spool-finish: --class: unknown class 'rate_limited': did you mean 'rate-limited'?"
	run -100 --separate-stderr spool-ls dead --class rate_limited
	equals "$output" ""
	equals "$stderr" "spool-ls: --class: unknown class 'rate_limited': did you mean 'rate-limited'?"
	run -100 --separate-stderr spool-finish B -1 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: B: bad token '-1' (a number from 1 to 10^18-1)"
	run -1 --separate-stderr spool-finish B 2 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: B: stale token: the current token is 1 and the job is in leased/"
	run -100 --separate-stderr spool-enqueue --id 'job 7' </dev/null
	equals "$output" ""
	equals "$stderr" "spool-enqueue: --id: bad value (letters, digits, '.', '_', '-', starting with a letter or digit, at most 128 bytes)"
	run -100 --separate-stderr spool-redrive --by jane --note INC-3
	equals "$output" ""
	equals "$stderr" "usage: spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] [--dry-run] ID ..."
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr spool-claim --help
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
usage: spool-claim [-d DIR] [--lease DUR] [--owner NAME] [-n N]
  -d DIR        the spool (default: $SPOOL_DIR)
  --lease DUR   the lease's length (default: the spool's lease, 30s)
  --owner NAME  who holds the lease (default: HOST:PID)
  -n N          claim up to N jobs, 1 to 256 (default: 1)
EOF
	run -0 --separate-stderr spool-finish B 1 ok
	equals "$output" B
	equals "$stderr" ""
	# spool-run's options end at the handler: a word after it that is one
	# of them is named.  (--idle-exit ends this one; without it, it would
	# run on, as a worker does.)
	echo ok | spool-enqueue --id C >/dev/null
	run -0 --separate-stderr spool-run -j 4 --idle-exit 300ms --owner worker-1 ./handler.sh --once
	equals "$output" "sent C"
	diff -u - <(runlog <<<"$stderr") <<'EOF'
spool-run: warning: '--once' after the handler is the handler's, not spool-run's: put spool-run's options before the handler, or write -- before the handler to say it is meant
spool-run: T C token=2 attempt=1 exit=0 duration=D outcome=ok class=- state=done
EOF
	equals "$(ids_in done)" "$(printf '%s\n' B C)"
}

@test "the hour, 10: hand edits: a payload edited, jobs moved by hand, spool-fsck" {
	morning
	# The customer's record, fixed by hand in the parked payload.
	sed -i 's/bad/ok/' "$SPOOL_DIR/dead/job-bad"
	run -0 --separate-stderr at 09:20:00 spool-stat
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new                             2
ready                           1
done                            1
dead                            3
damaged                         1
lag                             1h14m
oldest_dead                     1h19m
dead_permanent                  1
dead_exhausted                  2
dead_class_invalid_input        1
dead_class_crashed              1
dead_class_timeout              1
last_action                     -
timeout                         1h00m
EOF
	run -0 --separate-stderr at 09:20:00 spool-ls -l
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
ID         DELIV  DISP     SE   REASON     CLASS          AGE    CYC  BY  NOTE  DETAIL
job-bad    #1     damaged  -    permanent  invalid-input  1h19m  1    -   -     exit 65: no such customer
job-crash  #1     parked   yes  exhausted  crashed        1h19m  1    -   -     signal 9: about to die
job-hang   #1     parked   yes  exhausted  timeout        1h19m  1    -   -     timed out after 3s
EOF
	# Shown all the same, with what is wrong; and what settles it.
	run -100 --separate-stderr at 09:20:00 spool-show job-bad
	diff -u - <(pids <<<"$output") <<'EOF'
id           job-bad
damaged      its file is not the size its record says: edited by hand, or torn
state        dead
disposition  parked
since        2026-11-30T08:01:00.000Z (1h19m ago)
created      2026-11-30T08:00:15.000Z
deadline     2026-12-07T08:00:15.000Z
trace        -
payload      4 bytes, xxh3 cf85d1bb72d6c00d
token        3
attempts     1 of 5
cycles       1
reason       permanent
class        invalid-input
detail       exit 65: no such customer
side-effect  no
acted        -

CYC  ATT  TOKEN  OWNER     CLAIMED                   ENDED                     END        CLASS          DETAIL
1    1    3      worker-1  2026-11-30T08:01:00.000Z  2026-11-30T08:01:00.000Z  permanent  invalid-input  exit 65: no such customer

TIME                      EVENT    TOKEN  ATTEMPT  CYCLE  ACTOR     REASON     CLASS          PREV  NOTE  WRITER
2026-11-30T08:00:15.000Z  enqueue  0      0        1      -         -          -              -     -     testhost:PID
2026-11-30T08:01:00.000Z  claim    3      1        1      worker-1  -          -              -     -     testhost:PID
2026-11-30T08:01:00.000Z  park     3      1        1      worker-1  permanent  invalid-input  -     -     testhost:PID
EOF
	equals "$stderr" "spool-show: job-bad: its payload is not the size its record says: changed by hand, or torn; check it, then spool-redrive --edited or spool-drop"
	run -1 --separate-stderr spool-fsck
	equals "$output" "job-bad: its payload is 3 bytes, its record says 4: changed by hand, or torn; check it, then spool-redrive --edited or spool-drop"
	equals "$stderr" ""
	run -1 --separate-stderr at 09:21:00 spool-redrive --by jane --note INC-3 job-bad
	equals "$output" ""
	equals "$stderr" "spool-redrive: job-bad: its payload is not the one enqueued (changed by hand?): check it, then redrive with --edited to send it as it is"
	run -0 --separate-stderr at 09:21:00 spool-redrive --by jane --note INC-3 --edited job-bad
	equals "$output" job-bad
	equals "$stderr" ""
	fsck_clean
	# The retry, due since 08:06, then the edited job, due since 09:21.
	run -0 --separate-stderr at 09:22:00 spool-run --max-jobs 2 --owner worker-1 ./handler.sh
	equals "$output" "$(printf '%s\n' "sent job-flaky" "sent job-bad")"
	diff -u - <(runlog <<<"$stderr") <<'EOF'
spool-run: T job-flaky token=6 attempt=2 exit=0 duration=D outcome=ok class=- state=done
spool-run: T job-bad token=7 attempt=1 exit=0 duration=D outcome=ok class=- state=done
EOF
	# A redrive and a drop by hand, as a maildir user makes them.
	mv "$SPOOL_DIR/dead/job-crash" "$SPOOL_DIR/new/"
	mv "$SPOOL_DIR/dead/job-hang" "$SPOOL_DIR/done/"
	run -0 --separate-stderr at 09:30:00 spool-stat
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new                             1
done                            3
damaged                         2
cycles2                         1
redriven_done                   1
last_action                     redrive by jane at 2026-11-30T09:21:00.000Z (9m00s ago)
timeout                         1h00m
EOF
	# (spool-fsck reads the sidecars in directory order: sorted)
	run -1 --separate-stderr at 09:30:00 spool-fsck
	diff -u - <(LC_ALL=C sort <<<"$output") <<'EOF'
job-crash: moved by hand from dead/ to new/job-crash: spool-fsck --repair puts it back; its side effect may have happened: reconcile it, then spool-redrive --reconciled
job-hang: moved by hand from dead/ to done/job-hang: spool-fsck --repair adopts it as a drop
EOF
	equals "$stderr" ""
	run -0 --separate-stderr at 09:31:00 spool-fsck --repair
	diff -u - <(LC_ALL=C sort <<<"$output") <<'EOF'
job-crash: moved by hand from dead/ to new/job-crash: put back; its side effect may have happened: reconcile it, then spool-redrive --reconciled
job-hang: moved by hand from dead/ to done/job-hang: adopted as a drop by hand
EOF
	equals "$stderr" ""
	fsck_clean
	equals "$(ids_in new)" job-report
	equals "$(ids_in dead)" job-crash
	equals "$(ids_in done)" "$(printf '%s\n' job-bad job-flaky job-hang job-ok)"
	run -0 --separate-stderr at 09:32:00 spool-stat
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new                             1
done                            4
dropped                         1
dead                            1
hand_edits                      1
cycles2                         1
oldest_dead                     1h31m
redriven_done                   1
dead_exhausted                  1
dead_class_crashed              1
last_action                     drop by hand at 2026-11-30T09:31:00.000Z (1m00s ago)
timeout                         1h00m
EOF
	equals "$(audit_events | tail -n 1)" "drop job-hang 5 1 1 hand exhausted timeout -"
	check_invariants
}
