#!/bin/bash
# qbench's spool-batch client (bench/README.md, rows 3 and 6): one
# spool-batch coprocess on the spool DIR for the whole run, so that its
# start is not timed.  For each number K read from stdin, K job cycles,
# each an enqueue of qbench's 100 bytes, a claim and a finish ok; then one
# line, "K", on stdout.
#
#	batchcycle.sh SPOOL-BATCH DIR cycle	a request at a time, as the
#						coproc worker of README sends
#	batchcycle.sh SPOOL-BATCH DIR group N	N requests in flight under
#						--group N: N enqueues, then N
#						claims, then N finishes
#	batchcycle.sh SPOOL-BATCH DIR rss K	K cycles a request at a time,
#						then spool-batch's peak RSS
#						in KiB (VmHWM), and exit
set -eu
batch=$1 dir=$2 mode=$3 n=${4:-1}
[ "$mode" = group ] || n=1
coproc S { exec "$batch" -d "$dir" --group "$n"; }
pid=$S_PID
read -r hello <&"${S[0]}"
[ "$hello" = "spool-batch 1" ] || { echo "batchcycle: $hello" >&2; exit 1; }
payload=$(printf 'p%.0s' {1..99})
enq=
for ((i = 0; i < n; i++)); do
	enq+=$'enqueue --bytes 100\n'"$payload"$'\n\n'
done

# One answer of one line, status 0: that line in $line.
answer() {
	local st nout nerr
	read -r st nout nerr <&"${S[0]}"
	if [ "$st" != 0 ] || [ "$nout" != 1 ] || [ "$nerr" != 0 ]; then
		echo "batchcycle: answer $st $nout $nerr" >&2
		exit 1
	fi
	IFS= read -r line <&"${S[0]}"
}

# n cycles: n requests written at once, then their n answers, each step.
cycles() {
	local i id token rest fin=
	printf '%s' "$enq" >&"${S[1]}"
	for ((i = 0; i < n; i++)); do answer; done
	for ((i = 0; i < n; i++)); do echo claim; done >&"${S[1]}"
	for ((i = 0; i < n; i++)); do
		answer
		IFS=$'\t' read -r id token rest <<<"$line"
		fin+="finish $id $token ok"$'\n'
	done
	printf '%s' "$fin" >&"${S[1]}"
	for ((i = 0; i < n; i++)); do answer; done
}

if [ "$mode" = rss ]; then
	for ((k = 0; k < $4; k++)); do cycles; done
	awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status"
	exit 0
fi
while read -r k; do
	for ((j = 0; j < k; j += n)); do cycles; done
	echo "$k"
done
