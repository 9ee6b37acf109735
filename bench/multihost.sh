#!/bin/bash
# Claims per second with 1, 2 and 3 hosts on a GlusterFS volume (the lab
# of tests/glusterlab.sh) or on CephFS through ceph-fuse (tests/cephlab.sh),
# beside the same number of claimers on the local disk, measured in one
# run and alternating, medians of ROUNDS rounds.
# Each claimer is a loop of spool-claim + spool-finish ok, one process
# each, for SECS seconds on a spool filled beforehand; the count is of
# claims made.  As root (make bench-multihost).  Writes
# bench/results/multihost-FS.csv.
#
# usage: bench/multihost.sh [-f glusterfs|cephfs] [-t SECS] [-r ROUNDS]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
secs=5 rounds=3 fs=glusterfs
while getopts f:t:r: o; do
	case $o in
	f) fs=$OPTARG ;;
	t) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	*) fs=usage ;;
	esac
done
export PATH="$top/bin:$PATH"
labname=bench-multihost
case $fs in
glusterfs) . "$top/tests/glusterlab.sh"; name=GlusterFS ;;
cephfs) . "$top/tests/cephlab.sh"; name=CephFS ;;
*) echo "usage: bench/multihost.sh [-f glusterfs|cephfs] [-t SECS] [-r ROUNDS]" >&2; exit 100 ;;
esac

local_dir=$(mktemp -d /var/tmp/spool-bench-local.XXXXXX)
trap 'rm -rf "$local_dir"; teardown' EXIT
payloads=$lab/payloads
mkdir -p "$payloads"
for i in $(seq 1 1500); do echo "job $i" >"$payloads/$i"; done

# fill DIR WRAPPER: a fresh spool at DIR with 1500 ready jobs.
fill() {
	${2:+$2 1} spool-init -d "$1" >/dev/null ||
	    { echo "bench-multihost: spool-init $1 failed" >&2; exit 1; }
	# (through host 1: this process's own mount may not see it yet)
	[ -z "$2" ] || "$2" 1 sh -c 'printf "multi-host=yes\nskew=2s\n" >>"$1/config"' \
	    sh "$1" || exit 1
	# (by full path: nsenter -m starts the command in /)
	${2:+$2 1} spool-enqueue -d "$1" "$payloads"/* >/dev/null || exit 1
}

# claimer DIR WRAPPER HOST OUT: claim and finish until SECS are up.
claimer() {
	local end=$(($(date +%s%N) + secs * 1000000000)) n=0 line
	while [ "$(date +%s%N)" -lt "$end" ]; do
		line=$($2 ${3:+$3} spool-claim -d "$1" --owner "c$3$$") || continue
		n=$((n + 1))
		# shellcheck disable=SC2046 # the ID and the token
		$2 ${3:+$3} spool-finish -d "$1" $(cut -f1,2 <<<"$line") ok >/dev/null
	done
	echo "$n" >"$4"
}

# run WHERE HOSTS: claims per second with one claimer per host.
run() {
	local dir wrap h total=0
	if [ "$1" = shared ]; then
		dir=$lab/mnt/spool wrap=$on
	else
		dir=$local_dir/spool wrap=
	fi
	# A fresh spool each time, kept to the end: deleting files here
	# would slow the next round's creates (ext4 here, for minutes).
	dir=$dir.$2.$RANDOM
	fill "$dir" "$wrap"
	for h in $(seq 1 "$2"); do
		if [ -n "$wrap" ]; then
			claimer "$dir" "$wrap" "$h" "$lab/n.$h" &
		else
			claimer "$dir" "" "" "$lab/n.$h" &
		fi
	done
	wait
	for h in $(seq 1 "$2"); do total=$((total + $(cat "$lab/n.$h"))); done
	echo $((total * 10 / secs))	# tenths of a claim per second
}

declare -A got
for r in $(seq 1 "$rounds"); do
	for n in 1 2 3; do
		for where in local shared; do
			got[$where.$n]="${got[$where.$n]:-} $(run "$where" "$n")"
			echo "bench-multihost: round $r, $where, $n claimer(s):${got[$where.$n]##* } tenths/s" >&2
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mkdir -p "$top/bench/results"
csv=$top/bench/results/multihost-$fs.csv
echo "claimers,local_claims_per_s,${fs}_claims_per_s,${fs}_vs_local" >"$csv"
printf '%-10s %14s %16s %10s\n' claimers "local claims/s" "$name claims/s" ratio
for n in 1 2 3; do
	l=$(median <<<"${got[local.$n]}")
	g=$(median <<<"${got[shared.$n]}")
	ratio=$(awk -v g="$g" -v l="$l" 'BEGIN { printf "%.2f", l ? g / l : 0 }')
	printf '%-10s %14.1f %16.1f %10s\n' "$n" "$(awk -v v="$l" 'BEGIN { print v / 10 }')" \
	    "$(awk -v v="$g" 'BEGIN { print v / 10 }')" "$ratio"
	echo "$n,$(awk -v v="$l" 'BEGIN { print v / 10 }'),$(awk -v v="$g" 'BEGIN { print v / 10 }'),$ratio" >>"$csv"
done
echo "(one claimer per host on $name, one process each on the local disk; ${secs}s, median of $rounds rounds)"
