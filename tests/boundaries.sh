#!/bin/bash
# SPDX-License-Identifier: MIT
# boundaries.sh: the boundaries of the tree, checked: programs include only include/, the shared libraries export only bgrun_*.
#
# Usage: boundaries.sh SOURCE-ROOT LIBBGRUN.so LIBBGRUN-STORE.so
#
# 1. No file under launcher/, logsink/, bench/ or tests/ includes a private
#    header: no #include naming a path into src/ ("../src/...", "src/..."),
#    and no #include "NAME" that is not beside the including file but is
#    a header under src/ (reached through an -I into src/). Their meson.build
#    files add no include directory inside src/. They see include/ only;
#    the tests and benches reach internals through bgrun__test_control()
#    (include/bgrun/test-control.h) alone.
# 2. The shared libraries export (nm -D --defined-only) only bgrun_*
#    names, none of them bgrun__* (bgrun__test_control included), and every
#    function and variable include/ declares with BGRUN_EXTERN is exported
#    by one of them.

set -u
SRC=${1:?usage: boundaries.sh SOURCE-ROOT LIBBGRUN.so LIBBGRUN-STORE.so}
LIB=${2:?usage: boundaries.sh SOURCE-ROOT LIBBGRUN.so LIBBGRUN-STORE.so}
STORE_LIB=${3:?usage: boundaries.sh SOURCE-ROOT LIBBGRUN.so LIBBGRUN-STORE.so}
SRC=$(cd "$SRC" && pwd) || exit 1
# Absolute: lib.sh moves into a temporary directory.
LIB=$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB") || exit 1
STORE_LIB=$(cd "$(dirname "$STORE_LIB")" && pwd)/$(basename "$STORE_LIB") || exit 1
source "$(dirname "$0")/lib.sh"

PROGRAM_DIRS=(launcher logsink bench tests)

# Known crossings, each "FILE: WHAT" as the checks below print it. None
# today: bgrun-start, the static musl program that cannot link the
# library, includes launcher/starter.h and public headers only (bgrun
# sends it the data it once computed from src/unix/sigall.h).
ALLOWED=()

allowed() {
	local a
	for a in "${ALLOWED[@]}"; do
		[ "$a" = "$1" ] && return 0
	done
	return 1
}

# --- 1. includes ---
# Every header under src/, relative to src/ ("clone/clone-internal.h").
mapfile -t SRC_HEADERS < <(cd "$SRC/src" && find . -name '*.h' | sed 's|^\./||' | sort)
check "src/ has private headers to look for" test "${#SRC_HEADERS[@]}" -gt 0

# The header under src/ that NAME would reach through some -I src/DIR, or
# nothing.
src_header_named() {
	local h
	for h in "${SRC_HEADERS[@]}"; do
		if [ "$h" = "$1" ] || [[ $h == */"$1" ]]; then
			echo "src/$h"
			return
		fi
	done
}

crossings=()
files=0
while IFS= read -r -d '' f; do
	rel=${f#"$SRC"/}
	files=$((files + 1))
	while IFS= read -r line; do
		# #include "NAME" or #include <NAME>
		[[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\"\<])([^\"\>]+)[\"\>] ]] || continue
		kind=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]}
		what=""
		if [[ $name == *src/* || $name == src/* ]]; then
			what="#include $kind$name$([ "$kind" = '<' ] && echo '>' || echo '"') (a path into src/)"
		elif [ "$kind" = '"' ] && [ ! -e "$(dirname "$f")/$name" ]; then
			h=$(src_header_named "$name")
			[ -n "$h" ] && what="#include \"$name\" ($h)"
		elif [ "$kind" = '<' ] && [ -e "$SRC/src/$name" ]; then
			what="#include <$name> (src/$name)"
		fi
		[ -n "$what" ] && crossings+=("$rel: $what")
	done <"$f"
done < <(cd "$SRC" && find "${PROGRAM_DIRS[@]/#/$SRC/}" -type f \
	\( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
check "found the programs' sources ($files files)" test "$files" -gt 20

# Include directories into src/ in the programs' meson.build files.
for d in "${PROGRAM_DIRS[@]}"; do
	mb=$SRC/$d/meson.build
	[ -f "$mb" ] || continue
	while IFS= read -r m; do
		crossings+=("$d/meson.build: $m")
	done < <(grep -oE "include_directories\('[^']*src[^']*'\)|-I' \+ [^,]*'src[^']*'" "$mb")
done

seen_allowed=()
bad=0
for c in "${crossings[@]}"; do
	if allowed "$c"; then
		echo "# allowed: $c"
		seen_allowed+=("$c")
	else
		fail "no private header: $c"
		bad=$((bad + 1))
	fi
done
eq "the programs include include/ headers only (${#seen_allowed[@]} crossings allowed)" "$bad" 0
# An allowance that no longer matches anything is a note, not a failure:
# the crossing is gone and the entry can go too.
for a in "${ALLOWED[@]}"; do
	found=0
	for c in "${seen_allowed[@]}"; do
		[ "$c" = "$a" ] && found=1
	done
	[ "$found" = 1 ] || echo "# note: ALLOWED entry no longer needed: $a"
done

# --- 2. exported symbols ---
if ! command -v nm >/dev/null; then
	fail "nm missing (binutils): cannot read the libraries' symbols"
	finish
fi
# The names include/ declares with BGRUN_EXTERN (the first bgrun_* name
# on the line: the function, or the variable after the type).
mapfile -t DECLARED < <(grep -h 'BGRUN_EXTERN' "$SRC"/include/bgrun.h "$SRC"/include/bgrun/*.h |
	grep -v 'define BGRUN_EXTERN' | grep -v '^[[:space:]]*\*' |
	sed -E 's/^.*BGRUN_EXTERN[^(]*[^a-z0-9_](bgrun_[a-z0-9_]+)[[:space:]]*[(\[;].*$/\1/' |
	grep -E '^bgrun_[a-z0-9_]+$' | sort -u)
check "include/ declares exports (${#DECLARED[@]})" test "${#DECLARED[@]}" -gt 30

SANITIZER_RE='^__(odr_asan|asan|lsan|ubsan|tsan|msan|sancov)'
exported=""
for lib in "$LIB" "$STORE_LIB"; do
	name=$(basename "$lib")
	if ! syms=$(nm -D --defined-only "$lib" 2>&1); then
		fail "$name: ${syms%%$'\n'*}"
		continue
	fi
	syms=$(awk 'NF >= 3 {print $NF}' <<<"$syms" | sed 's/@.*//' | sort -u)
	# A sanitizer build adds its own (ASan's ODR indicators,
	# __odr_asan.NAME, for each exported variable): not ours.
	sanitizer=$(grep -cE "$SANITIZER_RE" <<<"$syms")
	[ "$sanitizer" -gt 0 ] && echo "# $name: $sanitizer sanitizer symbols left out"
	syms=$(grep -vE "$SANITIZER_RE" <<<"$syms")
	check "$name exports symbols" test -n "$syms"
	other=$(grep -vE '^bgrun_' <<<"$syms" | paste -sd ' ')
	eq "$name: every export is bgrun_*" "$other" ""
	private=$(grep -E '^bgrun__' <<<"$syms" | paste -sd ' ')
	eq "$name: no bgrun__ export" "$private" ""
	check "$name: no bgrun__test_control" eval "! grep -qx bgrun__test_control <<<\"\$syms\""
	exported+=$syms$'\n'
done
missing=""
for d in "${DECLARED[@]}"; do
	grep -qx "$d" <<<"$exported" || missing+=" $d"
done
eq "every BGRUN_EXTERN name of include/ is exported" "${missing# }" ""
finish
