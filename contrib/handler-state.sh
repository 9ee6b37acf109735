#!/bin/sh
# handler-state.sh: a spool-run(1) handler that settles orders.  The job
# names an order ("order=1842"), not its amount: the handler reads what is
# true of the order now and acts only if it still has to, so a retry, a
# takeover or a redrive months later is safe.  Re-check, then act,
# idempotently, under the order's lock.
#
# The "database" is a directory, $ORDERS, of one file per order holding
# "status=open|settled|cancelled fence=TOKEN"; a real handler asks its own
# database the same questions in one transaction.
set -u
result=${SPOOL_RESULT:-/dev/null}
orders=${ORDERS:?set ORDERS to the directory of orders}
ref=$(sed -n 's/^order=\([0-9][0-9]*\)$/\1/p')
[ -n "$ref" ] || { echo "the payload names no order" >&2; exit 65; }
file=$orders/$ref
[ -f "$file" ] || { echo "order $ref: no such order" >&2; exit 65; }

# The receiver's own stand-in for the work: here, nothing to call.
settle() { :; }

# One delivery at a time per order, even a zombie and its successor.
exec 9>"$file.lock" && flock 9 || exit 75

# 1. Re-check: the state now, not the state when the job was enqueued.
read -r status fence <"$file"
case ${status#status=} in
settled)	echo "order $ref: already settled" >&2
		exit 0 ;;
cancelled)	echo class=cancelled >"$result"
		echo "order $ref: cancelled" >&2
		exit 100 ;;
open)		;;
*)		echo "order $ref: unknown $status" >&2
		exit 65 ;;
esac
# A later delivery of this job has been here: this one is a zombie.
if [ "${fence#fence=}" -gt "$SPOOL_TOKEN" ]; then
	echo "order $ref: token $SPOOL_TOKEN is stale" >&2
	exit 75
fi

# 2. Act, and record the new state with the token in one rename: a
#    delivery with a lower token can no longer overwrite it.
settle "$ref" || exit 75
printf 'status=settled fence=%s\n' "$SPOOL_TOKEN" >"$file.tmp"
mv -f "$file.tmp" "$file" || exit 75
echo "order $ref: settled (token $SPOOL_TOKEN)"
