#!/bin/sh
# make demo: a whole life of a spool on a throw-away directory.  Jobs are
# enqueued; spool-run runs a handler for each; one keeps failing until its
# attempts are spent, one fails for good, one loses the answer of the
# service it called.  Then an operator does what spool(7), "HANDLING DEAD
# JOBS BY HAND", says: spool-stat, spool-ls -l dead, spool-show; a redrive,
# one refused until the side effect is reconciled, a drop; spool-stat again.
#
# From the source tree it runs the commands of bin/; installed (as
# share/doc/spool/examples/demo.sh), those on PATH.  It needs nothing but
# them and a POSIX shell.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$top/bin/spool-init" ]; then
	PATH="$top/bin:$PATH"
fi
command -v spool-init >/dev/null 2>&1 || {
	echo "demo.sh: no spool commands: run make, or install spool" >&2
	exit 100
}
SPOOL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/spool-demo.XXXXXX")/spool
export PATH SPOOL_DIR
trap 'rm -rf "$(dirname "$SPOOL_DIR")"' EXIT
say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
# run_status N CMD...: CMD must exit N (a refusal is exit status 1); its
# message is shown in its place.
run_status() {
	want=$1
	shift
	printf '$ %s\n' "$*"
	rc=0
	"$@" 2>&1 || rc=$?
	[ "$rc" -eq "$want" ] || { echo "demo.sh: exit status $rc, not $want" >&2; exit 1; }
	echo "(exit status $rc)"
}

say "A new spool at $SPOOL_DIR"
run spool-init
# Quick retries for the demo: backoff from 50ms (the default is 1s).
sed 's/^backoff=.*/backoff=50ms/' "$SPOOL_DIR/config" >"$SPOOL_DIR/config.new"
mv "$SPOOL_DIR/config.new" "$SPOOL_DIR/config"

say "Enqueue five jobs (references, not snapshots: the worker looks them up)"
echo "invoice 1842 for customer 7" | run spool-enqueue --id order-1842
echo "invoice 1843 for customer 8" | run spool-enqueue --id order-1843
echo "invoice 1844 for customer 9, by mail" | run spool-enqueue --id order-1844 --max-attempts 3
echo "invoice 1845 for customer 9999" | run spool-enqueue --id order-1845
echo "refund 1846 for customer 7, by the bank" | run spool-enqueue --id order-1846

# The outside world: the mail server is down, customer 9999 does not
# exist, and the bank takes the refund but its answer is lost.
WORLD=$(dirname "$SPOOL_DIR")
touch "$WORLD/mail-server-down"

say "The worker is spool-run; its handler answers with its exit status:"
HANDLER=$WORLD/handler
cat >"$HANDLER" <<'SH'
#!/bin/sh
payload=$(cat)
outcome=ok status=0
case $payload in
*9999*)	outcome=permanent status=65 ;;	# EX_DATAERR: invalid-input, parks
*mail*)	if [ -e "$WORLD/mail-server-down" ]; then
		outcome=retry status=75		# EX_TEMPFAIL: retry, with a class
		echo class=dependency-down >"$SPOOL_RESULT"
	fi ;;
*bank*)	if [ ! -e "$WORLD/bank-checked" ]; then
		outcome=unknown status=75	# the refund may have been made
		echo class=unknown-side-effect >"$SPOOL_RESULT"
	fi ;;
esac
printf '  claimed %s token %s attempt %s: "%s" -> %s\n' "$SPOOL_JOB_ID" \
    "$SPOOL_TOKEN" "$SPOOL_ATTEMPT" "$payload" "$outcome"
exit $status
SH
chmod +x "$HANDLER"
sed -n '/^case/,/^esac/p' "$HANDLER"
export WORLD
# Runs jobs until nothing has been due for half a second.  Its log, one
# line a delivery, is shown with the handler's lines.
worker() {
	run spool-run --owner demo-worker --idle-exit 500ms -- "$HANDLER" 2>&1
}
worker

say "The operator: how is the spool?"
run spool-stat

say "Which jobs are parked, and why"
run spool-ls -l dead

say "One job's whole story: its record, every delivery, its audit lines"
run spool-show order-1844

say "The mail server is back: redrive order-1844"
rm "$WORLD/mail-server-down"
run spool-redrive --by ops --note INC-4411 order-1844

say "order-1846 may have had its effect: its redrive is refused"
run_status 1 spool-redrive --by ops --note INC-4411 order-1846

say "The bank says the refund was not made: redrive it, reconciled"
touch "$WORLD/bank-checked"
run spool-redrive --by ops --note INC-4411 --reconciled order-1846

say "Customer 9999 does not exist: drop order-1845 (it is kept in done/)"
run spool-drop --by ops --note INC-4411 order-1845

say "The worker runs the redriven jobs"
worker

say "Verify: nothing parked, nothing waiting"
run spool-stat
run spool-ls -l dead
run spool-show order-1846
