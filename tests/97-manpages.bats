#!/usr/bin/env bats
# man-db's man(1) renders the pages with groff; the suite lints them with
# mandoc.  Every page reads the same under both: the same words in the
# same order.  What the two may render apart is taken out first: the
# header and footer lines, hyphenation at line ends, quote and dash
# glyphs, and whitespace.  groff also prints no warning with -ww.  The
# last two tests show that the check reports what groff mangles.

load helpers

MAN=$(cd "$BATS_TEST_DIRNAME/../man" && pwd)

# words mandoc|groff PAGE: the words of PAGE rendered 78 columns wide,
# one a line; groff's warnings go to $BATS_TEST_TMPDIR/warnings.
#  - bold and underlining (a character and a backspace) are removed;
#  - the first and last lines that are not blank, the header and the
#    footer, are dropped (groff -rcR=1 prints one long page, so it has
#    no others);
#  - hyphens and dashes are '-', and quotes of every kind '"';
#  - a word broken at a line's end by a hyphen is joined, and a hyphen
#    between two letters is removed: "re-" and "ported" read as
#    "reported", "spool-run" as "spoolrun";
#  - the words are what whitespace separates.
# shellcheck disable=SC1112 # the quotes groff makes, by design
words() {
	case $1 in
	mandoc) mandoc -Tutf8 -Owidth=78 "$2" ;;
	groff) groff -mandoc -Tutf8 -rcR=1 -rLL=78n -P-cbou -ww "$2" \
	    2>"$BATS_TEST_TMPDIR/warnings" ;;
	esac | LC_ALL=C.UTF-8 sed 's/.\x08//g' |
	    awk 'NF { if (n++ > 1) print last; last = $0 }' |
	    LC_ALL=C.UTF-8 sed 's/[‐‑–—−]/-/g; s/[‘’“”`'\''"]/"/g' |
	    awk 'held != "" { sub(/^[ \t]+/, ""); $0 = held $0; held = "" }
		/[[:alpha:]]-$/ { held = substr($0, 1, length($0) - 1); next }
		{ print }
		END { if (held != "") print held }' |
	    LC_ALL=C.UTF-8 sed -E ':a; s/([[:alpha:]])-([[:alpha:]])/\1\2/g; ta' |
	    tr -s ' \t' '\n\n' | grep -v '^$'
}

# same_words PAGE: fail unless mandoc and groff render PAGE alike and groff
# does not warn; print the diff of the words and the warnings.
same_words() {
	local m="$BATS_TEST_TMPDIR/mandoc" g="$BATS_TEST_TMPDIR/groff" rc=0
	words mandoc "$1" >"$m" || true
	words groff "$1" >"$g" || true
	[ -s "$m" ] || { echo "$1: mandoc rendered no words"; return 1; }
	diff -u --label "mandoc $1" --label "groff $1" "$m" "$g" || rc=1
	if [ -s "$BATS_TEST_TMPDIR/warnings" ]; then
		cat "$BATS_TEST_TMPDIR/warnings"
		rc=1
	fi
	return $rc
}

# page: a page of section 1, its NAME, then the lines read.
page() {
	printf '%s\n' '.Dd December 4, 2026' '.Dt SPOOL-TEST 1' '.Os' '.Sh NAME' \
	    '.Nm spool-test' '.Nd a page to render'
	cat
}

@test "every page reads the same under groff as under mandoc, and groff does not warn" {
	local p n=0 bad=
	for p in "$MAN"/*.[1-9]; do
		n=$((n + 1))
		same_words "$p" || bad="$bad $(basename "$p")"
	done
	[ "$n" -ge 17 ]
	[ -z "$bad" ] || { echo "rendered apart:$bad" >&2; return 1; }
}

@test "the check reports table cells that groff runs together" {
	# groff's Pq encloses the rest of the line, Ta and the cells after it
	# included.  A first cell wider than its column runs into the
	# second.  mandoc renders both as written.
	page >"$BATS_TEST_TMPDIR/bad.1" <<'EOF'
.Sh EXIT STATUS
.Bl -column "a status" "outcome"
.It 75 Pq Dv EX_TEMPFAIL Ta Cm retry
.It a status wider than its column Ta Cm permanent
.El
EOF
	run -1 same_words "$BATS_TEST_TMPDIR/bad.1"
	[ "${lines[0]}" = "--- mandoc $BATS_TEST_TMPDIR/bad.1" ]
	[[ $output$'\n' == *$'\n-(EX_TEMPFAIL)\n-retry\n+(EX_TEMPFAIL\n+retry)\n'* ]]
	[[ $output$'\n' == *$'\n-column\n-permanent\n+columnpermanent\n'* ]]
	# Written as the pages in man/ write them, the same rows pass.
	page >"$BATS_TEST_TMPDIR/good.1" <<'EOF'
.Sh EXIT STATUS
.Bl -column "a status" "outcome"
.It 75 Po Dv EX_TEMPFAIL Pc Ta Cm retry
.It a status Ta Cm permanent
.El
EOF
	run -0 same_words "$BATS_TEST_TMPDIR/good.1"
	[ "$output" = "" ]
}

@test "the check reports a line that groff cannot break" {
	# groff does not break a quoted argument of Fa: longer than the line,
	# it runs past the margin.
	page >"$BATS_TEST_TMPDIR/long.1" <<'EOF'
.Sh SYNOPSIS
.Ft int
.Fo spool_fsck
.Fa "struct spool *sp"
.Fa "int flags"
.Fa "void (*say)(void *arg, const char *what, const char *problem, int fixed)"
.Fa "void *arg"
.Fc
EOF
	run -1 same_words "$BATS_TEST_TMPDIR/long.1"
	[[ $output == *"long.1:"*": warning "*": can't break line"* ]]
}
