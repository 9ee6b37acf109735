# shellcheck shell=bash
# A GlusterFS lab on one machine, for tests/multihost and bench/multihost.sh:
# a single-brick volume on loopback, and three pretend hosts, each a mount
# namespace with its own client mount of the volume at $lab/mnt, its own
# /etc/machine-id and its own boot ID (a file mounted over
# /proc/sys/kernel/random/boot_id: hosts never share one, and spool trusts
# the counter's last token only in the boot that wrote it; spool-layout.md,
# "Tokens").  "$on K CMD..." runs CMD on host K with SPOOL_HOST=host-K;
# host 3's clock runs SHIFT seconds ahead (faketime) when SHIFT is set.
# This process mounts the volume too, at the same path, to read results.
# Sourced, as root; it installs a trap that tears everything down by PID.
# Not root, no FUSE, no packages: skip (exit 77) with the reason, except
# with CI=true, where it fails (exit 1).
. "$top/tests/lab.sh"
[ "$(id -u)" = 0 ] || skip "needs root (mount namespaces, FUSE mounts, glusterd)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
fuse=fusermount3:fuse3
command -v fusermount >/dev/null && fuse=fusermount:fuse3
need glusterd:glusterfs-server mount.glusterfs:glusterfs-client \
    faketime:faketime "$fuse"
# The packages may start a glusterd of their own: it would hold the port.
if pgrep -x glusterd >/dev/null; then
	if [ "${CI:-}" = true ]; then
		systemctl stop glusterd 2>/dev/null || pkill -x glusterd
		sleep 1
	else
		skip "a glusterd is already running (port 24007); stop it first"
	fi
fi

lab=$(mktemp -d /var/tmp/spool-multihost.XXXXXX)
vol=spoolmh$$
gpid= hostsline= hostpids=()
# The volume's daemons: its brick and every client of it.
fs_daemons() {
	pgrep -d ' ' -f "$vol"
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
	if [ -n "${STRESS_KEEP:-}" ] && [ -d "$lab" ]; then
		p=$(echo "${lab#/}" | tr / -)
		mkdir -p "$STRESS_KEEP/fs-logs" &&
		    cp -a "$lab/glusterd.log" /var/log/glusterfs/*"$p"* \
		    /var/log/glusterfs/bricks/*"$p"* "$STRESS_KEEP/fs-logs/" 2>/dev/null
	fi
	for p in "${hostpids[@]}"; do
		kill "$p" 2>/dev/null	# the namespace dies with its last process
	done
	umount "$lab/mnt" 2>/dev/null || umount -l "$lab/mnt" 2>/dev/null
	if [ -n "$gpid" ]; then
		gluster --mode=script volume stop "$vol" force >/dev/null 2>&1
		gluster --mode=script volume delete "$vol" >/dev/null 2>&1
		# the brick's and the volume's own daemons, by their pid files
		for p in "$gpid" $(cat /var/run/gluster/vols/"$vol"/*.pid \
		    2>/dev/null); do
			kill "$p" 2>/dev/null
		done
		# Gone before the next lab starts: a glusterd holds its port.
		for p in $(seq 1 50); do
			[ -d "/proc/$gpid" ] || break
			sleep 0.1
		done
	fi
	[ -z "$hostsline" ] || sed -i "/ $hostsline\$/d" /etc/hosts
	rm -rf "$lab"
}
trap teardown EXIT
trap 'exit 1' INT TERM

# Gluster refuses localhost and 127.0.0.1 as such: a name for 127.x.
name=$(hostname)
if ! getent hosts "$name" | grep -q '^127\.'; then
	name=spool-mh-$$
	hostsline=$name
	echo "127.0.1.1 $name" >>/etc/hosts
fi

echo "$labname: glusterd, volume $vol on $name:$lab/brick" >&2
mkdir -p "$lab/brick" "$lab/mnt" "$lab/run"
glusterd -p "$lab/glusterd.pid" -l "$lab/glusterd.log" || skip "glusterd did not start"
for i in $(seq 1 50); do
	[ -s "$lab/glusterd.pid" ] && gluster --mode=script pool list >/dev/null 2>&1 && break
	sleep 0.2
done
gpid=$(cat "$lab/glusterd.pid" 2>/dev/null)
[ -n "$gpid" ] || skip "glusterd did not start (see its log)"
# Quick-read serves a small file's reads, for a second, from what a lookup
# brought: a host read the token counter as it was before another host's
# synced write (spool-layout.md, "Several hosts").
gluster --mode=script volume create "$vol" "$name:$lab/brick" force >/dev/null &&
    gluster --mode=script volume set "$vol" performance.quick-read off >/dev/null &&
    gluster --mode=script volume start "$vol" >/dev/null ||
    { echo "$labname: FAILED: the volume would not start" >&2; exit 1; }

# Three hosts: a private mount namespace each, holding its own client
# mount of the volume at $lab/mnt and its own /etc/machine-id.  A sleeper
# keeps each namespace; commands enter it with nsenter.
for h in 1 2 3; do
	printf '%032x\n' "$((h * 7919))" >"$lab/machine-id.$h"
	printf '%08x-0000-4000-8000-%012x\n' "$h" "$((h * 7919))" >"$lab/boot-id.$h"
	unshare -m --propagation private sh -c '
		mount -t glusterfs -o direct-io-mode=enable "$1" "$2" &&
		mount --bind "$3" /etc/machine-id &&
		mount --bind "$4" /proc/sys/kernel/random/boot_id &&
		touch "$5" && exec sleep 100000
	' host-$h "$name:/$vol" "$lab/mnt" "$lab/machine-id.$h" "$lab/boot-id.$h" "$lab/ready.$h" &
	hostpids+=($!)
done
for h in 1 2 3; do
	for i in $(seq 1 100); do
		[ -e "$lab/ready.$h" ] && break
		sleep 0.2
	done
	[ -e "$lab/ready.$h" ] || { echo "$labname: FAILED: host $h did not mount the volume" >&2; exit 1; }
done

# This process reads the results through a client of its own.
mount -t glusterfs -o direct-io-mode=enable "$name:/$vol" "$lab/mnt" ||
    { echo "$labname: FAILED: the checker's mount" >&2; exit 1; }

# on K CMD...: run CMD on host K, with its host ID; host 3's clock is
# ahead, by libfaketime.  Not through faketime(1): every process under one
# faketime shares a semaphore that libfaketime takes as each process
# starts, and a process the stress kills while it holds it stops every
# later one on that host for good.  FAKETIME_FLSHM gives each process a
# semaphore of its own.  NO_FAKE_STAT: a host whose clock is ahead sees the
# file system's times as they are.
ftlib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
[ -n "$ftlib" ] ||
    { echo "$labname: FAILED: libfaketime.so.1 not found (apt-get install -y libfaketime)" >&2; exit 1; }
cat >"$lab/on" <<EOF
#!/bin/sh
k=\$1; shift
export SPOOL_HOST=host-\$k
pid=\$(sed -n "\${k}p" "$lab/hostpids")
if [ "\$k" = 3 ] && [ -n "${SHIFT:-}" ]; then
	exec nsenter -t "\$pid" -m -- env LD_PRELOAD="$ftlib" \\
	    FAKETIME="+${SHIFT:-0}s" FAKETIME_FLSHM=1 NO_FAKE_STAT=1 "\$@"
fi
exec nsenter -t "\$pid" -m -- "\$@"
EOF
chmod +x "$lab/on"
printf '%s\n' "${hostpids[@]}" >"$lab/hostpids"
on="$lab/on"

