# SPDX-License-Identifier: MIT
# bash completion for bgrun: its options, its verbs (clone, and those
# 'bgrun --help' lists), the command to launch, and the ids of running
# jobs for the verbs that take them (once 'bgrun ps' exists).
# Installed as bash-completion's completions/bgrun; works without it too.

# What the argument of an option is: file, dir, env, var, text or none.
_bgrun_arg_kind()
{
	case $1 in
	-o | --stdout | -e | --stderr | -i | --stdin | --db | --config | --cacert)
		echo file ;;
	-C | --cwd) echo dir ;;
	-E | --env) echo env ;;
	-u | --unset) echo var ;;
	--tag | --timeout | --kill-after | --hook | --close-threads | \
	--close-threshold | --write-threads | --chunk-size)
		echo text ;;
	*) echo none ;;
	esac
}

# The verbs: clone, and the ones 'bgrun --help' lists under "Verbs"
# (asked once per shell).
_bgrun_verbs()
{
	if [ -z "${_bgrun_verb_cache:-}" ]; then
		_bgrun_verb_cache=$("${1:-bgrun}" --help 2>/dev/null | awk '
			/^Verbs/ { on = 1; next }
			on && /^  [a-z][a-z-]* / { print $1; next }
			on { on = 0 }' | tr '\n' ' ')
		case " $_bgrun_verb_cache " in
		*" clone "*) ;;
		*) _bgrun_verb_cache="clone $_bgrun_verb_cache" ;;
		esac
	fi
	echo "$_bgrun_verb_cache"
}

# The short ids (the tables' ID column) of the running jobs. Nothing is
# run unless 'ps' is one of the verbs.
# TODO: a 'bgrun ps --ids' would spare cutting them from the JSON.
_bgrun_job_ids()
{
	case " $(_bgrun_verbs "$1") " in
	*" ps "*) ;;
	*) return ;;
	esac
	"$1" ps --json 2>/dev/null |
		sed -n 's/.*"id" *: *"[^"]*\([^"]\{8\}\)".*/\1/p'
}

_bgrun_launch_opts="-o --stdout -e --stderr -a --append -i --stdin -C --cwd
	-E --env -u --unset --clear-env -s --shell -w --wait --no-ensurestart
	--print-pid --no-log --tag --timeout --kill-after --print-id --db
	--strict-log --on-exit --no-on-exit --no-output --split-output --max-output --no-keep-env -h --help
	--version"
_bgrun_clone_opts="-v --verbose -q --quiet --close-threads --close-threshold
	--write-threads --chunk-size --copy-file-range --hook --config --db --no-log -U --update
	--wait --timeout --insecure --cacert --no-clonebundles --cleanup -h --help"

# COMPREPLY for the argument of option $1 (of the verb $2, if any).
# Returns 1 when $1 takes no argument.
_bgrun_complete_arg()
{
	local cur=$3
	case $2:$1 in
	?*:-s | ?*:--signal)
		COMPREPLY=($(compgen -W "TERM KILL INT HUP QUIT USR1 USR2 STOP CONT" -- "$cur"))
		return 0 ;;
	?*:--timeout) return 0 ;;
	esac
	case $(_bgrun_arg_kind "$1") in
	file) COMPREPLY=($(compgen -f -- "$cur")) ;;
	dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
	env)
		COMPREPLY=($(compgen -v -S = -- "$cur"))
		compopt -o nospace 2>/dev/null ;;
	var) COMPREPLY=($(compgen -v -- "$cur")) ;;
	text)
		case $1 in
		--timeout | --kill-after) COMPREPLY=($(compgen -W "10s 5m 1h" -- "$cur")) ;;
		esac ;;
	*) return 1 ;;
	esac
	return 0
}

_bgrun()
{
	local prog=${COMP_WORDS[0]} cword=$COMP_CWORD
	local cur=${COMP_WORDS[COMP_CWORD]} prev= verb= i w

	COMPREPLY=()
	# "--stdout=FI": bash splits the word at '=' (COMP_WORDBREAKS).
	if [ "$cur" = "=" ]; then
		cur= prev=${COMP_WORDS[cword - 1]}
	elif [ "$cword" -ge 2 ] && [ "${COMP_WORDS[cword - 1]}" = "=" ]; then
		prev=${COMP_WORDS[cword - 2]}
	elif [ "$cword" -ge 1 ]; then
		prev=${COMP_WORDS[cword - 1]}
	fi

	# A verb is the first word, and only the first.
	if [ "$cword" -gt 1 ]; then
		case " $(_bgrun_verbs "$prog") " in
		*" ${COMP_WORDS[1]} "*) verb=${COMP_WORDS[1]} ;;
		esac
	fi
	if [ -n "$verb" ]; then
		[ "$prev" != "$verb" ] && _bgrun_complete_arg "$prev" "$verb" "$cur" &&
			return
		case $verb:$cur in
		clone:-*)
			COMPREPLY=($(compgen -W "$_bgrun_clone_opts" -- "$cur")) ;;
		clone:*)
			COMPREPLY=($(compgen -f -- "$cur")) ;;
		*:-*)
			# A verb without a list here: the options its help gives.
			COMPREPLY=($(compgen -W "$("$prog" "$verb" --help 2>/dev/null |
				grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z0-9-]*' |
				grep -oE -- '--[a-z][a-z0-9-]*$')" -- "$cur")) ;;
		kill:* | wait:* | restart:* | show:* | logs:*)
			COMPREPLY=($(compgen -W "$(_bgrun_job_ids "$prog")" -- "$cur")) ;;
		esac
		return
	fi

	# bgrun's options come first; COMMAND starts at the first other word.
	i=1
	while [ "$i" -lt "$cword" ]; do
		w=${COMP_WORDS[i]}
		case $w in
		--)
			i=$((i + 1))
			[ "$i" -eq "$cword" ] && COMPREPLY=($(compgen -c -- "$cur"))
			break ;;
		-*)
			if [ "${COMP_WORDS[i + 1]}" = "=" ]; then
				i=$((i + 3))
			elif [ "$(_bgrun_arg_kind "$w")" != none ]; then
				i=$((i + 2))
			else
				i=$((i + 1))
			fi
			continue ;;
		*) break ;;
		esac
	done
	if [ "$i" -lt "$cword" ]; then
		# In COMMAND [ARG]...: the command's own completion when
		# bash-completion is loaded, else file names.
		if declare -F _command_offset >/dev/null; then
			_command_offset "$i"
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return
	fi
	[ "$i" -eq "$cword" ] && [ "${COMP_WORDS[i - 1]}" = "--" ] && return

	_bgrun_complete_arg "$prev" "" "$cur" && return
	case $cur in
	-*) COMPREPLY=($(compgen -W "$_bgrun_launch_opts" -- "$cur")) ;;
	*)
		# The first word: a verb or the command to launch.
		[ "$cword" -eq 1 ] &&
			COMPREPLY=($(compgen -W "$(_bgrun_verbs "$prog")" -- "$cur"))
		COMPREPLY+=($(compgen -c -- "$cur")) ;;
	esac
}
complete -F _bgrun bgrun
