#!/bin/sh
# What make bench needs beyond the build: SQLite (its headers for the C
# queue, its shell for the CLI queue), libpq's headers (the PostgreSQL
# client in qbench), beanstalkd and nq (the rivals), strace (fsyncs per
# transition), Go (row 3's Go client), util-linux (findmnt, setpriv)
# and, as root, e2fsprogs and mount (the journaled loop file system) and
# postgresql (the server of row 10, which runs only as root).  As root on
# Debian the missing packages are installed; otherwise this says exactly
# what to install and fails.
missing=
[ -f /usr/include/sqlite3.h ] || missing="$missing libsqlite3-dev"
command -v sqlite3 >/dev/null 2>&1 || missing="$missing sqlite3"
command -v beanstalkd >/dev/null 2>&1 || missing="$missing beanstalkd"
command -v nq >/dev/null 2>&1 || missing="$missing nq"
command -v strace >/dev/null 2>&1 || missing="$missing strace"
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
command -v findmnt >/dev/null 2>&1 || missing="$missing util-linux"
[ -f /usr/include/postgresql/libpq-fe.h ] || missing="$missing libpq-dev"
# The loop file system is made, and PostgreSQL run, only as root.
if [ "$(id -u)" = 0 ]; then
	command -v mkfs.ext4 >/dev/null 2>&1 || missing="$missing e2fsprogs"
	command -v losetup >/dev/null 2>&1 || missing="$missing mount"
	command -v setpriv >/dev/null 2>&1 || missing="$missing util-linux"
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 ||
	    missing="$missing postgresql"
fi
[ -f /usr/include/uuid/uuid.h ] || missing="$missing uuid-dev"
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "bench: installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if apt-get update -qq >/dev/null &&
	    apt-get install -y -qq $missing >/dev/null; then
		exit 0
	fi
	echo "bench: apt-get install$missing failed" >&2
	exit 1
fi
echo "bench: missing:$missing" >&2
echo "bench: install them with: sudo apt-get install -y$missing" >&2
exit 1
