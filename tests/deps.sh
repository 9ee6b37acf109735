#!/bin/sh
# Make sure what the build and the tests need is here: install it when run
# as root on Debian, otherwise say exactly what to install.
missing=
[ -f /usr/include/uuid/uuid.h ] || missing="$missing uuid-dev"
command -v bats >/dev/null 2>&1 || missing="$missing bats"
command -v strace >/dev/null 2>&1 || missing="$missing strace"
command -v mandoc >/dev/null 2>&1 || missing="$missing mandoc"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
command -v promtool >/dev/null 2>&1 || missing="$missing prometheus"
command -v inotifywait >/dev/null 2>&1 || missing="$missing inotify-tools"
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
# The fuzz targets' regression run (tests/78-fuzz.bats) needs libFuzzer.
command -v clang >/dev/null 2>&1 || missing="$missing clang"
[ -n "$(find /usr/lib/llvm-*/lib/clang -name 'libclang_rt.fuzzer*.a' 2>/dev/null)" ] ||
    missing="$missing libclang-rt-14-dev"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
# A FUSE file system that multi-host mode must refuse (tests/88-multihost.bats).
command -v bindfs >/dev/null 2>&1 || missing="$missing bindfs"
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
