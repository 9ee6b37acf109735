#!/usr/bin/env bats
# What every command shares as a Unix tool: --help and --version, the
# usage being the man page's SYNOPSIS form for form; and the messages that
# say plainly what is wrong (spool(7), EXIT STATUS).

load helpers

ROOT="$BATS_TEST_DIRNAME/.."
CMDS="spool-batch spool-cancel spool-claim spool-drop spool-enqueue
    spool-finish spool-fsck spool-init spool-ls spool-pause spool-purge
    spool-redrive spool-renew spool-resume spool-run spool-show spool-stat"

# The forms of COMMAND's SYNOPSIS, one a line, as mandoc renders them;
# spool-resume's are in spool-pause(1).
forms() {
	local page=$1
	[ "$1" != spool-resume ] || page=spool-pause
	mandoc -T ascii -O width=1000 "$ROOT/man/$page.1" | col -b |
	    awk -v cmd="$1" '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 }
		on && $1 == cmd { sub(/^ +/, ""); print }'
}

# The option lines of --help: "  -d DIR  the spool ...".
help_options() {
	grep '^  -'
}

@test "--help prints every form of the SYNOPSIS, then a line an option, on stdout and exits 0" {
	for cmd in $CMDS; do
		[ -n "$(forms "$cmd")" ]
		run -0 --separate-stderr "$cmd" --help
		equals "$stderr" ""
		diff -u <(forms "$cmd" | sed '1s/^/usage: /; 2,$s/^/       /'
		    "$cmd" --help | help_options) - <<<"$output"
	done
	# Wherever it is among the options, and whatever else is missing.
	run -0 --separate-stderr spool-redrive --by ops --help
	equals "${lines[0]}" "usage: $(forms spool-redrive | head -n 1)"
	[ "${#lines[@]}" -eq 15 ]
	# But as an option's value it is not one.
	run -100 --separate-stderr spool-ls --reason --help
	equals "$output" ""
	equals "$stderr" "spool-ls: --reason: unknown reason '--help' (permanent, exhausted, deadline, side-effect or cancelled)"
}

@test "spool-redrive --help shows the bulk form: -, -0, --all, --rate, --dry-run" {
	run -0 --separate-stderr spool-redrive --help
	diff -u - <(printf '%s\n' "$output") <<'EOF'
usage: spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] [--dry-run] ID ...
       spool-redrive [-d DIR] --by WHO --note TICKET [--reconciled] [--edited] [--dry-run] [--rate N/s] [-0] - | --all [--reason R] [--class C] [--key KEY] [--older-than DUR]
  -d DIR            the spool (default: $SPOOL_DIR)
  --by WHO          who redrives: an operator handle or role
  --note TICKET     why: a ticket or incident identifier
  --reconciled      the side effect was checked: redrive a flagged job
  --edited          send the payload as edited by hand
  -0                with -, IDs end in NUL, not a newline
  --all             every parked job that the filters keep
  --reason R        only jobs parked for reason R
  --class C         only jobs whose last failure was of class C
  --key KEY         only jobs with key KEY
  --older-than DUR  only jobs parked for at least DUR
  --rate N/s        at most N jobs a second (default: 10/s)
  --dry-run         print what would be redriven, change nothing
EOF
}

@test "--help names every option of the man page, and only those, each under 80 columns" {
	for cmd in $CMDS; do
		"$cmd" --help | help_options | awk -v c="$cmd" '{ print c, $1 }'
	done | sort -u >"$BATS_TEST_TMPDIR/help"
	diff -u <(man_options "$ROOT"/man/spool-*.1) "$BATS_TEST_TMPDIR/help"
	for cmd in $CMDS; do
		"$cmd" --help | help_options
	done | awk 'length > 79 { print; bad = 1 } END { exit bad }'
	# The check fails on an option the page has and --help has not.
	run -1 diff <(man_options "$ROOT"/man/spool-*.1) \
	    <(grep -v 'spool-claim -n' "$BATS_TEST_TMPDIR/help")
	equals "$output" $'11d10\n< spool-claim -n'
}

@test "--version: the name, the version of VERSION, the formats read" {
	v=$(cat "$ROOT/VERSION")
	for cmd in $CMDS; do
		run -0 --separate-stderr "$cmd" --version
		equals "$stderr" ""
		equals "$output" "$cmd $v (spool format 2; reads format 1 too)"
	done
}

@test "a usage error still goes to stderr with 100, the form tried" {
	for cmd in $CMDS; do
		run -100 --separate-stderr "$cmd" --no-such-option
		equals "$output" ""
		equals "${stderr_lines[0]}" "usage: $(forms "$cmd" | head -n 1)"
	done
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 --all x
	equals "$stderr" "usage: $(forms spool-redrive | tail -n 1)"
	# A prefix of --help is no abbreviation of it.
	run -100 --separate-stderr spool-ls --hel
	equals "$stderr" "usage: $(forms spool-ls)"
}

@test "finishing or renewing a job never claimed says so, not 'stale token'" {
	spool-enqueue --id a <<<a >/dev/null
	before=$(snapshot)
	run -1 --separate-stderr spool-finish a 1 ok
	equals "$output" ""
	equals "$stderr" "spool-finish: a: not leased: never claimed, the job is in new/"
	run -1 --separate-stderr spool-renew a 1
	equals "$stderr" "spool-renew: a: not leased: never claimed, the job is in new/"
	equals "$(snapshot)" "$before"
	# Once claimed, an old token is stale as before.
	spool-claim >/dev/null
	t=$(lease_token a)
	run -1 --separate-stderr spool-finish a $((t + 1)) ok
	equals "$stderr" "spool-finish: a: stale token: the current token is $t and the job is in leased/"
}

@test "a negative token is a bad token, not a usage error" {
	spool-enqueue --id a <<<a >/dev/null
	spool-claim >/dev/null
	before=$(snapshot)
	for args in "a -1 ok" "a -12 ok" "--delay 1s a -1 retry" "a -1 ok --class transient" "a ok -1"; do
		run -100 --separate-stderr spool-finish $args
		equals "$output" ""
		[[ $stderr = "spool-finish: a: bad token '-1"*"' (a number from 1 to 10^18-1)" ]]
	done
	run -100 --separate-stderr spool-renew a -3
	equals "$stderr" "spool-renew: a: bad token '-3' (a number from 1 to 10^18-1)"
	equals "$(snapshot)" "$before"
	# A negative number that is an option's value stays that option's.
	run -100 --separate-stderr spool-finish --delay -1 a 1 retry
	equals "$stderr" "spool-finish: --delay: bad duration '-1' (use e.g. 500ms, 30s, 5m, 2h, 7d, 0)"
}

@test "a malformed config names its line, the key, what was given and the form" {
	c="$SPOOL_DIR/config"
	before=$(snapshot)
	D='such as 500ms, 30s, 5m, 2h or 7d'
	while IFS='|' read -r line why; do
		printf '# defaults\nlease=30s\n%s\nmax-attempts=5\n' "$line" >"$c"
		run -100 --separate-stderr spool-ls
		equals "$output" ""
		equals "$stderr" "spool-ls: $c:3: $why (see spool(7), FILES)"
	done <<EOF
lease=forever|lease=forever: not a duration above 0, $D
lease=0|lease=0: not a duration above 0, $D
deadline=-1d|deadline=-1d: not a duration above 0, $D
backoff=1 s|backoff=1 s: not a duration, such as 0, 500ms, 30s, 5m, 2h or 7d
backoff-max=|backoff-max=: not a duration, such as 0, 500ms, 30s, 5m, 2h or 7d
timeout=1y|timeout=1y: not a duration, such as 0, 500ms, 30s, 5m, 2h or 7d
skew=soon|skew=soon: not a duration, such as 0, 500ms, 30s, 5m, 2h or 7d
max-attempts=0|max-attempts=0: not a whole number from 1 to 1000000
max-attempts=1000001|max-attempts=1000001: not a whole number from 1 to 1000000
reserve=16Q|reserve=16Q: not a size, such as 16M, 500k, 1000 or 0
reserve-inodes=-1|reserve-inodes=-1: not a size, such as 16M, 500k, 1000 or 0
multi-host=maybe|multi-host=maybe: not yes or no
syncfs=1|syncfs=1: not yes or no
limit.k=x|limit.k=x: not a whole number from 0 to 1000000
limit.a b=1|limit.a b: not a key of letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 bytes
rate.k=5|rate.k=5: not N/DUR, N from 1 to 1000000, such as 5/1s, 100/m or 10/30s
leese=1s|leese: unknown key
no equals sign|'no equals sign': not KEY=VALUE
EOF
	printf 'lease=30s\nmulti-host=yes\n' >"$c"
	run -100 --separate-stderr spool-claim
	equals "$stderr" "spool-claim: $c:2: multi-host=yes: needs a skew above 0, such as skew=2s (see spool(7), FILES)"
	printf 'backoff-max=1s\nlease=1s\nbackoff=1m\n' >"$c"
	run -100 --separate-stderr spool-claim
	equals "$stderr" "spool-claim: $c:3: backoff-max is below backoff (see spool(7), FILES)"
	{ echo '# 65 keys'; for i in $(seq 65); do echo "limit.k$i=1"; done; } >"$c"
	run -100 --separate-stderr spool-claim
	equals "$stderr" "spool-claim: $c:66: limit.k65: more than 64 keys with a limit or a rate (see spool(7), FILES)"
	printf 'no equals sign\n' >"$c"
	run -3 --separate-stderr spool-stat --crit 'dead>0'
	equals "$output" "SPOOL UNKNOWN - $c:1: 'no equals sign': not KEY=VALUE (see spool(7), FILES)"
	# Too long to be a config: no line to name.
	{ for i in $(seq 500); do echo "lease=${i}s"; done; } >"$c"
	run -100 --separate-stderr spool-ls
	equals "$stderr" "spool-ls: $c: malformed"
	equals "$(snapshot | grep -v ' \./config$')" "$(grep -v ' \./config$' <<<"$before")"
}

# park ID...: each ID enqueued, claimed and finished permanent.
park() {
	local id
	for id; do
		spool-enqueue --id "$id" <<<"$id" >/dev/null
	done
	spool-claim -n $# | awk '{ print $1, $2, "permanent" }' |
	    spool-finish - >/dev/null
	[ "$(ids_in dead | wc -l)" -eq $# ]
}

@test "-0 reads IDs that end in NUL: spool-ls -0 | spool-redrive -0 -" {
	park d1 d2 d3
	# Without -0, NUL-ended IDs are refused, with a hint.
	before=$(snapshot)
	run -100 --separate-stderr bash -c 'spool-ls -0 | spool-redrive --by ops --note INC-1 -'
	equals "$output" ""
	[[ ${stderr_lines[0]} = "spool-redrive: d"?": bad ID: the input holds a NUL byte (give -0 to read IDs that end in NUL, as spool-ls -0 prints them)" ]]
	[[ ${stderr_lines[1]} = "spool-redrive: redrove 0 of 1 (1 refused) in "*s ]]
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr bash -c 'spool-ls -0 | spool-redrive --by ops --note INC-1 -0 -'
	equals "$(printf '%s\n' "$output" | LC_ALL=C sort)" $'d1\nd2\nd3'
	equals "$(ids_in new)" $'d1\nd2\nd3'
	equals "$(ids_in dead)" ""
}

@test "-0 for spool-drop, spool-cancel and spool-purge; only with -" {
	park p1 p2 p3
	spool-enqueue --id q1 <<<q1 >/dev/null
	run -0 --separate-stderr spool-drop --by ops --note INC-1 -0 - < <(printf 'p1\0p2\0')
	equals "$output" $'p1\np2'
	run -0 --separate-stderr spool-cancel --by ops --note INC-1 -0 - < <(printf 'q1\0')
	equals "$output" q1
	run -0 --separate-stderr spool-purge --by ops --note INC-1 -0 done - < <(printf 'p1\0p2\0')
	equals "$output" $'p1\np2'
	# A last ID without its NUL is still read, as xargs -0 reads it.
	run -0 --separate-stderr spool-purge --by ops --note INC-1 -0 dead - < <(printf 'q1')
	equals "$output" q1
	before=$(snapshot)
	run -100 --separate-stderr spool-drop --by ops --note INC-1 -0 p3
	equals "$stderr" "usage: $(forms spool-drop)"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 -0 p3
	equals "$stderr" "usage: $(forms spool-redrive | tail -n 1)"
	run -100 --separate-stderr spool-redrive --by ops --note INC-1 -0 --all
	equals "$stderr" "usage: $(forms spool-redrive | tail -n 1)"
	run -100 --separate-stderr spool-purge -0 done --older-than 0
	equals "${stderr_lines[0]}" "usage: $(forms spool-purge | head -n 1)"
	# Only the commands that read IDs take it.
	run -100 --separate-stderr spool-pause -0
	equals "$stderr" "usage: $(forms spool-pause)"
	equals "$(snapshot)" "$before"
}

@test "spool-purge says which of --by and --note is missing" {
	park p1
	before=$(snapshot)
	run -100 --separate-stderr spool-purge dead --older-than 0
	equals "$output" ""
	equals "$stderr" "spool-purge: dead: --by WHO and --note TICKET are needed; missing: --by and --note"
	run -100 --separate-stderr spool-purge dead --note INC-1 --older-than 0
	equals "$stderr" "spool-purge: dead: --by WHO and --note TICKET are needed; missing: --by"
	run -100 --separate-stderr spool-purge dead --by ops p1
	equals "$stderr" "spool-purge: dead: --by WHO and --note TICKET are needed; missing: --note"
	run -100 --separate-stderr spool-purge --missing p1
	equals "$stderr" "spool-purge: --missing: --by WHO and --note TICKET are needed; missing: --by and --note"
	run -100 --separate-stderr spool-purge done --by ops --older-than 0
	equals "$stderr" "spool-purge: done: --by WHO and --note TICKET go together; missing: --note"
	equals "$(snapshot)" "$before"
}

@test "spool-fsck notes a stray name at the top and exits 0; a missing config is a fault" {
	echo notes >"$SPOOL_DIR/README"
	mkdir "$SPOOL_DIR/old"
	run -0 --separate-stderr spool-fsck
	diff -u - <(printf '%s\n' "$output" | LC_ALL=C sort) <<'EOF2'
README: note: not part of a spool (left alone)
old: note: not part of a spool (left alone)
EOF2
	run -0 --separate-stderr spool-fsck --repair
	equals "$(cat "$SPOOL_DIR/README")" notes
	[ -d "$SPOOL_DIR/old" ]
	rm -r "$SPOOL_DIR/README" "$SPOOL_DIR/old"
	fsck_clean
	rm "$SPOOL_DIR/config"
	before=$(snapshot)
	for flag in "" --repair; do
		run -1 --separate-stderr spool-fsck $flag
		equals "$output" "config: missing: every command runs on the built-in defaults, with no reserve; spool-init writes the default config again, or restore the spool's own"
	done
	equals "$(snapshot)" "$before"
	spool-init
	fsck_clean
}

# N files to enqueue, in $BATS_TEST_TMPDIR/f/.
files() {
	mkdir -p "$BATS_TEST_TMPDIR/f"
	for i in $(seq "$1"); do echo "$i" >"$BATS_TEST_TMPDIR/f/$i"; done
}

# on_tty CMD: run the shell command CMD with a terminal for stdin, stdout
# and stderr (script(1), whose output ends lines in CR LF); its stdout is
# redirected by CMD itself, so $output is what stderr showed.
on_tty() {
	run -0 script -qec "$1" /dev/null
}

# Whether $output shows the progress line LINE (a pattern) and ends with
# it erased: CR, spaces, CR, and nothing after.
shows_progress() {
	local cr=$'\r' pat
	pat="$cr$1 "
	[[ $output = *$pat* ]] || { echo "no progress: $(printf %q "$output")" >&2; return 1; }
	[[ $output =~ $cr\ +$cr$ ]] || { echo "not erased: $(printf %q "$output")" >&2; return 1; }
}

@test "progress on a terminal: spool-enqueue of many files, spool-purge of many jobs, spool-fsck" {
	files 300
	on_tty "spool-enqueue $BATS_TEST_TMPDIR/f/* >/dev/null"
	shows_progress "spool-enqueue: 300 of 300 files, *.*/s, ETA 0m00s"
	[ "$(ids_in new | wc -l)" -eq 300 ]
	on_tty "spool-fsck"
	shows_progress "spool-fsck: 300 of 300 jobs, *.*/s, ETA 0m00s"
	[[ $output = *$'\r'"spool-fsck: 64 files"* ]]
	for n in 256 44; do
		spool-claim -n $n | awk '{ print $1, $2, "ok" }' | spool-finish - >/dev/null
	done
	on_tty "spool-purge done --older-than 0 >/dev/null"
	shows_progress "spool-purge: 300 of 300, *.*/s, ETA 0m00s"
	equals "$(ids_in done)" ""
}

@test "no progress when stderr is not a terminal, nor for a short run" {
	files 300
	run -0 --separate-stderr spool-enqueue "$BATS_TEST_TMPDIR"/f/*
	equals "$stderr" ""
	[ "${#lines[@]}" -eq 300 ]
	run -0 --separate-stderr spool-fsck
	equals "$stderr$output" ""
	spool-claim -n 256 | awk '{ print $1, $2, "ok" }' | spool-finish - >/dev/null
	spool-claim -n 44 | awk '{ print $1, $2, "ok" }' | spool-finish - >/dev/null
	run -0 --separate-stderr spool-purge done --older-than 0
	equals "$stderr" ""
	[ "${#lines[@]}" -eq 300 ]
	# On a terminal, one batch is no long run.
	on_tty "spool-enqueue $BATS_TEST_TMPDIR/f/1 $BATS_TEST_TMPDIR/f/2 >/dev/null"
	equals "$output" ""
}
