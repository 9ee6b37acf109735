#!/usr/bin/env bats
# Bad input: every malformed ID, note, duration, token, outcome, class or
# option is refused with one line on stderr and its documented status, and
# leaves the spool byte-for-byte as it was.  Each test runs many cases and
# names every one that failed.

load helpers

# A bad word names its option; (*) spells out the alphabet.
BADWORD="bad value (*)"
# A bad --by or --note: the rule for who acts and why.
BADTEXT="bad value (printable text, 1 to 128 bytes, not '-')"
DURATIONS="(use e.g. 500ms, 30s, 5m, 2h, 7d)"
DURATIONS0="(use e.g. 500ms, 30s, 5m, 2h, 7d, 0)"
TOKENS="(a number from 1 to 10^18-1)"
OUTCOMES="(ok, retry, permanent or release)"
COMMANDS="spool-init spool-enqueue spool-claim spool-renew spool-finish spool-redrive"
CLASSES="transient rate-limited dependency-down invalid-input permission
    cancelled unknown-side-effect crashed timeout lease-expired"
long129=$(printf 'a%.0s' {1..129})
long128=${long129:1}
# Not IDs: empty, a leading '.' or '-', '/', '..', blanks, a newline,
# non-ASCII bytes, the name separator ',', one byte too long.
BAD_IDS=("" .hidden -dash a/b .. j1/../j2 "j 1" $'j\t1' $'j\n1'
    $'caf\xc3\xa9' $'j\xff' j1,1 "$long129")

failed=()	# the cases that failed, described
watched=()	# paths besides the spool that no case may change
input=		# a file for the command's stdin (default /dev/null)
unchanged=	# the snapshot the last case left

# j4 done, j3 parked, j2 leased (token 3, owner w1), j1 queued, j5 queued
# for later: a spool in which "unchanged" means something.
jobs_in_every_state() {
	spool-enqueue --id j4 <<<"four" >/dev/null
	equals "$(spool-claim --owner w1 | cut -f1,2)" "$(printf 'j4\t1')"
	spool-finish j4 1 ok >/dev/null
	spool-enqueue --id j3 <<<"three" >/dev/null
	equals "$(spool-claim --owner w1 | cut -f1,2)" "$(printf 'j3\t2')"
	spool-finish --class invalid-input j3 2 permanent >/dev/null
	spool-enqueue --id j2 <<<"two" >/dev/null
	equals "$(spool-claim --owner w1 | cut -f1,2)" "$(printf 'j2\t3')"
	spool-enqueue --id j1 <<<"one" >/dev/null
	spool-enqueue --id j5 --delay 1h <<<"five" >/dev/null
	equals "$(state_of j1)$(state_of j2)$(state_of j3)$(state_of j4)" \
	    newleaseddeaddone
	equals "$(state_of j5)" new
}

# The arguments with which COMMAND succeeds on that spool, in $args; each
# case changes one thing in them.
args_for() {
	case $1 in
	spool-init) args=() ;;
	spool-enqueue) args=(--id j9) ;;
	spool-claim) args=(--owner w9) ;;
	spool-renew) args=(j2 3) ;;
	spool-finish) args=(j2 3 ok) ;;
	spool-redrive) args=(--by ops --note INC-1 j3) ;;
	esac
}

# The usage line of COMMAND: its SYNOPSIS.
usage_line() {
	case $1 in
	spool-init) echo "usage: spool-init [-d DIR] [--group GROUP | --upgrade]" ;;
	spool-enqueue) echo "usage: spool-enqueue [-d DIR] [--id ID]" \
	    "[--max-attempts N] [--deadline DUR] [--delay DUR] [--key KEY]" \
	    "[--trace ID] [FILE ...]" ;;
	spool-claim) echo "usage: spool-claim [-d DIR] [--lease DUR]" \
	    "[--owner NAME] [-n N]" ;;
	spool-renew) echo "usage: spool-renew [-d DIR] [--lease DUR] ID TOKEN" ;;
	spool-finish) echo "usage: spool-finish [-d DIR] [--class CLASS]" \
	    "[--detail TEXT] [--delay DUR] ID TOKEN" \
	    "ok|retry|permanent|release | -" ;;
	spool-redrive) echo "usage: spool-redrive [-d DIR] --by WHO" \
	    "--note TICKET [--reconciled] [--edited] [--dry-run] ID ..." ;;
	esac
}

# The snapshot of the spool and of every path in $watched.
trees() {
	local path
	snapshot
	for path in "${watched[@]}"; do
		printf '== %s\n' "$path"
		if [ -e "$path" ]; then
			SPOOL_DIR=$path snapshot
		else
			echo absent
		fi
	done
}

# Whether TEXT is MESSAGE, where each '*' in MESSAGE stands for any text
# (for what a command may print of a value holding a newline).
like() {
	local pattern=$2 c
	for c in '\' '[' ']' '?' '(' ')'; do
		pattern=${pattern//"$c"/\\$c}
	done
	# shellcheck disable=SC2053 # a glob, by design
	[[ $1 == $pattern ]]
}

# refused STATUS MESSAGE COMMAND...: one case.  COMMAND, run with stdin
# from $input, must exit STATUS, print nothing on stdout and exactly one
# line on stderr, MESSAGE, and leave the spool and $watched as they were
# ($unchanged: as the previous case left them, since none may change them).
# A case that does not is added to $failed, with what went wrong.
refused() {
	local want=$1 message=$2 before why= status=0 output stderr stderr_lines
	shift 2
	before=${unchanged:-$(trees)}
	# Not bats's run, which costs three times the command.
	"$@" <"${input:-/dev/null}" >"$BATS_TEST_TMPDIR/out" \
	    2>"$BATS_TEST_TMPDIR/err" || status=$?
	[ "$status" -eq "$want" ] || why+=" exit $status, not $want;"
	slurp "$BATS_TEST_TMPDIR/out" output
	slurp "$BATS_TEST_TMPDIR/err" stderr
	mapfile -t stderr_lines <"$BATS_TEST_TMPDIR/err"
	stderr=${stderr%$'\n'}
	[ -z "$output" ] || why+=" stdout $(printf %q "$output");"
	[ "${#stderr_lines[@]}" -eq 1 ] ||
	    why+=" ${#stderr_lines[@]} lines on stderr;"
	like "$stderr" "$message" || why+=" the message is not: $message;"
	unchanged=$(trees)
	[ "$unchanged" = "$before" ] || why+=" the spool changed: $(diff \
	    <(echo "$before") <(echo "$unchanged") | grep '^[<>]' | head -4 |
	    tr '\n' ' ');"
	[ -z "$why" ] || failed+=("$(printf '%q ' "$@")${input:+<<<$(printf \
	    %q "$(cat "$input")") }->$why stderr: $(printf %q "$stderr")")
}

# Fail, naming every case that failed, unless none did.
no_case_failed() {
	if [ "${#failed[@]}" -ne 0 ]; then
		printf 'case failed: %s\n' "${failed[@]}" >&2
		return 1
	fi
}

@test "an unknown option, a missing or stray argument prints one usage line; a missing --by or --note is named" {
	jobs_in_every_state
	for cmd in $COMMANDS; do
		args_for "$cmd"
		u=$(usage_line "$cmd")
		refused 100 "$u" "$cmd" --bogus "${args[@]}"
		refused 100 "$u" "$cmd" --bogus=1 "${args[@]}"
		refused 100 "$u" "$cmd" -x "${args[@]}"
		refused 100 "$u" "$cmd" "${args[@]}" -d
	done
	u=$(usage_line spool-init)
	refused 100 "$u" spool-init stray
	refused 100 "$u" spool-init --group
	u=$(usage_line spool-enqueue)
	for o in --id --max-attempts --deadline --delay --trace; do
		refused 100 "$u" spool-enqueue "$o"
	done
	u=$(usage_line spool-claim)
	refused 100 "$u" spool-claim stray
	for o in -n --lease --owner; do
		refused 100 "$u" spool-claim "$o"
	done
	u=$(usage_line spool-renew)
	refused 100 "$u" spool-renew
	refused 100 "$u" spool-renew j2
	refused 100 "$u" spool-renew j2 3 stray
	refused 100 "$u" spool-renew j2 3 --lease
	u=$(usage_line spool-finish)
	refused 100 "$u" spool-finish
	refused 100 "$u" spool-finish j2
	refused 100 "$u" spool-finish j2 3
	refused 100 "$u" spool-finish j2 3 ok stray
	refused 100 "$u" spool-finish - stray
	for o in --class --detail --delay; do
		refused 100 "$u" spool-finish j2 3 retry "$o"
	done
	u=$(usage_line spool-redrive)
	refused 100 "$u" spool-redrive
	refused 100 "$u" spool-redrive --by ops --note INC-1
	refused 100 "spool-redrive: --by WHO and --note TICKET are needed; missing: --by" \
	    spool-redrive --note INC-1 j3
	refused 100 "spool-redrive: --by WHO and --note TICKET are needed; missing: --note" \
	    spool-redrive --by ops j3
	refused 100 "$u" spool-redrive --note INC-1 j3 --by
	refused 100 "$u" spool-redrive --by ops j3 --note
	refused 100 "$u" spool-redrive --reconciled=yes --by ops --note INC-1 j3
	no_case_failed
}

@test "a malformed ID, trace or owner is refused before anything is written" {
	jobs_in_every_state
	for id in "${BAD_IDS[@]}"; do
		refused 100 "spool-enqueue: --id: $BADWORD" \
		    spool-enqueue --id "$id"
		refused 100 "spool-enqueue: --trace: $BADWORD" \
		    spool-enqueue --id j9 --trace "$id"
		refused 100 "spool-claim: --owner: $BADWORD" \
		    spool-claim --owner "$id"
		refused 100 "spool-renew: *: bad ID" spool-renew -- "$id" 1
		refused 100 "spool-finish: *: bad ID" spool-finish -- "$id" 1 ok
		refused 100 "spool-redrive: *: bad ID" \
		    spool-redrive --by ops --note INC-1 -- "$id"
	done
	no_case_failed
}

@test "a malformed --by or --note is refused and never reaches the audit log" {
	jobs_in_every_state
	# Empty, control characters (C0, DEL, C1), a forged second line,
	# malformed UTF-8 (a stray byte, one cut short, overlong forms, a
	# surrogate, past U+10FFFF), the audit log's "-", one byte too long.
	for v in "" $'INC\t1' $'INC\x01' $'INC\x7f' $'INC-1\r' \
	    $'INC-1\n2026-11-30T08:12:16.301Z redrive j1 1 0 2 root - - INC-9 testhost:1' \
	    $'INC-\xff' $'caf\xc3' $'\xc0\xaf' $'\xe0\x80\xaf' $'INC\xc2\x85' \
	    $'\xed\xa0\x80' $'\xf4\x90\x80\x80' - "$long129" "${long128:1}é"; do
		for cmd in "spool-redrive j3" "spool-drop j3" "spool-cancel j1" \
		    "spool-purge dead j3" spool-pause; do
			set -- $cmd
			refused 100 "$1: --by: $BADTEXT" \
			    "$1" --by "$v" --note INC-1 "${@:2}"
			refused 100 "$1: --note: $BADTEXT" \
			    "$1" --by ops --note "$v" "${@:2}"
		done
	done
	no_case_failed
}

@test "--by and --note take what a person writes, one audit field each" {
	# Each of these was refused when they had to be words.
	vals=("INC 4411" "INC;rm" 'INC$(id)' '`id`' "INC|x" "INC&x" "'INC'"
	    -INC .INC INC/1 INC,1 "100%" '\' "%20" " lead" "trail " "  "
	    "café" "ticket № 5" "日本" "😀" "$long128" "${long128:2}é")
	for k in "${!vals[@]}"; do
		spool-enqueue --id "q$k" </dev/null >/dev/null
		run -0 --separate-stderr spool-cancel --by "${vals[$k]}" \
		    --note "${vals[$k]}" "q$k"
		equals "$stderr" ""
		run -0 spool-show --json "q$k"
		equals "$(jq -r '.by, .note, .audit[-1].actor, .audit[-1].note' \
		    <<<"$output")" "$(printf '%s\n' "${vals[$k]}" "${vals[$k]}" \
		    "${vals[$k]}" "${vals[$k]}")"
	done
	# Every line is still eleven fields of printable ASCII.
	equals "$(awk 'NF != 11' "$SPOOL_DIR"/audit/*.log)" ""
	equals "$(LC_ALL=C grep -c '[^!-~ ]' "$SPOOL_DIR"/audit/*.log)" 0
	fsck_clean
}

@test "a malformed duration is refused; 0 for --delay only" {
	jobs_in_every_state
	for d in "" -1 1x 1.5s s ms 99999999999999999999 "10 s" " 10s" \
	    $'30s\nforged'; do
		m="bad duration '${d//$'\n'/*}'"
		refused 100 "spool-claim: --lease: $m $DURATIONS" \
		    spool-claim --owner w9 --lease "$d"
		refused 100 "spool-renew: --lease: $m $DURATIONS" \
		    spool-renew --lease "$d" j2 3
		refused 100 "spool-enqueue: --deadline: $m $DURATIONS" \
		    spool-enqueue --id j9 --deadline "$d"
		refused 100 "spool-enqueue: --delay: $m $DURATIONS0" \
		    spool-enqueue --id j9 --delay "$d"
		refused 100 "spool-finish: --delay: $m $DURATIONS0" \
		    spool-finish --delay "$d" j2 3 retry
	done
	for d in 0 0ms 0s; do
		m="bad duration '$d'"
		refused 100 "spool-claim: --lease: $m $DURATIONS" \
		    spool-claim --owner w9 --lease "$d"
		refused 100 "spool-renew: --lease: $m $DURATIONS" \
		    spool-renew --lease "$d" j2 3
		refused 100 "spool-enqueue: --deadline: $m $DURATIONS" \
		    spool-enqueue --id j9 --deadline "$d"
	done
	refused 100 "spool-enqueue: *--delay reaches past *" \
	    spool-enqueue --id j9 --delay 2d --deadline 1d
	refused 100 "spool-enqueue: *--delay reaches past *" \
	    spool-enqueue --id j9 --delay 1d --deadline 1d
	no_case_failed

	run -0 --separate-stderr spool-enqueue --id j9 --delay 0 </dev/null
	equals "$output" j9
	equals "$stderr" ""
	run -0 --separate-stderr spool-finish --delay 0 j2 3 retry
	equals "$output" j2
	equals "$stderr" ""
	equals "$(state_of j2)" new
}

@test "a malformed token is refused by renew and finish" {
	jobs_in_every_state
	for t in 0 00 -1 abc 18446744073709551616 9223372036854775808 1000000000000000000 1e3 \
	    " 1" "1 " "" +1 0x1 $'1\n2'; do
		refused 100 "spool-renew: j2: bad token '${t//$'\n'/*}' $TOKENS" \
		    spool-renew -- j2 "$t"
		refused 100 "spool-finish: j2: bad token '${t//$'\n'/*}' $TOKENS" \
		    spool-finish -- j2 "$t" ok
	done
	no_case_failed
}

@test "finish refuses a bad outcome or class, and options the outcome rules out" {
	jobs_in_every_state
	for o in "" OK Ok done fail ok, "ok " " ok" park - \
	    $'ok\nspool-finish: j2: forged'; do
		refused 100 "spool-finish: j2: bad outcome '${o//$'\n'/*}' $OUTCOMES" \
		    spool-finish -- j2 3 "$o"
	done
	for c in "" "transient " fatal ok permanent - none side-effect \
	    $'timeout\nx'; do
		refused 100 "spool-finish: --class: unknown class '${c//$'\n'/*}' (transient, rate-limited, dependency-down, invalid-input, permission, cancelled, unknown-side-effect, crashed, timeout or lease-expired)" \
		    spool-finish --class "$c" j2 3 retry
	done
	# A class as spool-stat's metrics spell it, or in capitals.
	for c in Transient lease_expired RATE_LIMITED; do
		refused 100 "spool-finish: --class: unknown class '$c': did you mean '$(tr A-Z_ a-z- <<<"$c")'?" \
		    spool-finish --class "$c" j2 3 retry
	done
	# Each class of spool(7) is known: refused for ok and release only.
	for c in $CLASSES; do
		for o in ok release; do
			refused 100 "spool-finish: j2: --class is for retry and permanent" \
			    spool-finish --class "$c" j2 3 "$o"
		done
	done
	for d in 0 1s; do
		for o in ok permanent; do
			refused 100 "spool-finish: j2: --delay is for retry and release" \
			    spool-finish --delay "$d" j2 3 "$o"
		done
	done
	no_case_failed
}

@test "finish - refuses a malformed line of stdin" {
	jobs_in_every_state
	input=$BATS_TEST_TMPDIR/lines
	stdin_line() {
		printf '%s\n' "$1" >"$input"
		refused 100 "$2" spool-finish "${@:3}" -
	}
	stdin_line "j2 3 bogus" "spool-finish: j2: bad outcome 'bogus' $OUTCOMES"
	stdin_line $'j2 3 ok\r' "spool-finish: j2: bad outcome 'ok?' $OUTCOMES"
	stdin_line "j2 0 ok" "spool-finish: j2: bad token '0' $TOKENS"
	stdin_line "j2 -1 ok" "spool-finish: j2: bad token '-1' $TOKENS"
	stdin_line "j2 abc ok" "spool-finish: j2: bad token 'abc' $TOKENS"
	stdin_line ".j2 3 ok" "spool-finish: .j2: bad ID"
	stdin_line "j2/.. 1 ok" "spool-finish: j2/..: bad ID"
	stdin_line "j1,1 1 ok" "spool-finish: j1,1: bad ID"
	stdin_line "$long129 1 ok" "spool-finish: $long129: bad ID"
	stdin_line "" "spool-finish: stdin line 1: want ID TOKEN OUTCOME"
	stdin_line "j2 3" "spool-finish: stdin line 1: want ID TOKEN OUTCOME"
	stdin_line "j2 3 ok now" "spool-finish: stdin line 1: want ID TOKEN OUTCOME"
	stdin_line "j2 3 ok" "spool-finish: j2: --class is for retry and permanent" \
	    --class transient
	stdin_line "j2 3 permanent" "spool-finish: j2: --delay is for retry and release" \
	    --delay 1s
	no_case_failed
}

@test "a bad -n, --max-attempts or --id with several files is refused" {
	jobs_in_every_state
	for n in 0 257 -1 "" 1x " 1" +1 99999999999999999999 $'1\n'; do
		refused 100 "spool-claim: -n: bad number '${n//$'\n'/*}' (1 to 256)" \
		    spool-claim --owner w9 -n "$n"
	done
	for n in 0 -1 1000001 x ""; do
		refused 100 "spool-enqueue: --max-attempts: bad number '$n' (1 to 1000000)" \
		    spool-enqueue --id j9 --max-attempts "$n"
	done
	printf a >"$BATS_TEST_TMPDIR/a"
	printf b >"$BATS_TEST_TMPDIR/b"
	refused 100 "spool-enqueue: --id names one job: give one FILE" \
	    spool-enqueue --id j9 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	refused 100 "spool-enqueue: --id names one job: give one FILE" \
	    spool-enqueue --id j9 - -
	no_case_failed
}

@test "no spool, a directory that is not one, or a missing one is refused" {
	jobs_in_every_state
	elsewhere=$BATS_TEST_TMPDIR/elsewhere
	missing=$BATS_TEST_TMPDIR/missing
	cwd=$BATS_TEST_TMPDIR/cwd
	mkdir "$elsewhere" "$cwd"
	echo "not a spool" >"$elsewhere/notes.txt"
	watched=("$elsewhere" "$missing" "$cwd")
	cd "$cwd"
	for cmd in $COMMANDS; do
		args_for "$cmd"
		m="$cmd: no spool: give -d DIR or set SPOOL_DIR"
		refused 100 "$m" env -u SPOOL_DIR "$cmd" "${args[@]}"
		refused 100 "$m" env SPOOL_DIR= "$cmd" "${args[@]}"
		refused 100 "$m" "$cmd" -d "" "${args[@]}"
		if [ "$cmd" = spool-init ]; then
			# A missing directory is what spool-init makes; one
			# whose parent is missing is a bad -d, permanent (100)
			# as a missing spool is for the other commands.
			refused 100 "$cmd: $elsewhere: exists and is not a spool" \
			    "$cmd" -d "$elsewhere"
			refused 100 "$cmd: $elsewhere/notes.txt: not a directory" \
			    "$cmd" -d "$elsewhere/notes.txt"
			refused 100 "$cmd: $missing/spool: *" \
			    "$cmd" -d "$missing/spool"
			continue
		fi
		refused 100 "$cmd: $elsewhere: not a spool (no format file; see spool-init(1))" \
		    "$cmd" -d "$elsewhere" "${args[@]}"
		refused 100 "$cmd: $elsewhere/notes.txt: Not a directory" \
		    "$cmd" -d "$elsewhere/notes.txt" "${args[@]}"
		refused 100 "$cmd: $missing: No such file or directory" \
		    "$cmd" -d "$missing" "${args[@]}"
	done
	no_case_failed
}

@test "a spool of an unknown format is refused by every command, exit 100" {
	jobs_in_every_state
	copy=$BATS_TEST_TMPDIR/format3
	cp -a "$SPOOL_DIR" "$copy"
	printf '3\n' >"$copy/format"
	watched=("$copy")
	for cmd in $COMMANDS; do
		args_for "$cmd"
		m="$cmd: $copy: unknown spool format"
		refused 100 "$m" "$cmd" -d "$copy" "${args[@]}"
		refused 100 "$m" env SPOOL_DIR="$copy" "$cmd" "${args[@]}"
	done
	no_case_failed
}

@test "the arguments every case starts from are accepted" {
	jobs_in_every_state
	for cmd in $COMMANDS; do
		args_for "$cmd"
		echo "case: $cmd ${args[*]}" >&2
		run -0 --separate-stderr "$cmd" "${args[@]}" </dev/null
		equals "$stderr" ""
	done
	equals "$(state_of j2)$(state_of j3)" donenew
	[ "$(ids_in leased | grep -c '^j[19]$')" -eq 1 ]
	check_invariants
}

@test "the limits themselves are accepted: 128 bytes, the largest token, -n 256" {
	jobs_in_every_state
	run -1 --separate-stderr spool-renew j2 999999999999999999
	equals "$stderr" "spool-renew: j2: stale token: the current token is 3 and the job is in leased/"
	run -0 --separate-stderr spool-enqueue --id "$long128" --trace "$long128" \
	    --max-attempts 1000000 --deadline 36600d </dev/null
	equals "$output" "$long128"
	equals "$stderr" ""
	equals "$(state_of "$long128")" new
	run -0 --separate-stderr spool-redrive --by "$long128" --note "$long128" j3
	equals "$output" j3
	equals "$stderr" ""
	equals "$(state_of j3)" new
	run -0 --separate-stderr spool-claim --owner "${long128:2}:@" -n 256
	[ "${#lines[@]}" -eq 3 ]
	equals "$stderr" ""
	equals "$(ids_in leased)" "$(printf '%s\n' "$long128" j1 j2 j3)"
	check_invariants
}
