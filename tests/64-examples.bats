#!/usr/bin/env bats
# Every EXAMPLES section of every man page, run as the page shows it (see
# tests/examples.bash) and its output compared, on a spool made to be the
# one the page describes, with the clock pinned to the page's times.  A
# display that is not run says why beside it.  spool(7)'s incident is
# tests/69-incident.bats; libspool(3)'s program is built and run by
# tests/92-install.bats.

load helpers
load examples

MAN="$BATS_TEST_DIRNAME/../man"
TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# page NAME: start NAME's EXAMPLES, run from the spool's directory's
# parent, with the clock pinned at 08:00 and these stand-ins: sleep(1)
# moves the clock instead of waiting; each spool-enqueue comes 5 seconds
# after the one before, as a person's would, not in the same bucket of
# new/ (4.096 s) where claims take jobs in directory order; ls(1) prints
# columns, as to a terminal.
page() {
	ex_start "$MAN/$1" EXAMPLES "$BATS_TEST_TMPDIR"
	ex_export SPOOL_TEST_NOW=$T0 COLUMNS=80
	ex_prelude 'shopt -s lastpipe
	sleep() {
		SPOOL_TEST_NOW=$(awk -v t="$SPOOL_TEST_NOW" -v s="$1" \
		    "BEGIN { printf \"%.0f\", t + s * 1000 }")
	}
	spool-enqueue() {
		SPOOL_TEST_NOW=$((SPOOL_TEST_NOW + 5000))
		command spool-enqueue "$@"
	}
	ls() { command ls -C --tabsize=0 "$@"; }'
}

# clock HH:MM:SS: the session's clock from now on.
clock() {
	ex_export SPOOL_TEST_NOW="$(at "$1" printenv SPOOL_TEST_NOW)"
}

@test "spool-claim(1): EXAMPLES" {
	page spool-claim.1
	ex_step 'export SPOOL_DIR=$(mktemp -d)/spool; spool-init'
	ex_step 'echo '"'"'order=1842'
	ex_end
}

@test "spool-enqueue(1): EXAMPLES" {
	page spool-enqueue.1
	ex_step 'export SPOOL_DIR=$(mktemp -d)/spool; spool-init'
	# Generated IDs differ from run to run.
	EX_SED='s/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/UUID/g'
	ex_step "printf 'to=alice"
	ex_step 'spool-enqueue --id report-7'
	clock 08:30:00
	ex_step 'spool-claim --owner worker-1'
	ex_end
}

@test "spool-finish(1): EXAMPLES" {
	page spool-finish.1
	ex_step 'export SPOOL_DIR=$(mktemp -d)/spool; spool-init'
	ex_step 'cd "$SPOOL_DIR"; ls done dead'
	ex_end
}

@test "spool-renew(1): EXAMPLES" {
	page spool-renew.1
	ex_step 'export SPOOL_DIR=$(mktemp -d)/spool; spool-init'
	ex_step "echo 'order=1843"
	ex_end
}

@test "spool-pause(1): EXAMPLES" {
	page spool-pause.1
	ex_cd "$SPOOL_DIR"
	ex_step 'spool-pause --by ops --note CHG-311'
	ex_end
}

@test "spool-cancel(1): EXAMPLES" {
	at 08:00:00 spool-enqueue --id mail-3 <<<"to=user3" >/dev/null
	at 08:00:01 spool-claim --owner worker-1 >/dev/null
	at 08:00:02 spool-finish mail-3 "$(lease_token mail-3)" ok >/dev/null
	at 08:01:00 spool-enqueue --id mail-7 <<<"to=user7" >/dev/null
	at 08:01:01 spool-claim --owner worker-2 >/dev/null
	at 08:02:00 spool-enqueue --id mail-8 <<<"to=user8" >/dev/null
	page spool-cancel.1
	ex_cd "$SPOOL_DIR"
	clock 08:10:00
	ex_step 'spool-cancel --by ops'
	ex_step 'spool-finish mail-7'
	# A run of two mails, the first being sent, and a mail of another;
	# 5 s apart, in buckets of their own (see page).
	at 08:11:00 spool-enqueue --id mail-12 --trace run-12 <<<"to=user12" >/dev/null
	at 08:11:05 spool-enqueue --id mail-13 --trace run-12 <<<"to=user13" >/dev/null
	at 08:11:10 spool-enqueue --id mail-14 --trace run-13 <<<"to=user14" >/dev/null
	at 08:11:15 spool-claim --owner worker-2 >/dev/null
	clock 08:12:00
	ex_step 'spool-ls --trace run-12'
	ex_end
}

@test "spool-drop(1): EXAMPLES" {
	at 08:00:00 spool-enqueue --id order-1844 <<<"order=1844 action=settle" >/dev/null
	at 08:00:01 spool-claim --owner worker-1 >/dev/null
	at 08:00:02 spool-finish --class invalid-input order-1844 \
	    "$(lease_token order-1844)" permanent >/dev/null
	at 08:01:00 spool-enqueue --id order-1842 <<<"order=1842 action=settle" >/dev/null
	page spool-drop.1
	ex_cd "$SPOOL_DIR"
	clock 08:10:00
	ex_step 'spool-drop --by ops'
	ex_step 'spool-ls --reason permanent'
	ex_end
}

# The three parked jobs of spool-ls(1), spool-show(1) and spool-stat(1),
# as the pages see them at 08:28:20: order-1842 failed once, lost its
# lease once, parked as permanent, was redriven and parked again;
# pi_0001.settle has no amount; order-1907 may have charged twice.  One
# job is eligible at a time, so each claim takes the job meant.
three_parked() {
	export SPOOL_HOST=vm
	at 08:11:40 spool-enqueue --id order-1842 --max-attempts 3 \
	    --trace req-5f2a <<<"order=1842 action=settle" >/dev/null
	at 08:11:41 spool-claim --owner vm:4137 >/dev/null
	at 08:11:42 spool-finish --class transient --delay 1s \
	    --detail 'HTTP 503 from ledger' order-1842 "$(lease_token order-1842)" retry >/dev/null
	at 08:11:43 spool-claim --owner vm:4139 --lease 17s >/dev/null
	at 08:12:00 spool-claim --owner vm:4141 >/dev/null
	at 08:12:01 spool-finish --class invalid-input --detail 'amount missing' \
	    order-1842 "$(lease_token order-1842)" permanent >/dev/null
	at 08:13:20 spool-enqueue --id pi_0001.settle <<<"pi=0001 action=settle" >/dev/null
	at 08:13:21 spool-claim --owner vm:4144 >/dev/null
	at 08:13:22 spool-finish --class invalid-input --detail 'amount missing' \
	    pi_0001.settle "$(lease_token pi_0001.settle)" permanent >/dev/null
	at 08:14:00 spool-enqueue --id order-1907 <<<"order=1907 action=charge" >/dev/null
	at 08:14:01 spool-claim --owner vm:4146 >/dev/null
	at 08:14:02 spool-finish --class transient --delay 1s order-1907 \
	    "$(lease_token order-1907)" retry >/dev/null
	at 08:14:03 spool-claim --owner vm:4146 >/dev/null
	at 08:14:04 spool-finish --class transient --delay 56s order-1907 \
	    "$(lease_token order-1907)" retry >/dev/null
	at 08:15:00 spool-claim --owner vm:4146 >/dev/null
	at 08:15:01 spool-finish --class unknown-side-effect \
	    --detail 'charged twice?' order-1907 "$(lease_token order-1907)" retry >/dev/null
	at 08:21:40 spool-redrive --by ops --note INC-4411 order-1842 >/dev/null
	at 08:21:41 spool-claim --owner vm:4150 >/dev/null
	at 08:21:45 spool-finish --class dependency-down --detail 'ledger down' \
	    order-1842 "$(lease_token order-1842)" permanent >/dev/null
	diff -u - <(ids_in dead) <<EOT
order-1842
order-1907
pi_0001.settle
EOT
	clock 08:28:20
}

@test "spool-ls(1): EXAMPLES" {
	page spool-ls.1
	three_parked
	ex_cd "$SPOOL_DIR"
	ex_step 'spool-ls'
	ex_step 'spool-ls --reason exhausted --older-than 1h |'
	ex_step 'spool-ls -0 --reason exhausted'
	ex_end
}

@test "spool-show(1): EXAMPLES" {
	page spool-show.1
	three_parked
	ex_cd "$SPOOL_DIR"
	ex_step 'spool-show order-1842'
	ex_step 'spool-show --json order-1842'
	ex_end
}

@test "spool-stat(1): EXAMPLES" {
	page spool-stat.1
	three_parked
	ex_cd "$SPOOL_DIR"
	ex_step 'spool-stat'
	ex_step 'spool-stat --warn'
	# For node_exporter, from cron: nothing printed, and the file it
	# writes is what spool-stat --prom prints.
	ex_next '* * * * * spool-stat -d /var/spool/jobs --prom'
	mkdir "$BATS_TEST_TMPDIR/textfile"
	cron=$(cut -d' ' -f6- <<<"$EX_TEXT" |
	    sed "s|/var/spool/jobs|$SPOOL_DIR|; s|/var/lib/node_exporter|$BATS_TEST_TMPDIR/textfile|g")
	run -0 --separate-stderr at 08:28:20 sh -c "$cron"
	equals "$output$stderr" ""
	diff -u <(at 08:28:20 spool-stat --prom) "$BATS_TEST_TMPDIR/textfile/spool.prom"
	equals "$(ls "$BATS_TEST_TMPDIR/textfile")" spool.prom
	ex_end
}

@test "spool-init(1): EXAMPLES" {
	page spool-init.1
	ex_step 'export SPOOL_DIR=$(mktemp -d)/spool'
	# The spool of an earlier version: format 1 (tests/fixtures).
	tar -C "$BATS_TEST_TMPDIR" -xzf "$BATS_TEST_DIRNAME/fixtures/format1-spool.tar.gz"
	ex_export SPOOL_DIR="$BATS_TEST_TMPDIR/spool"
	ex_step 'cat "$SPOOL_DIR"/format'
	ex_step 'spool-init -d /tmp'
	ex_skip '$ spool-init -d /tmp/shared-spool --group users' \
	    "it makes a directory outside the test's, for a group 'users' that need not exist, and ls -l shows the user, the date and the file system's sizes"
	ex_end
}

@test "spool-purge(1): EXAMPLES" {
	# Parked two months before the page's 08:00, one flagged exhausted
	# after three attempts.
	local old=$((T0 - 60 * 86400000))
	at_ms $old spool-enqueue --id order-1207 <<<"order=1207" >/dev/null
	at_ms $((old + 1000)) spool-claim --owner worker-1 >/dev/null
	at_ms $((old + 2000)) spool-finish --class invalid-input order-1207 \
	    "$(lease_token order-1207)" permanent >/dev/null
	at_ms $((old + 3000)) spool-enqueue --id order-1201 --max-attempts 3 \
	    <<<"order=1201" >/dev/null
	for k in 1 2 3; do
		at_ms $((old + k * 10000)) spool-claim --owner worker-1 >/dev/null
		at_ms $((old + k * 10000 + 1)) spool-finish --class dependency-down \
		    --delay 0 order-1201 "$(lease_token order-1201)" retry >/dev/null
	done
	equals "$(ids_in dead | tr '\n' ' ')" "order-1201 order-1207 "
	# Jobs done and dropped that the nightly lines keep: the last 1000.
	at_ms $old spool-enqueue --id done-1 <<<"x" >/dev/null
	at_ms $((old + 100000)) spool-claim --owner worker-1 >/dev/null
	at_ms $((old + 100000)) spool-finish done-1 "$(lease_token done-1)" ok >/dev/null
	page spool-purge.1
	ex_cd "$SPOOL_DIR"
	# The crontab's lines, on this spool: they print nothing.
	ex_next '15 3 * * * spool-purge -d /var/spool/orders done'
	while IFS= read -r line; do
		cron=$(cut -d' ' -f6- <<<"$line" | sed "s|/var/spool/orders|$SPOOL_DIR|")
		run -0 --separate-stderr sh -c "$cron"
		equals "$output$stderr" ""
	done <<<"$EX_TEXT"
	equals "$(state_of done-1)" done
	EX_SORT=1 ex_step 'spool-purge --dry-run dead'
	ex_step 'echo order=1201 | spool-enqueue'
	ex_end
}

@test "spool-redrive(1): EXAMPLES" {
	# Five settlements: three spend their one attempt while the ledger
	# is down, one has no amount, one timed out after its charge.
	# Each in a bucket of its own, so that they are claimed in order.
	for n in 1 2 3 4 5; do
		at_ms $((T0 + n * 5000)) spool-enqueue --id order-184$n --max-attempts 1 \
		    <<<"order=184$n action=settle" >/dev/null
	done
	at 08:01:00 spool-claim --owner worker-1 -n 5 | cut -f1,2 >"$BATS_TEST_TMPDIR/claimed"
	while read -r id tok; do
		case $id in
		order-1844) set -- --class invalid-input permanent ;;
		order-1845) set -- --class unknown-side-effect retry ;;
		*) set -- --class dependency-down retry ;;
		esac
		at 08:01:01 spool-finish "${@:1:2}" "$id" "$tok" "$3" >/dev/null
	done <"$BATS_TEST_TMPDIR/claimed"
	[ "$(ids_in dead | wc -l)" -eq 5 ]
	page spool-redrive.1
	clock 08:40:00
	ex_step 'cd "$SPOOL_DIR"; ls dead'
	ex_step 'spool-redrive --by ops --note INC-4411 order-1845 order-9999 ../x'
	# --rate 2/s paces three redrives over a second of real time.
	ex_step 'spool-redrive --by ops --note INC-4411 --all --class dependency-down --dry-run'
	ex_skip '$ spool-redrive --by ops --note INC-4412 --all --reason exhausted --rate 5/s >redriven' \
	    "a thousand jobs at 5 a second are 200 s, and the Control-C is a person's"
	ex_step 'spool-redrive --by ops --note INC-4411 --reconciled order-1845'
	ex_end
}

@test "spool(7): EXAMPLES" {
	local dir=$BATS_TEST_TMPDIR/work bin=$BATS_TEST_TMPDIR/clock-bin c
	page spool.7
	# The worker of the first display, and the handler the page tells of.
	ex_next '#!/bin/sh'
	mkdir "$dir" "$bin"
	printf '%s\n' "$EX_TEXT" >"$dir/worker"
	cat >"$dir/handle" <<'EOT'
#!/bin/sh
read -r to
case $to in *@*) ;; *) echo "$1: no address: $to"; exit 100 ;; esac
case $to,$3 in carol@*,1) exit 75 ;; esac
echo "$1: sent to $to (token $2)"
EOT
	chmod +x "$dir/worker" "$dir/handle"
	# The worker runs in the background: its clock is a file, which
	# stand-ins for the commands read and a stand-in sleep(1) moves.
	echo "$T0" >"$BATS_TEST_TMPDIR/clock"
	cat >"$bin/clocked" <<EOT
#!/bin/sh
clock=$BATS_TEST_TMPDIR/clock
case \$(basename "\$0") in
sleep)	awk -v s="\$1" '{ printf "%.0f\n", \$1 + s * 1000 }' "\$clock" >"\$clock.\$\$" &&
	    mv "\$clock.\$\$" "\$clock"
	exit ;;
spool-enqueue)
	echo \$((\$(cat "\$clock") + 5000)) >"\$clock" ;;
esac
SPOOL_TEST_NOW=\$(cat "\$clock") exec "$TOP/tests/bin/\$(basename "\$0")" "\$@"
EOT
	chmod +x "$bin/clocked"
	for c in sleep spool-init spool-enqueue spool-claim spool-finish; do
		ln -s clocked "$bin/$c"
	done
	ex_cd "$dir"
	ex_export PATH="$bin:$PATH"
	ex_prelude 'unset SPOOL_TEST_NOW
	unset -f spool-enqueue
	# The session waits for the worker to have finished every job.
	sleep() {
		local i=0
		until grep -qs " ok mail-3 " "$SPOOL_DIR"/audit/*.log; do
			[ $((i += 1)) -lt 300 ] || return 1
			command sleep 0.1
		done
	}'
	ex_step 'export SPOOL_DIR=$(mktemp -d)/spool; spool-init'
	ex_step 'for s in new leased done dead'
	ex_end
}

@test "spool-fsck(1): EXAMPLES" {
	local id
	for id in j1 j2 j3; do
		at 09:40:00 spool-enqueue --id $id <<<"payload of $id" >/dev/null
	done
	at 09:41:00 spool-claim --owner w -n 3 >/dev/null
	at 09:41:30 spool-enqueue --id j4 <<<"payload of j4" >/dev/null
	# A finish killed after its move, before its audit line.
	SPOOL_TEST_NOW=1796031750682 SPOOL_TEST_CRASH=finish-moved \
	    spool-finish j3 "$(lease_token j3)" ok >/dev/null 2>&1 || true
	# A claim killed after writing its record.
	SPOOL_TEST_CRASH=claim-recorded at 09:43:00 spool-claim --owner w \
	    >/dev/null 2>&1 || true
	page spool-fsck.1
	ex_cd "$SPOOL_DIR"
	clock 09:50:00
	ex_step 'spool-fsck'
	ex_end
}

# in_file FILE: the display's lines are lines of FILE, in the same order
# (the display may leave lines of FILE out: comments, other settings).
in_file() {
	awk 'NR == FNR { want[++n] = $0; next }
	    k < n && $0 == want[k + 1] { k++ }
	    END { if (k < n) { print "not in order in FILE: " want[k + 1] > "/dev/stderr"; exit 1 } }' \
	    <(printf '%s\n' "$EX_TEXT") "$1"
}

# web_standin: an HTTP server on a free port of 127.0.0.1 (in the file
# port) that answers every POST 200 and appends "KEY BODY" to the file
# posts, KEY its Idempotency-Key.
web_standin() {
	: >"$BATS_TEST_TMPDIR/posts"
	python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(sys.argv[1], "a") as f:
            f.write(self.headers["Idempotency-Key"] + " " + body.decode())
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[2] + ".new", "w") as f:
    f.write(str(s.server_address[1]))
import os; os.rename(sys.argv[2] + ".new", sys.argv[2])
s.serve_forever()' "$BATS_TEST_TMPDIR/posts" "$BATS_TEST_TMPDIR/port" 3>&- &
	WEB=$!
	until [ -s "$BATS_TEST_TMPDIR/port" ]; do sleep 0.05; done
}

teardown() {
	[ -z "${WEB:-}" ] || kill "$WEB"
}

# serve_until "ID ..." CMD: run the worker CMD until each job named is in
# done/ of the worker's spool, stop it with SIGTERM as systemd would; it
# exits 0 and prints one line for each job, done.
all_done() {
	local dir=$1 id
	shift
	for id; do
		[ -e "$dir/done/$id" ] || return 1
	done
}

serve_until() {
	local pid i=0 rc=0 dir
	dir=$(sed 's/.* -d *\([^ ]*\).*/\1/' <<<"$2")
	sh -c "exec $2" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	pid=$!
	until all_done "$dir" $1; do
		[ $((i += 1)) -lt 600 ] || { kill $pid; return 1; }
		sleep 0.05
	done
	kill -TERM $pid
	wait $pid || rc=$?
	[ "$rc" -eq 0 ] || { echo "worker: exit $rc: $2" >&2; cat "$BATS_TEST_TMPDIR/out" >&2; return 1; }
	# Nothing but one line for each delivery, each done.
	diff -u /dev/null <(grep -Ev '^spool-run: [^ ]+ [^ ]+ token=[0-9]+ attempt=1 exit=0 duration=[0-9.]+s outcome=ok class=- state=done$' \
	    "$BATS_TEST_TMPDIR/out")
	equals "$(wc -l <"$BATS_TEST_TMPDIR/out")" "$(wc -w <<<"$1")"
}

@test "spool-run(1): EXAMPLES" {
	page spool-run.1
	# The handlers' code is contrib's, which the session below runs.
	ex_next 'code=$(curl'
	in_file "$TOP/contrib/handler-http.sh"
	# The hooks worker, against a local stand-in for hooks.example.org
	# that answers 200 and logs what it was sent.
	ex_next '$ spool-run -d /var/spool/hooks'
	web_standin
	for n in 1 2 3; do
		spool-enqueue --id hook-$n <<<"event=$n" >/dev/null
	done
	cmd=$(sed 's/^\$ //; s/\\$//' <<<"$EX_TEXT" | tr -d '\n' |
	    sed "s|/var/spool/hooks|$SPOOL_DIR|
		s|/usr/local/libexec/spool/|$TOP/contrib/|
		s|https://hooks.example.org/in|http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")/in|")
	serve_until "hook-1 hook-2 hook-3" "$cmd"
	# Four at once: in any order.
	diff -u - <(LC_ALL=C sort "$BATS_TEST_TMPDIR/posts") <<EOT
hook-1 event=1
hook-2 event=2
hook-3 event=3
EOT
	equals "$(ids_in done | tr '\n' ' ')" "hook-1 hook-2 hook-3 "
	ex_next 'read -r status fence'
	in_file "$TOP/contrib/handler-state.sh"
	ex_cd "$TOP"
	EX_MERGE=1 ex_step 'export SPOOL_DIR=$(mktemp -d)/spool ORDERS=$(mktemp -d); spool-init'
	# The unit's lines are contrib's; run as systemd would run it.
	ex_next '[Service]'
	in_file "$TOP/contrib/spool-run@.service"
	# systemctl start spool-run@hooks, a job, systemctl stop: SIGTERM to
	# the worker alone (KillMode=mixed).
	printf '#!/bin/sh\ncat >>%s/posts\n' "$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/hooks"
	chmod +x "$BATS_TEST_TMPDIR/hooks"
	: >"$BATS_TEST_TMPDIR/posts"
	spool-enqueue --id unit-1 <<<"event=unit" >/dev/null
	cmd=$(sed -n '/^ExecStart=/,/[^\\]$/p' <<<"$EX_TEXT" | sed 's/^ExecStart=//; s/\\$//' |
	    tr -d '\n' | sed "s|%i|hooks|g; s|/usr/local/bin/|$TOP/tests/bin/|
		s|/var/spool/hooks|$SPOOL_DIR|; s|/etc/spool-run/hooks|$BATS_TEST_TMPDIR/hooks|")
	serve_until unit-1 "$cmd"
	equals "$(cat "$BATS_TEST_TMPDIR/posts")" "event=unit"
	ex_skip '*/10 * * * * spool' \
	    'its worker waits a minute of real time for work before it exits'
	ex_end
}

@test "every page's EXAMPLES has its test" {
	local page name
	for page in "$MAN"/*.[1-9]; do
		name=$(basename "$page" | sed 's/\.\([0-9]\)$/(\1)/')
		[ -n "$(ex_blocks "$page" EXAMPLES)" ] || {
			echo "$name has no EXAMPLES" >&2
			return 1
		}
		case $name in
		# Built against the installed library and run there.
		'libspool(3)') grep -q "^@test \"libspool(3)'s example" \
		    "$BATS_TEST_DIRNAME/92-install.bats" ;;
		*) grep -qF "@test \"$name: EXAMPLES\"" "$BATS_TEST_FILENAME" ;;
		esac || { echo "no test runs the EXAMPLES of $name" >&2; return 1; }
	done
}

@test "spool-batch(1): EXAMPLES" {
	page spool-batch.1
	# Answers carry the commands' messages on stdout, in their order.
	EX_MERGE=1 ex_step 'export SPOOL_DIR=$(mktemp -d)/spool; spool-init'
	EX_MERGE=1 ex_step "printf '%s\\n' '[\"claim\""
	# The worker, saved where the session runs; send-invoice a stand-in
	# that says what it was given.
	ex_next '#!/bin/bash'
	printf '%s\n' "$EX_TEXT" >"$BATS_TEST_TMPDIR/worker"
	ex_cd "$BATS_TEST_TMPDIR"
	ex_prelude 'send-invoice() { echo "sent $(cat) (key $2, fence $4)"; }
	export -f send-invoice'
	EX_MERGE=1 ex_step 'for n in 1843 1844'
	ex_end
}

@test "README's spool-batch worker runs as written" {
	# Its block: from "coproc" to the loop's end, indented by four.
	sed -n '/^    coproc S { spool-batch; }$/,/^    done$/s/^    //p' \
	    "$TOP/README.md" >"$BATS_TEST_TMPDIR/worker"
	equals "$(wc -l <"$BATS_TEST_TMPDIR/worker")" 13
	send-invoice() { echo "sent $(cat) (key $2, fence $4)"; }
	export -f send-invoice
	# In buckets of new/ of their own, so claimed in this order.
	at 08:00:00 spool-enqueue --id order-1842 <<<"order=1842" >/dev/null
	at 08:00:05 spool-enqueue --id order-1843 <<<"order=1843" >/dev/null
	at 08:00:10 spool-enqueue --id order-1844 --delay 1h \
	    <<<"order=1844" >/dev/null
	run -0 --separate-stderr at 08:00:15 bash "$BATS_TEST_TMPDIR/worker"
	equals "$output$stderr" "sent order=1842 (key order-1842, fence 1)
sent order=1843 (key order-1843, fence 2)"
	equals "$(ids_in done | tr '\n' ' ')" "order-1842 order-1843 "
	equals "$(ids_in new)" order-1844
	fsck_clean
}

@test "README's Go worker builds and runs as written, on a spool spool-init made" {
	# Its block: from "package main" to the end of main, indented by four.
	local m=$BATS_TEST_TMPDIR/worker
	mkdir "$m"
	sed -n '/^    package main$/,/^    }$/{s/^    //;p;}' "$TOP/README.md" |
	    sed "s|/var/spool/invoices|$SPOOL_DIR|" >"$m/main.go"
	equals "$(wc -l <"$m/main.go")" 18
	equals "$(gofmt -l "$m")" ""
	# As the README says a module finds the package; offline.
	export GOPROXY=off GOFLAGS=-mod=mod GOCACHE="$TOP/go/.cache/build" \
	    GOPATH="$TOP/go/.cache/gopath"
	(cd "$m" && go mod init worker >/dev/null 2>&1 &&
	    go mod edit -require spool@v0.0.0 -replace "spool=$TOP/go" &&
	    go build -o worker .)
	spool-enqueue --id order-1842 <<<"order=1842" >/dev/null
	spool-enqueue --id order-1843 <<<"order=1843" >/dev/null
	"$m/worker" 2>"$BATS_TEST_TMPDIR/log" &
	pid=$!
	for _ in $(seq 200); do
		[ "$(ids_in done | wc -l)" -eq 2 ] && break
		sleep 0.05
	done
	kill "$pid"
	wait "$pid" || true
	equals "$(ids_in done | tr '\n' ' ')" "order-1842 order-1843 "
	equals "$(sed 's/^[0-9/]* [0-9:]* //' "$BATS_TEST_TMPDIR/log" | sort)" \
	    "sending order-1842, fence 1
sending order-1843, fence 2"
	fsck_clean
}
