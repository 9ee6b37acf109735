#!/bin/sh
# make demo: a whole life of a spool on a throw-away directory.  Jobs are
# enqueued; spool-run runs a handler for each; one keeps failing until its
# attempts are spent, one fails for good; an operator looks in dead/,
# redrives one, and the audit log tells the story.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="$top/bin:$PATH"
SPOOL_DIR=$(mktemp -d /tmp/spool-demo.XXXXXX)/spool
export PATH SPOOL_DIR
say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "A new spool at $SPOOL_DIR"
run spool-init
# Quick retries for the demo: backoff from 50ms (the default is 1s).
sed -i 's/^backoff=.*/backoff=50ms/' "$SPOOL_DIR/config"

say "Enqueue four jobs (references, not snapshots: the worker looks them up)"
echo "invoice 1842 for customer 7" | run spool-enqueue --id order-1842
echo "invoice 1843 for customer 8" | run spool-enqueue --id order-1843
echo "invoice 1844 for customer 9, by mail" | run spool-enqueue --id order-1844 --max-attempts 3
echo "invoice 1845 for customer 9999" | run spool-enqueue --id order-1845

# The outside world: the mail server is down, customer 9999 does not exist.
MAILDOWN=$(dirname "$SPOOL_DIR")/mail-server-down
touch "$MAILDOWN"

say "The worker is spool-run; its handler answers with its exit status:"
HANDLER=$(dirname "$SPOOL_DIR")/handler
cat >"$HANDLER" <<'SH'
#!/bin/sh
payload=$(cat)
outcome=ok status=0
case $payload in
*9999*)	outcome=permanent status=65 ;;	# EX_DATAERR: invalid-input, parks
*mail*)	if [ -e "$MAILDOWN" ]; then	# EX_TEMPFAIL: retry, with a class
		outcome=retry status=75
		echo class=dependency-down >"$SPOOL_RESULT"
	fi ;;
esac
printf '  claimed %s token %s attempt %s: "%s" -> %s\n' "$SPOOL_JOB_ID" \
    "$SPOOL_TOKEN" "$SPOOL_ATTEMPT" "$payload" "$outcome"
exit $status
SH
chmod +x "$HANDLER"
sed -n '/^case/,/^esac/p' "$HANDLER"
export MAILDOWN
# Runs jobs until nothing has been due for half a second.
worker() {
	run spool-run --owner demo-worker --idle-exit 500ms -- "$HANDLER"
}
worker

say "What is parked, and why"
run ls "$SPOOL_DIR/done" "$SPOOL_DIR/dead"
run cat "$SPOOL_DIR/dead/order-1844"
run tail -n 1 "$SPOOL_DIR/meta/order-1844"

say "The mail server is back; the operator redrives order-1844 (not 1845)"
rm "$MAILDOWN"
run spool-redrive --by ops --note INC-4411 order-1844
worker

say "A second redrive of the same job is refused: it is not parked any more"
rc=0
run spool-redrive --by ops --note INC-4411 order-1844 || rc=$?
[ "$rc" -eq 1 ] || { echo "unexpected exit status $rc" >&2; exit 1; }
echo "(exit status 1: a negative answer)"

say "The audit log: one line per transition"
run cat "$SPOOL_DIR"/audit/*.log

say "States at the end"
run ls "$SPOOL_DIR/done" "$SPOOL_DIR/dead"
rm -rf "$(dirname "$SPOOL_DIR")"
