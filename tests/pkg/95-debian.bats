#!/usr/bin/env bats
# The Debian packages (debian/), as root: dpkg-buildpackage -us -uc -b
# builds spool, libspool0, libspool-dev and python3-spool from a copy of
# the tree; lintian finds no error; dpkg -i installs them; the demo runs on
# the installed commands, a program builds against libspool-dev, a fresh
# python3 imports spool and runs a job; the units are there and not
# enabled, no user is made; dpkg --purge leaves nothing.
# make check-deb runs it (a few minutes); outside CI it may skip, saying
# why.

bats_require_minimum_version 1.5.0

ROOT="$BATS_TEST_DIRNAME/../.."
PKGS="spool libspool0 libspool-dev python3-spool"

setup_file() {
	if [ "$(id -u)" -ne 0 ]; then
		return 0
	fi
	if dpkg-query -W -f '${Status}\n' $PKGS 2>/dev/null | grep -q installed; then
		echo "a package of spool is installed here: purge it first" >&2
		return 1
	fi
	V=$(cat "$ROOT/VERSION")
	export V B="$BATS_FILE_TMPDIR/build"
	mkdir -p "$B/spool-$V"
	# The tree as git has it, with files not yet committed but not
	# ignored: no build products.
	(cd "$ROOT" && git ls-files -co --exclude-standard -z |
	    xargs -0 cp --parents -t "$B/spool-$V")
	# Both cores; no -dbgsym packages, which are not under test.
	(cd "$B/spool-$V" && DEB_BUILD_OPTIONS=noautodbgsym \
	    dpkg-buildpackage -us -uc -b -Jauto) >"$B/build.log" 2>&1 || {
		tail -n 30 "$B/build.log" >&2
		return 1
	}
}

teardown_file() {
	[ "$(id -u)" -ne 0 ] || dpkg --purge $PKGS >/dev/null 2>&1 || :
}

setup() {
	if [ "$(id -u)" -ne 0 ]; then
		[ "${CI:-}" != true ] || { echo "95-debian.bats needs root in CI" >&2; return 1; }
		skip "not root: the test installs packages (in CI, with CI=true, this fails instead)"
	fi
	export PATH=/usr/sbin:/usr/bin:/sbin:/bin
	unset SPOOL_DIR
}

@test "dpkg-buildpackage builds spool, libspool0, libspool-dev and python3-spool, and lintian finds no error" {
	cd "$B"
	for p in $PKGS; do
		[ -f "${p}_${V}_$(dpkg --print-architecture).deb" ]
	done
	run -0 --separate-stderr lintian --fail-on error spool_*.changes
	printf '%s' "$output" >"$B/lintian.txt"
	# Its report goes to the log, warnings and all.
	if [ -s "$B/lintian.txt" ]; then
		sed 's/^/# lintian: /' "$B/lintian.txt" >&3
	else
		echo '# lintian: no tags' >&3
	fi
	stat -c '# %n: %s bytes' *.deb >&3
	run -1 grep '^E:' "$B/lintian.txt"
	# What each package holds.
	[ "$(dpkg-deb -c spool_*.deb | grep -c ' ./usr/bin/spool-')" -eq 17 ]
	dpkg-deb -c libspool0_*.deb | grep -q " ./usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libspool.so.0 -> libspool.so.$V$"
	[ "$(dpkg-deb -f libspool0_*.deb Package)" = libspool0 ]
	[ "$(dpkg-deb -f libspool-dev_*.deb Depends)" = "libspool0 (= $V), uuid-dev, libxxhash-dev, liburing-dev" ]
	# The Python package: the module, its types, its extension linked to
	# libspool0, for Debian's python3.
	[ "$(dpkg-deb -c python3-spool_*.deb | awk '{ print $6 }' |
	    grep '^\./usr/lib/python3/dist-packages/spool/.' | sed 's/cpython-[0-9]*-/X-/' | sort)" = \
	    "$(printf './usr/lib/python3/dist-packages/spool/%s\n' \
	    __init__.py "_spool.X-$(dpkg-architecture -qDEB_HOST_MULTIARCH).so" \
	    _spool.pyi _work.py py.typed | sort)" ]
	run -0 dpkg-deb -f python3-spool_*.deb Depends
	[[ $output == *'python3 (>= '* ]] && [[ $output == *'libspool0 (>= '* ]]
	# The commands hold the three static archives, libc stays shared, and
	# the package names the sources it was built with.
	dpkg-deb -x spool_*.deb "$BATS_TEST_TMPDIR/root"
	[ "$(objdump -p "$BATS_TEST_TMPDIR/root/usr/bin/spool-run" |
	    awk '$1 == "NEEDED" { print $2 }')" = libc.so.6 ]
	[ "$(dpkg-deb -f spool_*.deb Built-Using)" = \
	    "$(dpkg-query -f '${source:Package} (= ${source:Version})\n' \
	    -W uuid-dev libxxhash-dev liburing-dev | sort | paste -sd, |
	    sed 's/,/, /g')" ]
	run -0 dpkg-deb -f spool_*.deb Depends
	[[ $output = libc6* ]] && [[ $output != *,* ]]
	# What a program linked with libspool.so.0 of 0.N needs: 0.N.
	dpkg-deb -e libspool0_*.deb "$BATS_TEST_TMPDIR/ctl"
	next=$(awk -F. '{ print $1 "." $2 + 1 }' <<<"$V")
	[ "$(cat "$BATS_TEST_TMPDIR/ctl/shlibs")" = \
	    "libspool 0 libspool0 (>= ${V%.*}.0), libspool0 (<< $next~)" ]
}

@test "installed: the demo runs on the installed commands, a program builds on libspool-dev, nothing is enabled, purge leaves nothing" {
	cd "$B"
	users=$(getent passwd | cut -d: -f1 | sort)
	run -0 dpkg -i spool_*.deb libspool0_*.deb libspool-dev_*.deb \
	    python3-spool_*.deb
	dpkg-query -L $PKGS | sort -u >"$BATS_TEST_TMPDIR/files"
	[ "$(command -v spool-run)" = /usr/bin/spool-run ]
	[ -x /usr/libexec/spool/handler-http.sh ]
	# No test hook in what the packages ship (tests/README.md).
	m=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	[ "$(strings /usr/lib/$m/libspool.a /usr/lib/$m/libspool.so.0 \
	    /usr/bin/spool-* | grep -c SPOOL_TEST)" = 0 ]
	# The demo, from its installed copy, on the installed commands.
	mkdir "$BATS_TEST_TMPDIR/tmp"
	run -0 --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR/tmp" \
	    sh /usr/share/doc/spool/examples/demo.sh
	[ "$stderr" = "" ]
	[[ $output == *'spool-redrive: order-1846: its side effect may have happened: reconcile it, then redrive with --reconciled'* ]]
	[ "$(grep -c '^  claimed' <<<"$output")" -eq 9 ]
	[ "$(ls -A "$BATS_TEST_TMPDIR/tmp")" = "" ]
	# libspool(3)'s example against libspool-dev, shared and static.
	awk '/^\.Sh/ { ex = ($2 == "EXAMPLES") }
	    ex && /^\.Bd -literal/ { k++; on = (k == 1); next }
	    /^\.Ed/ { on = 0 } on' "$ROOT/man/libspool.3" |
	    sed 's/\\e/\\/g; s/\\&//g' >"$BATS_TEST_TMPDIR/example.c"
	[ "$(pkg-config --libs spool | tr -d ' ')" = -lspool ]
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	cc -o "$BATS_TEST_TMPDIR/example" "$BATS_TEST_TMPDIR/example.c" $(pkg-config --cflags --libs spool)
	run -0 "$BATS_TEST_TMPDIR/example" "$BATS_TEST_TMPDIR/s1"
	[ "${lines[2]}" = "finished hello-1: done" ]
	# shellcheck disable=SC2046 # pkg-config's flags, one word each
	cc -static -o "$BATS_TEST_TMPDIR/example-static" "$BATS_TEST_TMPDIR/example.c" \
	    $(pkg-config --static --cflags --libs spool)
	run -0 "$BATS_TEST_TMPDIR/example-static" "$BATS_TEST_TMPDIR/s2"
	[ "${lines[2]}" = "finished hello-1: done" ]
	# A fresh python3, from the root directory, with nothing of the tree
	# on its path: the installed module on the installed library.
	run -0 env -i PATH="$PATH" /usr/bin/python3 -I -c '
import spool, sys
spool.init(sys.argv[1])
with spool.Spool(sys.argv[1]) as sp:
    sp.enqueue(b"hi", id="py-1")
    print(spool.work(sys.argv[1], lambda job: None, lease=30, once=True),
          [i.id for i in sp.list("done")], spool.__file__,
          spool._spool.__file__)' "$BATS_TEST_TMPDIR/s3"
	ext=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	[ "$output" = "1 ['py-1'] /usr/lib/python3/dist-packages/spool/__init__.py /usr/lib/python3/dist-packages/spool/_spool$ext" ]
	[ "$(readlink -f "$(ldd /usr/lib/python3/dist-packages/spool/_spool.*.so |
	    awk '$1 == "libspool.so.0" { print $3 }')")" = "/usr/lib/$m/libspool.so.$V" ]
	# The units are installed, name the installed commands, and nothing
	# enables them; no user was made for them.
	[ "$(ls /lib/systemd/system/spool-* | wc -l)" -eq 7 ]
	grep -q '^ExecStart=/usr/bin/spool-purge done --older-than 30d$' /lib/systemd/system/spool-purge.service
	# (deb-systemd-helper keeps a note of each unit, *.dsh-also, which
	# enables nothing.)
	[ "$(find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled \
	    -name 'spool*' ! -name '*.dsh-also' 2>/dev/null)" = "" ]
	# A service that a timer starts has no [Install]: "static".
	run -0 systemctl is-enabled spool-check.service spool-check.timer \
	    spool-purge.service spool-purge.timer spool-stat.service \
	    spool-stat.timer spool-run@hooks.service
	[ "$output" = "$(printf '%s\n' static disabled static disabled static \
	    disabled disabled)" ]
	[ "$(getent passwd | cut -d: -f1 | sort)" = "$users" ]
	# Completion and manual pages where their tools look.
	[ -L /usr/share/bash-completion/completions/spool-redrive ]
	[ -f /usr/share/man/man3/libspool.3.gz ]
	[ "$(readlink /usr/share/man/man1/spool-resume.1.gz)" = spool-pause.1.gz ]
	run -0 dpkg --purge $PKGS
	run -1 dpkg-query -W -f '${Status}\n' $PKGS
	# Every file the packages held is gone (directories others share,
	# such as /usr/bin, stay).
	while read -r f; do
		[ -d "$f" ] && continue
		[ ! -e "$f" ] && [ ! -L "$f" ] || { echo "left: $f" >&2; return 1; }
	done <"$BATS_TEST_TMPDIR/files"
	[ ! -e /usr/share/doc/spool ] && [ ! -e /usr/libexec/spool ]
}
