# bash completion for the spool commands, spool-*(1): their options, the
# values of those that take a word from a closed set (states, outcomes,
# classes, reasons, spool-stat's metric names), and job IDs read from the
# spool that -d DIR or $SPOOL_DIR names.
#
# IDs come from the names in the state directories, matched against what
# is typed: parked ones (dead/) for spool-redrive and spool-drop, leased
# ones (leased/ID,TOKEN) for spool-finish and spool-renew, which then offer
# the lease's token, queued and leased ones for spool-cancel, any for
# spool-show.  Never from meta/, which holds a sidecar for every ID ever
# used.  new/ is bucketed by eligible time, new/TTTTTTTT/MMM/LLL/ID,ELIGIBLE
# (spool-layout.md, "The new/ tree").
#
# Installed once as "spool" and under each command's name, where
# bash-completion looks for it.  It needs bash 4 and nothing else.

# _spool_ids DIR PREFIX STATE...: add to COMPREPLY the IDs in the STATEs
# (new, leased, done, dead) that begin with PREFIX, each once.
_spool_ids()
{
	local dir=$1 pre=$2 s f id nullglob=
	local -a files
	local -A seen=()
	shift 2
	[[ -d $dir ]] || return 0
	shopt -q nullglob && nullglob=1
	shopt -s nullglob
	for s; do
		case $s in
		new)	files=("$dir"/new/*/*/*/"$pre"*,*) ;;
		leased)	files=("$dir"/leased/"$pre"*,*) ;;
		done|dead) files=("$dir/$s/$pre"*) ;;
		*)	files=() ;;
		esac
		for f in "${files[@]}"; do
			id=${f##*/}
			id=${id%%,*}
			[[ -n ${seen[$id]-} ]] && continue
			seen[$id]=1
			COMPREPLY+=("$id")
		done
	done
	[[ -n $nullglob ]] || shopt -u nullglob
}

# _spool_tokens DIR ID PREFIX: the tokens of ID's leases in leased/.
_spool_tokens()
{
	local dir=$1 id=$2 pre=$3 f nullglob=
	[[ -d $dir/leased ]] || return 0
	shopt -q nullglob && nullglob=1
	shopt -s nullglob
	for f in "$dir/leased/$id,$pre"*; do
		COMPREPLY+=("${f##*,}")
	done
	[[ -n $nullglob ]] || shopt -u nullglob
}

# _spool_options CMD: set _spool_arg to the options of CMD that take a
# value and _spool_flag to those that do not (as spool-CMD(1) lists them).
_spool_options()
{
	_spool_flag=
	case $1 in
	spool-batch)
		_spool_arg='-d --group'
		_spool_flag='--json' ;;
	spool-cancel|spool-drop)
		_spool_arg='-d --by --note'
		_spool_flag='-0' ;;
	spool-pause|spool-resume)
		_spool_arg='-d --by --note' ;;
	spool-claim)
		_spool_arg='-d --lease --owner -n' ;;
	spool-enqueue)
		_spool_arg='-d --id --max-attempts --deadline --delay --key --trace' ;;
	spool-finish)
		_spool_arg='-d --class --detail --delay' ;;
	spool-fsck)
		_spool_arg='-d'
		_spool_flag='--repair --restored --verify' ;;
	spool-init)
		_spool_arg='-d --group'
		_spool_flag='--upgrade' ;;
	spool-ls)
		_spool_arg='-d --older-than --reason --class --key --trace'
		_spool_flag='-0 -l --json' ;;
	spool-purge)
		_spool_arg='-d --older-than --keep --by --note'
		_spool_flag='-0 --dry-run --missing' ;;
	spool-redrive)
		_spool_arg='-d --by --note --rate --reason --class --key --older-than'
		_spool_flag='-0 --reconciled --edited --dry-run --all' ;;
	spool-renew)
		_spool_arg='-d --lease' ;;
	spool-run)
		_spool_arg='-d --grace --idle-exit -j --lease --max-jobs --owner --timeout'
		_spool_flag='--once' ;;
	spool-show)
		_spool_arg='-d'
		_spool_flag='--json' ;;
	spool-stat)
		_spool_arg='-d --warn --crit'
		_spool_flag='-a --ages --json --prom' ;;
	*)
		_spool_arg= ;;
	esac
}

_spool_classes='transient rate-limited dependency-down invalid-input
    permission cancelled unknown-side-effect crashed timeout lease-expired'
_spool_reasons='permanent exhausted deadline side-effect cancelled'

# The names that spool-stat --warn and --crit compare (spool-stat(1),
# "METRICS").
_spool_metrics='paused new ready leased done dropped dead damaged quarantined
    hand_edits cycles2
    lag oldest_dead oldest_lease overdue redriven_queued redriven_done
    redriven_parked redriven_dropped dead_permanent dead_exhausted
    dead_deadline dead_side_effect dead_cancelled dead_class_none
    dead_class_transient dead_class_rate_limited dead_class_dependency_down
    dead_class_invalid_input dead_class_permission dead_class_cancelled
    dead_class_unknown_side_effect dead_class_crashed dead_class_timeout
    dead_class_lease_expired'

# _spool_words WORDS PREFIX: add to COMPREPLY the WORDS that begin with
# PREFIX (compgen -W, without a subshell to read its output).
_spool_words()
{
	local w
	for w in $1; do
		[[ $w == "$2"* ]] && COMPREPLY+=("$w")
	done
	return 0
}

_spool_nospace()
{
	type compopt >/dev/null 2>&1 && compopt -o nospace 2>/dev/null || :
}

_spool_filenames()
{
	type compopt >/dev/null 2>&1 && compopt -o filenames 2>/dev/null || :
}

# The value of option OPT, being typed as CUR.
_spool_value()
{
	local cmd=$1 opt=$2 cur=$3
	case $opt in
	-d)
		_spool_filenames
		mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	--class)
		_spool_words "$_spool_classes" "$cur" ;;
	--reason)
		_spool_words "$_spool_reasons" "$cur" ;;
	--group)
		# spool-init's takes a group; spool-batch's, a count.
		[[ $cmd == spool-init ]] &&
		    mapfile -t COMPREPLY < <(compgen -g -- "$cur") ;;
	--warn|--crit)
		# A metric, then the comparison: dead>0, lag>5m.
		_spool_nospace
		_spool_words "$_spool_metrics" "$cur" ;;
	esac
	# Durations, counts, names and notes are the user's own.
	return 0
}

_spool()
{
	local cmd=${COMP_WORDS[0]##*/} cword=$COMP_CWORD
	local cur=${COMP_WORDS[COMP_CWORD]} dir=${SPOOL_DIR-}
	local w i=1 j opt= dashdash= _spool_arg _spool_flag
	local -a args=()
	COMPREPLY=()
	_spool_options "$cmd"

	# Walk the words before the one being typed: options, their values
	# (given as "--opt value", "--opt=value", which bash may split at the
	# "=", or "-dDIR"), and the operands.
	while ((i < cword)); do
		w=${COMP_WORDS[i]}
		if [[ -n $dashdash ]]; then
			args+=("$w")
		elif [[ $w == -- ]]; then
			dashdash=1
		elif [[ " $_spool_arg " == *" $w "* ]]; then
			# Its value is the next word, or the one after "=".
			j=$((i + 1))
			if [[ ${COMP_WORDS[j]-} == = ]] && ((j < cword)); then
				((j++))
			fi
			if ((j >= cword)); then
				opt=$w
				break
			fi
			[[ $w == -d ]] && dir=${COMP_WORDS[j]}
			i=$j
		elif [[ $w == -d?* ]]; then
			dir=${w#-d}
		elif [[ $w == -?* ]]; then
			:
		else
			args+=("$w")
		fi
		((i++))
	done
	[[ $dir == \~/* ]] && dir=$HOME/${dir#\~/}

	# The value of an option.
	if [[ -n $opt ]]; then
		[[ $cur == = ]] && cur=
		_spool_value "$cmd" "$opt" "$cur"
		return 0
	fi
	if [[ -z $dashdash && $cur == --*=* ]]; then
		# "--opt=value" kept whole (COMP_WORDBREAKS without "="):
		# the completions carry the "--opt=".
		opt=${cur%%=*}
		if [[ " $_spool_arg " == *" $opt "* ]]; then
			_spool_value "$cmd" "$opt" "${cur#*=}"
			COMPREPLY=("${COMPREPLY[@]/#/$opt=}")
		fi
		return 0
	fi
	if [[ -z $dashdash && $cur == -* ]]; then
		w="$_spool_arg $_spool_flag"
		[[ $cmd == spool-run ]] && w+=' --'
		_spool_words "$w" "$cur"
		return 0
	fi

	# The operands.
	case $cmd in
	spool-cancel)
		_spool_ids "$dir" "$cur" new leased ;;
	spool-drop|spool-redrive)
		_spool_ids "$dir" "$cur" dead ;;
	spool-enqueue)
		_spool_filenames
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	spool-finish|spool-renew)
		case ${#args[@]} in
		0)	_spool_ids "$dir" "$cur" leased ;;
		1)	_spool_tokens "$dir" "${args[0]}" "$cur" ;;
		2)	[[ $cmd == spool-finish ]] &&
			    _spool_words 'ok retry permanent release' "$cur" ;;
		esac ;;
	spool-ls)
		_spool_words 'new leased done dead dropped' "$cur" ;;
	spool-purge)
		case ${#args[@]} in
		0)	_spool_words 'done dropped dead' "$cur" ;;
		*)	case ${args[0]} in
			done|dead) _spool_ids "$dir" "$cur" "${args[0]}" ;;
			esac ;;
		esac ;;
	spool-show)
		((${#args[@]} == 0)) &&
		    _spool_ids "$dir" "$cur" new leased done dead ;;
	spool-run)
		# After "--": the handler, a command or a file; then its
		# arguments, files.
		if [[ -z $dashdash ]]; then
			[[ -- == "$cur"* ]] && COMPREPLY=(--)
		else
			_spool_filenames
			if ((${#args[@]} == 0)) && [[ $cur != */* ]]; then
				# A command in two directories of PATH
				# (/bin and /usr/bin) is offered once.
				mapfile -t COMPREPLY < <(compgen -c -- "$cur" |
				    LC_ALL=C sort -u)
			fi
			mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(
			    compgen -f -- "$cur")
		fi ;;
	esac
	return 0
}

complete -F _spool spool-batch spool-cancel spool-claim spool-drop \
    spool-enqueue spool-finish spool-fsck spool-init spool-ls spool-pause \
    spool-purge spool-redrive spool-renew spool-resume spool-run spool-show \
    spool-stat
