# SPDX-License-Identifier: MIT
# bash completion for logsink: its commands, each command's options, and
# the ids of recent events for show.
# Installed as bash-completion's completions/logsink; works without it too.

_logsink_cmds="query ls show stats prune mark-lost status pg-init serve send"
_logsink_filter_opts="--since --until --failed --result --cmd --tag --cwd
	--source --event --host"
_logsink_opts()
{
	case $1 in
	query | ls)
		echo "$_logsink_filter_opts --id --limit --table --json --csv --db -h --help" ;;
	show) echo "--json --db -h --help" ;;
	stats)
		echo "$_logsink_filter_opts --by --sort --limit --plot --table --json
			--csv --db -h --help" ;;
	prune) echo "--older-than --keep -n --dry-run --db -h --help" ;;
	mark-lost | status) echo "--db -h --help" ;;
	pg-init) echo "-h --help" ;;
	serve)
		echo "--socket --foreground --detach --log --allow-root
			--max-connections --max-pending --queue-max --idle-timeout
			--frame-timeout --max-per-process --reserve --exit-idle
			--batch-max --commit-delay --ready-fd --forward --forward-host
			--forward-batch --forward-connections --forward-yield --stop --db -h --help" ;;
	send)
		echo "--event --source --message --field --from-hg-env --socket
			--print-id --db -h --help" ;;
	*) echo "--db -h --help --version" ;;
	esac
}

# The short ids (the ID column) of the newest events, for show.
_logsink_ids()
{
	"$1" query --json --limit 50 2>/dev/null |
		sed -n 's/.*"id" *: *"[^"]*\([^"]\{8\}\)".*/\1/p'
}

_logsink()
{
	local prog=${COMP_WORDS[0]} cword=$COMP_CWORD
	local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= i w

	COMPREPLY=()
	if [ "$cur" = "=" ]; then
		cur= prev=${COMP_WORDS[cword - 1]}
	elif [ "$cword" -ge 2 ] && [ "${COMP_WORDS[cword - 1]}" = "=" ]; then
		prev=${COMP_WORDS[cword - 2]}
	elif [ "$cword" -ge 1 ]; then
		prev=${COMP_WORDS[cword - 1]}
	fi
	# The command: the first word that is not --db's or an option.
	i=1
	while [ "$i" -lt "$cword" ]; do
		w=${COMP_WORDS[i]}
		case $w in
		--db) [ "${COMP_WORDS[i + 1]}" = "=" ] && i=$((i + 3)) || i=$((i + 2)); continue ;;
		-*) i=$((i + 1)); continue ;;
		*) cmd=$w; break ;;
		esac
	done

	case $prev in
	--db | --log | --plot | --socket)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--cwd) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--result)
		COMPREPLY=($(compgen -W "running success failed signaled timeout
			spawn_failed lost" -- "$cur")); return ;;
	--by) COMPREPLY=($(compgen -W "command argv0 tag host day" -- "$cur")); return ;;
	--sort)
		COMPREPLY=($(compgen -W "count failures p50 p95 max" -- "$cur")); return ;;
	--since | --until)
		COMPREPLY=($(compgen -W "now today yesterday 1h 1d 1w" -- "$cur")); return ;;
	--older-than) COMPREPLY=($(compgen -W "1d 1w 30d" -- "$cur")); return ;;
	--source) COMPREPLY=($(compgen -W "bgrun hg logsink clone-hook" -- "$cur")); return ;;
	--event) COMPREPLY=($(compgen -W "commandfinish command commandexception" -- "$cur")); return ;;
	--cmd | --tag | --host | --id | --limit | --keep | --message | --field | \
	--max-connections | --max-pending | --queue-max | --idle-timeout | \
	--frame-timeout | --max-per-process | --reserve | --exit-idle | \
	--batch-max | --commit-delay | --ready-fd | --forward | --forward-host | \
	--forward-batch | --forward-connections | --forward-yield)
		return ;;
	esac
	case $cur in
	-*) COMPREPLY=($(compgen -W "$(_logsink_opts "$cmd")" -- "$cur")) ;;
	*)
		if [ -z "$cmd" ]; then
			COMPREPLY=($(compgen -W "$_logsink_cmds" -- "$cur"))
		elif [ "$cmd" = show ]; then
			COMPREPLY=($(compgen -W "$(_logsink_ids "$prog")" -- "$cur"))
		fi ;;
	esac
}
complete -F _logsink logsink
