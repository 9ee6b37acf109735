#!/usr/bin/env bats
# The bash completion, completion/spool.bash, driven as bash drives it:
# COMP_WORDS and COMP_CWORD set, the function called, COMPREPLY read.
# Job IDs come from the state directories of the spool that -d or
# $SPOOL_DIR names, never from meta/; options are those of the man pages.

load helpers

COMPLETION="$BATS_TEST_DIRNAME/../completion/spool.bash"
CMDS="spool-batch spool-cancel spool-claim spool-drop spool-enqueue
    spool-finish spool-fsck spool-init spool-ls spool-pause spool-purge
    spool-redrive spool-renew spool-resume spool-run spool-show spool-stat"

export LC_ALL=C

# comp WORD...: complete the last WORD; the offers, sorted, in $got, one
# a line.  In the shell itself: these run by the hundred.
comp() {
	local i j t
	# shellcheck source=/dev/null # the completion, built
	source "$COMPLETION"
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_spool
	for ((i = 1; i < ${#COMPREPLY[@]}; i++)); do
		for ((j = i; j > 0; j--)); do
			[[ ${COMPREPLY[j - 1]} > ${COMPREPLY[j]} ]] || break
			t=${COMPREPLY[j]}
			COMPREPLY[j]=${COMPREPLY[j - 1]}
			COMPREPLY[j - 1]=$t
		done
	done
	got=
	((${#COMPREPLY[@]} == 0)) || printf -v got '%s\n' "${COMPREPLY[@]}"
}

# offers WORD... <<EOF: the offers must be exactly the lines given (none
# for an empty here-string).
offers() {
	local want
	IFS= read -r -d '' want || :
	[ "$want" != $'\n' ] || want=
	comp "$@"
	[ "$got" = "$want" ] && return
	printf 'completing: %s\nwanted:\n%sgot:\n%s' "$*" "$want" "$got" >&2
	return 1
}

# Jobs in every state, once for the file, at $BATS_FILE_TMPDIR/spool (the
# completion only reads it): n1 ready and n2 an hour later (another bucket
# of new/), l1 and l2 leased (l2 under its second token; their tokens in
# $TL1 and $TL2, drawn from the spool-wide counter in claim order), d1
# done, p1 and p2 parked, g1 purged (gone, sidecar and all).
setup_file() {
	local id
	export PATH="$BATS_TEST_DIRNAME/bin:$PATH" SPOOL_HOST=testhost
	export SPOOL_DIR="$BATS_FILE_TMPDIR/spool"
	spool-init
	for id in l1 l2 d1 p1 p2 g1; do
		spool-enqueue --id "$id" <<<"$id" >/dev/null
	done
	spool-claim -n 6 --owner w1 >/dev/null
	spool-finish l2 "$(tok l2)" release >/dev/null
	spool-claim --owner w1 >/dev/null
	spool-finish d1 "$(tok d1)" ok >/dev/null
	spool-finish p1 "$(tok p1)" permanent >/dev/null
	spool-finish --class invalid-input p2 "$(tok p2)" permanent >/dev/null
	spool-finish g1 "$(tok g1)" ok >/dev/null
	spool-purge done g1 >/dev/null
	spool-enqueue --id n1 <<<n1 >/dev/null
	spool-enqueue --id n2 --delay 1h <<<n2 >/dev/null
	export TL1 TL2
	TL1=$(tok l1) TL2=$(tok l2)
	equals "$(ls "$SPOOL_DIR/leased")" "$(printf '%s\n' "l1,$TL1" "l2,$TL2")"
	[ "$TL2" -eq 7 ]
	[ ! -e "$SPOOL_DIR/meta/g1" ]
}

# The token of ID's lease, from its name in leased/.
tok() {
	ls "$SPOOL_DIR/leased" | sed -n "s/^$1,//p"
}

# setup_file's environment is every test's.
setup() {
	trace_test_only
}

# The same for what completing "-" offers.
comp_options() {
	local cmd w
	for cmd; do
		comp "$cmd" -
		for w in $got; do
			[ "$w" = -- ] || echo "$cmd $w"
		done
	done | sort -u
}

@test "spool-show offers the jobs in every state, never one only meta/ knows" {
	offers spool-show '' <<'EOF'
d1
l1
l2
n1
n2
p1
p2
EOF
	# n2 is in a later bucket of new/ than n1.
	[ "$(find "$SPOOL_DIR/new" -type f -printf '%h\n' | sort -u | wc -l)" -eq 2 ]
	offers spool-show n <<<$'n1\nn2'
	offers spool-show p2 <<<p2
	offers spool-show g <<<''
	offers spool-show --json d <<<d1
	# One operand only.
	offers spool-show d1 '' <<<''
}

@test "spool-redrive and spool-drop offer parked jobs; spool-cancel queued and leased ones" {
	offers spool-redrive --by ops --note INC-1 '' <<<$'p1\np2'
	offers spool-redrive --by ops --note INC-1 p1 p <<<$'p1\np2'
	offers spool-drop --by ops --note INC-1 '' <<<$'p1\np2'
	offers spool-cancel --by ops --note INC-1 '' <<<$'l1\nl2\nn1\nn2'
	offers spool-cancel --by ops --note INC-1 l <<<$'l1\nl2'
}

@test "spool-finish offers a leased job, then its token, then the outcomes; spool-renew the same" {
	offers spool-finish '' <<<$'l1\nl2'
	offers spool-finish l2 '' <<<"$TL2"
	offers spool-finish l1 '' <<<"$TL1"
	offers spool-finish p1 '' <<<''
	offers spool-finish l2 "$TL2" '' <<<$'ok\npermanent\nrelease\nretry'
	offers spool-finish l2 "$TL2" re <<<$'release\nretry'
	offers spool-finish --class transient --delay 5s l2 "$TL2" r <<<$'release\nretry'
	offers spool-finish l2 "$TL2" ok '' <<<''
	offers spool-renew --lease 5m '' <<<$'l1\nl2'
	offers spool-renew l2 '' <<<"$TL2"
	offers spool-renew l2 "$TL2" '' <<<''
}

@test "spool-purge offers its kinds, then the jobs of done/ or dead/" {
	offers spool-purge '' <<<$'dead\ndone\ndropped'
	offers spool-purge --dry-run d <<<$'dead\ndone\ndropped'
	offers spool-purge done '' <<<d1
	offers spool-purge --by ops --note INC-1 dead '' <<<$'p1\np2'
	offers spool-purge dropped --older-than 90d '' <<<''
}

@test "-d DIR on the line, in any spelling, names the spool instead of SPOOL_DIR" {
	other="$BATS_TEST_TMPDIR/other"
	spool-init -d "$other"
	spool-enqueue -d "$other" --id x1 <<<x1 >/dev/null
	offers spool-show -d "$other" '' <<<x1
	offers spool-show "-d$other" '' <<<x1
	offers spool-show --json -d "$other" x <<<x1
	# The last -d is the one the command uses.
	offers spool-show -d "$other" -d "$SPOOL_DIR" n <<<$'n1\nn2'
	# No spool: nothing, and no error.
	offers spool-show -d "$BATS_TEST_TMPDIR/none" '' <<<''
	SPOOL_DIR= offers spool-show '' <<<''
	(unset SPOOL_DIR; offers spool-show '' <<<'')
}

@test "an option's value: directories, states, classes, reasons, groups, spool-stat's metrics" {
	mkdir "$BATS_TEST_TMPDIR/dir-a" "$BATS_TEST_TMPDIR/dir-b"
	: >"$BATS_TEST_TMPDIR/dir-file"
	offers spool-ls -d "$BATS_TEST_TMPDIR/dir-" <<EOF
$BATS_TEST_TMPDIR/dir-a
$BATS_TEST_TMPDIR/dir-b
EOF
	offers spool-ls '' <<<$'dead\ndone\ndropped\nleased\nnew'
	offers spool-ls -l --reason '' <<<$'cancelled\ndeadline\nexhausted\npermanent\nside-effect'
	# Several states may be listed.
	offers spool-ls -l dead l <<<leased
	offers spool-redrive --class de <<<dependency-down
	# bash splits "--class=de" at the "=" (COMP_WORDBREAKS); kept whole,
	# the completions carry the option.
	offers spool-finish --class = de <<<dependency-down
	offers spool-finish --class = <<EOF
cancelled
crashed
dependency-down
invalid-input
lease-expired
permission
rate-limited
timeout
transient
unknown-side-effect
EOF
	offers spool-finish --class=rate <<<--class=rate-limited
	offers spool-finish --class = transient l <<<$'l1\nl2'
	offers spool-init --group "$(id -gn)" <<<"$(id -gn)"
	offers spool-claim --lease '' <<<''
	offers spool-stat --crit oldest_ <<<$'oldest_dead\noldest_lease'
	offers spool-stat --warn redriven_p <<<redriven_parked
}

@test "spool-stat --warn offers exactly the metric names that spool-stat prints" {
	# The plain output's first column, but last_action and timeout, which
	# are not metrics.
	spool-stat -a | awk '$1 != "last_action" && $1 != "timeout" { print $1 }' |
	    LC_ALL=C sort >"$BATS_TEST_TMPDIR/printed"
	comp spool-stat --warn ''
	printf '%s' "$got" >"$BATS_TEST_TMPDIR/offered"
	diff -u "$BATS_TEST_TMPDIR/printed" "$BATS_TEST_TMPDIR/offered"
}

@test "spool-run offers its options, then --, then the handler (a command or a file), then files" {
	mkdir "$BATS_TEST_TMPDIR/h"
	: >"$BATS_TEST_TMPDIR/h/handler-x"
	offers spool-run -j 2 '' <<<--
	offers spool-run --once -- "$BATS_TEST_TMPDIR/h/han" <<<"$BATS_TEST_TMPDIR/h/handler-x"
	offers spool-run -- spool-fsc <<<spool-fsck
	# A handler in two directories of PATH, as /bin and /usr/bin are on
	# a merged /usr, is offered once.
	mkdir "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p2"
	printf '#!/bin/sh\n' >"$BATS_TEST_TMPDIR/p1/handler-dup"
	cp "$BATS_TEST_TMPDIR/p1/handler-dup" "$BATS_TEST_TMPDIR/p2/"
	chmod +x "$BATS_TEST_TMPDIR"/p[12]/handler-dup
	PATH="$BATS_TEST_TMPDIR/p1:$BATS_TEST_TMPDIR/p2:$PATH" \
	    offers spool-run -- handler-du <<<handler-dup
	offers spool-run -- handler-x "$BATS_TEST_TMPDIR/h/h" <<<"$BATS_TEST_TMPDIR/h/handler-x"
	# After --, an option is the handler's own.
	offers spool-run -- handler-x --on <<<''
}

@test "every command's options are the ones its man page lists" {
	diff -u <(man_options "$BATS_TEST_DIRNAME"/../man/spool-*.1) \
	    <(comp_options $CMDS)
}

@test "the man page comparison catches an option that only the page has" {
	sed 's/^\.It Fl -repair$/&\n.It Fl -verbose/' \
	    "$BATS_TEST_DIRNAME/../man/spool-fsck.1" >"$BATS_TEST_TMPDIR/spool-fsck.1"
	run -1 diff <(man_options "$BATS_TEST_TMPDIR/spool-fsck.1") \
	    <(comp_options spool-fsck)
	equals "$output" $'3d2\n< spool-fsck --verbose'
	equals "$(man_options "$BATS_TEST_DIRNAME/../man/spool-ls.1" | tr '\n' ' ')" \
	    "spool-ls --class spool-ls --json spool-ls --key spool-ls --older-than spool-ls --reason spool-ls --trace spool-ls -0 spool-ls -d spool-ls -l "
	equals "$(man_options "$BATS_TEST_DIRNAME/../man/spool-stat.1" | tr '\n' ' ')" \
	    "spool-stat --ages spool-stat --crit spool-stat --json spool-stat --prom spool-stat --warn spool-stat -a spool-stat -d "
}

@test "completing IDs reads the state directories, never meta/" {
	# 500 IDs that only meta/ holds.
	for i in $(seq 500); do : >"$SPOOL_DIR/meta/m$i"; done
	strace -f -e trace=openat,getdents64 -o "$BATS_TEST_TMPDIR/trace" \
	    bash -c 'source "$1"; COMP_WORDS=(spool-show ""); COMP_CWORD=1
	    _spool; printf "%s\n" "${COMPREPLY[@]}"' - "$COMPLETION" \
	    >"$BATS_TEST_TMPDIR/out"
	equals "$(LC_ALL=C sort "$BATS_TEST_TMPDIR/out" | tr '\n' ' ')" \
	    "d1 l1 l2 n1 n2 p1 p2 "
	# The trace shows the reads of the state directories ...
	grep -q "openat(.*\"$SPOOL_DIR/dead/\"" "$BATS_TEST_TMPDIR/trace"
	grep -q "openat(.*\"$SPOOL_DIR/new/" "$BATS_TEST_TMPDIR/trace"
	# ... and none of meta/.
	run -1 grep -F "$SPOOL_DIR/meta" "$BATS_TEST_TMPDIR/trace"
}

@test "the completion is registered for every command, and only for them" {
	# shellcheck source=/dev/null # the completion, built
	source "$COMPLETION"
	diff -u <(printf '%s\n' $CMDS) <(complete -p | awk '$NF ~ /^spool-/ && $(NF-1) == "_spool" { print $NF }' | LC_ALL=C sort)
	diff -u <(printf '%s\n' $CMDS) <(find "$BATS_TEST_DIRNAME/bin/" \
	    -maxdepth 1 -name 'spool-*' ! -name 'spool-*[!a-z-]*' -printf '%f\n' |
	    LC_ALL=C sort)
}
