#!/usr/bin/env bats
# Hostile spools: symlinks planted where the spool expects its own files,
# FIFOs and directories in place of jobs, parts nobody may write, huge and
# empty payloads, closed standard streams.  Nothing outside the spool is
# ever read through or written, every refusal is one line, and spool-fsck
# finds (and quarantines) what does not belong.

load helpers

teardown() {
	[ -z "${SHARED:-}" ] || rm -rf "$SHARED"
}

# A file outside the spool, and its fingerprint.
outside() {
	OUT="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUT"
	echo "precious" >"$OUT/file"
	OUTSUM=$(cd "$OUT" && find . -printf '%y %m %s %p\n' | sort; cat "$OUT"/file)
}

untouched() {
	equals "$(cd "$OUT" && find . -printf '%y %m %s %p\n' | sort; cat "$OUT"/file)" "$OUTSUM"
}

@test "a spool that is a symlink is refused by every command" {
	spool-enqueue --id j1 </dev/null >/dev/null
	ln -s "$SPOOL_DIR" "$BATS_TEST_TMPDIR/link"
	before=$(snapshot)
	for cmd in "spool-init" "spool-enqueue --id j2" "spool-claim" \
	    "spool-renew j1 1" "spool-finish j1 1 ok" \
	    "spool-redrive --by a --note b j1" "spool-fsck"; do
		run -100 --separate-stderr $cmd -d "$BATS_TEST_TMPDIR/link" </dev/null
		[ "$stderr" = "${cmd%% *}: $BATS_TEST_TMPDIR/link: is a symlink: give the spool's real path" ] ||
		    { echo "$cmd: $stderr" >&2; false; }
	done
	equals "$(snapshot)" "$before"
}

@test "a state directory replaced by a symlink out of the spool is not followed" {
	outside
	mv "$SPOOL_DIR/new" "$BATS_TEST_TMPDIR/new.real"
	ln -s "$OUT" "$SPOOL_DIR/new"
	run -100 --separate-stderr spool-enqueue --id j1 </dev/null
	equals "$stderr" "spool-enqueue: $SPOOL_DIR: damaged spool: a state directory is missing or not a directory"
	run -100 spool-claim
	untouched
}

@test "a job's file replaced by a symlink out of the spool is never followed" {
	outside
	spool-enqueue --id j1 <<<"mine" >/dev/null
	spool-claim >/dev/null
	spool-finish j1 1 permanent >/dev/null
	rm "$SPOOL_DIR/dead/j1"
	ln -s "$OUT/file" "$SPOOL_DIR/dead/j1"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 j1
	equals "$stderr" "spool-redrive: j1: damaged job: its file or its sidecar is not where it should be: spool-fsck --repair settles it or says how; a file removed on purpose is recorded with spool-purge --missing --by WHO --note TICKET j1 (spool(7), EDITING THE SPOOL BY HAND)"
	run -1 spool-fsck --repair
	[[ $output == *"dead/j1: not a job's name (quarantined)"* ]]
	local q=("$SPOOL_DIR"/quarantine/dead_j1,*)
	[ "${#q[@]}" -eq 1 ]
	[ -L "${q[0]}" ]
	untouched
}

@test "a sidecar replaced by a symlink out of the spool: the job is damaged, others go on" {
	outside
	spool-enqueue --id a1 </dev/null >/dev/null
	spool-enqueue --id b2 </dev/null >/dev/null
	rm "$SPOOL_DIR/meta/a1"
	ln -s "$OUT/file" "$SPOOL_DIR/meta/a1"
	run -100 --separate-stderr spool-enqueue --id a1 </dev/null
	equals "$stderr" "spool-enqueue: a1: damaged job: its file or its sidecar is not where it should be: spool-fsck --repair settles it or says how; a file removed on purpose is recorded with spool-purge --missing --by WHO --note TICKET a1 (spool(7), EDITING THE SPOOL BY HAND)"
	run -0 spool-claim -n 2
	equals "$(cut -f1 <<<"$output")" b2
	run -1 spool-fsck
	[[ $output == *"a1: sidecar meta/a1 is not a readable record log (or not a regular file)"* ]]
	untouched
}

@test "a job's file replaced by a FIFO or a directory: refused, never blocks" {
	local kind
	for kind in fifo dir; do
		rm -rf "$SPOOL_DIR"
		spool-init
		spool-enqueue --id j1 </dev/null >/dev/null
		spool-claim >/dev/null
		spool-finish j1 1 permanent >/dev/null
		rm "$SPOOL_DIR/dead/j1"
		if [ $kind = fifo ]; then mkfifo "$SPOOL_DIR/dead/j1"; else mkdir "$SPOOL_DIR/dead/j1"; fi
		run -100 timeout 10 spool-redrive --by ops --note INC-1 j1
		run -1 timeout 10 spool-fsck
		[[ $output == *"dead/j1: not a job's name"* ]]
	done
}

@test "parts of the spool nobody may write: a clear error, nothing changed" {
	[ "$(id -u)" -eq 0 ] || { echo "needs root to run as another user" >&2; false; }
	SHARED=$(mktemp -d /tmp/spool-hostile.XXXXXX)
	chmod 755 "$SHARED"
	export SPOOL_DIR="$SHARED/spool"
	spool-init
	spool-enqueue --id j1 </dev/null >/dev/null
	chown -R nobody "$SPOOL_DIR"
	chmod 555 "$SPOOL_DIR/meta" "$SPOOL_DIR/tmp"
	before=$(snapshot)
	as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    env PATH="$PATH" SPOOL_DIR="$SPOOL_DIR" SPOOL_HOST=testhost "$@"; }
	run -111 --separate-stderr as_nobody spool-enqueue --id j2 </dev/null
	equals "$stderr" "spool-enqueue: j2: Permission denied"
	equals "$(snapshot)" "$before"
}

@test "an empty payload and a 1 GiB one, from stdin, arrive byte for byte" {
	run -0 spool-enqueue --id empty </dev/null
	head -c 1073741824 /dev/urandom >"$BATS_TEST_TMPDIR/big"
	run -0 spool-enqueue --id big <"$BATS_TEST_TMPDIR/big"
	rm "$BATS_TEST_TMPDIR/big.check" 2>/dev/null || true
	run -0 spool-claim -n 2
	[ "$(stat -c %s "$(path_of empty)")" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/big" "$(path_of big)"
	rm "$BATS_TEST_TMPDIR/big"
	fsck_clean
}

@test "closed standard output or input: refused before anything changes" {
	before=$(snapshot)
	run -100 --separate-stderr bash -c 'spool-enqueue --id j1 </dev/null >&-'
	equals "$stderr" "spool-enqueue: standard output is closed"
	run -100 --separate-stderr bash -c 'spool-enqueue --id j1 <&-'
	equals "$stderr" "spool-enqueue: standard input is closed"
	run -100 --separate-stderr bash -c 'spool-finish - <&-'
	equals "$stderr" "spool-finish: standard input is closed"
	run -100 --separate-stderr bash -c 'spool-claim >&-'
	equals "$stderr" "spool-claim: standard output is closed"
	equals "$(snapshot)" "$before"
}

@test "an ID of 10,000 bytes, and IDs that climb out of the spool" {
	before=$(snapshot)
	long=$(printf 'a%.0s' $(seq 1 10000))
	for id in "$long" ../../etc/passwd ..x .hidden a/b "a b" $'a\tb'; do
		run -100 --separate-stderr spool-enqueue --id "$id" </dev/null
		[ "${#stderr_lines[@]}" -eq 1 ]
		run -100 --separate-stderr spool-finish "$id" 1 ok
		[ "${#stderr_lines[@]}" -eq 1 ]
	done
	equals "$(snapshot)" "$before"
}
