#!/usr/bin/env bats
# What every command shares as a Unix tool: --help and --version, the
# usage being the man page's SYNOPSIS form for form; and the messages that
# say plainly what is wrong (spool(7), EXIT STATUS).

load helpers

ROOT="$BATS_TEST_DIRNAME/.."
CMDS="spool-cancel spool-claim spool-drop spool-enqueue spool-finish
    spool-fsck spool-init spool-ls spool-pause spool-purge spool-redrive
    spool-renew spool-resume spool-run spool-show spool-stat"

# The forms of COMMAND's SYNOPSIS, one a line, as mandoc renders them;
# spool-resume's are in spool-pause(1).
forms() {
	local page=$1
	[ "$1" != spool-resume ] || page=spool-pause
	mandoc -T ascii -O width=1000 "$ROOT/man/$page.1" | col -b |
	    awk -v cmd="$1" '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 }
		on && $1 == cmd { sub(/^ +/, ""); print }'
}

@test "--help prints every form of the SYNOPSIS on stdout and exits 0" {
	for cmd in $CMDS; do
		[ -n "$(forms "$cmd")" ]
		run -0 --separate-stderr "$cmd" --help
		[ "$stderr" = "" ]
		diff -u <(forms "$cmd" | sed '1s/^/usage: /; 2,$s/^/       /') \
		    - <<<"$output"
	done
	# Wherever it is among the options, and whatever else is missing.
	run -0 --separate-stderr spool-redrive --by ops --help
	[ "${lines[0]}" = "usage: $(forms spool-redrive | head -n 1)" ]
	[ "${#lines[@]}" -eq 2 ]
	# But as an option's value it is not one.
	run -100 --separate-stderr spool-ls --reason --help
	[ "$output" = "" ]
	[ "$stderr" = "spool-ls: --reason: bad reason '--help' (permanent, exhausted, deadline, side-effect or cancelled)" ]
}

@test "spool-redrive --help shows the bulk form: -, --all, --rate, --dry-run" {
	run -0 --separate-stderr spool-redrive --help
	diff -u - <(printf '%s\n' "$output") <<'EOF'
usage: spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] ID ...
       spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] [--dry-run] [--rate N/s] - | --all [--reason R] [--class C] [--older-than DUR]
EOF
}

@test "--version: the name, the version of VERSION, the formats read" {
	v=$(cat "$ROOT/VERSION")
	for cmd in $CMDS; do
		run -0 --separate-stderr "$cmd" --version
		[ "$stderr" = "" ]
		[ "$output" = "$cmd $v (spool format 2; reads format 1 too)" ]
	done
}

@test "a usage error still goes to stderr with 100, the form tried" {
	for cmd in $CMDS; do
		run -100 --separate-stderr "$cmd" --no-such-option
		[ "$output" = "" ]
		[ "${stderr_lines[0]}" = "usage: $(forms "$cmd" | head -n 1)" ]
	done
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all x
	[ "$stderr" = "usage: $(forms spool-redrive | tail -n 1)" ]
	# A prefix of --help is no abbreviation of it.
	run -100 --separate-stderr spool-ls --hel
	[ "$stderr" = "usage: $(forms spool-ls)" ]
}
