#!/usr/bin/env bats
# spool-init: the layout, idempotence, refusals, the format check, and a
# spool shared by a group of users.

load helpers

teardown() {
	[ -z "${SHARED:-}" ] || rm -rf "$SHARED"
}

@test "init makes the layout, the config and the format file" {
	diff -u - <(cd "$SPOOL_DIR" && find . | LC_ALL=C sort) <<'EOF'
.
./audit
./config
./dead
./done
./format
./leased
./meta
./new
./tmp
./tokens
EOF
	assert_file "$SPOOL_DIR/format" "2
"
	assert_file "$SPOOL_DIR/tokens" "next=1 last=0 boot=-
"
	grep -qx 'lease=30s' "$SPOOL_DIR/config"
}

@test "init is idempotent and completes an interrupted init" {
	spool-enqueue --id j1 </dev/null >/dev/null
	before=$(snapshot)
	run -0 spool-init
	equals "$(snapshot)" "$before"
	# an init that died before writing format: rerun completes it
	rm "$SPOOL_DIR/format"
	rmdir "$SPOOL_DIR/dead"
	run -0 spool-init
	[ -d "$SPOOL_DIR/dead" ] && [ -f "$SPOOL_DIR/format" ]
}

@test "init refuses a directory that is not a spool, and a file" {
	mkdir "$BATS_TEST_TMPDIR/other"
	touch "$BATS_TEST_TMPDIR/other/precious"
	run -100 --separate-stderr spool-init -d "$BATS_TEST_TMPDIR/other"
	equals "$stderr" "spool-init: $BATS_TEST_TMPDIR/other: exists and is not a spool"
	equals "$(ls "$BATS_TEST_TMPDIR/other")" precious
	touch "$BATS_TEST_TMPDIR/file"
	run -100 --separate-stderr spool-init -d "$BATS_TEST_TMPDIR/file"
	equals "$stderr" "spool-init: $BATS_TEST_TMPDIR/file: not a directory"
	run -100 --separate-stderr spool-init -d "$BATS_TEST_TMPDIR/no/such"
	equals "$stderr" "spool-init: $BATS_TEST_TMPDIR/no/such: no such parent directory"
}

@test "every command refuses an unknown format, and a directory that is not a spool" {
	echo 3 >"$SPOOL_DIR/format"
	before=$(snapshot)
	for cmd in "spool-init" "spool-enqueue" "spool-claim" "spool-renew j1 1" \
	    "spool-finish j1 1 ok" "spool-redrive --by a --note b j1"; do
		run -100 --separate-stderr $cmd </dev/null
		[[ $stderr == *"unknown spool format" ]] || { echo "$cmd: $stderr" >&2; false; }
	done
	equals "$(snapshot)" "$before"
	run -100 --separate-stderr spool-claim -d "$BATS_TEST_TMPDIR"
	equals "$stderr" "spool-claim: $BATS_TEST_TMPDIR: not a spool (no format file; see spool-init(1))"
}

@test "a malformed config is refused by every command" {
	echo 'lease=forever' >>"$SPOOL_DIR/config"
	run -100 --separate-stderr spool-claim
	equals "$stderr" "spool-claim: $SPOOL_DIR/config:12: lease=forever: not a duration above 0, such as 500ms, 30s, 5m, 2h or 7d (see spool(7), FILES)"
}

@test "files follow the umask in a private spool" {
	rm -rf "$SPOOL_DIR"
	(umask 077 && spool-init && spool-enqueue --id j1 </dev/null >/dev/null)
	equals "$(stat -c %a "$SPOOL_DIR/new")" 700
	equals "$(stat -c %a "$SPOOL_DIR/meta/j1")" 600
	equals "$(stat -c %a "$(path_of j1)")" 400
}

@test "--group: setgid directories and group-writable files, across users" {
	local g u1 u2
	if [ "$(id -u)" -ne 0 ]; then
		# Without root, only our own group: modes, not other users.
		g=$(id -gn)
		rm -rf "$SPOOL_DIR"
		(umask 077 && spool-init --group "$g" &&
		    spool-enqueue --id j1 </dev/null >/dev/null)
		equals "$(stat -c %a "$SPOOL_DIR/new")" 2770
		equals "$(stat -c %a "$SPOOL_DIR/meta/j1")" 660
		return 0
	fi
	g=spooltest u1=spoolprod u2=spoolwork
	getent group $g >/dev/null || groupadd $g
	for u in $u1 $u2; do
		getent passwd $u >/dev/null || useradd -M -N -g $g -s /bin/sh $u
	done
	# Other users cannot reach into bats's private directories.
	SHARED=$(mktemp -d /tmp/spool-group.XXXXXX)
	chmod 755 "$SHARED"
	export SPOOL_DIR="$SHARED/spool"
	(umask 077 && spool-init --group $g)
	equals "$(stat -c '%a %G' "$SPOOL_DIR")" "2770 $g"
	equals "$(stat -c '%a %G' "$SPOOL_DIR/new")" "2770 $g"
	as() { local u=$1; shift; setpriv --reuid=$u --regid=$g --init-groups \
	    env PATH="$PATH" SPOOL_DIR="$SPOOL_DIR" SPOOL_HOST=testhost sh -c 'umask 077; "$@"' sh "$@"; }
	run -0 as $u1 spool-enqueue --id j1 </dev/null
	equals "$(stat -c '%a %G' "$SPOOL_DIR/meta/j1")" "660 $g"
	equals "$(stat -c '%a %G' "$(path_of j1)")" "440 $g"
	run -0 as $u2 spool-claim --owner w
	run -0 as $u2 spool-finish j1 1 ok
	equals "$(state_of j1)" done
	equals "$(stat -c '%a %G' "$SPOOL_DIR"/audit/testhost.log)" "660 $g"
	# Without RENAME_NOREPLACE a move links the target: fs.protected_hardlinks
	# refuses that for another user's read-only job file, and the move
	# falls back to a check and rename(2) under the job's lock.
	export SPOOL_TEST_NOREPLACE=off
	run -0 as $u1 spool-enqueue --id j2 </dev/null
	run -1 as $u2 ln "$(path_of j2)" "$SPOOL_DIR/tmp/j2-link"
	equals "$(cat /proc/sys/fs/protected_hardlinks)" 1
	run -0 as $u2 spool-claim --owner w
	equals "$(cut -f1,2 <<<"$output")" "$(printf 'j2\t2')"
	run -0 as $u2 spool-finish j2 2 permanent
	run -0 as $u1 spool-redrive --by ops --note T-1 j2
	equals "$(state_of j2)" new
	equals "$(find "$SPOOL_DIR" -type f -name 'j2*' -links +1)" ""
	SPOOL_DIR=$SPOOL_DIR spool-fsck
}
