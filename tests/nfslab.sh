# shellcheck shell=bash
# An NFS lab on one machine, for tests/multihost: nfs-ganesha 4.3 (the VFS
# back end) in a network namespace of its own, and three hosts, each a
# Linux 6.1 kernel run as a process (user-mode-linux) with its own page,
# dentry and attribute caches, its own NFS client state, its own host
# name, machine ID and boot ID.  Each host mounts the export at $lab/mnt
# over a tap device of its own, and at $lab/mnt-cached with the kernel's
# default caches; this machine sees both paths as bind mounts of the
# exported directory, and reads the results there, as the server holds
# them.
#
# The hosts' root file system is this machine's, read-only; $lab is
# writable in them.  Each runs tests/nfslab-init as its first process: it
# mounts, then serves the commands that "$on K CMD..." (tests/nfslab-on)
# leaves in $lab/q/K, with SPOOL_HOST=host-K; host 3's clock runs SHIFT
# seconds ahead (faketime) when SHIFT is set.
#
# NFS_VERS (4.1, 4.2, 4.0 or 3) and NFS_OPTS (more mount options, by
# default lookupcache=none, as spool-layout.md asks) choose the mount;
# NFS_GRACE=0 takes the server's grace period away.
# nfs_restart restarts the server; nfs_crash K and nfs_cut K up|down
# kill a host's kernel, or take its link down and up.
# Sourced, as root; it installs a trap that tears everything down by PID.
# Not root, no /dev/net/tun, no packages: skip (exit 77) with the reason,
# except with CI=true, where it fails (exit 1).
. "$top/tests/lab.sh"
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, tap devices, mounts)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
need linux.uml:user-mode-linux ganesha.nfsd:nfs-ganesha \
    /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so:nfs-ganesha-vfs \
    mount.nfs:nfs-common rpcbind:rpcbind faketime:faketime
kver=$(ls /usr/lib/uml/modules 2>/dev/null | head -1)
[ -n "$kver" ] || skip "no /usr/lib/uml/modules (reinstall user-mode-linux)"

NFS_VERS=${NFS_VERS:-4.1}
case $NFS_VERS in 3 | 4.0 | 4.1 | 4.2) ;; *) fail "NFS_VERS=$NFS_VERS: not 3, 4.0, 4.1 or 4.2" ;; esac
# A host's command reads a pipe or a file given it to the end: never
# this process's own.
exec </dev/null
lab=$(mktemp -d /var/tmp/spool-nfslab.XXXXXX)
chmod 755 "$lab"
ns=spoolnfs$$
hosts=3
# The harness's scratch files: in $lab, where the hosts can write.
export TMPDIR=$lab/tmp

# stop PIDFILE: end the process whose PID is there, and what it started.
stop() {
	local pid kids i
	[ -s "$1" ] || return 0
	pid=$(cat "$1")
	kids=$(pgrep -P "$pid")
	kill "$pid" 2>/dev/null
	for i in $(seq 1 30); do
		[ -d "/proc/$pid" ] || break
		sleep 0.1
	done
	kill -9 "$pid" $kids 2>/dev/null
	rm -f "$1"
}
# A host's kernel: its main process and the helpers it started.
host_pids() {
	local pid
	pid=$(cat "$lab/c.$1/uml.pid" 2>/dev/null) || return 0
	echo "$pid" $(pgrep -P "$pid")
}
fs_daemons() {
	cat "$lab/run/ganesha.pid" 2>/dev/null
}
teardown() {
	local h p
	# shellcheck disable=SC2046 # process IDs, one word each
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	for h in $(seq 1 $hosts); do
		# shellcheck disable=SC2046 # process IDs, one word each
		kill -9 $(host_pids "$h") 2>/dev/null
	done
	stop "$lab/run/keeper.pid"
	stop "$lab/run/server.pid"
	for p in ganesha statd rpcbind; do
		stop "$lab/run/$p.pid"
	done
	ip netns del "$ns" 2>/dev/null
	if [ -n "${STRESS_KEEP:-}" ] && [ -d "$lab" ]; then
		mkdir -p "$STRESS_KEEP/fs-logs" &&
		    cp -a "$lab/run/ganesha.log" "$lab"/c.* "$STRESS_KEEP/fs-logs/" 2>/dev/null
	fi
	for p in "$lab/mnt" "$lab/mnt-cached"; do
		umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null
	done
	rm -rf "$lab"
}
trap teardown EXIT
trap 'exit 1' INT TERM

mkdir -p "$lab/export" "$lab/mnt" "$lab/mnt-cached" "$lab/run" "$lab/tmp" \
    "$lab/modroot/lib/modules"
ln -s "/usr/lib/uml/modules/$kver" "$lab/modroot/lib/modules/$kver"
mount --bind "$lab/export" "$lab/mnt" &&
    mount --bind "$lab/export" "$lab/mnt-cached" ||
    fail "bind mount of the export"

# The server: rpcbind, statd and ganesha share a private /run and
# /var/lib/nfs (ip netns exec gives a mount namespace of its own).
grace="Grace_Period = 20;"
[ "${NFS_GRACE:-1}" = 1 ] || grace="Graceless = true;"
cat >"$lab/run/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	Protocols = 3, 4;
	NFS_Port = 2049;
	Enable_NLM = true;
	Enable_RQUOTA = false;
}
NFSV4 {
	$grace
	Lease_Lifetime = 20;
	Only_Numeric_Owners = true;
	Allow_Numeric_Owners = true;
}
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
	Export_Id = 1;
	Path = $lab/export;
	Pseudo = /export;
	Access_Type = RW;
	Squash = No_Root_Squash;
	SecType = sys;
	Protocols = 3, 4;
	Transports = TCP;
	FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
ip netns add "$ns" || fail "ip netns add"
ip netns exec "$ns" ip link set lo up
# The server: rpcbind and statd once, and ganesha under a loop that
# starts it again whenever it ends, as a service manager would.  Debian's
# nfs-ganesha 4.3 dies now and then of a fault its later versions fix
# (SIGSEGV at address 0x118, in the release of an NFSv4 state); each
# end is logged in $lab/run/exits, and nfs_restarts counts them.
nfs_server() {
	local i
	ip netns exec "$ns" sh -c '
	    mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib/nfs &&
	    mkdir -p /run/ganesha /var/lib/nfs/ganesha /var/lib/nfs/sm /var/lib/nfs/sm.bak &&
	    exec setsid sleep 1000000' >/dev/null 2>&1 &
	echo $! >"$lab/run/server.pid"
	sleep 0.3
	nsenter -t "$(cat "$lab/run/server.pid")" -n -m -- rpcbind -f -w \
	    >/dev/null 2>&1 &
	echo $! >"$lab/run/rpcbind.pid"
	sleep 0.5
	nsenter -t "$(cat "$lab/run/server.pid")" -n -m -- rpc.statd -F \
	    --no-notify >/dev/null 2>&1 &
	echo $! >"$lab/run/statd.pid"
	: >"$lab/run/exits"
	(
		trap 'kill "$(cat "$lab/run/ganesha.pid")"; exit 0' TERM
		while :; do
			nsenter -t "$(cat "$lab/run/server.pid")" -n -m -- \
			    ganesha.nfsd -F -f "$lab/run/ganesha.conf" \
			    -L "$lab/run/ganesha.log" \
			    -p /run/ganesha/ganesha.pid >/dev/null 2>&1 &
			echo $! >"$lab/run/ganesha.pid"
			wait $!
			echo "$(date +%T) ganesha ended, status $?" >>"$lab/run/exits"
		done
	) &
	echo $! >"$lab/run/keeper.pid"
	for i in $(seq 1 100); do
		grep -q "NFS SERVER INITIALIZED" "$lab/run/ganesha.log" 2>/dev/null && return 0
		sleep 0.2
	done
	fail "ganesha did not start: $(tail -3 "$lab/run/ganesha.log" 2>/dev/null)"
}
# nfs_restart: end the server as a crash would (SIGKILL); it starts again.
nfs_restart() {
	kill -9 "$(cat "$lab/run/ganesha.pid")"
}
# nfs_restarts: how many times the server has ended.
nfs_restarts() {
	wc -l <"$lab/run/exits"
}
nfs_server

# The hosts boot at once; each says it has mounted with $lab/ready.K.
mkdir -p "$lab/q"
for h in $(seq 1 $hosts); do
	mkdir -p "$lab/c.$h" "$lab/q/$h"
	ip netns exec "$ns" ip tuntap add dev "nl$h" mode tap &&
	    ip netns exec "$ns" ip addr add "10.201.$h.1/24" dev "nl$h" &&
	    ip netns exec "$ns" ip link set "nl$h" up ||
	    fail "the tap device of host $h"
	( cd "$lab/c.$h" || exit 1
	  exec ip netns exec "$ns" setsid linux.uml mem=160M \
	    root=/dev/root rootfstype=hostfs rootflags=/ ro \
	    init="$top/tests/nfslab-init" eth0=tuntap,nl$h \
	    con0=fd:0,fd:1 con=null ssl=null umid="spool$$-$h" \
	    uml_dir="$lab/c.$h" lab="$lab" k="$h" \
	    ip="10.201.$h.2/24" srv="10.201.$h.1" vers="$NFS_VERS" \
	    opts="${NFS_OPTS-lookupcache=none}" </dev/null >console.log 2>&1 ) &
	echo $! >"$lab/c.$h/uml.pid"
done
for h in $(seq 1 $hosts); do
	for i in $(seq 1 900); do
		[ -e "$lab/ready.$h" ] && break
		[ -d "/proc/$(cat "$lab/c.$h/uml.pid")" ] || break
		sleep 0.1
	done
	grep -q '^mounted' "$lab/c.$h/init.log" 2>/dev/null ||
	    fail "host $h did not mount: $(tail -3 "$lab/c.$h/init.log" "$lab/c.$h/console.log" 2>/dev/null)"
done

# nfs_crash K: kill host K's kernel, as a power cut would.
nfs_crash() {
	# shellcheck disable=SC2046 # process IDs, one word each
	kill -9 $(host_pids "$1") 2>/dev/null
}
# nfs_cut K down|up: take host K's link to the server down, or up.
nfs_cut() {
	ip netns exec "$ns" ip link set "nl$1" "$2"
}

ftlib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
[ -n "$ftlib" ] || fail "libfaketime.so.1 not found (apt-get install -y libfaketime)"
cat >"$lab/on" <<EOF
#!/bin/sh
exec "$top/tests/nfslab-on" "$lab" "${SHIFT:-0}" "$ftlib" "\$@"
EOF
chmod +x "$lab/on"
on="$lab/on"
