#!/bin/bash
# What lookupcache=none costs: job cycles per second (enqueue, claim,
# finish ok) through one spool-batch on one host of the NFS lab
# (tests/nfslab.sh), on its mount with lookupcache=none and on its mount
# of the same export with the kernel's default caches, in one run and
# alternating, medians of ROUNDS rounds.  One process makes every cycle,
# so a command's slow start in the lab's kernels is not counted.  The
# spools are in multi-host mode; the check would refuse the default
# mount, so the commands are the test build's, given a mount table that
# lets both through, as tests/multihost does.  As root (make bench-nfs).
# Writes bench/results/nfs-lookupcache.csv.
#
# usage: bench/nfscache.sh [-n CYCLES] [-r ROUNDS]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cycles=300 rounds=3
while getopts n:r: o; do
	case $o in
	n) cycles=$OPTARG ;;
	r) rounds=$OPTARG ;;
	*) echo "usage: bench/nfscache.sh [-n CYCLES] [-r ROUNDS]" >&2; exit 100 ;;
	esac
done
labname=bench-nfs
. "$top/tests/nfslab.sh"

# The cycles, in the host: a bash coprocess speaks to spool-batch.
cat >"$lab/cycle" <<'EOF'
#!/bin/bash
spool=$1 n=$2
coproc B { exec "$top/tests/bin/spool-batch" -d "$spool"; }
read -r _ <&"${B[0]}"
ans() {
	local st nout nerr i l
	read -r st nout nerr <&"${B[0]}"
	out=()
	for ((i = 0; i < nout + nerr; i++)); do read -r l <&"${B[0]}"; out+=("$l"); done
	[ "$st" = 0 ] || { echo "cycle: status $st: ${out[*]}" >&2; exit 1; }
}
t0=$EPOCHREALTIME
for ((i = 0; i < n; i++)); do
	printf 'enqueue --bytes 3\njob\n' >&"${B[1]}"; ans
	echo claim >&"${B[1]}"; ans
	IFS=$'\t' read -r id tok _ <<<"${out[0]}"
	echo "finish $id $tok ok" >&"${B[1]}"; ans
done
awk -v n="$n" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", n / (b - a) }'
EOF
chmod +x "$lab/cycle"

for m in mnt mnt-cached; do
	printf '4%d 1 0:9%d / %s rw - nfs4 srv:/export rw,vers=4.1,hard,lookupcache=none,local_lock=none\n' \
	    "${#m}" "${#m}" "$lab/$m"
done >"$lab/mountinfo"
export SPOOL_TEST_MOUNTINFO=$lab/mountinfo
declare -A got
for r in $(seq 1 "$rounds"); do
	for m in mnt mnt-cached; do
		d=$lab/$m/bench-$r
		"$on" 1 "$top/tests/bin/spool-init" -d "$d" >/dev/null &&
		    "$on" 1 sh -c 'printf "multi-host=yes\nskew=5s\n" >>"$1/config"' \
		    sh "$d" || exit 1
		v=$("$on" 1 env top="$top" "$lab/cycle" "$d" "$cycles") || exit 1
		got[$m]="${got[$m]:-} $v"
		echo "bench-nfs: round $r, $m: $v cycles/s" >&2
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
a=$(median <<<"${got[mnt]}")
b=$(median <<<"${got[mnt-cached]}")
ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
mkdir -p "$top/bench/results"
{
	echo "mount,cycles_per_s"
	echo "lookupcache=none,$a"
	echo "default,$b"
} >"$top/bench/results/nfs-lookupcache.csv"
printf '%-32s %10s\n' mount cycles/s "vers=4.1,hard,lookupcache=none" "$a" \
    "vers=4.1,hard" "$b"
echo "ratio $ratio (one spool-batch on one host; $cycles cycles, median of $rounds rounds)"
# A round with a server restart in it waits out the grace period.
echo "(the server ended and started again $(nfs_restarts) time(s) in the run)"
