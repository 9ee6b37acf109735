#!/bin/sh
# handler-http.sh URL: a spool-run(1) handler that POSTs the job's payload
# to URL.  The job ID goes as the Idempotency-Key, so a second delivery of
# the same job (delivery is at least once) has its effect once wherever the
# receiver honours the key; the token goes as a fencing number.  The HTTP
# answer becomes the outcome:
#	2xx			ok
#	429			retry, class rate-limited, after its Retry-After
#	5xx, or no answer	retry, class dependency-down, with backoff
#	other 4xx		permanent, class invalid-input (exit 65)
#	anything else		not understood: exit 1, a crash, retried
set -u
url=${1:?usage: handler-http.sh URL}
result=${SPOOL_RESULT:-/dev/null}
headers=$(mktemp) || exit 111
trap 'rm -f "$headers"' EXIT

# Retry-After as "delay=Ns": seconds, or an HTTP date; nothing if absent.
retry_after() {
	v=$(tr -d '\r' <"$headers" |
	    sed -n 's/^[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:[[:space:]]*//p' |
	    tail -n 1)
	case $v in
	'')	return ;;
	*[!0-9]*)
		t=$(date -d "$v" +%s 2>/dev/null) || return
		v=$((t - $(date +%s)))
		[ "$v" -ge 0 ] || v=0 ;;
	esac
	echo "delay=${v}s"
}

code=$(curl --silent --show-error --max-time 30 --request POST \
    --header "Idempotency-Key: $SPOOL_JOB_ID" \
    --header "Fencing-Token: $SPOOL_TOKEN" \
    --header 'Content-Type: application/octet-stream' \
    --data-binary @- --dump-header "$headers" --output /dev/null \
    --write-out '%{http_code}' "$url") || code=000
case $code in
2??)	exit 0 ;;
429)	echo "class=rate-limited $(retry_after)" >"$result"
	echo "$url: HTTP 429" >&2
	exit 75 ;;
5??|000)
	echo class=dependency-down >"$result"
	echo "$url: HTTP $code" >&2
	exit 75 ;;
4??)	echo "$url: HTTP $code" >&2
	exit 65 ;;
*)	echo "$url: unexpected HTTP $code" >&2
	exit 1 ;;
esac
