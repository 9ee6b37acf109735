#!/bin/sh
# fsyncs.sh BINDIR SCRATCH: row 7, the fsync and fdatasync calls of each
# command, counted by strace, beside the count that spool-layout.md
# ("fsyncs per transition") justifies.  Prints CSV lines
#
#	fsync,TRANSITION,MEASURED,EXPECTED,RENAMES,WHAT
#
# WHAT names what was synced, wait after wait ("sidecar audit+done/" for
# a drop: "+" joins what is synced side by side, in one wait, "x256"
# counts a batch's repeats), from strace -y.  BINDIR holds the test
# build's commands (tests/bin) and tests/lib/finishclaim, for two of
# their hooks.  The clock is pinned
# (SPOOL_TEST_NOW), so that which buckets exist, and whether the
# next-expiry hint has passed, is the same on every run: the counts are
# exact, not averages.  SPOOL_TEST_NO_URING=1 makes the syncs of one wait
# through threads rather than io_uring, whose syncs strace cannot see:
# the same syncs, at the same points.  Nothing else differs from the
# installed commands.  The spool is on the default file system.
set -eu

bin=$1
scratch=$2
s=$scratch/spool
p=$scratch/park
ks=$scratch/keyed
mkdir -p "$scratch"
printf 'payload\n' >"$scratch/payload"
i=0
while [ $i -lt 256 ]; do
	printf 'job %d\n' $i >"$scratch/f$i"
	i=$((i + 1))
done

# The start of a middle bucket (2^16 ms), plus 1 s: every time used below
# falls in it, so which buckets get made is known.
now=$(date +%s%3N)
t0=$((now / 65536 * 65536 + 1000))

# The syncs and renames counted, and the calls that part one wait from the
# next (see what, below): no process opens, closes or changes anything
# while it waits.
traced=fsync,fdatasync,rename,renameat,renameat2
traced=$traced,write,pwrite64,unlink,unlinkat,mkdir,mkdirat,openat,close

# count NAME EXPECTED TIME COMMAND ...: run it under strace, print the line.
# The command must exit $want (0 unless set for it).
want=0
count() {
	name=$1 expected=$2 t=$3
	shift 3
	log=$scratch/strace.$name
	st=0
	SPOOL_TEST_NOW=$t SPOOL_TEST_NO_URING=1 strace -f -qq -y -o "$log" \
	    -e trace="$traced" "$@" \
	    >"$scratch/out.$name" || st=$?
	if [ $st -ne $want ]; then
		echo "fsyncs.sh: $name: exit $st, not $want: $*" >&2
		exit 1
	fi
	want=0
	# A call another thread interrupts shows as "<... fdatasync
	# resumed>) = 0": count those too.
	n=$(grep -c -E 'f(data)?sync(\(| resumed>).*= 0$' "$log" || true)
	r=$(grep -c -E 'rename[a-z0-9]*(\(| resumed>).*= 0$' "$log" || true)
	echo "fsync,$name,$n,$expected,$r,$(what "$log")"
}

# what LOG: the objects synced, named as spool-layout.md names them, one
# wait after another.  The syncs of one wait run side by side in threads
# (SPOOL_TEST_NO_URING), in no set order: a wait is a run of syncs with
# no open, close, write, rename, unlink or mkdir between them, shown as
# one group, its members joined by "+" in the order the layout's table
# names them.
what() {
	awk -v s1="$s/" -v s2="$p/" -v s3="$ks/" '
	BEGIN {
		norder = split("payload sidecar paused tmp/ meta/ audit audit/ " \
		    "new/ top middle leaf leased/ done/ dead/ slots/k/ " \
		    "slots/ spool/ next-expiry tokens", order, " ")
		for (k = 1; k <= norder; k++)
			rank[order[k]] = k
	}
	/f(data)?sync\(/ {
		if (!match($0, /<[^>]*>/))
			next
		f = substr($0, RSTART + 1, RLENGTH - 2)
		if (index(f, s1) == 1)
			f = substr(f, length(s1) + 1)
		else if (index(f, s2) == 1)
			f = substr(f, length(s2) + 1)
		else if (index(f, s3) == 1)
			f = substr(f, length(s3) + 1)
		else if (f "/" == s1 || f "/" == s2 || f "/" == s3)
			f = "."
		n = split(f, c, "/")
		if (c[1] == "tmp" && c[2] ~ /^paused,/) w = "paused"
		else if (c[1] == "tmp") w = n > 1 ? "payload" : "tmp/"
		else if (c[1] == "meta") w = n > 1 ? "sidecar" : "meta/"
		else if (c[1] == "audit") w = n > 1 ? "audit" : "audit/"
		else if (c[1] == "new") w = n == 4 ? "leaf" : n == 3 ? \
		    "middle" : n == 2 ? "top" : "new/"
		else if (c[1] == ".") w = "spool/"
		else if (c[1] == "slots") w = n > 1 ? "slots/" c[2] "/" : "slots/"
		else if (n == 1 && (c[1] == "leased" || c[1] == "done" || \
		    c[1] == "dead")) w = c[1] "/"
		else w = c[1]
		if (!(w in rank))
			rank[w] = norder + (++nother)
		cnt[w]++
		next
	}
	/(write|pwrite64|rename[a-z0-9]*|unlink|unlinkat|mkdir|mkdirat|openat|close)\(/ {
		flush()
	}
	function flush(   j, k, w, sep, m, ws) {
		m = 0
		for (w in cnt)
			ws[++m] = w
		if (m == 0)
			return
		# by rank: a handful of names, sorted by insertion
		for (k = 2; k <= m; k++)
			for (j = k; j > 1 && rank[ws[j - 1]] > rank[ws[j]]; j--) {
				w = ws[j]; ws[j] = ws[j - 1]; ws[j - 1] = w
			}
		sep = out != "" ? " " : ""
		for (k = 1; k <= m; k++) {
			out = out sep ws[k] (cnt[ws[k]] > 1 ? "x" cnt[ws[k]] : "")
			sep = "+"
		}
		delete cnt
	}
	END {
		flush()
		print out
	}' "$1"
}

# quiet TIME COMMAND ...: set-up steps, not counted.
quiet() {
	t=$1
	shift
	SPOOL_TEST_NOW=$t "$@" >"$scratch/quiet.out"
}

lease() {	# ID and token of the first claim line
	awk -F '\t' 'NR == 1 { print $1, $2 }' "$1"
}

"$bin/spool-init" -d "$s"
"$bin/spool-init" -d "$p"

# enqueue: payload, sidecar, tmp/, meta/ (first cycle), the leaf bucket and
# the three directories above it (new/, the top and the middle bucket),
# audit log.  The spool's first command also creates its audit file, and
# fsyncs audit/ for that name.
count enqueue-first 10 $t0 "$bin/spool-enqueue" -d "$s" --id e1 \
    "$scratch/payload"
count enqueue 9 $t0 "$bin/spool-enqueue" -d "$s" --id e2 "$scratch/payload"
count enqueue-new-leaf 9 $((t0 + 16)) "$bin/spool-enqueue" -d "$s" --id e3 \
    "$scratch/payload"
# A batch: one payload and one sidecar fdatasync per job; tmp/, meta/, the
# bucket path and the audit log once.
files=$(i=0; while [ $i -lt 256 ]; do printf '%s ' "$scratch/f$i";
    i=$((i + 1)); done)
# shellcheck disable=SC2086
count enqueue-256 519 $t0 "$bin/spool-enqueue" -d "$s" $files

# claim: the first one finds no next-expiry hint, scans leased/ and
# writes one, unsynced, and reserves the spool's first block of tokens
# (+1), so that tokens is not synced again in its wait; after that,
# sidecar + leased/ + audit + tokens.
count claim-first 4 $t0 "$bin/spool-claim" -d "$s"
count claim 4 $t0 "$bin/spool-claim" -d "$s"
cp "$scratch/out.claim" "$scratch/c1"
# 100 jobs: one sidecar each, leased/, the audit log and tokens per group
# of 64.
count claim-100 106 $t0 "$bin/spool-claim" -d "$s" -n 100

# finish: sidecar + the directory moved into (for a retry or a release, the
# bucket path) + audit.
# shellcheck disable=SC2046
set -- $(lease "$scratch/c1")
count finish-ok 3 $t0 "$bin/spool-finish" -d "$s" "$1" "$2" ok
doneid=$1
# A worker's finish and its next claim in one call (spool-run's): both
# sidecars + audit (each call's write) + done/ + leased/ + tokens, one
# wait.
quiet $t0 "$bin/spool-claim" -d "$s"
# shellcheck disable=SC2046
set -- $(lease "$scratch/quiet.out")
count finish-claim 7 $t0 "$bin/finishclaim" "$s" "$1" "$2" ok 1
# shellcheck disable=SC2046
set -- $(awk '$1 == "claimed" { print $2, $3 }' "$scratch/out.finish-claim")
quiet $t0 "$bin/spool-finish" -d "$s" "$1" "$2" ok
awk -F '\t' '{ print $1, $2, "ok" }' "$scratch/out.claim-100" \
    >"$scratch/lines"
count finish-100 102 $t0 sh -c "exec \"\$0\" -d \"\$1\" - <\"\$2\"" \
    "$bin/spool-finish" "$s" "$scratch/lines"
# shellcheck disable=SC2046
set -- $(lease "$scratch/out.claim-first")
count finish-permanent 3 $t0 "$bin/spool-finish" -d "$s" "$1" "$2" permanent
parked=$1
quiet $t0 "$bin/spool-claim" -d "$s"
# shellcheck disable=SC2046
set -- $(lease "$scratch/quiet.out")
count finish-retry 6 $t0 "$bin/spool-finish" -d "$s" --delay 0 "$1" "$2" \
    retry
quiet $t0 "$bin/spool-claim" -d "$s"
# shellcheck disable=SC2046
set -- $(lease "$scratch/quiet.out")
count finish-release 6 $t0 "$bin/spool-finish" -d "$s" "$1" "$2" release

# renew: sidecar + audit; no file moves.
quiet $t0 "$bin/spool-claim" -d "$s"
# shellcheck disable=SC2046
set -- $(lease "$scratch/quiet.out")
count renew 2 $t0 "$bin/spool-renew" -d "$s" "$1" "$2"
quiet $t0 "$bin/spool-finish" -d "$s" "$1" "$2" ok

# redrive: sidecar + the bucket path + audit.
count redrive 6 $t0 "$bin/spool-redrive" -d "$s" --by bench --note B-1 \
    "$parked"

# A new cycle of a done ID: no meta/ (the sidecar exists), but done/,
# where the previous cycle's file is removed.
count enqueue-new-cycle 8 $t0 "$bin/spool-enqueue" -d "$s" --id "$doneid" \
    "$scratch/payload"

# reclaim: the lease has run out (30 s), so the hint has passed: a scan of
# leased/, and the hint written again without a sync (spool-layout.md,
# "fsyncs per transition": a scan's time is not synced).
quiet $t0 "$bin/spool-claim" -d "$s"
count reclaim 4 $((t0 + 31000)) "$bin/spool-claim" -d "$s"

# A keyed claim, in a spool of its own whose config has limit.k=1000: one
# more wait, before the claim's, for slots/k/ (spool-layout.md, "Slots").
# Its first keyed claim also makes slots/ and slots/k/, and syncs slots/
# and the spool directory in that wait (+2).  An unkeyed claim first
# writes the hint and reserves tokens, so that neither is counted.
"$bin/spool-init" -d "$ks"
printf 'limit.k=1000\n' >>"$ks/config"
quiet $t0 "$bin/spool-enqueue" -d "$ks" --id u1 "$scratch/payload"
quiet $t0 "$bin/spool-claim" -d "$ks"
quiet $t0 "$bin/spool-enqueue" -d "$ks" --id k1 --key k "$scratch/payload"
quiet $t0 "$bin/spool-enqueue" -d "$ks" --id k2 --key k "$scratch/payload"
count claim-key-first 7 $t0 "$bin/spool-claim" -d "$ks"
# shellcheck disable=SC2046
set -- $(lease "$scratch/out.claim-key-first")
quiet $t0 "$bin/spool-finish" -d "$ks" "$1" "$2" ok
# The next finds the slot of the job before dead, and removes it.
count claim-key 5 $t0 "$bin/spool-claim" -d "$ks"

# park on claim, in a spool of its own: its deadline passed.  The spool's
# first claim scans, and writes the hint without a sync.
quiet $t0 "$bin/spool-enqueue" -d "$p" --id late --deadline 1s \
    "$scratch/payload"
want=1		# parked, so nothing was claimed
count park-on-claim 3 $((t0 + 2000)) "$bin/spool-claim" -d "$p"

# The operator's actions, each: the record, the directory it changed,
# the audit line.
count drop 3 $((t0 + 2000)) "$bin/spool-drop" -d "$p" --by bench --note B-1 \
    late
quiet $t0 "$bin/spool-enqueue" -d "$s" --id c1 "$scratch/payload"
count cancel 3 $t0 "$bin/spool-cancel" -d "$s" --by bench --note B-1 c1
# A purge also fsyncs meta/ once its sidecars are gone (format 2).
count purge 4 $((t0 + 2000)) "$bin/spool-purge" -d "$p" 'done' late
# pause: the paused file and the spool directory that gained it; resume:
# the directory that lost it; and each its audit line.
count pause 3 $t0 "$bin/spool-pause" -d "$s"
count resume 2 $t0 "$bin/spool-resume" -d "$s"
