# shellcheck shell=bash
# A CephFS lab on one machine, for tests/multihost and bench/multihost.sh: one
# monitor, one manager, one OSD (memstore: its objects in memory), one MDS,
# pools of size 1, on loopback ports of its own; and three pretend hosts,
# each a mount and UTS namespace with its own ceph-fuse client (its own
# cephx identity and MDS session) at $lab/mnt, its own host name, its own
# /etc/machine-id and its own boot ID (a file mounted over
# /proc/sys/kernel/random/boot_id: hosts never share one, and spool trusts
# the counter's last token only in the boot that wrote it; spool-layout.md,
# "Tokens").  "$on K CMD..." runs CMD on host K with
# SPOOL_HOST=host-K; host 3's clock runs SHIFT seconds ahead (faketime)
# when SHIFT is set.  This process mounts the file system too, at the same
# path, to read results.  All state is in a scratch directory; every
# daemon is stopped by the PID it wrote there.
# Sourced, as root; it installs a trap that tears everything down.
# Not root, no FUSE, no packages: skip (exit 77) with the reason, except
# with CI=true, where it fails (exit 1).
. "$top/tests/lab.sh"
[ "$(id -u)" = 0 ] || skip "needs root (mount namespaces, FUSE mounts, Ceph daemons)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
need ceph-mon:ceph-mon ceph-osd:ceph-osd ceph-mds:ceph-mds \
    ceph-fuse:ceph-fuse faketime:faketime

lab=$(mktemp -d /var/tmp/spool-cephlab.XXXXXX)
st=$lab/state
conf=$st/ceph.conf
export CEPH_CONF=$conf
hostpids=()
# stop PIDFILE COMM: signal the PID written there if it is still COMM.
stop() {
	local pid i
	[ -s "$1" ] || return 0
	pid=$(cat "$1")
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 0
	kill "$pid" 2>/dev/null
	for i in $(seq 1 50); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
}
# The file system's daemons: the MDS, the OSD and every ceph-fuse.
fs_daemons() {
	local f
	for f in "$st"/mds.pid "$st"/osd.pid "$st"/fuse.*.pid; do
		[ -s "$f" ] && printf '%s ' "$(cat "$f")"
	done
}
teardown() {
	local p f
	# shellcheck disable=SC2046 # process IDs, one word each
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	# What libfaketime kept for the processes killed on host 3.
	for f in /dev/shm/sem.faketime_sem_*; do
		p=${f##*_}
		[ -e "$f" ] && [ ! -d "/proc/$p" ] &&
		    rm -f "$f" "/dev/shm/faketime_shm_$p"
	done
	# STRESS_KEEP: the daemons' logs, kept with the stress's.
	if [ -n "${STRESS_KEEP:-}" ] && [ -d "$st/log" ]; then
		mkdir -p "$STRESS_KEEP" && cp -a "$st/log" "$STRESS_KEEP/fs-logs"
	fi
	for f in "$st"/*.pid; do
		[ -s "$f" ] && kill -CONT "$(cat "$f")" 2>/dev/null
	done
	# A ceph-fuse may hang (see spool-layout.md, Several hosts): SIGKILL
	# releases whatever waits on it; the namespace dies with its sleeper.
	for f in "$st"/fuse.*.pid; do
		[ -s "$f" ] || continue
		p=$(cat "$f")
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = ceph-fuse ] && kill -9 "$p"
	done
	for p in "${hostpids[@]}"; do
		kill "$p" 2>/dev/null
	done
	umount -l "$lab/mnt" 2>/dev/null
	stop "$st/mds.pid" ceph-mds
	stop "$st/mgr.pid" ceph-mgr
	stop "$st/osd.pid" ceph-osd
	stop "$st/mon.pid" ceph-mon
	rm -rf "$lab"
}
trap teardown EXIT
trap 'exit 1' INT TERM

# Ports of its own: a free pair from the kernel's ephemeral range.
port=$(python3 -c 'import socket
for p in range(21000 + __import__("os").getpid() % 4000, 30000, 2):
    try:
        a = socket.socket(); a.bind(("127.0.0.1", p))
        b = socket.socket(); b.bind(("127.0.0.1", p + 1))
        print(p); break
    except OSError:
        pass')
mkdir -p "$st/mon" "$st/mgr" "$st/osd" "$st/mds" "$st/log" "$st/run" "$lab/mnt"
fsid=$(cat /proc/sys/kernel/random/uuid)
cat >"$conf" <<CONF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]
public_network = 127.0.0.0/8
ms_bind_ipv6 = false
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
keyring = $st/\$name.keyring
run_dir = $st/run
admin_socket = $st/run/\$name.asok
log_file = $st/log/\$name.log
crash_dir = $st/crash
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 5
mon_data_avail_crit = 1
[mon]
mon_data = $st/mon
keyring = $st/mon/keyring
[mgr]
mgr_data = $st/mgr
mgr_initial_modules = iostat
[osd]
osd_data = $st/osd
osd_objectstore = memstore
memstore_device_bytes = 2147483648
osd_memory_target = 536870912
[mds]
mds_data = $st/mds
mds_cache_memory_limit = 268435456
# Journal at every 0.2 s tick, not 5 s: until it does, another client
# that needs the same dentry waits.
mds_tick_interval = 0.2
[client]
# The kernel's page cache served a host the token counter as it was
# before another host's write (spool-layout.md, "Several hosts").
fuse_disable_pagecache = true
CONF
ceph_() { timeout 60 ceph --connect-timeout 30 "$@" 2>>"$st/log/cli.err"; }

echo "$labname: ceph mon, osd and mds on 127.0.0.1:$port, state in $st" >&2
ceph-authtool --create-keyring "$st/mon..keyring" --gen-key -n mon. \
    --cap mon 'allow *' >/dev/null &&
ceph-authtool --create-keyring "$st/client.admin.keyring" --gen-key \
    -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
    --cap mds 'allow *' --cap mgr 'allow *' >/dev/null &&
ceph-authtool "$st/mon..keyring" --import-keyring "$st/client.admin.keyring" >/dev/null &&
monmaptool --create --fsid "$fsid" \
    --addv a "[v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]" "$st/monmap" >/dev/null &&
ceph-mon -c "$conf" --mkfs -i a --monmap "$st/monmap" \
    --keyring "$st/mon..keyring" >>"$st/log/mkfs" 2>&1 &&
ceph-mon -c "$conf" -i a --pid-file "$st/mon.pid" >>"$st/log/mkfs" 2>&1 ||
    fail "the monitor would not start (see $st/log)"
for i in $(seq 1 60); do
	ceph_ mon stat >/dev/null && break
	sleep 0.5
done
# The manager keeps the usage figures that statfs(2) reports.
ceph_ auth get-or-create mgr.a mon 'allow profile mgr' osd 'allow *' \
    mds 'allow *' -o "$st/mgr.a.keyring" &&
ceph-mgr -c "$conf" -i a --pid-file "$st/mgr.pid" >>"$st/log/mkfs" 2>&1 ||
    fail "the manager would not start"
osd_key=$(ceph-authtool --gen-print-key)
uuid=$(cat /proc/sys/kernel/random/uuid)
[ "$(echo "{\"cephx_secret\": \"$osd_key\"}" | ceph_ osd new "$uuid" -i -)" = 0 ] ||
    fail "ceph osd new"
ceph-authtool --create-keyring "$st/osd.0.keyring" --name osd.0 \
    --add-key "$osd_key" >/dev/null
ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$uuid" >>"$st/log/mkfs" 2>&1 &&
ceph-osd -c "$conf" -i 0 --pid-file "$st/osd.pid" >>"$st/log/mkfs" 2>&1 ||
    fail "the OSD would not start (see $st/log)"
ceph_ osd pool create cephfs_metadata 8 >/dev/null &&
ceph_ osd pool create cephfs_data 8 >/dev/null &&
ceph_ fs new cephfs cephfs_metadata cephfs_data >/dev/null &&
ceph_ auth get-or-create mds.a mon 'allow profile mds' osd 'allow rwx' \
    mds 'allow' -o "$st/mds.a.keyring" &&
ceph-mds -c "$conf" -i a --pid-file "$st/mds.pid" >>"$st/log/mkfs" 2>&1 ||
    fail "the MDS would not start"
for i in $(seq 1 240); do
	ceph_ mds stat | grep -q 'up:active' && break
	sleep 0.5
done
ceph_ mds stat | grep -q 'up:active' || fail "no active MDS after 120 s (see $st/log)"

# fuse_mount NAME: ceph-fuse as client.NAME at $lab/mnt, in this namespace.
fuse_mount() {
	[ -s "$st/client.$1.keyring" ] ||
	    ceph_ fs authorize cephfs "client.$1" / rw >"$st/client.$1.keyring" ||
	    return 1
	ceph-fuse -c "$conf" --id "$1" -k "$st/client.$1.keyring" \
	    --pid-file "$st/fuse.$1.pid" --log-file "$st/log/fuse.$1.log" \
	    --admin-socket "$st/run/fuse.$1.asok" "$lab/mnt" \
	    >>"$st/log/fuse.$1.out" 2>&1
}
export -f fuse_mount ceph_
export st conf lab

# Three hosts: a private mount and UTS namespace each, holding its own
# ceph-fuse at $lab/mnt, its own host name and /etc/machine-id.  A sleeper
# keeps each namespace; commands enter it with nsenter.
for h in 1 2 3; do
	printf '%032x\n' "$((h * 7919))" >"$lab/machine-id.$h"
	printf '%08x-0000-4000-8000-%012x\n' "$h" "$((h * 7919))" >"$lab/boot-id.$h"
	unshare -m -u --propagation private bash -c '
		hostname "$1" && fuse_mount "$1" &&
		mount --bind "$2" /etc/machine-id &&
		mount --bind "$3" /proc/sys/kernel/random/boot_id &&
		touch "$4" && exec sleep 100000
	' host-$h host-$h "$lab/machine-id.$h" "$lab/boot-id.$h" "$lab/ready.$h" &
	hostpids+=($!)
done
for h in 1 2 3; do
	for i in $(seq 1 150); do
		[ -e "$lab/ready.$h" ] && break
		sleep 0.2
	done
	[ -e "$lab/ready.$h" ] || fail "host $h did not mount CephFS (see $st/log/fuse.host-$h.*)"
done

# This process reads the results through a client of its own.
fuse_mount checker || fail "the checker's mount"
[ "$(awk -v m="$lab/mnt" '$2 == m { print $3 }' /proc/self/mounts)" = fuse.ceph-fuse ] ||
    fail "the checker's mount is not fuse.ceph-fuse"

# The free space that statfs(2) reports comes from the manager's figures,
# a few seconds after the pools are made; the spool's reserve needs it.
for i in $(seq 1 120); do
	[ "$(stat -f -c %a "$lab/mnt")" -gt 0 ] && break
	sleep 0.5
done
[ "$(stat -f -c %a "$lab/mnt")" -gt 0 ] || fail "statfs reports no free space after 60 s"

# on K CMD...: run CMD on host K, with its host ID; host 3's clock is
# ahead, by libfaketime.  Not through faketime(1): every process under one
# faketime shares a semaphore that libfaketime takes as each process
# starts, and a process the stress kills while it holds it stops every
# later one on that host for good.  FAKETIME_FLSHM gives each process a
# semaphore of its own.  NO_FAKE_STAT: a host whose clock is ahead sees the
# file system's times as they are.
ftlib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
[ -n "$ftlib" ] || fail "libfaketime.so.1 not found (apt-get install -y libfaketime)"
cat >"$lab/on" <<ON
#!/bin/sh
k=\$1; shift
export SPOOL_HOST=host-\$k
pid=\$(sed -n "\${k}p" "$lab/hostpids")
if [ "\$k" = 3 ] && [ -n "${SHIFT:-}" ]; then
	exec nsenter -t "\$pid" -m -u -- env LD_PRELOAD="$ftlib" \\
	    FAKETIME="+${SHIFT:-0}s" FAKETIME_FLSHM=1 NO_FAKE_STAT=1 "\$@"
fi
exec nsenter -t "\$pid" -m -u -- "\$@"
ON
chmod +x "$lab/on"

# $lab/restart: restart every host's client, as a reboot would: SIGKILL
# its ceph-fuse, evict its session at the MDS (so that what it held is
# free at once, not a minute later), mount again in its namespace.  First
# it counts the sidecars still locked, by this process's client: with no
# spool command left running, each is a lock that a client kept for a
# process that is gone.
cat >"$lab/restart" <<RESTART
#!/bin/bash
export CEPH_CONF=$conf
held=0
for f in "\$1"/meta/*; do
	flock -n -x "\$f" true 2>/dev/null || held=\$((held + 1))
done
echo "\$held"
sessions=\$(timeout 60 ceph tell mds.a session ls 2>/dev/null)
for k in 1 2 3; do
	p=\$(cat "$st/fuse.host-\$k.pid")
	[ "\$(cat /proc/\$p/comm 2>/dev/null)" = ceph-fuse ] && kill -9 "\$p"
	for id in \$(python3 -c 'import json, sys
for s in json.loads(sys.argv[1]):
    if s["client_metadata"].get("entity_id") == sys.argv[2]:
        print(s["id"])' "\$sessions" host-\$k); do
		timeout 60 ceph tell mds.a client evict id=\$id >/dev/null 2>&1
	done
	sp=\$(sed -n "\${k}p" "$lab/hostpids")
	nsenter -t "\$sp" -m -u -- umount -l "$lab/mnt" 2>/dev/null
	nsenter -t "\$sp" -m -u -- ceph-fuse -c "$conf" --id host-\$k \\
	    -k "$st/client.host-\$k.keyring" --pid-file "$st/fuse.host-\$k.pid" \\
	    --log-file "$st/log/fuse.host-\$k.log" \\
	    --admin-socket "$st/run/fuse.host-\$k.asok" "$lab/mnt" \\
	    >>"$st/log/fuse.host-\$k.out" 2>&1 || exit 1
done
RESTART
chmod +x "$lab/restart"
printf '%s\n' "${hostpids[@]}" >"$lab/hostpids"
on="$lab/on"
