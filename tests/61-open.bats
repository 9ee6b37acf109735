#!/usr/bin/env bats
# A spool that cannot be opened: one line for each reason, the same in
# every command and in spool-stat's monitoring check (there as UNKNOWN,
# exit 3), and nothing changed.  One test per errno spool_open(3) names.

load helpers

# opened DIR STATUS MESSAGE: spool-ls and spool-claim exit STATUS with
# "CMD: MESSAGE" on stderr and nothing on stdout; spool-stat --crit says
# "SPOOL UNKNOWN - MESSAGE" on stdout and exits 3; and DIR is unchanged.
opened() {
	local dir=$1 status=$2 msg=$3 before cmd
	before=$(SPOOL_DIR=$dir snapshot 2>/dev/null) || true
	for cmd in spool-ls spool-claim; do
		run "-$status" --separate-stderr "$cmd" -d "$dir"
		equals "$output" ""
		[ "$stderr" = "$cmd: $msg" ] || { echo "$cmd: $stderr" >&2; return 1; }
	done
	run -3 --separate-stderr spool-stat -d "$dir" --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - $msg"
	equals "$stderr" ""
	equals "$(SPOOL_DIR=$dir snapshot 2>/dev/null || true)" "$before"
}

@test "ENOENT and ENOTDIR: no such directory, 100" {
	opened "$BATS_TEST_TMPDIR/nowhere" 100 \
	    "$BATS_TEST_TMPDIR/nowhere: No such file or directory"
	echo text >"$BATS_TEST_TMPDIR/file"
	opened "$BATS_TEST_TMPDIR/file" 100 \
	    "$BATS_TEST_TMPDIR/file: Not a directory"
}

@test "ENODATA: a directory that is not a spool, 100" {
	mkdir "$BATS_TEST_TMPDIR/empty"
	opened "$BATS_TEST_TMPDIR/empty" 100 \
	    "$BATS_TEST_TMPDIR/empty: not a spool (no format file; see spool-init(1))"
}

@test "EPROTO: a format this version does not know, 100" {
	echo 3 >"$SPOOL_DIR/format"
	opened "$SPOOL_DIR" 100 "$SPOOL_DIR: unknown spool format"
}

@test "EBADMSG: a malformed config, 100" {
	echo 'lease=forever' >>"$SPOOL_DIR/config"
	opened "$SPOOL_DIR" 100 "$SPOOL_DIR/config:12: lease=forever: not a duration above 0, such as 500ms, 30s, 5m, 2h or 7d (see spool(7), FILES)"
}

@test "EUCLEAN: a state directory missing, 100" {
	rmdir "$SPOOL_DIR/leased"
	opened "$SPOOL_DIR" 100 \
	    "$SPOOL_DIR: damaged spool: a state directory is missing or not a directory"
}

@test "EMLINK: the spool's path is a symlink, 100" {
	ln -s "$SPOOL_DIR" "$BATS_TEST_TMPDIR/link"
	opened "$BATS_TEST_TMPDIR/link" 100 \
	    "$BATS_TEST_TMPDIR/link: is a symlink: give the spool's real path"
}

@test "EADDRINUSE: this host's ID is another machine's, 100" {
	printf 'multi-host=yes\nskew=2s\n' >>"$SPOOL_DIR/config"
	mkdir "$SPOOL_DIR/hosts"
	echo 'machine=00000000000000000000000000000bad' >"$SPOOL_DIR/hosts/testhost"
	opened "$SPOOL_DIR" 100 \
	    "$SPOOL_DIR: host ID 'testhost' is in use by another machine (see hosts/ in spool-layout.md): set SPOOL_HOST"
}

@test "ENOLCK: multi-host mode on a file system whose locks may stay local, 100" {
	if ! [ -c /dev/fuse ] || [ "$(id -u)" != 0 ] || ! command -v bindfs >/dev/null; then
		[ "${CI:-}" != true ] || { echo "needs root, /dev/fuse and bindfs in CI" >&2; return 1; }
		skip "needs root, /dev/fuse and bindfs (in CI, with CI=true, this fails instead)"
	fi
	mkdir "$BATS_TEST_TMPDIR/under" "$BATS_TEST_TMPDIR/fuse"
	bindfs "$BATS_TEST_TMPDIR/under" "$BATS_TEST_TMPDIR/fuse"
	SPOOL_DIR=$BATS_TEST_TMPDIR/fuse/spool spool-init
	printf 'multi-host=yes\nskew=2s\n' >>"$BATS_TEST_TMPDIR/fuse/spool/config"
	rc=0
	opened "$BATS_TEST_TMPDIR/fuse/spool" 100 \
	    "$BATS_TEST_TMPDIR/fuse/spool: multi-host mode on fuse, a file system whose locks other hosts may not see (see spool-layout.md, File systems)" ||
	    rc=$?
	fusermount -u "$BATS_TEST_TMPDIR/fuse" 2>/dev/null || umount "$BATS_TEST_TMPDIR/fuse"
	return "$rc"
}

@test "EACCES: permission denied, 100" {
	if [ "$(id -u)" = 0 ]; then
		# Root reads any directory: run the commands as nobody.
		chmod 755 "$BATS_TEST_TMPDIR"
		chmod 700 "$SPOOL_DIR"
		as() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	else
		chmod 000 "$SPOOL_DIR"
		as() { "$@"; }
	fi
	for cmd in spool-ls spool-claim; do
		run -100 --separate-stderr as "$BATS_TEST_DIRNAME/bin/$cmd" -d "$SPOOL_DIR"
		equals "$stderr" "$cmd: $SPOOL_DIR: Permission denied"
	done
	run -3 --separate-stderr as "$BATS_TEST_DIRNAME/bin/spool-stat" -d "$SPOOL_DIR" --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - $SPOOL_DIR: Permission denied"
	chmod 755 "$SPOOL_DIR"
}

@test "any other error, such as EMFILE: the system's word for it, 111" {
	local before cmd
	before=$(cd "$SPOOL_DIR" && snapshot)
	# Out of descriptors once the spool's directory is open: EMFILE.
	few() { bash -c 'exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; ulimit -n 4; exec "$@"' few "$@"; }
	for cmd in spool-ls spool-claim; do
		run -111 --separate-stderr few "$BATS_TEST_DIRNAME/bin/$cmd" -d "$SPOOL_DIR"
		equals "$output" ""
		equals "$stderr" "$cmd: $SPOOL_DIR: Too many open files"
	done
	run -3 --separate-stderr few "$BATS_TEST_DIRNAME/bin/spool-stat" -d "$SPOOL_DIR" --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - $SPOOL_DIR: Too many open files"
	equals "$(cd "$SPOOL_DIR" && snapshot)" "$before"
}

# spool.h's table of errors, libspool(3)'s and spool_error()'s rows: one
# table, "WHEN ERRNO STATUS" a row.
@test "spool.h's Errors, libspool(3)'s ERRORS and spool_error() are one table" {
	local top=$BATS_TEST_DIRNAME/.. header page
	header=$(awk '/^ \* +(OPEN|INIT|CALL) +E[A-Z]+ / { print $2, $3, $NF }' \
	    "$top/lib/spool.h" | LC_ALL=C sort)
	page=$(sed -n '/^\.Sh ERRORS/,/^\.Sh /p' "$top/man/libspool.3" |
	    awk '/^\.It Er E/ {
		w = $6 == "spool_open" ? "OPEN" : $6 == "spool_init" ? "INIT" : "CALL"
		for (i = 5; i <= NF; i++) if ($i == "Ta" && $(i + 1) ~ /^1/) s = $(i + 1)
		print w, $3, s
	    }' | LC_ALL=C sort -u)
	run -0 "$BATS_TEST_DIRNAME/lib/errors"
	equals "$(LC_ALL=C sort <<<"$output")" "$header"
	equals "$page" "$header"
	[ "$(wc -l <<<"$header")" -eq 25 ]
}
