#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh: install the Debian packages bgrun needs (only those missing), then configure and build.
# Usage: scripts/setup.sh [BUILDDIR [MESON-OPTIONS...]]   (default BUILDDIR: build)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(gcc libc6-dev meson ninja-build pkg-config libuv1-dev libsqlite3-dev
	  sqlite3 mercurial gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

builddir="${1:-build}"
shift || true
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" "$@" >/dev/null
elif [ $# -gt 0 ]; then
	meson configure "$builddir" "$@" >/dev/null
fi
ninja -C "$builddir" >/dev/null
