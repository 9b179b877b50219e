#!/bin/bash
# SPDX-License-Identifier: MIT
# test-docs.sh: the documentation that ships says what the programs do: every option of every --help in the man pages and completions, and back; the pages render without a warning; the configuration keys the code reads, and the libraries' exports, are documented.
#
# Usage: test-docs.sh SRCROOT BGRUN LOGSINK MANDIR
#
# SRCROOT is the source tree (docs/man/*.scd, contrib/, debian/), MANDIR
# the build's docs/man (the pages scdoc made; none when scdoc was not
# found: then the rendering checks are skipped, said so, and the rest
# runs). The options come from the programs' own --help: the lines of
# their option tables ("  -o, --stdout=FILE ...", "      --no-log ...").
# The verbs come from 'bgrun --help' (its Verbs list, and clone) and the
# commands from 'logsink --help' (its Commands list), so a new verb or
# command without its section fails here.

set -u
SRC=${1:?usage: test-docs.sh SRCROOT BGRUN LOGSINK MANDIR}
BGRUN=${2:?usage: test-docs.sh SRCROOT BGRUN LOGSINK MANDIR}
LOGSINK=${3:?usage: test-docs.sh SRCROOT BGRUN LOGSINK MANDIR}
MANDIR=${4:?usage: test-docs.sh SRCROOT BGRUN LOGSINK MANDIR}
# lib.sh moves into a temporary directory: the paths made absolute first.
SRC=$(cd "$SRC" && pwd) || exit 1
MANDIR=$(realpath -m "$MANDIR")
BGRUN=$(realpath "$BGRUN") || exit 1
LOGSINK=$(realpath "$LOGSINK") || exit 1
USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
exec </dev/null
MAN=$SRC/docs/man
COMP=$SRC/contrib/completions
export BGRUN_CONFIG= BGRUN_DB=$TMP/events.db XDG_RUNTIME_DIR=$TMP/run

# The options of a help text (stdin): "-o --stdout" per line.
help_opts() {
	grep -E '^ {2,}(-[A-Za-z], )?--[a-z][a-z0-9-]*' |
		sed -E 's/^ +((-[A-Za-z]), )?(--[a-z][a-z0-9-]*).*/\2 \3/; s/^ //'
}
# The names listed under a help's heading (stdin; $1: a regexp for the
# heading line): "  query, ls   list events" gives query (with $2 = all:
# and ls).
help_list() {
	awk -v head="$1" -v all="${2:-}" '
		$0 ~ head { on = 1; next }
		on && /^  [a-z][a-z-]*(, [a-z][a-z-]*)? / {
			sub(/^  /, ""); split($0, w, /[ ,]+/); print w[1]
			if (all != "" && $0 ~ /^[a-z-]+, /) print w[2]
			next }
		on { on = 0 }'
}
# The text of section $2 ("## NAME" or "# NAME") of scdoc file $1, up to
# the next heading of the same or a higher level.
scd_section() {
	awk -v want="$2" '
		BEGIN { lvl = want ~ /^## / ? 2 : 1 }
		/^#+ / { h = $0; l = index(h, " ") - 1
			if (on && l <= lvl) exit
			if (h == want) { on = 1; next } }
		on { print }' "$1"
}
# The options a section defines (stdin): its list terms, "*-o*, *--stdout*=_FILE_".
scd_terms() {
	grep -E '^\*-' | grep -oE '\*--?[A-Za-z][a-z0-9-]*\*' | tr -d '*'
}

# check_opts WHAT HELPTEXT DOCTEXT EXEMPT: every option of HELPTEXT is in
# DOCTEXT (as *--name*, and *-x* for its short form), every option
# DOCTEXT defines is in HELPTEXT; EXEMPT (regexp) needs no mention.
check_opts() {
	local what=$1 help=$2 doc=$3 exempt=${4:-^$} missing= extra= o s l
	while read -r s l; do
		[ -z "$s" ] && continue
		[ -z "$l" ] && { l=$s; s=; }
		[[ $l =~ $exempt ]] && continue
		grep -qF -- "*$l*" <<<"$doc" || missing+=" $l"
		[ -n "$s" ] && { grep -qF -- "*$s*" <<<"$doc" || missing+=" $s"; }
	done < <(help_opts <<<"$help")
	for o in $(scd_terms <<<"$doc"); do
		grep -qE -- "(^|[ ,])$o([=, []|$)" <<<"$help" || extra+=" $o"
	done
	eq "$what: every option of --help is documented" "${missing# }" ""
	eq "$what: every option documented exists" "${extra# }" ""
}

# --- bgrun(1): the launch options, one section per verb ---
bgrun_help=$("$BGRUN" --help)
eq "bgrun --help: exit 0" "$?" 0
check_opts "bgrun(1)" "$bgrun_help" "$(scd_section "$MAN/bgrun.1.scd" "# OPTIONS")"
verbs=$(help_list '^Verbs' <<<"$bgrun_help")
grep -qx clone <<<"$verbs" || verbs="clone"$'\n'"$verbs"
for v in $verbs; do
	section=$(scd_section "$MAN/bgrun.1.scd" "## $v")
	check "bgrun(1) has a section for the verb $v" test -n "$section"
	capture "$BGRUN" "$v" --help
	eq "bgrun $v --help: exit 0" "$RC" 0
	if [ -f "$MAN/bgrun-$v.1.scd" ]; then
		check "bgrun(1) $v: points to bgrun-$v(1)" grep -qF "*bgrun-$v*(1)" <<<"$section"
		check_opts "bgrun-$v(1)" "$OUT" "$(scd_section "$MAN/bgrun-$v.1.scd" "# OPTIONS")"
	else
		# Every verb has -h, --help: said once, above the sections.
		check_opts "bgrun(1) $v" "$OUT" "$section" '^--help$|^-h$'
	fi
done

# --- logsink(1): the global options, one section per command ---
logsink_help=$("$LOGSINK" --help)
eq "logsink --help: exit 0" "$?" 0
global=$(scd_section "$MAN/logsink.1.scd" "# GLOBAL OPTIONS")
check_opts "logsink(1) global options" "$logsink_help" "$global"
cmds=$(help_list '^Commands' <<<"$logsink_help")
check "logsink --help lists its commands" test "$(wc -l <<<"$cmds")" -ge 9
# An alias (query, ls) shares its command's section.
for c in $cmds; do
	section=$(scd_section "$MAN/logsink.1.scd" "## $c")
	check "logsink(1) has a section for the command $c" test -n "$section"
	capture "$LOGSINK" "$c" --help
	# pg-init's help comes from the PostgreSQL module, absent from a
	# build without libpq.
	if [ "$RC" -ne 0 ] && [[ $ERR == *"PostgreSQL support is not available"* ]]; then
		echo "# skipped: the options of logsink $c (this build has no PostgreSQL module)"
		continue
	fi
	eq "logsink $c --help: exit 0" "$RC" 0
	check_opts "logsink(1) $c" "$OUT" "$section" '^--(db|help)$|^-h$'
done

# --- the pages render without a warning ---
pages=$(ls "$MAN"/*.scd | sed 's|.*/||; s|\.scd$||')
if [ -f "$MANDIR/bgrun.1" ]; then
	for p in $pages; do
		check "$p: built" test -s "$MANDIR/$p"
		capture groff -ww -z -man "$MANDIR/$p"
		eq "$p: groff -ww -man: no warning" "$ERR" ""
		if command -v man >/dev/null; then
			LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$MANDIR/$p" \
				>"$TMP/page" 2>"$TMP/warn"
			eq "$p: man --warnings -l: no warning" "$(cat "$TMP/warn")" ""
			check "$p: renders a NAME section" grep -qx NAME "$TMP/page"
		fi
	done
	# A page that names another of ours names one that exists.
	for ref in $(cat "$MAN"/*.scd | grep -oE '\*(bgrun|logsink|libbgrun)[a-z0-9-]*\*\([0-9]\)' |
		tr -d '*()' | sed -E 's/([0-9])$/.\1/' | sort -u); do
		check "the page $ref named in SEE ALSO and the text exists" test -f "$MAN/$ref.scd"
	done
else
	echo "# skipped: the rendering checks (no page in $MANDIR: scdoc was not found)"
fi

# --- the completions complete every option of the static lists ---
launch=$(help_opts <<<"$bgrun_help" | awk '{print $NF}')
clone=$("$BGRUN" clone --help | help_opts | awk '{print $NF}')
for f in bgrun.bash _bgrun; do
	missing=
	for o in $launch $clone; do
		grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$COMP/$f" || missing+=" $o"
	done
	eq "completion $f: every option of bgrun --help and bgrun clone --help" "${missing# }" ""
done
missing=
for o in $launch $clone; do
	grep -qE -- "-l ${o#--}( |$)" "$COMP/bgrun.fish" || missing+=" $o"
done
eq "completion bgrun.fish: every option of bgrun --help and bgrun clone --help" "${missing# }" ""
for f in logsink.bash _logsink logsink.fish; do
	missing=
	for c in $(help_list '^Commands' all <<<"$logsink_help"); do
		# Where each file lists the commands it offers.
		case $f in
		*.bash) grep -E '^_logsink_cmds=' "$COMP/$f" | grep -qE -- "[\" ]$c[\" ]" ;;
		_*) grep -qE -- "^ +'$c:" "$COMP/$f" ;;
		*.fish) grep -qE -- "-a $c -d " "$COMP/$f" ;;
		esac || missing+=" $c"
		for o in $("$LOGSINK" "$c" --help 2>/dev/null | help_opts | awk '{print $NF}'); do
			case $f in
			*.fish) grep -qE -- "-l ${o#--}( |$)" "$COMP/$f" ;;
			*) grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$COMP/$f" ;;
			esac || missing+=" $c:$o"
		done
	done
	eq "completion $f: every command and option of logsink" "${missing# }" ""
done

# --- the configuration: every key the code reads is documented ---
# [section] and name from the calls that read them (bgrun_config_get,
# _get_bool and _next with literal strings, and config.c's table of the
# items that become the environment).
keys=$(cat "$SRC"/src/common/config.c "$SRC"/launcher/*.c "$SRC"/logsink/*.c |
	perl -0777 -ne '
		while (/\{\s*"([a-z][a-z0-9-]*)",\s*"([a-z][a-z0-9.-]*)",\s*"BGRUN_/g) { print "$1 $2\n" }
		while (/bgrun_config_get(?:_bool)?\s*\([^,]+,\s*"([a-z][a-z0-9-]*)",\s*"([a-z][a-z0-9.-]*)"/g) { print "$1 $2\n" }
		while (/bgrun_config_(?:get|get_bool|next)\s*\([^,]+,\s*"([a-z][a-z0-9-]*)"/g) { print "$1 -\n" }' |
	sort -u)
check "the code reads configuration keys (found: $(wc -l <<<"$keys"))" test "$(wc -l <<<"$keys")" -ge 6
conf5=$MAN/bgrun-config.5.scd
for k in $(tr ' ' : <<<"$keys"); do
	s=${k%%:*} n=${k#*:}
	sect=$(awk -v s="[$s]" '/^\[/ { on = ($0 == s); next } on' "$SRC/contrib/config.example")
	check "contrib/config.example has [$s]" grep -qxF "[$s]" "$SRC/contrib/config.example"
	check "bgrun-config(5) has a section [$s]" grep -qxF "## [$s]" "$conf5"
	[ "$n" = - ] && continue
	check "contrib/config.example: [$s] $n" grep -qE "^#?$n = " <<<"$sect"
	check "bgrun-config(5): [$s] $n" grep -qE "^\*$n\* = " <<<"$(scd_section "$conf5" "## [$s]")"
done

# --- libbgrun(3) names every exported function ---
missing=
for sym in $(awk '/^ bgrun_/ { sub(/@.*/, "", $1); print $1 }' "$SRC/debian/libbgrun1.symbols"); do
	grep -qE "(^|[^a-z_])$sym([^a-z0-9_]|$)" "$MAN/libbgrun.3.scd" || missing+=" $sym"
done
eq "libbgrun(3) names every symbol of debian/libbgrun1.symbols" "${missing# }" ""

finish
