#!/bin/sh
# Make sure what a target needs is here: install it when run as root on
# Debian, otherwise say exactly what to install.
#	tests/deps.sh build	a C compiler, libuuid, libxxhash and liburing:
#				make, make demo, make install
#	tests/deps.sh		that, and every tool the tests use: make check
#	tests/deps.sh deb	that, and the Debian packaging tools:
#				make check-deb
mode=${1:-check}
case $mode in
build|check|deb) ;;
*)	echo "usage: tests/deps.sh [build | check | deb]" >&2; exit 100 ;;
esac
missing=
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
[ -f /usr/include/uuid/uuid.h ] || missing="$missing uuid-dev"
[ -f /usr/include/xxhash.h ] || missing="$missing libxxhash-dev"
[ -f /usr/include/liburing.h ] || missing="$missing liburing-dev"
if [ "$mode" != build ]; then
	command -v bats >/dev/null 2>&1 || missing="$missing bats"
	command -v strace >/dev/null 2>&1 || missing="$missing strace"
	# The power-cut explorer (tests/powercut/explore), and the Python
	# package's extension and tests (python/).
	[ -x /usr/bin/python3 ] || missing="$missing python3"
	/usr/bin/python3 -c 'import sysconfig, os, sys
sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' \
	    2>/dev/null || missing="$missing python3-dev"
	/usr/bin/python3 -c 'import pytest' 2>/dev/null ||
	    missing="$missing python3-pytest"
	/usr/bin/python3 -c 'import mypy' 2>/dev/null ||
	    missing="$missing python3-mypy"
	# The Go package (go/): its tests, go vet and gofmt.
	command -v go >/dev/null 2>&1 || missing="$missing golang-go"
	command -v mandoc >/dev/null 2>&1 || missing="$missing mandoc"
	# make check LINT=1 (tests/run) reads the tests and scripts with it.
	command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
	# groff renders the pages for man-db's man(1) (tests/97-manpages.bats):
	# the whole package, which gropdf shows, not groff-base alone.
	command -v gropdf >/dev/null 2>&1 || missing="$missing groff"
	command -v jq >/dev/null 2>&1 || missing="$missing jq"
	command -v promtool >/dev/null 2>&1 || missing="$missing prometheus"
	command -v inotifywait >/dev/null 2>&1 || missing="$missing inotify-tools"
	# The fuzz targets' regression run (tests/78-fuzz.bats) needs libFuzzer.
	command -v clang >/dev/null 2>&1 || missing="$missing clang"
	[ -n "$(find /usr/lib/llvm-*/lib/clang -name 'libclang_rt.fuzzer*.a' 2>/dev/null)" ] ||
	    missing="$missing libclang-rt-14-dev"
	command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
	# An XXH3 of its own, to check the payloads' checksums against.
	command -v xxhsum >/dev/null 2>&1 || missing="$missing xxhash"
	# A FUSE file system that multi-host mode must refuse (tests/88-multihost.bats).
	command -v bindfs >/dev/null 2>&1 || missing="$missing bindfs"
	# Programs built against an install (tests/92-install.bats), and the
	# loader that finds the completion there.
	command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
	[ -f /usr/share/bash-completion/bash_completion ] ||
	    missing="$missing bash-completion"
	# The real kernels' power cuts (tests/powercut/realfs: xfs images).
	[ -x /sbin/mkfs.xfs ] || [ -x /usr/sbin/mkfs.xfs ] ||
	    missing="$missing xfsprogs"
fi
if [ "$mode" = deb ]; then
	command -v dpkg-buildpackage >/dev/null 2>&1 || missing="$missing dpkg-dev"
	command -v dh >/dev/null 2>&1 || missing="$missing debhelper"
	command -v dh_python3 >/dev/null 2>&1 || missing="$missing dh-python"
	command -v lintian >/dev/null 2>&1 || missing="$missing lintian"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq $missing >/dev/null ||
	    { echo "apt-get install$missing failed" >&2; exit 1; }
	exit 0
fi
echo "missing:$missing" >&2
echo "install them with: sudo apt-get install -y$missing" >&2
exit 1
