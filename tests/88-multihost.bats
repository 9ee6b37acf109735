#!/usr/bin/env bats
# Multi-host mode on one machine: the config keys, the skew allowance
# before a takeover, host IDs registered in hosts/ and collisions refused,
# the file-system check, the clock shown and warned about, and the bounded
# wait for a lock.  The same across real hosts on GlusterFS and CephFS:
# make check-multihost (tests/multihost).

load helpers

T=1796000000000

multi() {
	printf 'multi-host=yes\nskew=%s\n' "$1" >>"$SPOOL_DIR/config"
}

# hold FILE [SECONDS]: another process holds FILE's lock (for SECONDS, else
# until the test ends), as a lock that a file system's client kept for a
# killed process would be held.  It returns once the lock is held, which
# the holder says in a file: a short hold cannot come and go unseen.
hold() {
	(exec 8<>"$1" && flock -x 8 && : >"$BATS_TEST_TMPDIR/held.$BASHPID" &&
	    exec sleep "${2:-60}") >/dev/null 2>&1 3>&- &
	echo $! >>"$BATS_TEST_TMPDIR/holders"
	until [ -e "$BATS_TEST_TMPDIR/held.$!" ]; do
		kill -0 $! 2>/dev/null || [ -e "$BATS_TEST_TMPDIR/held.$!" ] ||
		    { echo "could not hold $1" >&2; return 1; }
		sleep 0.01
	done
}

teardown() {
	# shellcheck disable=SC2046 # process IDs, one word each
	[ ! -e "$BATS_TEST_TMPDIR/holders" ] ||
	    kill $(cat "$BATS_TEST_TMPDIR/holders") 2>/dev/null || true
}

KEPT="a lock stayed held too long: a file system's client may keep a killed process's lock until it is restarted (see spool(7), Several hosts)"

@test "multi-host=yes needs a skew above 0; a bad value is refused" {
	before=$(snapshot)
	cp "$SPOOL_DIR/config" "$BATS_TEST_TMPDIR/config"
	echo 'multi-host=yes' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-ls
	equals "$stderr" "spool-ls: $SPOOL_DIR/config:12: multi-host=yes: needs a skew above 0, such as skew=2s (see spool(7), FILES)"
	echo 'skew=0' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-ls
	equals "$stderr" "spool-ls: $SPOOL_DIR/config:12: multi-host=yes: needs a skew above 0, such as skew=2s (see spool(7), FILES)"
	sed -i '/^multi-host\|^skew/d' "$SPOOL_DIR/config"
	echo 'multi-host=maybe' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-ls
	equals "$stderr" "spool-ls: $SPOOL_DIR/config:12: multi-host=maybe: not yes or no (see spool(7), FILES)"
	sed -i '/^multi-host/d' "$SPOOL_DIR/config"
	# The test wrote config again: its bytes, not its ctime, are as before.
	equals "$(snapshot | grep -v ' \./config$')" \
	    "$(grep -v ' \./config$' <<<"$before")"
	cmp "$BATS_TEST_TMPDIR/config" "$SPOOL_DIR/config"
	[ ! -e "$SPOOL_DIR/hosts" ]
}

@test "a lease is taken over only skew after it ends, by the taker's clock" {
	multi 5s
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null
	run -0 env SPOOL_TEST_NOW=$T spool-claim --owner w1 --lease 10s
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j1\t1')"
	# Ended, but not skew ago: not taken, and not due for spool-run.
	run -1 env SPOOL_TEST_NOW=$((T + 14999)) spool-claim --owner w2
	equals "$output" ""
	equals "$(state_of j1)" leased
	run -0 env SPOOL_TEST_NOW=$((T + 15000)) spool-claim --owner w2
	equals "$(cut -f1,2,3 <<<"$output")" "$(printf 'j1\t2\t2')"
	grep -q ' ev=claim .* until=1796000045000 prev=1 cls=lease-expired' \
	    "$SPOOL_DIR/meta/j1"
	equals "$(audit_events | tail -n 1)" "reclaim j1 2 2 1 w2 - lease-expired 1"
	fsck_clean
}

@test "without multi-host, a lease is taken over as soon as it ends" {
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null
	SPOOL_TEST_NOW=$T spool-claim --owner w1 --lease 10s >/dev/null
	run -0 env SPOOL_TEST_NOW=$((T + 10000)) spool-claim --owner w2
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j1\t2')"
	[ ! -e "$SPOOL_DIR/hosts" ]
}

@test "each host registers its ID with its machine; fsck knows hosts/" {
	multi 2s
	run -0 spool-ls
	SPOOL_HOST=other run -0 spool-ls
	equals "$(ls "$SPOOL_DIR/hosts")" "$(printf 'other\ntesthost')"
	mine=$(cat "$SPOOL_DIR/hosts/testhost")
	[[ $mine =~ ^machine=[0-9a-f-]+$'\n'?$ ]] || [[ $mine =~ ^machine=hostid-[0-9a-f]+$ ]]
	equals "$(cat "$SPOOL_DIR/hosts/other")" "$mine"
	fsck_clean
}

@test "an ID that another machine used lately is refused; one idle 10 minutes passes" {
	multi 2s
	mkdir "$SPOOL_DIR/hosts"
	echo 'machine=00000000000000000000000000000bad' >"$SPOOL_DIR/hosts/testhost"
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null 2>&1 || true
	before=$(snapshot)
	run -100 --separate-stderr spool-enqueue --id j2 <<<"job"
	equals "$output" ""
	equals "$stderr" "spool-enqueue: $SPOOL_DIR: host ID 'testhost' is in use by another machine (see hosts/ in spool-layout.md): set SPOOL_HOST"
	run -100 --separate-stderr spool-claim
	equals "$stderr" "spool-claim: $SPOOL_DIR: host ID 'testhost' is in use by another machine (see hosts/ in spool-layout.md): set SPOOL_HOST"
	equals "$(snapshot)" "$before"
	[ ! -e "$SPOOL_DIR/meta/j2" ]
	# Another ID works from this machine at once.
	SPOOL_HOST=mine run -0 spool-enqueue --id j2 <<<"job"
	# Idle for ten minutes, the ID passes to this machine.
	touch -d '11 minutes ago' "$SPOOL_DIR/hosts/testhost"
	run -0 spool-enqueue --id j3 <<<"job"
	equals "$(cat "$SPOOL_DIR/hosts/testhost")" "$(cat "$SPOOL_DIR/hosts/mine")"
	equals "$(ids_in new)" "$(printf 'j2\nj3')"
}

@test "spool-stat shows the mode and the clock; --json and --prom too" {
	multi 5s
	run -0 env SPOOL_TEST_CLOCK=synced spool-stat
	equals "${lines[-2]}" "multi_host                      testhost, skew 5s"
	equals "${lines[-1]}" "clock                           synchronised, max error 16ms"
	run -0 env SPOOL_TEST_CLOCK=unsynced spool-stat
	equals "${lines[-1]}" "clock                           NOT synchronised: leases need NTP or chrony"
	run -0 env SPOOL_TEST_CLOCK=unsynced spool-stat --json
	equals "$(jq -c .multi_host <<<"$output")" '{"host":"testhost","skew_ms":5000,"clock_synchronised":false,"clock_maxerror_ms":16}'
	run -0 env SPOOL_TEST_CLOCK=synced spool-stat --prom
	grep -qx 'spool_clock_synchronised{spool="'"$(realpath "$SPOOL_DIR")"'"} 1' <<<"$output"
	promtool check metrics <<<"$output"
}

@test "without multi-host, spool-stat says nothing of hosts or clocks" {
	run -0 env SPOOL_TEST_CLOCK=unsynced spool-stat
	equals "$output" "$(printf '%-31s %s\n' last_action - timeout 1h00m)"
	run -0 spool-stat --json
	equals "$(jq -c 'has("multi_host")' <<<"$output")" false
	run -0 spool-stat --prom
	[[ $output != *clock* ]]
}

@test "spool-run warns when the clock is not synchronised on a multi-host spool" {
	multi 5s
	spool-enqueue --id j1 <<<"job" >/dev/null
	run -0 --separate-stderr env SPOOL_TEST_CLOCK=unsynced spool-run --once -- cat
	equals "$output" "job"
	equals "$(sed -n 1p <<<"$stderr")" "spool-run: warning: the system clock is not synchronised (adjtimex); on this multi-host spool leases are judged by every host's clock, to within skew=5000ms: run NTP or chrony"
	[[ $(sed -n 2p <<<"$stderr") = "spool-run: "*" j1 token=1 attempt=1 exit=0 duration="*" outcome=ok class=- state=done" ]]
	equals "$(wc -l <<<"$stderr")" 2
	spool-enqueue --id j2 <<<"job" >/dev/null
	run -0 --separate-stderr env SPOOL_TEST_CLOCK=synced spool-run --once -- cat
	[[ $stderr = "spool-run: "*" j2 token=2 attempt=1 exit=0 duration="*" outcome=ok class=- state=done" ]]
	equals "$(ids_in done)" "$(printf 'j1\nj2')"
}

# mounted TYPE OPTIONS: a mount table where the spool's directory is a
# mount of TYPE with OPTIONS (its super options), under an ext4 root.
mounted() {
	local real
	real=$(realpath "$SPOOL_DIR")
	printf '%s\n' "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw" \
	    "40 22 0:50 / ${real// /\\040} rw,relatime shared:9 - $1 src $2" \
	    >"$BATS_TEST_TMPDIR/mountinfo"
}

@test "the file-system check goes by the mount's type and options" {
	multi 2s
	export SPOOL_TEST_MOUNTINFO=$BATS_TEST_TMPDIR/mountinfo
	refused="spool-ls: $SPOOL_DIR: multi-host mode on a file system whose locks other hosts may not see (see spool-layout.md, File systems)"
	# type|options|why it is refused, or nothing when it passes
	while IFS='|' read -r type opts why; do
		mounted "$type" "$opts"
		if [ -z "$why" ]; then
			run -0 --separate-stderr spool-ls
			[ "$stderr" = "" ] || { echo "$type $opts: $stderr" >&2; return 1; }
		else
			run -100 --separate-stderr spool-ls
			equals "$stderr" "spool-ls: $SPOOL_DIR: multi-host mode on $why (see spool-layout.md, File systems)"
		fi
	done <<-'TABLE'
	ext4|rw,relatime|
	xfs|rw,attr2,inode64|
	tmpfs|rw,size=100k|
	overlay|rw,lowerdir=/a,upperdir=/b,workdir=/c|
	fuse.glusterfs|rw,user_id=0,group_id=0,allow_other|
	fuse.ceph-fuse|rw,user_id=0,group_id=0,allow_other|
	ceph|rw,name=admin,acl|
	nfs4|rw,vers=4.1,hard,proto=tcp,lookupcache=none,local_lock=none|
	nfs4|rw,vers=4.2,hard,lookupcache=none|
	nfs4|rw,vers=4.2,hard,proto=tcp,local_lock=none|NFS mounted without lookupcache=none: a name another host moved can be found from this host's cache (mount it lookupcache=none)
	nfs4|rw,vers=4.1,hard,lookupcache=pos,local_lock=none|NFS mounted without lookupcache=none: a name another host moved can be found from this host's cache (mount it lookupcache=none)
	nfs4|rw,vers=4.2,soft,proto=tcp,local_lock=none,lookupcache=none|NFS mounted soft: a call that times out may still be made (mount it hard)
	nfs4|rw,vers=4.1,softerr,lookupcache=none|NFS mounted soft: a call that times out may still be made (mount it hard)
	nfs4|rw,vers=4.1,hard,local_lock=flock,lookupcache=none|NFS mounted local_lock=flock: locks that stay on this host (mount it local_lock=none)
	nfs4|rw,vers=4.1,hard,nolock,local_lock=all,lookupcache=none|NFS mounted nolock: locks that stay on this host (mount it without nolock)
	nfs4|rw,vers=4.0,hard,lookupcache=none|NFS before 4.1: a rename or link the server made can be answered with an error when it is sent again (mount vers=4.1 or vers=4.2)
	nfs|rw,vers=3,hard,proto=tcp,lookupcache=none|NFS before 4.1: a rename or link the server made can be answered with an error when it is sent again (mount vers=4.1 or vers=4.2)
	cifs|rw,vers=3.1.1,cache=strict,username=u,uid=0|
	smb3|rw,vers=3.1.1,cache=none,username=u|
	cifs|rw,vers=3.1.1,cache=strict,username=u,nobrl|SMB mounted nobrl: locks that stay on this host
	smb3|rw,vers=3.1.1,cache=loose,username=u|SMB mounted cache=loose: reads from a cache that other hosts' writes do not clear
	9p|rw,trans=virtio,version=9p2000.L,cache=none|9p, a file system whose locks other hosts may not see
	fuse.sshfs|rw,user_id=0,group_id=0|fuse.sshfs, a file system whose locks other hosts may not see
	fuse.bindfs|rw,user_id=0,group_id=0|fuse.bindfs, a file system whose locks other hosts may not see
	virtiofs|rw|virtiofs, a file system whose locks other hosts may not see
	lustre|rw,flock|lustre, a file system whose locks other hosts may not see
	gfs2|rw,relatime|gfs2, a file system whose locks other hosts may not see
	afs|rw|afs, a file system whose locks other hosts may not see
	TABLE
	# The deepest mount holding the spool decides; none at all refuses.
	mounted ext4 rw
	echo "41 40 0:51 / $(realpath "$SPOOL_DIR")/audit rw - 9p src rw" \
	    >>"$SPOOL_TEST_MOUNTINFO"
	run -0 spool-ls
	echo "42 22 0:52 / $(realpath "$SPOOL_DIR") rw - 9p src rw" \
	    >>"$SPOOL_TEST_MOUNTINFO"
	run -100 spool-ls
	rm "$SPOOL_TEST_MOUNTINFO"
	run -100 --separate-stderr spool-ls
	equals "$stderr" "$refused"
}

@test "the file-system check reads a mount point with a space in it" {
	mv "$SPOOL_DIR" "$BATS_TEST_TMPDIR/a spool"
	SPOOL_DIR=$BATS_TEST_TMPDIR/a\ spool
	multi 2s
	export SPOOL_TEST_MOUNTINFO=$BATS_TEST_TMPDIR/mountinfo
	mounted 9p rw
	run -100 spool-ls
	mounted ext4 rw
	run -0 spool-ls
}

@test "fsck leaves a fresh tmp/ file of a PID not on this host: another host's enqueue" {
	multi 2s
	spool-ls >/dev/null
	echo partial >"$SPOOL_DIR/tmp/j9,99999999.1"
	fsck_clean
	run -0 spool-fsck --repair
	[ -e "$SPOOL_DIR/tmp/j9,99999999.1" ]
	touch -d '25 hours ago' "$SPOOL_DIR/tmp/j9,99999999.1"
	run -1 spool-fsck
	equals "$output" "tmp: j9,99999999.1: left by an interrupted enqueue, never published"
	run -0 spool-fsck --repair
	[ ! -e "$SPOOL_DIR/tmp/j9,99999999.1" ]
	# On one host, a PID that is gone says the enqueue is over.
	sed -i '/^multi-host\|^skew/d' "$SPOOL_DIR/config"
	echo partial >"$SPOOL_DIR/tmp/j9,99999999.2"
	run -1 spool-fsck
	equals "$output" "tmp: j9,99999999.2: left by an interrupted enqueue, never published"
}

@test "multi-host: a lock held on tokens fails a claim after a bounded wait, job untouched" {
	multi 2s
	# At one time: a claim a second or more after the hint was written
	# reads leased/ again and writes it anew (lib/claim.c, RESCAN_MS).
	SPOOL_TEST_NOW=$T run -1 spool-claim	# makes next-expiry
	SPOOL_TEST_NOW=$T spool-enqueue --id j1 <<<"job" >/dev/null
	hold "$SPOOL_DIR/tokens"
	before=$(snapshot)
	SPOOL_TEST_NOW=$T SPOOL_TEST_LOCK_WAIT=200 run -111 --separate-stderr \
	    timeout 20 spool-claim
	equals "$output" ""
	equals "$stderr" "spool-claim: $KEPT"
	equals "$(snapshot)" "$before"
	# shellcheck disable=SC2046 # process IDs, one word each
	kill $(cat "$BATS_TEST_TMPDIR/holders")
	# At T too: a week after T, the job's deadline has passed.
	SPOOL_TEST_NOW=$T run -0 spool-claim --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j1\t1')"
	fsck_clean
}

@test "multi-host: a claim over many jobs gives up on a held tokens lock once, not once a job" {
	multi 2s
	for i in $(seq 1 40); do echo "job $i" >"$BATS_TEST_TMPDIR/p$i"; done
	spool-enqueue "$BATS_TEST_TMPDIR"/p* >/dev/null
	hold "$SPOOL_DIR/tokens"
	# One wait of 1 s, then every other job fails at once: well within
	# the 20 s that forty waits would overrun.
	SPOOL_TEST_LOCK_WAIT=1000 run -111 --separate-stderr timeout 20 spool-claim -n 40
	equals "$output" ""
	equals "$stderr" "spool-claim: $KEPT"
	equals "$(ids_in new | wc -l)" 40
	equals "$(ids_in leased)" ""
}

@test "multi-host: a lock let go within the bound is taken; on one host a lock is waited for" {
	multi 2s
	# In leaves of their own, so that j1 is claimed first: a claim takes
	# the jobs of one 16 ms leaf in no set order.
	t=$(($(date +%s%3N) - 1000))
	SPOOL_TEST_NOW=$t spool-enqueue --id j1 <<<"job" >/dev/null
	SPOOL_TEST_NOW=$((t + 100)) spool-enqueue --id j2 <<<"job" >/dev/null
	hold "$SPOOL_DIR/tokens" 1
	run -0 spool-claim --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j1\t1')"
	# Without multi-host, no bound: the claim waits for the holder.
	sed -i '/^multi-host\|^skew/d' "$SPOOL_DIR/config"
	hold "$SPOOL_DIR/tokens" 1
	SPOOL_TEST_LOCK_WAIT=0 run -0 spool-claim --owner w1
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j2\t2')"
	fsck_clean
}

@test "multi-host: the bound on a lock's wait is its spool's, not every spool's of the process" {
	local plain=$BATS_TEST_TMPDIR/plain handles=$BATS_TEST_DIRNAME/lib/handles
	multi 2s
	spool-init -d "$plain"
	spool-enqueue -d "$plain" --id j1 <<<"job" >/dev/null
	spool-claim -d "$plain" --owner w1 >/dev/null
	spool-enqueue --id k1 <<<"job" >/dev/null
	spool-claim --owner w1 >/dev/null
	# A multi-host spool opened first: a plain spool's lock is waited for.
	hold "$plain/meta/j1" 1
	SPOOL_TEST_LOCK_WAIT=100 run -0 "$handles" "$SPOOL_DIR" "$plain" j1 1
	equals "$output" renewed
	# The plain one first: the multi-host spool's wait is still bounded.
	hold "$SPOOL_DIR/meta/k1"
	before=$(snapshot)
	SPOOL_TEST_LOCK_WAIT=100 run -1 "$handles" "$plain" "$SPOOL_DIR" k1 1
	equals "$output" "not renewed: Connection timed out"
	equals "$(snapshot)" "$before"
}

@test "multi-host: a lock held on a sidecar fails its finish after a bounded wait" {
	multi 2s
	spool-enqueue --id j1 <<<"job" >/dev/null
	spool-claim --owner w1 >/dev/null
	hold "$SPOOL_DIR/meta/j1"
	before=$(snapshot)
	SPOOL_TEST_LOCK_WAIT=200 run -111 --separate-stderr timeout 20 spool-finish j1 1 ok
	equals "$stderr" "spool-finish: j1: $KEPT"
	equals "$(snapshot)" "$before"
	# shellcheck disable=SC2046 # process IDs, one word each
	kill $(cat "$BATS_TEST_TMPDIR/holders")
	run -0 spool-finish j1 1 ok
	equals "$(state_of j1)" done
}

@test "multi-host: a lock held on hosts/ID stops nothing until the ID is due a touch" {
	multi 2s
	spool-ls >/dev/null
	hold "$SPOOL_DIR/hosts/testhost"
	# A registration of this machine touched in the last minute is read
	# without its lock.
	run -0 spool-enqueue --id j1 <<<"job"
	touch -d '2 minutes ago' "$SPOOL_DIR/hosts/testhost"
	before=$(snapshot)
	SPOOL_TEST_LOCK_WAIT=200 run -111 --separate-stderr timeout 20 spool-ls
	equals "$stderr" "spool-ls: $SPOOL_DIR: $KEPT"
	equals "$(snapshot)" "$before"
	# shellcheck disable=SC2046 # process IDs, one word each
	kill $(cat "$BATS_TEST_TMPDIR/holders")
	run -0 spool-ls
	[ "$(stat -c %Y "$SPOOL_DIR/hosts/testhost")" -gt $(($(date +%s) - 60)) ]
}
