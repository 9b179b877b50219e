#!/bin/bash
# SPDX-License-Identifier: MIT
# test-completion.sh: the shell completions of contrib/completions/: they parse (bash -n, zsh -n, fish -n), and bash and fish complete what a user types.
#
# Usage: test-completion.sh SRCROOT BGRUN LOGSINK
#
# The bash checks source the completion (alone, then after
# bash-completion when it is installed), set COMP_WORDS and COMP_CWORD as
# bash does for a TAB and read COMPREPLY; the fish ones ask
# 'complete -C'. The programs completed are the real ones (first on
# PATH), on an event log of the test's own; the hook that completes job
# ids is run against a stand-in bgrun whose --help lists a 'ps' verb,
# since no bgrun of this tree has one yet. A shell that is not installed
# is said and its checks skipped (scripts/setup.sh installs zsh and fish).

set -u
SRC=${1:?usage: test-completion.sh SRCROOT BGRUN LOGSINK}
BGRUN=${2:?usage: test-completion.sh SRCROOT BGRUN LOGSINK}
LOGSINK=${3:?usage: test-completion.sh SRCROOT BGRUN LOGSINK}
SRC=$(cd "$SRC" && pwd) || exit 1
BGRUN=$(realpath "$BGRUN") || exit 1
LOGSINK=$(realpath "$LOGSINK") || exit 1
USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
exec </dev/null
COMP=$SRC/contrib/completions
export BGRUN_CONFIG= BGRUN_DB=$TMP/events.db BGRUN_SINK=embedded
export XDG_RUNTIME_DIR=$TMP/run HOME=$TMP/home
mkdir -p "$HOME" "$TMP/bin" "$TMP/run" "$TMP/dir-a" "$TMP/dir-b"
: >"$TMP/file-a"
ln -s "$BGRUN" "$TMP/bin/bgrun"
ln -s "$LOGSINK" "$TMP/bin/logsink"
export PATH=$TMP/bin:$PATH

# --- they parse ---
for f in bgrun.bash logsink.bash; do
	check "bash -n $f" bash -n "$COMP/$f"
done
if command -v zsh >/dev/null; then
	for f in _bgrun _logsink; do
		check "zsh -n $f" zsh -n "$COMP/$f"
	done
else
	echo "# skipped: zsh -n (zsh is not installed)"
fi
if command -v fish >/dev/null; then
	for f in bgrun.fish logsink.fish; do
		check "fish -n $f" fish -n "$COMP/$f"
	done
else
	echo "# skipped: the fish checks (fish is not installed)"
fi

# --- bash: COMPREPLY for a command line ---
# comp [--with-bash-completion] FILE WORD...: the completions of the last
# WORD (empty: a TAB after a space), sorted, on one line. Both bash files
# are sourced (a command's own completion may be the other's); FILE
# names the one the line is for.
comp() {
	local pre=:
	if [ "$1" = --with-bash-completion ]; then
		pre='. /usr/share/bash-completion/bash_completion'
		shift
	fi
	shift # the file: all of them are sourced
	bash -c '
		'"$pre"'
		for f in "'"$COMP"'"/*.bash; do . "$f"; done
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		"$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/")"
		printf "%s\n" "${COMPREPLY[@]}"' comp "$@" |
		sort -u | paste -sd ' '
}

eq "bash: bgrun --no-<TAB>" "$(comp bgrun.bash bgrun --no-)" "--no-ensurestart --no-keep-env --no-log --no-on-exit --no-output"
eq "bash: bgrun --st<TAB>" "$(comp bgrun.bash bgrun --st)" \
	"--stderr --stdin --stdout --strict-log"
eq "bash: bgrun -w --ki<TAB>" "$(comp bgrun.bash bgrun -w --ki)" "--kill-after"
eq "bash: bgrun -C DIR<TAB>: directories only" \
	"$(comp bgrun.bash bgrun -C "$TMP/di")" "$TMP/dir-a $TMP/dir-b"
eq "bash: bgrun --cwd=DIR<TAB> (split at '=')" \
	"$(comp bgrun.bash bgrun --cwd = "$TMP/di")" "$TMP/dir-a $TMP/dir-b"
eq "bash: bgrun -o FILE<TAB>: files" "$(comp bgrun.bash bgrun -o "$TMP/fi")" "$TMP/file-a"
eq "bash: bgrun --stdout=<TAB> a file" \
	"$(comp bgrun.bash bgrun --stdout = "$TMP/fi")" "$TMP/file-a"
export BGRUN_COMPLETION_TEST_VAR=1
eq "bash: bgrun -E NAME<TAB>: variable names" \
	"$(comp bgrun.bash bgrun -E BGRUN_COMPLETION_T)" "BGRUN_COMPLETION_TEST_VAR="
eq "bash: bgrun --timeout <TAB>" "$(comp bgrun.bash bgrun --timeout '')" "10s 1h 5m"
check "bash: bgrun clo<TAB>: the verb clone" \
	grep -qw clone <<<"$(comp bgrun.bash bgrun clo)"
check "bash: bgrun bgru<TAB>: a command to launch" \
	grep -qw bgrun <<<"$(comp bgrun.bash bgrun bgru)"
eq "bash: bgrun --tag x -- logsin<TAB>: the command" \
	"$(comp bgrun.bash bgrun --tag x -- logsin)" "logsink"
eq "bash: bgrun -o out -w logsink --no-<TAB>: not bgrun's options" \
	"$(comp bgrun.bash bgrun -o out -w logsink --no-)" ""
eq "bash: bgrun clone --cl<TAB>" "$(comp bgrun.bash bgrun clone --cl)" \
	"--cleanup --close-threads --close-threshold"
eq "bash: bgrun clone BUNDLE<TAB>: files" "$(comp bgrun.bash bgrun clone "$TMP/fi")" "$TMP/file-a"
eq "bash: bgrun kill <TAB>: the verb kill, no job running: no id" \
	"$(comp bgrun.bash bgrun kill '')" ""
if [ -f /usr/share/bash-completion/bash_completion ]; then
	eq "bash, with bash-completion: bgrun --no-<TAB>" \
		"$(comp --with-bash-completion bgrun.bash bgrun --no-)" "--no-ensurestart --no-keep-env --no-log --no-on-exit --no-output"
	eq "bash, with bash-completion: bgrun -w -- logsin<TAB>" \
		"$(comp --with-bash-completion bgrun.bash bgrun -w -- logsin)" "logsink"
	eq "bash, with bash-completion: bgrun -w logsink q<TAB>: logsink's own completion" \
		"$(comp --with-bash-completion bgrun.bash bgrun -w logsink q)" "query"
else
	echo "# skipped: the checks with bash-completion (not installed)"
fi

# The job-id hook, against a stand-in bgrun with the verbs ps and kill.
mkdir "$TMP/fake"
cat >"$TMP/fake/bgrun" <<'SH'
#!/bin/sh
case "$1 $2" in
"--help "*)
	printf 'Usage: bgrun ...\n\nVerbs (...):\n  ps        list the running jobs\n  kill      signal jobs by id\n  zzverb    a verb no program is named\n  clone     apply a bundle\nA verb is a reserved word.\n' ;;
"ps --json")
	printf '{"id":"01937a52-0c1d-7cc2-8a1e-4c2b9f3e5d6a","pid":1}\n{"id":"01937a52-0c1d-7cc2-8a1e-0000deadbeef","pid":2}\n' ;;
"ps --help")
	printf 'Usage: bgrun ps [--json]\n      --json     one JSON object per line\n      --db=PATH  the event log\n  -h, --help     display this help\n' ;;
esac
SH
chmod +x "$TMP/fake/bgrun"
eq "bash: bgrun kill <TAB>, with a ps verb: the running jobs' short ids" \
	"$(PATH=$TMP/fake:$PATH comp bgrun.bash bgrun kill '')" "9f3e5d6a deadbeef"
eq "bash: bgrun ps --<TAB>: the verb's options from its --help" \
	"$(PATH=$TMP/fake:$PATH comp bgrun.bash bgrun ps --)" "--db --help --json"
eq "bash: bgrun zz<TAB>: the verbs of --help" \
	"$(PATH=$TMP/fake:$PATH comp bgrun.bash bgrun zz)" "zzverb"

# logsink, on a log with one event.
id=$("$LOGSINK" send --event deploy --message done --print-id)
eq "logsink send --print-id: an event to complete" "${#id}" 36
eq "bash: logsink q<TAB>" "$(comp logsink.bash logsink q)" "query"
eq "bash: logsink --db x st<TAB>" "$(comp logsink.bash logsink --db x st)" "stats status"
eq "bash: logsink query --fa<TAB>" "$(comp logsink.bash logsink query --fa)" "--failed"
eq "bash: logsink stats --by <TAB>" "$(comp logsink.bash logsink stats --by '')" \
	"argv0 command day host tag"
eq "bash: logsink prune --d<TAB>" "$(comp logsink.bash logsink prune --d)" "--db --dry-run"
eq "bash: logsink show <TAB>: the short id of the event" \
	"$(comp logsink.bash logsink show '')" "${id: -8}"
check "bash: the short id is the table's ID column" \
	grep -qw -- "${id: -8}" <<<"$("$LOGSINK" query)"

# --- fish: complete -C ---
if command -v fish >/dev/null; then
	fcomp() {
		fish -c 'source $argv[1]; complete -C $argv[2]' "$COMP/$1" "$2" |
			cut -f1 | sort -u | paste -sd ' '
	}
	eq "fish: bgrun --no-<TAB>" "$(fcomp bgrun.fish 'bgrun --no-')" "--no-ensurestart --no-keep-env --no-log --no-on-exit --no-output"
	eq "fish: bgrun -o out --no-<TAB> (an option's argument skipped)" \
		"$(fcomp bgrun.fish 'bgrun -o out --no-')" "--no-ensurestart --no-keep-env --no-log --no-on-exit --no-output"
	eq "fish: bgrun clone --cl<TAB>" "$(fcomp bgrun.fish 'bgrun clone --cl')" \
		"--cleanup --close-threads --close-threshold"
	check "fish: bgrun clo<TAB>: the verb clone" \
		grep -qw clone <<<"$(fcomp bgrun.fish 'bgrun clo')"
	eq "fish: bgrun -w -- logsin<TAB>" "$(fcomp bgrun.fish 'bgrun -w -- logsin')" "logsink"
	eq "fish: bgrun kill <TAB>, with a ps verb: the short ids" \
		"$(PATH=$TMP/fake:$PATH fcomp bgrun.fish 'bgrun kill ')" "9f3e5d6a deadbeef"
	eq "fish: logsink st<TAB>" "$(fcomp logsink.fish 'logsink st')" "stats status"
	eq "fish: logsink stats --by <TAB>" "$(fcomp logsink.fish 'logsink stats --by ')" \
		"argv0 command day host tag"
	eq "fish: logsink show <TAB>: the short id" "$(fcomp logsink.fish 'logsink show ')" "${id: -8}"
fi
finish
