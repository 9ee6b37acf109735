#!/usr/bin/env bats
# make demo (contrib/demo.sh): it needs make, a compiler, libuuid and libxxhash, and
# shows what an operator does: spool-stat, spool-ls -l dead, spool-show, a
# redrive refused and others allowed, a drop.  tests/deps.sh build asks
# for no test tool.

load helpers

ROOT="$BATS_TEST_DIRNAME/.."

# A PATH of the tools the demo and the build use, and nothing else: no
# bats, strace, jq, mandoc or promtool.
bare_path() {
	local t d
	d=$(mktemp -d "$BATS_TEST_TMPDIR/path.XXXXXX")
	for t in "$@"; do
		ln -s "$(command -v "$t")" "$d/$t"
	done
	echo "$d"
}

@test "make demo runs with make, a compiler and a shell's tools alone, and tells the operator's story" {
	p=$(bare_path make sh cc id mktemp sed cat chmod touch rm dirname mv)
	mkdir "$BATS_TEST_TMPDIR/tmp"
	run --separate-stderr env -i PATH="$p" HOME="$BATS_TEST_TMPDIR" \
	    TMPDIR="$BATS_TEST_TMPDIR/tmp" make -s -C "$ROOT" demo
	[ "$status" -eq 0 ] && [ "$stderr" = "" ] || {
		printf 'exit status %s\n%s\n' "$status" "$stderr" >&2
		tail -n 20 <<<"$output" >&2
		return 1
	}
	# It cleans up after itself.
	equals "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ""
	# The deliveries, in the order they ran.  Tokens come from one counter
	# for the whole spool: 1 to 9, one a delivery.
	claims=$(grep '^  claimed' <<<"$output" | sed 's/:.*->//')
	equals "$(awk '{ print $4 }' <<<"$claims" | paste -sd' ')" "1 2 3 4 5 6 7 8 9"
	# First each job once (jobs due in the same 16 ms come in any order),
	# then order-1844's retries, then the two redriven jobs (in any
	# order, for the same reason).
	claims=$(sed 's/ token [0-9]*//' <<<"$claims")
	diff -u - <(sed -n 1,5p <<<"$claims" | LC_ALL=C sort
	    sed -n 6,7p <<<"$claims"
	    sed -n '8,$p' <<<"$claims" | LC_ALL=C sort) <<'EOF'
  claimed order-1842 attempt 1 ok
  claimed order-1843 attempt 1 ok
  claimed order-1844 attempt 1 retry
  claimed order-1845 attempt 1 permanent
  claimed order-1846 attempt 1 unknown
  claimed order-1844 attempt 2 retry
  claimed order-1844 attempt 3 retry
  claimed order-1844 attempt 1 ok
  claimed order-1846 attempt 1 ok
EOF
	# The commands the operator runs, in order.
	diff -u - <(grep '^\$ spool-[a-z]*' <<<"$output" |
	    grep -v -e spool-enqueue -e spool-run) <<'EOF'
$ spool-init
$ spool-stat
$ spool-ls -l dead
$ spool-show order-1844
$ spool-redrive --by ops --note INC-4411 order-1844
$ spool-redrive --by ops --note INC-4411 order-1846
$ spool-redrive --by ops --note INC-4411 --reconciled order-1846
$ spool-drop --by ops --note INC-4411 order-1845
$ spool-stat
$ spool-ls -l dead
$ spool-show order-1846
EOF
	# What is parked, and why: ID, SE, REASON, CLASS of spool-ls -l.
	diff -u - <(sed -n '/^\$ spool-ls -l dead/,/^$/p' <<<"$output" |
	    sed -n '2,5p' | awk '{ print $1, $4, $5, $6 }') <<'EOF'
ID SE REASON CLASS
order-1844 - exhausted dependency-down
order-1845 - permanent invalid-input
order-1846 yes side-effect unknown-side-effect
EOF
	# The refusal, with its message and status, then the reconciled one.
	diff -u - <(grep -A 3 'order-1846 may have had its effect' <<<"$output") <<'EOF'
== order-1846 may have had its effect: its redrive is refused
$ spool-redrive --by ops --note INC-4411 order-1846
spool-redrive: order-1846: its side effect may have happened: reconcile it, then redrive with --reconciled
(exit status 1)
EOF
	# spool-show: order-1844's three deliveries, each a retry.
	equals "$(sed -n '/^\$ spool-show order-1844/,/^==/p' <<<"$output" |
	    awk '$1 == 1 && $4 == "demo-worker" { print $2, $7 }' | tr '\n' ' ')" \
	    "1 retry 2 retry 3 retry "
	# At the end: five done of which one dropped, and nothing parked:
	# spool-stat shows no metric that is 0.
	diff -u - <(sed -n '/^== Verify/,$p' <<<"$output" |
	    grep -E '^(dead|done|dropped|redriven_done) ') <<'EOF'
done                            5
dropped                         1
redriven_done                   2
EOF
	diff -u - <(sed -n '/^\$ spool-show order-1846/,$p' <<<"$output" |
	    grep -E '^(state|cycles|by|note) ') <<'EOF'
state        done
cycles       2 (this one began with a redrive)
by           ops
note         INC-4411
EOF
}

@test "tests/deps.sh build asks for a compiler, libuuid, libxxhash and liburing alone; plain, for every test tool" {
	p=$(bare_path cc id)
	run -0 --separate-stderr env -i PATH="$p" "$ROOT/tests/deps.sh" build
	equals "$output$stderr" ""
	# No compiler (and no apt-get to install one with).
	p=$(bare_path id)
	run -1 --separate-stderr env -i PATH="$p" "$ROOT/tests/deps.sh" build
	equals "$stderr" "$(printf '%s\n' 'missing: gcc libc6-dev' \
	    'install them with: sudo apt-get install -y gcc libc6-dev')"
	ln -s "$(command -v cc)" "$p/cc"
	run -1 --separate-stderr env -i PATH="$p" "$ROOT/tests/deps.sh"
	[[ $stderr == "missing: bats strace golang-go mandoc shellcheck groff jq prometheus "* ]]
	run -1 --separate-stderr env -i PATH="$p" "$ROOT/tests/deps.sh" deb
	[[ $stderr == "missing: "*" pkg-config "*"dpkg-dev debhelper dh-python lintian"$'\n'* ]]
	run -100 --separate-stderr "$ROOT/tests/deps.sh" demo
	equals "$stderr" "usage: tests/deps.sh [build | check | deb]"
}
