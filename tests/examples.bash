# Run a man page's literal displays as shell sessions and compare what each
# command prints with what the page shows, so that a page and the commands
# cannot drift apart.  Load after helpers: load helpers; load examples
#
# A display is a session when its lines begin "$ ": each such line (with
# its continuations: a line ending in "\" or "|", or lines that begin with
# the "> " prompt) is a command, the lines after it, up to the next
# command, what it prints.  The commands of one session share a shell's
# state as a person's would: the exported variables, the working
# directory and $? carry over from one command to the next.
#
# ex_start PAGE SECTION DIR: the displays of PAGE's SECTION, run from DIR.
# ex_step FIRST: the next display, whose first command must begin with
# FIRST, run command by command.  ex_skip FIRST REASON: the next display is not
# run, for REASON (its first line must begin with FIRST).  ex_end: every display was stepped or skipped.

# The pages' day: their examples run from 08:00 on 2026-11-30.
T0=1796025600000	# 2026-11-30T08:00:00.000Z

# at HH:MM:SS CMD...: CMD with the clock pinned at that time of the day.
at() {
	local h m s
	IFS=: read -r h m s <<<"$1"
	shift
	SPOOL_TEST_NOW=$((T0 + ((10#$h - 8) * 3600 + 10#$m * 60 + 10#$s) * 1000)) "$@"
}

# ex_blocks PAGE SECTION: the section's literal displays, "N<TAB>LINE" for
# each of their lines, displays numbered from 1, with mdoc's escapes undone.
ex_blocks() {
	sed -n "/^\.Sh $2\$/,/^\.Sh [A-Z]/p" "$1" |
	    awk '/^\.Bd -literal/ { n++; on = 1; next }
		/^\.Ed/ { on = 0; next }
		on { print n "\t" $0 }' |
	    sed 's/\\e/\\/g; s/\\&//g'
}

# What may differ between runs: the writers' process IDs, the time a paced
# run took, spool-run's times and durations, the name mktemp(1) chose; and
# what a test's EX_SED, a sed(1) script, says may (generated IDs).
ex_normal() {
	local text
	text=$(cat)
	[ -z "$text" ] || printf '%s\n' "${text//"$EX_TMP/"//tmp/}" |
	    sed -E 's/\<vm:[0-9]+\>/vm:PID/g; s/ in [0-9]+\.[0-9]s$/ in N.Ns/
		s/^spool-run: [0-9T:.-]{23}Z /spool-run: TIME /
		s/ duration=[0-9]+\.[0-9]{3}s / duration=N.NNNs /
		s|/tmp/tmp\.[A-Za-z0-9]{10}\>|/tmp/tmp.XXXXXXXXXX|g
		'"${EX_SED:-}"
}

ex_start() {
	EX_PAGE=$1 EX_SECTION=$2 EX_BLOCK=0
	EX_STATE=$BATS_TEST_TMPDIR/ex-state EX_TMP=$BATS_TEST_TMPDIR/ex-tmp
	mkdir -p "$EX_STATE" "$EX_TMP"
	# mktemp(1) makes its directories where the test's files go.
	export TMPDIR=$EX_TMP
	export -p | grep -v '^declare -[a-zA-Z]*r' >"$EX_STATE/env"
	printf '%s\n' "$3" >"$EX_STATE/cwd"
	ex_blocks "$EX_PAGE" "$EX_SECTION" >"$EX_STATE/blocks"
	: >"$EX_STATE/prelude"
	echo 0 >"$EX_STATE/status"
}

# ex_export NAME=VALUE...: set variables of the session, as a test's
# stand-in for what the page leaves to the reader (a pinned clock).
ex_export() {
	local a
	for a; do
		printf 'export %q=%q\n' "${a%%=*}" "${a#*=}" >>"$EX_STATE/env"
	done
}

# ex_prelude TEXT: shell code each command of the session runs first: the
# test's stand-ins (a sleep(1) that moves the pinned clock).
ex_prelude() {
	printf '%s\n' "$1" >>"$EX_STATE/prelude"
}

# ex_cd DIR: the session's working directory from now on.
ex_cd() {
	printf '%s\n' "$1" >"$EX_STATE/cwd"
}

# ex_run CMD: CMD in the session; its stdout and stderr in the files out
# and err of $EX_STATE, or both in out, in order, when EX_MERGE is set.
ex_run() {
	: >"$EX_STATE/err"
	if [ -n "${EX_MERGE:-}" ]; then
		ex_shell "$1" >"$EX_STATE/out" 2>&1
	else
		ex_shell "$1" >"$EX_STATE/out" 2>"$EX_STATE/err"
	fi
}

ex_shell() {
	(cd "$(cat "$EX_STATE/cwd")" && bash -c '
		. "$1/env"
		. "$1/prelude"
		(exit "$(cat "$1/status")")
		eval "$2"
		echo $? >"$1/status"
		export -p | grep -v "^declare -[a-zA-Z]*r" >"$1/env"
		pwd >"$1/cwd"' ex "$EX_STATE" "$1") || true
}

# ex_check CMD EXPECTED: run CMD as the page shows it; its output must be
# the page's, the lines that name a command ("spool-redrive: ...") on
# stderr, the others on stdout (with EX_MERGE, all of them, in order).
ex_check() {
	local cmd=$1 want=$2 page text
	page=$(basename "$EX_PAGE" | sed 's/\.\([0-9]\)$/(\1)/')
	if [ -n "${EX_RECORD:-}" ]; then
		EX_MERGE=1 ex_run "$cmd"
		printf '$ %s\n' "$cmd" >>"$EX_RECORD"
		text=$(cat "$EX_STATE/out")
		[ -z "$text" ] ||
		    printf '%s\n' "${text//"$EX_TMP/"//tmp/}" >>"$EX_RECORD"
		return
	fi
	ex_run "$cmd"
	if [ -n "${EX_SORT:-}" ]; then
		# Lines in the order of a directory's entries, which the file
		# system chooses.
		LC_ALL=C sort -o "$EX_STATE/out" "$EX_STATE/out"
		want=$(printf '%s' "$want" | LC_ALL=C sort)
		[ -z "$want" ] || want+=$'\n'
	fi
	if [ -n "${EX_MERGE:-}" ]; then
		diff -u --label "output of: $cmd" --label "$page" \
		    <(ex_normal <"$EX_STATE/out") <(printf '%s' "$want" | ex_normal)
		return
	fi
	diff -u --label "stdout of: $cmd" --label "$page" \
	    <(ex_normal <"$EX_STATE/out") \
	    <(printf '%s' "$want" | grep -Ev '^spool-[a-z]+: ' | ex_normal)
	diff -u --label "stderr of: $cmd" --label "$page" \
	    <(ex_normal <"$EX_STATE/err") \
	    <(printf '%s' "$want" | grep -E '^spool-[a-z]+: ' | ex_normal)
}

# ex_next FIRST: the next display's text, in EX_TEXT; it must begin with
# FIRST.
ex_next() {
	local text
	EX_BLOCK=$((EX_BLOCK + 1))
	text=$(awk -F'\t' -v n=$EX_BLOCK '$1 == n' "$EX_STATE/blocks" | cut -f2-)
	[ -n "$text" ] || {
		echo "$EX_PAGE has no display $EX_BLOCK in $EX_SECTION" >&2
		return 1
	}
	[[ $text = "$1"* ]] || {
		echo "display $EX_BLOCK of $EX_PAGE begins: ${text%%$'\n'*}" >&2
		return 1
	}
	EX_TEXT=$text
}

ex_step() {
	local line cmd= want= more=
	ex_next "\$ $1" || return 1
	[ -z "${EX_RECORD:-}" ] || echo "#### $EX_BLOCK" >>"$EX_RECORD"
	while IFS= read -r line; do
		if [ -n "$more" ] || [[ -n $cmd && -z $want &&
		    $line =~ ^\>[[:space:]] ]]; then
			# A continuation of the command.
			[ -n "$more" ] || line=${line#>}
			cmd+=$'\n'"$line"
		elif [[ $line = '$ '* ]]; then
			[ -z "$cmd" ] || ex_check "$cmd" "$want" || return 1
			cmd=${line#\$ } want=
		else
			want+="$line"$'\n'
			continue
		fi
		more=
		[[ $line != *\\ && $line != *'|' ]] || more=1
	done <<<"$EX_TEXT"
	[ -n "$cmd" ] || { echo "display $EX_BLOCK has no command" >&2; return 1; }
	ex_check "$cmd" "$want"
}

ex_skip() {
	ex_next "$1" || return 1
	[ -n "$2" ] || { echo "display $EX_BLOCK skipped without a reason" >&2; return 1; }
}

ex_end() {
	local last
	last=$(tail -n 1 "$EX_STATE/blocks" | cut -f1)
	[ "${last:-0}" -eq "$EX_BLOCK" ] || {
		echo "$EX_PAGE: $EX_BLOCK of ${last:-0} displays run" >&2
		return 1
	}
}
