#!/usr/bin/env bats
# spool(7), HANDLING DEAD JOBS BY HAND, is one incident from the alert to
# the all-clear.  This test makes the spool the incident left, then runs
# every command of that section, in order, at the times the section
# gives, and compares what each prints with what the page shows, so the
# page and the commands cannot drift apart.

load helpers
load examples

PAGE="$BATS_TEST_DIRNAME/../man/spool.7"

# at_ms MS CMD...: CMD at MS milliseconds after 08:00.
at_ms() {
	local ms=$1
	shift
	SPOOL_TEST_NOW=$((T0 + ms)) "$@"
}

# The spool of the incident.  At 08:00 five orders are enqueued; from
# 08:01 the ledger answers 503, so the three settlements spend their five
# attempts and park exhausted; the charge times out after its request was
# sent; one order has no amount.
incident() {
	local n k action
	for n in 1 2 3 4 5; do
		case $n in 4) action=charge ;; *) action=settle ;; esac
		at_ms $((n * 1000)) spool-enqueue --id order-184$n \
		    --trace req-7f3$n <<<"order=184$n action=$action" >/dev/null
	done
	at_ms 60000 spool-claim --owner worker-1 -n 5 >/dev/null
	at_ms 60410 spool-finish --class unknown-side-effect \
	    --detail 'timeout after POST /charges' order-1844 "$(lease_token order-1844)" retry >/dev/null
	at_ms 60520 spool-finish --class invalid-input --detail 'amount missing' \
	    order-1845 "$(lease_token order-1845)" permanent >/dev/null
	for k in 1 2 3 4 5; do
		[ $k -eq 1 ] || at_ms $((k * 60000)) spool-claim \
		    --owner worker-$((k % 2 + 1)) -n 3 >/dev/null
		for n in 1 2 3; do
			at_ms $((k * 60000 + n * 100)) spool-finish \
			    --class dependency-down \
			    --detail 'ledger: 503 Service Unavailable' \
			    order-184$n "$(lease_token order-184$n)" retry >/dev/null
		done
	done
	diff -u - <(ids_in dead) <<EOT
order-1841
order-1842
order-1843
order-1844
order-1845
EOT
}

# The workers, running again, take every job and finish it ok.
workers() {
	local id tok attempt path
	at "$1" spool-claim --owner worker-1 -n 10 >"$BATS_TEST_TMPDIR/claimed"
	while IFS=$'\t' read -r id tok attempt path; do
		at "$1" spool-finish "$id" "$tok" ok >/dev/null
	done <"$BATS_TEST_TMPDIR/claimed"
}

# step HH:MM:SS FIRST: the section's next display, whose first command
# must begin with FIRST, run at that time, command by command, in the
# spool's directory.
step() {
	ex_export SPOOL_TEST_NOW="$(at "$1" printenv SPOOL_TEST_NOW)"
	ex_step "$2"
}

@test "spool(7): the incident, from the alert to the all-clear, as the page shows it" {
	export SPOOL_HOST=vm
	incident
	ex_start "$PAGE" "HANDLING DEAD JOBS BY HAND" "$SPOOL_DIR"
	# The alert, then a look.
	step 08:35:00 "spool-stat --warn 'dead>0'"
	step 08:36:00 "spool-stat"
	step 08:36:00 "spool-ls -l"
	step 08:36:00 "spool-show order-1844"
	# Decide and act.
	step 08:37:00 "spool-pause"
	step 08:40:00 "spool-resume"
	step 08:41:00 "spool-redrive --by ops --note INC-4411 order-1844"
	step 08:42:00 "spool-redrive --by ops --note INC-4411 --all"
	step 08:42:00 "spool-redrive --by alice"
	step 08:43:00 "spool-drop"
	# Verify, once the workers have run the redriven jobs.
	workers 08:45:00
	step 08:50:00 "spool-stat"
	step 08:50:00 "grep -hE"
	# Every display of the section was run.
	ex_end
	equals "$(ids_in dead)" ""
	equals "$(cat "$SPOOL_DIR/done/order-1845")" "order=1845 action=settle"
	check_invariants
	fsck_clean
}

@test "spool(7): the section's commands are the commands the test runs" {
	# Each "$ " line is a command the incident test runs: none is added
	# to the page without the test knowing its place.
	diff -u - <(ex_blocks "$PAGE" "HANDLING DEAD JOBS BY HAND" | cut -f2- | sed -n 's/^\$ \([a-z-]*\).*/\1/p') <<EOT
spool-stat
spool-stat
spool-ls
spool-show
cat
spool-pause
spool-stat
spool-resume
spool-redrive
spool-redrive
spool-redrive
spool-redrive
spool-redrive
spool-drop
spool-stat
spool-stat
grep
EOT
}

@test "every command has a page, installed by make install, and a row in the README" {
	top="$BATS_TEST_DIRNAME/.."
	cmds=$(cd "$top/bin" && ls spool-*.c | sed 's/\.c$//')
	make -s -C "$top" install DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/usr >/dev/null
	man1="$BATS_TEST_TMPDIR/root/usr/share/man/man1"
	for c in $cmds; do
		[ -x "$BATS_TEST_TMPDIR/root/usr/bin/$c" ]
		[ -s "$man1/$c.1" ] || { echo "no page for $c" >&2; return 1; }
		# The page, or the page it points to, is named after the command.
		page=$man1/$c.1
		if [[ $(head -n 1 "$page") = ".so "* ]]; then
			page=$BATS_TEST_TMPDIR/root/usr/share/man/$(head -n 1 "$page" | cut -d' ' -f2)
		fi
		sed -n '/^\.Sh NAME/,/^\.Nd/p' "$page" | grep -qx "\.Nm $c\( ,\)\{0,1\}"
		grep -q "^| \[$c(1)\]\|^| .*, \`$c\` |" "$top/README.md" ||
		    { echo "no row for $c in README.md" >&2; return 1; }
	done
	[ -s "$BATS_TEST_TMPDIR/root/usr/share/man/man7/spool.7" ]
}
