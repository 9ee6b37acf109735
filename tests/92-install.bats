#!/usr/bin/env bats
# make install and make uninstall (install.mk): every file in its place
# under DESTDIR and the directories given; programs built against the
# install with pkg-config, shared and static (libspool(3)'s example);
# the libraries export the API's names alone; the completion is found
# where bash-completion looks; uninstall leaves nothing.
#
# tests/run: alone: it runs make install in the tree, as
# tests/69-incident.bats does: each writes lib/spool.pc with its own
# PREFIX, and on a clean tree both would build lib/pic/ at once.

load helpers
load examples

ROOT="$BATS_TEST_DIRNAME/.."
CMDS="spool-batch spool-cancel spool-claim spool-drop spool-enqueue
    spool-finish spool-fsck spool-init spool-ls spool-pause spool-purge
    spool-redrive spool-renew spool-resume spool-run spool-show spool-stat"

# The install is made from the tree; but from a fresh build of a copy of
# it (the files git has, and those not yet committed but not ignored) when
# the tree was built with sanitizers (make check SAN=1), which a user does
# not install and a static program cannot link.
setup_file() {
	export D="$BATS_FILE_TMPDIR/root" SRC="$ROOT"
	if nm "$ROOT/lib/libspool.a" 2>/dev/null | grep -q '__[a-z]*san_'; then
		SRC="$BATS_FILE_TMPDIR/src"
		mkdir "$SRC"
		(cd "$ROOT" && git ls-files -co --exclude-standard -z |
		    xargs -0 cp --parents -t "$SRC")
	fi
	mk -j2 install DESTDIR="$D" >/dev/null
	# Where the Python package goes, and its extension's name.
	PYV=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	PYEXT=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	export PYV PYEXT
}

# make in $SRC, without the flags of a make that runs the tests (the
# variables of its command line are in the environment too).
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN make -s -C "$SRC" "$@"
}

# pc ARGS...: pkg-config on the install under $D.
pc() {
	PKG_CONFIG_PATH="$D/usr/local/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" \
	    pkg-config "$@" spool
}

# The Nth literal display of libspool(3)'s EXAMPLES: 1 the program, 2
# what it prints.
man_example() {
	ex_blocks "$ROOT/man/libspool.3" EXAMPLES | awk -F'\t' -v n="$1" '$1 == n' |
	    cut -f2-
}

# The defined global names of a library that do not begin spool_.
foreign_names() {
	case $1 in
	*.a)	nm -g --defined-only "$1" ;;
	*)	nm -D --defined-only "$1" ;;
	esac | awk 'NF == 3 && $3 !~ /^spool_/ { print $3 }' | LC_ALL=C sort -u
}

@test "make install puts every file in its place, the commands stripped" {
	diff -u - <(cd "$D" && find . -mindepth 1 ! -type d \
	    -printf '%y %m %P -> %l\n' | sed 's/ -> $//' | LC_ALL=C sort -k3) <<EOF
f 755 usr/local/bin/spool-batch
f 755 usr/local/bin/spool-cancel
f 755 usr/local/bin/spool-claim
f 755 usr/local/bin/spool-drop
f 755 usr/local/bin/spool-enqueue
f 755 usr/local/bin/spool-finish
f 755 usr/local/bin/spool-fsck
f 755 usr/local/bin/spool-init
f 755 usr/local/bin/spool-ls
f 755 usr/local/bin/spool-pause
f 755 usr/local/bin/spool-purge
f 755 usr/local/bin/spool-redrive
f 755 usr/local/bin/spool-renew
f 755 usr/local/bin/spool-resume
f 755 usr/local/bin/spool-run
f 755 usr/local/bin/spool-show
f 755 usr/local/bin/spool-stat
f 644 usr/local/include/spool.h
f 644 usr/local/lib/libspool.a
l 777 usr/local/lib/libspool.so -> libspool.so.0
l 777 usr/local/lib/libspool.so.0 -> libspool.so.0.2.0
f 644 usr/local/lib/libspool.so.0.2.0
f 644 usr/local/lib/pkgconfig/spool.pc
f 644 usr/local/lib/python$PYV/dist-packages/spool/__init__.py
f 644 usr/local/lib/python$PYV/dist-packages/spool/_spool$PYEXT
f 644 usr/local/lib/python$PYV/dist-packages/spool/_spool.pyi
f 644 usr/local/lib/python$PYV/dist-packages/spool/_work.py
f 644 usr/local/lib/python$PYV/dist-packages/spool/py.typed
f 644 usr/local/lib/systemd/system/spool-check.service
f 644 usr/local/lib/systemd/system/spool-check.timer
f 644 usr/local/lib/systemd/system/spool-purge.service
f 644 usr/local/lib/systemd/system/spool-purge.timer
f 644 usr/local/lib/systemd/system/spool-run@.service
f 644 usr/local/lib/systemd/system/spool-stat.service
f 644 usr/local/lib/systemd/system/spool-stat.timer
f 755 usr/local/libexec/spool/handler-http.sh
f 755 usr/local/libexec/spool/handler-state.sh
f 644 usr/local/share/bash-completion/completions/spool
l 777 usr/local/share/bash-completion/completions/spool-batch -> spool
l 777 usr/local/share/bash-completion/completions/spool-cancel -> spool
l 777 usr/local/share/bash-completion/completions/spool-claim -> spool
l 777 usr/local/share/bash-completion/completions/spool-drop -> spool
l 777 usr/local/share/bash-completion/completions/spool-enqueue -> spool
l 777 usr/local/share/bash-completion/completions/spool-finish -> spool
l 777 usr/local/share/bash-completion/completions/spool-fsck -> spool
l 777 usr/local/share/bash-completion/completions/spool-init -> spool
l 777 usr/local/share/bash-completion/completions/spool-ls -> spool
l 777 usr/local/share/bash-completion/completions/spool-pause -> spool
l 777 usr/local/share/bash-completion/completions/spool-purge -> spool
l 777 usr/local/share/bash-completion/completions/spool-redrive -> spool
l 777 usr/local/share/bash-completion/completions/spool-renew -> spool
l 777 usr/local/share/bash-completion/completions/spool-resume -> spool
l 777 usr/local/share/bash-completion/completions/spool-run -> spool
l 777 usr/local/share/bash-completion/completions/spool-show -> spool
l 777 usr/local/share/bash-completion/completions/spool-stat -> spool
f 644 usr/local/share/doc/spool/examples/crontab
f 644 usr/local/share/doc/spool/examples/demo.sh
f 644 usr/local/share/doc/spool/examples/spool-alerts.yml
f 644 usr/local/share/doc/spool/examples/spool-dashboard.json
f 644 usr/local/share/doc/spool/examples/spool-run.cron
f 644 usr/local/share/man/man1/spool-batch.1
f 644 usr/local/share/man/man1/spool-cancel.1
f 644 usr/local/share/man/man1/spool-claim.1
f 644 usr/local/share/man/man1/spool-drop.1
f 644 usr/local/share/man/man1/spool-enqueue.1
f 644 usr/local/share/man/man1/spool-finish.1
f 644 usr/local/share/man/man1/spool-fsck.1
f 644 usr/local/share/man/man1/spool-init.1
f 644 usr/local/share/man/man1/spool-ls.1
f 644 usr/local/share/man/man1/spool-pause.1
f 644 usr/local/share/man/man1/spool-purge.1
f 644 usr/local/share/man/man1/spool-redrive.1
f 644 usr/local/share/man/man1/spool-renew.1
l 777 usr/local/share/man/man1/spool-resume.1 -> spool-pause.1
f 644 usr/local/share/man/man1/spool-run.1
f 644 usr/local/share/man/man1/spool-show.1
f 644 usr/local/share/man/man1/spool-stat.1
f 644 usr/local/share/man/man3/libspool.3
f 644 usr/local/share/man/man7/spool.7
EOF
	# Stripped: no symbol table, and they still run.
	for c in $CMDS; do
		run -0 readelf -S "$D/usr/local/bin/$c"
		[[ $output != *.symtab* ]] || { echo "$c: not stripped" >&2; return 1; }
	done
	run -0 readelf -S "$D/usr/local/lib/libspool.so.0.2.0"
	[[ $output != *.symtab* && $output == *.dynsym* ]]
	"$D/usr/local/bin/spool-init"
	echo x | "$D/usr/local/bin/spool-enqueue" --id j1
	equals "$(state_of j1)" new
	# The files as shipped: the page of spool-resume is spool-pause's.
	cmp "$ROOT/man/libspool.3" "$D/usr/local/share/man/man3/libspool.3"
	cmp "$ROOT/lib/spool.h" "$D/usr/local/include/spool.h"
	cmp "$ROOT/contrib/spool-run@.service" "$D/usr/local/lib/systemd/system/spool-run@.service"
	cmp "$ROOT/completion/spool.bash" "$D/usr/local/share/bash-completion/completions/spool"
	run -0 mandoc -Tlint -W warning "$D"/usr/local/share/man/man*/*
	diff -u - "$D/usr/local/lib/pkgconfig/spool.pc" <<EOF
prefix=/usr/local
libdir=/usr/local/lib
includedir=/usr/local/include

Name: spool
Description: A durable job queue that is a directory (libspool)
Version: $(cat "$ROOT/VERSION")
Cflags: -I\${includedir}
Libs: -L\${libdir} -lspool
Libs.private: -luuid -lxxhash -luring
EOF
}

@test "PREFIX, the directories and STRIP= move and keep what is installed; units, crontabs and pages name its paths" {
	d="$BATS_TEST_TMPDIR/root"
	vars="PREFIX=/opt/sp BINDIR=/opt/sp/sbin LIBDIR=/opt/sp/lib64 INCLUDEDIR=/opt/sp/inc MANDIR=/opt/sp/man"
	mk install DESTDIR="$d" $vars STRIP= >/dev/null
	equals "$(cd "$d" && find . -mindepth 1 ! -type d -printf '%h\n' |
	    LC_ALL=C sort | uniq -c | awk '{ print $1, $2 }' | tr '\n' ' ')" \
	    "1 ./opt/sp/inc 5 ./opt/sp/lib/python$PYV/dist-packages/spool 7 ./opt/sp/lib/systemd/system 4 ./opt/sp/lib64 1 ./opt/sp/lib64/pkgconfig 2 ./opt/sp/libexec/spool 17 ./opt/sp/man/man1 1 ./opt/sp/man/man3 1 ./opt/sp/man/man7 17 ./opt/sp/sbin 18 ./opt/sp/share/bash-completion/completions 5 ./opt/sp/share/doc/spool/examples "
	# STRIP=: the symbols stay, for a packager's own tools.
	run -0 readelf -S "$d/opt/sp/sbin/spool-ls"
	[[ $output == *.symtab* ]]
	equals "$(sed -n '1,3p' "$d/opt/sp/lib64/pkgconfig/spool.pc")" \
	    "$(printf '%s\n' prefix=/opt/sp libdir=/opt/sp/lib64 includedir=/opt/sp/inc)"
	# Every /usr/local path of contrib/ and of the pages, made this one's.
	equals "$(grep -h '^ExecStart' "$d"/opt/sp/lib/systemd/system/*.service |
	    grep -o '/[a-z/]*/spool-[a-z]*' | sort -u | tr '\n' ' ')" \
	    "/opt/sp/sbin/spool-purge /opt/sp/sbin/spool-run /opt/sp/sbin/spool-stat "
	# (but a user's own handler, which stays where the user put it)
	equals "$(grep -r /usr/local "$d/opt/sp/lib/systemd" "$d/opt/sp/man" |
	    grep -v ' -- /usr/local/libexec/reports-handler ')" ""
	grep -qx 'PATH=/opt/sp/sbin:/usr/bin:/bin' "$d/opt/sp/share/doc/spool/examples/crontab"
	grep -q '	/opt/sp/sbin/spool-run -d /var/spool/reports ' \
	    "$d/opt/sp/share/doc/spool/examples/spool-run.cron"
	grep -qF '    /opt/sp/libexec/spool/handler-http.sh https://hooks.example.org/in' \
	    "$d/opt/sp/man/man1/spool-run.1"
	# The installed handlers are the ones the page names.
	[ -x "$d/opt/sp/libexec/spool/handler-http.sh" ]
	mk uninstall DESTDIR="$d" $vars >/dev/null
	equals "$(find "$d" ! -type d)" ""
}

@test "libspool(3)'s example, built with pkg-config against the shared library, runs on a spool" {
	run -0 --separate-stderr pc --cflags --libs
	equals "${output% }" "-I$D/usr/local/include -L$D/usr/local/lib -lspool"
	equals "$(pc --modversion)" "$(cat "$ROOT/VERSION")"
	man_example 1 >"$BATS_TEST_TMPDIR/example.c"
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	cc -Wall -Wextra -Werror -o "$BATS_TEST_TMPDIR/example" \
	    "$BATS_TEST_TMPDIR/example.c" $(pc --cflags --libs)
	run -0 readelf -d "$BATS_TEST_TMPDIR/example"
	[[ $output == *"Shared library: [libspool.so.0]"* ]]
	run -0 readelf -d "$D/usr/local/lib/libspool.so.0.2.0"
	[[ $output == *"Library soname: [libspool.so.0]"* ]]
	s="$BATS_TEST_TMPDIR/s"
	run -0 --separate-stderr env LD_LIBRARY_PATH="$D/usr/local/lib" \
	    "$BATS_TEST_TMPDIR/example" "$s"
	equals "$output" "$(man_example 2)"
	equals "$stderr" ""
	# It ran on the installed library, and the job is done.
	run -0 env LD_LIBRARY_PATH="$D/usr/local/lib" ldd "$BATS_TEST_TMPDIR/example"
	[[ $output == *"libspool.so.0 => $D/usr/local/lib/libspool.so.0 "* ]]
	SPOOL_DIR=$s
	equals "$(state_of hello-1)" done
	equals "$(cat "$s/done/hello-1")" "hello, world"
	fsck_clean
	# A second run: a new cycle of the same job.
	run -0 env LD_LIBRARY_PATH="$D/usr/local/lib" "$BATS_TEST_TMPDIR/example" "$s"
	equals "${lines[1]}" "claimed hello-1, token 2, attempt 1: hello, world"
	# An error, the library's way: a file where the spool should be.
	: >"$BATS_TEST_TMPDIR/file"
	run -111 --separate-stderr env LD_LIBRARY_PATH="$D/usr/local/lib" \
	    "$BATS_TEST_TMPDIR/example" "$BATS_TEST_TMPDIR/file"
	equals "$stderr" "example: $BATS_TEST_TMPDIR/file: Not a directory"
}

@test "libspool(3)'s example, built with pkg-config --static, runs on a spool without libspool.so" {
	run -0 --separate-stderr pc --static --libs
	equals "${output% }" "-L$D/usr/local/lib -lspool -luuid -lxxhash -luring"
	man_example 1 >"$BATS_TEST_TMPDIR/example.c"
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	cc -static -o "$BATS_TEST_TMPDIR/example" "$BATS_TEST_TMPDIR/example.c" \
	    $(pc --static --cflags --libs)
	run -0 readelf -d "$BATS_TEST_TMPDIR/example"
	equals "$output" $'\nThere is no dynamic section in this file.'
	run -0 --separate-stderr "$BATS_TEST_TMPDIR/example" "$BATS_TEST_TMPDIR/s"
	equals "$output" "$(man_example 2)"
	SPOOL_DIR="$BATS_TEST_TMPDIR/s"
	equals "$(state_of hello-1)" done
	fsck_clean
}

@test "the libraries export the functions of spool.h and libspool(3) and no other global name" {
	run -0 --separate-stderr foreign_names "$D/usr/local/lib/libspool.a"
	equals "$output$stderr" ""
	run -0 --separate-stderr foreign_names "$D/usr/local/lib/libspool.so.0.2.0"
	equals "$output$stderr" ""
	# The API: what the header declares, the page documents, both export.
	grep -oE '\<spool_[a-z_]+\(' "$ROOT/lib/spool.h" | tr -d '(' |
	    LC_ALL=C sort -u >"$BATS_TEST_TMPDIR/header"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/header")" -ge 40 ]
	sed -n '/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p' "$ROOT/man/libspool.3" |
	    sed -n 's/^\.F[no] \(spool_[a-z_]*\).*/\1/p' | LC_ALL=C sort -u |
	    diff -u "$BATS_TEST_TMPDIR/header" -
	sed -n 's/^\.Nm \(spool_[a-z_]*\).*/\1/p' "$ROOT/man/libspool.3" | LC_ALL=C sort -u |
	    diff -u "$BATS_TEST_TMPDIR/header" -
	nm -D --defined-only "$D/usr/local/lib/libspool.so.0.2.0" |
	    awk '$2 == "T" { print $3 }' | LC_ALL=C sort | diff -u "$BATS_TEST_TMPDIR/header" -
	nm -g --defined-only "$D/usr/local/lib/libspool.a" |
	    awk '$2 == "T" { print $3 }' | LC_ALL=C sort | diff -u "$BATS_TEST_TMPDIR/header" -
}

@test "the name check catches what lib/*.o export: an archive of them clashes with a program's names" {
	local o objs=()
	for o in "$SRC"/lib/*.o; do
		[ "${o##*/}" = libspool.o ] || objs+=("$o")
	done
	ar rcs "$BATS_TEST_TMPDIR/libplain.a" "${objs[@]}"
	run -0 foreign_names "$BATS_TEST_TMPDIR/libplain.a"
	for n in failed counters now_ms write_all job_open; do
		grep -qx "$n" <<<"$output" || { echo "not caught: $n" >&2; return 1; }
	done
	# A program with names of its own that lib/ uses inside.
	cat >"$BATS_TEST_TMPDIR/mine.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <spool.h>

int failed = 7;
long counters[4];

int64_t
now_ms(void)
{
	return 42;
}

int
main(void)
{
	printf("%d %lld %d\n", failed, (long long)now_ms(), spool_now() > 42);
	return spool_valid_id("ok-1") ? 0 : 1;
}
EOF
	run -1 cc -o "$BATS_TEST_TMPDIR/mine" "$BATS_TEST_TMPDIR/mine.c" \
	    -I"$ROOT/lib" "$BATS_TEST_TMPDIR/libplain.a" -luuid
	[[ $output == *"multiple definition of \`now_ms'"* ]]
	# The installed libraries, static and shared, leave them to it.
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	cc -static -o "$BATS_TEST_TMPDIR/mine" "$BATS_TEST_TMPDIR/mine.c" \
	    $(pc --static --cflags --libs)
	equals "$("$BATS_TEST_TMPDIR/mine")" "7 42 1"
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	cc -o "$BATS_TEST_TMPDIR/mine" "$BATS_TEST_TMPDIR/mine.c" $(pc --cflags --libs)
	equals "$(LD_LIBRARY_PATH="$D/usr/local/lib" "$BATS_TEST_TMPDIR/mine")" "7 42 1"
}

@test "bash-completion finds the installed completion of every command" {
	run -0 --separate-stderr env XDG_DATA_DIRS="$D/usr/local/share" bash -c '
	    source /usr/share/bash-completion/bash_completion
	    for c; do
		    __load_completion "$c" && complete -p "$c"
	    done' - $CMDS
	equals "$stderr" ""
	diff -u <(for c in $CMDS; do echo "complete -F _spool $c"; done) - <<<"$output"
}

@test "VERSION, spool.pc, the shared library's name, debian/changelog and --version agree" {
	v=$(cat "$ROOT/VERSION")
	[[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]
	equals "$(pc --modversion)" "$v"
	for c in $CMDS; do
		equals "$("$D/usr/local/bin/$c" --version)" \
		    "$c $v (spool format 2; reads format 1 too)"
	done
	[ -f "$D/usr/local/lib/libspool.so.$v" ]
	equals "$(head -n 1 "$ROOT/debian/changelog")" "spool ($v) unstable; urgency=medium"
}

@test "the installed library and commands have no test hooks, and ignore them" {
	run -0 strings "$D/usr/local/lib/libspool.a" \
	    "$D/usr/local/lib/libspool.so.0" "$D/usr/local/bin/spool-enqueue"
	[ -n "$output" ]
	run -1 grep -c SPOOL_TEST <<<"$output"
	equals "$output" 0
	# A pinned clock and a crash point, set for the installed command:
	# it enqueues at the real time, and lives.
	before=$(date +%s%3N)
	echo x | SPOOL_TEST_NOW=1000 SPOOL_TEST_CRASH=enqueue-recorded \
	    "$D/usr/local/bin/spool-enqueue" --id hooked
	run -0 "$D/usr/local/bin/spool-show" --json hooked
	created=$(sed 's/.*"created":\([0-9]*\).*/\1/' <<<"$output")
	[ "$created" -ge "$before" ]
}

@test "the installed Python package imports in Debian's python3 and runs a cycle" {
	local s=$BATS_TEST_TMPDIR/s
	run -0 --separate-stderr env LD_LIBRARY_PATH="$D/usr/local/lib" \
	    PYTHONPATH="$D/usr/local/lib/python$PYV/dist-packages" \
	    /usr/bin/python3 -c 'import spool, sys
spool.init(sys.argv[1])
with spool.Spool(sys.argv[1]) as sp:
    sp.enqueue(b"hello", id="j1")
    [job] = sp.claim(lease=30)
    print(spool.__file__, job.id, job.token, job.payload.decode())
    job.ok()' "$s"
	equals "$output" "$D/usr/local/lib/python$PYV/dist-packages/spool/__init__.py j1 1 hello"
	equals "$stderr" ""
	[ -f "$s/done/j1" ]
}

@test "make install removes the library's page of 0.1.0, spool.3, and uninstall too" {
	local d="$BATS_TEST_TMPDIR/root" m=usr/local/share/man/man3
	mkdir -p "$d/$m"
	echo old >"$d/$m/spool.3"
	mk install DESTDIR="$d" >/dev/null
	[ "$(ls "$d/$m")" = libspool.3 ]
	echo old >"$d/$m/spool.3"
	mk uninstall DESTDIR="$d" >/dev/null
	[ "$(ls -A "$d/$m")" = "" ]
}

@test "make uninstall removes every file that make install put there" {
	mk uninstall DESTDIR="$D" >/dev/null
	equals "$(find "$D" ! -type d)" ""
	# spool's own directories go too; the shared ones (bin/, man1/ ...)
	# stay, as they might hold other files.
	equals "$(find "$D" -name '*spool*')" ""
	# And a second uninstall is not an error.
	mk uninstall DESTDIR="$D" >/dev/null
}
