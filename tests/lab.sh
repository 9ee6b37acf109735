# shellcheck shell=bash
# What the labs of tests/multihost share (tests/glusterlab.sh,
# tests/cephlab.sh, tests/nfslab.sh), sourced first by each.  A lab that
# cannot run skips (exit 77) and says why; with CI=true it fails instead
# (exit 1), after it tried to install what is missing.
labname=${labname:-$(basename "$0")}
skip() {
	if [ "${CI:-}" = true ]; then
		echo "$labname: FAILED: cannot run in CI: $*" >&2
		exit 1
	fi
	echo "$labname: SKIPPED: $*" >&2
	exit 77
}
fail() {
	echo "$labname: FAILED: $*" >&2
	exit 1
}
# need WHAT:PACKAGE...: each WHAT, a command or an absolute path, is
# there.  Else its Debian package is installed (with CI=true), or named
# in the skip.
need() {
	local p missing=
	for p in "$@"; do
		case $p in
		/*) [ -e "${p%%:*}" ] ;;
		*) command -v "${p%%:*}" >/dev/null ;;
		esac || missing="$missing ${p#*:}"
	done
	[ -n "$missing" ] || return 0
	if [ "${CI:-}" = true ] && command -v apt-get >/dev/null; then
		# shellcheck disable=SC2086 # package names, one word each
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing \
		    >/dev/null 2>&1 || { apt-get update -qq >/dev/null &&
		    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		    $missing >/dev/null; } || skip "apt-get install$missing failed"
	else
		skip "missing packages:$missing (apt-get install -y$missing)"
	fi
}
