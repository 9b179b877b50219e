#!/bin/bash
# SPDX-License-Identifier: MIT
# test-install.sh: `meson install --destdir D`, then a C program outside the tree built against D with pkg-config.
#
# Usage: test-install.sh BUILDDIR [SANITIZE]
#
# SANITIZE is the build's b_sanitize ("none" or, say, "address,undefined"):
# the libraries of a sanitizer build need the program built with it too.
# Installs the build (without rebuilding: meson test has just built it)
# into a temporary DESTDIR and checks what lands there: the public headers
# under PREFIX/include (bgrun.h, bgrun/*.h, not the private
# bgrun/test-control.h), libbgrun.so.N and libbgrun-store.so.N with their
# SONAME and the .so link, bgrun.pc and bgrun-store.pc, the programs
# (bgrun, logsink) and the helpers in libexec/bgrun (bgrun-start,
# bgrun-full, logsink-full), the man pages, completions and example
# configuration file. Then it writes a small C program, compiles it
# with `pkg-config --cflags --libs bgrun bgrun-store` resolved into D
# (PKG_CONFIG_SYSROOT_DIR) and runs it against D's libraries: it spawns a
# command with ensurestart (itself, exiting 3), waits for it, writes the
# event to a new store and reads it back.

set -u
BUILD=${1:?usage: test-install.sh BUILDDIR [SANITIZE]}
SANITIZE=${2:-none}
BUILD=$(cd "$BUILD" && pwd) || exit 1
source "$(dirname "$0")/lib.sh"

for tool in meson pkg-config "${CC:-cc}" readelf; do
	if ! command -v "$tool" >/dev/null; then
		echo "skipped: $tool is missing"
		exit 77
	fi
done

# --- meson install ---
D=$TMP/dest
capture meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet
eq "meson install --destdir: exit 0" "$RC" 0
[ "$RC" = 0 ] || { echo "$ERR" | sed 's/^/# /'; finish; }

# Where the build put things, as configured (prefix /usr/local, libdir
# lib/x86_64-linux-gnu by default on Debian), read back from the install.
pc=$(find "$D" -name bgrun.pc -path '*/pkgconfig/*' | head -1)
check "bgrun.pc installed" test -n "$pc"
[ -n "$pc" ] || finish
PCDIR=$(dirname "$pc")
check "bgrun-store.pc beside it" test -f "$PCDIR/bgrun-store.pc"
PREFIX=$(sed -n 's/^prefix=//p' "$pc")
check "bgrun.pc names an absolute prefix ($PREFIX)" test "${PREFIX:0:1}" = /
LIBDIR=$D$(PKG_CONFIG_PATH=$PCDIR pkg-config --variable=libdir bgrun)
INCDIR=$D$(PKG_CONFIG_PATH=$PCDIR pkg-config --variable=includedir bgrun)
eq "the .pc files are in LIBDIR/pkgconfig" "$PCDIR" "$LIBDIR/pkgconfig"

# --- headers ---
check "include/bgrun.h" test -f "$INCDIR/bgrun.h"
for h in common.h version.h unix.h win.h spawn.h event.h wire.h sink.h \
	util.h config.h store.h clone.h; do
	check "include/bgrun/$h" test -f "$INCDIR/bgrun/$h"
done
check "the private bgrun/test-control.h is not installed" \
	test ! -e "$INCDIR/bgrun/test-control.h"
# Every header the umbrella includes is there.
missing=""
for h in $(sed -n 's/^#include "\(bgrun\/[^"]*\)"$/\1/p' "$INCDIR/bgrun.h"); do
	[ -f "$INCDIR/$h" ] || missing+=" $h"
done
eq "every header bgrun.h includes is installed" "$missing" ""

# --- libraries ---
for lib in bgrun bgrun-store; do
	so=$(cd "$LIBDIR" && ls "lib$lib.so."[0-9]* 2>/dev/null |
		grep -E "^lib$lib\.so\.[0-9]+$" | head -1)
	check "lib$lib.so.N installed" test -n "$so"
	[ -n "$so" ] || continue
	soname=$(readelf -d "$LIBDIR/$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
	eq "lib$lib: SONAME is $so" "$soname" "$so"
	check "lib$lib.so (the link to build against) installed" \
		test -e "$LIBDIR/lib$lib.so"
	eq "lib$lib.so resolves to the same file as $so" \
		"$(readlink -f "$LIBDIR/lib$lib.so")" "$(readlink -f "$LIBDIR/$so")"
done

# --- programs and helpers ---
for p in bgrun logsink; do
	check "bin/$p installed, executable" test -x "$D$PREFIX/bin/$p"
done
helpers=$(find "$D" -type d -path '*/libexec/bgrun' | head -1)
check "libexec/bgrun installed" test -n "$helpers"
for p in bgrun-start bgrun-record bgrun-full logsink-full; do
	check "libexec/bgrun/$p installed, executable" test -x "$helpers/$p"
done
# Built with libpq: the PostgreSQL module, beside logsink-full that loads it.
if [ -e "$BUILD/logsink/logsink-pg.so" ]; then
	check "libexec/bgrun/logsink-pg.so installed" test -f "$helpers/logsink-pg.so"
fi
# Built with libcurl: the HTTP clone module, beside bgrun-full, which
# loads it from there (launcher/clone-http.h says why) and itself links
# no libcurl: a clone from a port nobody listens on fails on connecting.
if [ -e "$BUILD/launcher/bgrun-clone-http.so" ]; then
	check "libexec/bgrun/bgrun-clone-http.so installed" \
		test -f "$helpers/bgrun-clone-http.so"
	capture env LD_LIBRARY_PATH="$LIBDIR" BGRUN_DB="$TMP/clone-events.db" \
		"$helpers/bgrun-full" clone http://127.0.0.1:9/ "$TMP/http-clone"
	eq "bgrun-full loads the installed module: exit 1" "$RC" 1
	check "bgrun-full loads the installed module: the connection fails" \
		grep -q "Couldn't connect to server" "$TMP/.stderr"
	# Its NEEDED list (a dynamic program's: libc is in it) has no libcurl.
	capture readelf -d "$helpers/bgrun-full"
	check "bgrun-full is linked dynamically" grep -q 'NEEDED.*libc\.so' "$TMP/.stdout"
	check "bgrun-full links no libcurl" sh -c '! grep -q "NEEDED.*libcurl" "$1"' _ "$TMP/.stdout"
fi
capture "$D$PREFIX/bin/bgrun" --version
eq "the installed bgrun runs: exit 0" "$RC" 0

# --- what ships beside them: man pages, completions, the example ---
# (the man pages only when this build made them: scdoc was found)
if [ -e "$BUILD/docs/man/bgrun.1" ]; then
	mandir=$(find "$D" -type d -path '*/man/man1' | head -1)
	check "man pages installed (PREFIX/share/man)" test -n "$mandir"
	for p in man1/bgrun.1 man1/bgrun-clone.1 man1/logsink.1 man5/bgrun-config.5 \
		man3/libbgrun.3; do
		check "man page $p installed" test -s "${mandir%/man1}/$p"
	done
fi
for f in bash-completion/completions/bgrun bash-completion/completions/logsink \
	zsh/vendor-completions/_bgrun zsh/vendor-completions/_logsink \
	fish/vendor_completions.d/bgrun.fish fish/vendor_completions.d/logsink.fish \
	doc/bgrun/examples/config.example; do
	check "share/$f installed" test -s "$D$PREFIX/share/$f"
done

# --- a program outside the tree ---
mkdir -p "$TMP/outside" && cd "$TMP/outside" || exit 1
cat >use.c <<'EOF'
/* An outside program: spawn, wait, record the event, read it back. */
#include <bgrun.h>

#include <stdio.h>
#include <string.h>

static int check_row(void *data, const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = data;

	if (strcmp(row->ev.id, ev->id) != 0 || row->ev.exit_code != 3 ||
	    row->ev.pid != ev->pid || row->ev.result == NULL ||
	    strcmp(row->ev.result, BGRUN_RESULT_FAILED) != 0 ||
	    row->ev.source == NULL || strcmp(row->ev.source, "use") != 0)
		return 1;
	printf("read back %s: exit %lld, %s\n", row->ev.id,
	       (long long)row->ev.exit_code, row->ev.result);
	return 0;
}

int main(int argc, char **argv)
{
	const char *child_argv[] = { argv[0], "child", NULL };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	struct bgrun_status st;
	struct bgrun_store *store;
	struct bgrun_event ev;
	int r;

	if (argc == 2 && strcmp(argv[1], "child") == 0)
		return 3;
	if (argc != 2) {
		fprintf(stderr, "usage: use DB\n");
		return 2;
	}
	opts.argv = child_argv;
	opts.ensurestart = true;
	r = bgrun_spawn(&opts, &child);
	if (r < 0) {
		fprintf(stderr, "use: spawn: %s\n", bgrun_strerror(r));
		return 1;
	}
	r = bgrun_child_wait(child, 10000, &st);
	bgrun_child_free(child);
	if (r < 0 || !st.exited || st.exit_code != 3) {
		fprintf(stderr, "use: wait: %s, exited %d code %d\n",
			bgrun_strerror(r), st.exited, st.exit_code);
		return 1;
	}

	r = bgrun_store_new(&store);
	if (r < 0) {
		fprintf(stderr, "use: %s\n", bgrun_strerror(r));
		return 1;
	}
	r = bgrun_store_open(store, argv[1], 0);
	if (r < 0) {
		fprintf(stderr, "use: %s\n", bgrun_store_errmsg(store));
		bgrun_store_close(store);
		return 1;
	}
	bgrun_event_init(&ev, "commandfinish", "use");
	bgrun_event_set_status(&ev, &st);
	ev.argv = child_argv;
	r = bgrun_store_put(store, &ev);
	if (r != 1) {
		fprintf(stderr, "use: put %d: %s\n", r, bgrun_store_errmsg(store));
		bgrun_store_close(store);
		return 1;
	}
	r = bgrun_store_get(store, ev.id, check_row, &ev);
	if (r != 0)
		fprintf(stderr, "use: get %d: %s\n", r,
			r < 0 ? bgrun_store_errmsg(store) : "row differs");
	bgrun_store_close(store);
	return r == 0 ? 0 : 1;
}
EOF

# pkg-config as an outside build would run it, with the .pc files found
# in D and every path they give moved into D.
export PKG_CONFIG_PATH=$PCDIR PKG_CONFIG_SYSROOT_DIR=$D
capture pkg-config --cflags --libs bgrun bgrun-store
eq "pkg-config --cflags --libs bgrun bgrun-store: exit 0" "$RC" 0
FLAGS=$OUT
echo "# pkg-config: $FLAGS"
check "pkg-config gives D's include directory" eval '[[ " $FLAGS " == *" -I$INCDIR "* ]]'
check "pkg-config gives D's library directory" eval '[[ " $FLAGS " == *" -L$LIBDIR "* ]]'
CFLAGS=(-std=c11 -Wall -Werror)
[ "$SANITIZE" != none ] && CFLAGS+=("-fsanitize=$SANITIZE")
# shellcheck disable=SC2086 # the flags are words
capture "${CC:-cc}" "${CFLAGS[@]}" -o use use.c $FLAGS
eq "compiles against D: exit 0" "$RC" 0
[ -n "$ERR" ] && echo "$ERR" | sed 's/^/# /'
# The headers it was compiled with are D's (not, say, /usr/local/include's).
# shellcheck disable=SC2086
deps=$("${CC:-cc}" "${CFLAGS[@]}" -MM -MT use use.c $FLAGS 2>/dev/null)
check "compiled with D's bgrun.h" eval '[[ $deps == *"$INCDIR/bgrun.h"* ]]'
check "compiled with D's bgrun/store.h" eval '[[ $deps == *"$INCDIR/bgrun/store.h"* ]]'
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
needed=$(readelf -d use | sed -n 's/.*(NEEDED).*\[\(libbgrun[^]]*\)\]$/\1/p' | sort | paste -sd ' ')
eq "links libbgrun-store.so.N and libbgrun.so.N" "$needed" \
	"$(cd "$LIBDIR" && ls libbgrun-store.so.[0-9]* libbgrun.so.[0-9]* |
	   grep -E '\.so\.[0-9]+$' | sort | paste -sd ' ')"

capture env LD_LIBRARY_PATH="$LIBDIR" ./use "$TMP/events.db"
eq "runs against D's libraries: exit 0" "$RC" 0
[ -n "$ERR" ] && echo "$ERR" | sed 's/^/# /'
check "it read its event back" eval '[[ $OUT == "read back "*": exit 3, failed" ]]'
# The libraries it ran with are D's, not some other copy.
capture env LD_LIBRARY_PATH="$LIBDIR" LD_TRACE_LOADED_OBJECTS=1 ./use
for lib in bgrun bgrun-store; do
	line=$(grep -E "^[[:space:]]*lib$lib\.so\." <<<"$OUT")
	check "the loader takes lib$lib from D" \
		eval '[[ $line == *"=> $LIBDIR/lib$lib.so."* ]]'
done

# The EXAMPLE of libbgrun(3), as its page gives it, built against D.
page=$(cd "$(dirname "$0")/.." && pwd)/docs/man/libbgrun.3.scd
# (its scdoc source writes a backslash twice, even in a literal block)
sed -n '/^# EXAMPLE$/,/^# /p' "$page" | sed -n '/^```$/,/^```$/p' | sed '1d;$d' |
	sed 's/\\\\/\\/g' >example.c
check "libbgrun(3) has an EXAMPLE program" grep -q 'int main' example.c
export PKG_CONFIG_PATH=$PCDIR PKG_CONFIG_SYSROOT_DIR=$D
# shellcheck disable=SC2086
capture "${CC:-cc}" "${CFLAGS[@]}" -o example example.c $(pkg-config --cflags --libs bgrun)
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
eq "libbgrun(3)'s example compiles against D (pkg-config bgrun)" "$RC" 0
[ -n "$ERR" ] && echo "$ERR" | sed 's/^/# /'
capture env LD_LIBRARY_PATH="$LIBDIR" ./example /bin/sh -c 'exit 3'
eq "libbgrun(3)'s example runs a command: its exit status" "$RC" 3
capture env LD_LIBRARY_PATH="$LIBDIR" ./example no-such-command-here
eq "libbgrun(3)'s example: a command not found is 127" "$RC" 127
finish
