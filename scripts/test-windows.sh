#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-windows.sh: the Windows build, cross-compiled with mingw-w64 and
# tested under wine: installs the packages if needed, builds libuv and
# SQLite for Windows from Debian's own source packages (cached), sets up
# build-win with cross/x86_64-w64-mingw32.ini and runs `meson test` there.
# Prints meson's Ok:/Fail: summary, as scripts/test.sh does.
#
# Usage: scripts/test-windows.sh [BUILDDIR]   (default build-win)
# The dependencies are cached in $BGRUN_WIN_CACHE (default
# ~/.cache/bgrun-win), kept between runs and between build directories.
set -euo pipefail
trap 'echo "test-windows.sh: failed at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."
src=$PWD
builddir=${1:-build-win}
cache=${BGRUN_WIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bgrun-win}
host=x86_64-w64-mingw32
prefix=$cache/$host
mkdir -p "$cache"

# --- packages ---
pkgs=(gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine wine64 cmake dpkg-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "test-windows.sh: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >"$cache/apt-install.log" 2>&1 ||
		{ echo "test-windows.sh: apt-get install failed (see $cache/apt-install.log)" >&2; exit 1; }
fi

# --- Debian's source packages, through an apt configuration of our own ---
# The system's sources list only binary packages: a private sources.list
# with deb-src lines, private lists and a private package cache, so that
# nothing of the system's apt state changes.
aptdir=$cache/apt
apt_private() {
	apt-get -o Dir::Etc::SourceList="$aptdir/sources.list" \
		-o Dir::Etc::SourceParts="$aptdir/sources.list.d" \
		-o Dir::State::Lists="$aptdir/lists" \
		-o Dir::Cache="$aptdir/cache" "$@"
}
# The versions the Linux build uses (Debian 12's), so both builds have
# the same dependencies with the same patches.
srcver() { dpkg-query -W -f '${source:Version}' "$1" 2>/dev/null || true; }
fetch_source() { # SOURCE-PACKAGE BINARY-PACKAGE -> the unpacked directory
	local name=$1 ver dir
	ver=$(srcver "$2")
	dir=$(ls -d "$cache/src/$name-"*/ 2>/dev/null | head -1 || true)
	if [ -n "$dir" ] && [ -f "$cache/src/$name.version" ] &&
	   [ "$(cat "$cache/src/$name.version")" = "$ver" ]; then
		echo "${dir%/}"
		return
	fi
	if [ ! -f "$aptdir/updated" ]; then
		mkdir -p "$aptdir/sources.list.d" "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
		cat >"$aptdir/sources.list" <<-SOURCES
		deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
		deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
		deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
		SOURCES
		apt_private update >"$aptdir/update.log" 2>&1 ||
			{ echo "test-windows.sh: apt-get update (private) failed: $aptdir/update.log" >&2; exit 1; }
		touch "$aptdir/updated"
	fi
	rm -rf "$cache/src/$name-"* "$cache/src/$name"_*
	mkdir -p "$cache/src"
	( cd "$cache/src" &&
	  { apt_private source "$name${ver:+=$ver}" || apt_private source "$name"; } ) \
		>"$cache/src/$name.log" 2>&1 ||
		{ echo "test-windows.sh: apt-get source $name failed: $cache/src/$name.log" >&2; exit 1; }
	echo "$ver" >"$cache/src/$name.version"
	dir=$(ls -d "$cache/src/$name-"*/ | head -1)
	echo "${dir%/}"
}

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"

# libuv: its CMake build with the mingw-w64 compilers, the static library.
if [ ! -f "$prefix/lib/pkgconfig/libuv.pc" ] ||
   [ "$(cat "$prefix/libuv.version" 2>/dev/null)" != "$(srcver libuv1)" ]; then
	uvsrc=$(fetch_source libuv1 libuv1)
	echo "test-windows.sh: building libuv for Windows from $uvsrc"
	rm -rf "$cache/build-libuv"
	cmake -S "$uvsrc" -B "$cache/build-libuv" -DCMAKE_SYSTEM_NAME=Windows \
		-DCMAKE_C_COMPILER=$host-gcc-posix -DCMAKE_RC_COMPILER=$host-windres \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBUV_BUILD_TESTS=OFF \
		-DLIBUV_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX="$prefix" \
		>"$cache/libuv-build.log" 2>&1 &&
	cmake --build "$cache/build-libuv" --target uv_a >>"$cache/libuv-build.log" 2>&1 ||
		{ echo "test-windows.sh: libuv build failed: $cache/libuv-build.log" >&2; exit 1; }
	cp "$cache/build-libuv/libuv_a.a" "$prefix/lib/libuv.a"
	cp -r "$uvsrc/include/." "$prefix/include/"
	uvver=$(sed -n 's/^#define UV_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$uvsrc/include/uv/version.h" | paste -sd.)
	cat >"$prefix/lib/pkgconfig/libuv.pc" <<-PC
	prefix=$prefix
	Name: libuv
	Description: libuv $uvver for Windows (static, from Debian's libuv1 source)
	Version: $uvver
	Libs: -L\${prefix}/lib -luv -lws2_32 -liphlpapi -luserenv -lpsapi -ldbghelp -lole32 -luuid -lshell32
	Cflags: -I\${prefix}/include
	PC
	srcver libuv1 >"$prefix/libuv.version"
fi

# SQLite: Debian's source with its patches, made into the amalgamation
# by its own configure (run natively: it only generates sources), then
# compiled for Windows.
if [ ! -f "$prefix/lib/pkgconfig/sqlite3.pc" ] ||
   [ "$(cat "$prefix/sqlite3.version" 2>/dev/null)" != "$(srcver libsqlite3-0)" ]; then
	sqsrc=$(fetch_source sqlite3 libsqlite3-0)
	echo "test-windows.sh: building SQLite for Windows from $sqsrc"
	rm -rf "$cache/build-sqlite"
	mkdir -p "$cache/build-sqlite"
	( cd "$cache/build-sqlite" && "$sqsrc/configure" --disable-tcl &&
	  make sqlite3.c ) >"$cache/sqlite-build.log" 2>&1 &&
	$host-gcc-posix -O2 -c "$cache/build-sqlite/sqlite3.c" -o "$cache/build-sqlite/sqlite3.o" \
		-DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_JSON1 \
		>>"$cache/sqlite-build.log" 2>&1 &&
	$host-ar rcs "$prefix/lib/libsqlite3.a" "$cache/build-sqlite/sqlite3.o" ||
		{ echo "test-windows.sh: SQLite build failed: $cache/sqlite-build.log" >&2; exit 1; }
	cp "$cache/build-sqlite/sqlite3.h" "$cache/build-sqlite/sqlite3ext.h" "$prefix/include/" 2>/dev/null ||
		cp "$cache/build-sqlite/sqlite3.h" "$prefix/include/"
	sqver=$(sed -n 's/^#define SQLITE_VERSION *"\(.*\)"/\1/p' "$cache/build-sqlite/sqlite3.h")
	cat >"$prefix/lib/pkgconfig/sqlite3.pc" <<-PC
	prefix=$prefix
	Name: SQLite
	Description: SQLite $sqver for Windows (static, from Debian's sqlite3 source)
	Version: $sqver
	Libs: -L\${prefix}/lib -lsqlite3
	Cflags: -I\${prefix}/include
	PC
	srcver libsqlite3-0 >"$prefix/sqlite3.version"
fi

# pkg-config sees the Windows builds only, never the system's .pc files.
# And the programs run through wine-run.sh, never with wine's output on
# meson's pipes (wine-run.sh says why). One file per source tree (the
# cache is shared), rewritten only when it changes (else meson would
# reconfigure every time).
deps_ini=$cache/deps-$(printf '%s' "$src" | md5sum | cut -c1-12).ini
cat >"$deps_ini.new" <<-INI
# Written by scripts/test-windows.sh: the Windows builds of the dependencies.
[binaries]
exe_wrapper = '$src/scripts/wine-run.sh'
[properties]
pkg_config_libdir = ['$prefix/lib/pkgconfig']
INI
if cmp -s "$deps_ini.new" "$deps_ini"; then
	rm -f "$deps_ini.new"
else
	mv "$deps_ini.new" "$deps_ini"
fi

# --- build ---
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" --cross-file cross/$host.ini --cross-file "$deps_ini" \
		>"$cache/setup.log" 2>&1 || { cat "$cache/setup.log" >&2; exit 1; }
fi
ninja -C "$builddir" >"$cache/ninja.log" 2>&1 || { cat "$cache/ninja.log" >&2; exit 1; }

# --- tests under wine ---
# A private prefix (created once, about 7 s), a wineserver kept running
# for the whole run (each program then starts in tens of ms instead of
# about 0.6 s), no debug channels, no display. Wine's own output goes to
# files: a background wine process inherits stdout and stderr, and
# whatever reads them through a pipe would not see their end until that
# process exits. That includes wine's system processes (services.exe,
# explorer.exe...), which the first program of a prefix starts and which
# live as long as any program runs: a keeper program started first, with
# its output in a file, lives for the whole run, so that they are
# started by it, never by a test whose output meson reads through pipes.
#
# The prefix, its wineserver and this run's files are the build
# directory's own (not the shared cache's): two checkouts testing at the
# same time must not share a wineserver, as the first to finish stops it
# (`wineserver -k`) under the other's tests.
run=$(cd "$builddir" && pwd)/wine
mkdir -p "$run"
export WINEPREFIX=${WINEPREFIX:-$run/prefix}
export WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml=' DISPLAY=
unset WAYLAND_DISPLAY
if [ ! -f "$WINEPREFIX/system.reg" ]; then
	wineboot -i >"$run/wineboot.log" 2>&1 </dev/null || true
	wineserver -w
fi
# (-p fails when a server for this prefix runs already: that one is used.)
wineserver -p >"$run/wineserver.log" 2>&1 </dev/null || true
trap 'wineserver -k >/dev/null 2>&1 || true' EXIT
rm -f "$run/keeper.pid"
wine "$builddir/tests/win/win-helper.exe" tree "$run/keeper.pid" >"$run/keeper.log" 2>&1 </dev/null &
for _ in $(seq 600); do
	[ -s "$run/keeper.pid" ] && break
	sleep 0.1
done
# The Linux bgrun of a native build beside this one, if there is one,
# for tests/test-win-clone.sh to compare the two platforms' clones.
if [ -z "${BGRUN_LINUX_BGRUN:-}" ] && [ -x "$src/build/launcher/bgrun-full" ]; then
	export BGRUN_LINUX_BGRUN=$src/build/launcher/bgrun-full
fi
rc=0
meson test -C "$builddir" --print-errorlogs --num-processes 2 \
	>"$run/meson-test.log" 2>&1 </dev/null || rc=$?
# The skipped cases' reasons (meson keeps them in its log only).
grep -h ': skipped: ' "$builddir/meson-logs/testlog.txt" 2>/dev/null || true
cat "$run/meson-test.log"
exit $rc
