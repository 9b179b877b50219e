#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh: install the Debian packages bgrun needs (only those missing), then configure and build.
# Usage: scripts/setup.sh [BUILDDIR [MESON-OPTIONS...]]   (default BUILDDIR: build)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(gcc libc6-dev musl-tools meson ninja-build pkg-config libuv1-dev
	  libsqlite3-dev sqlite3 mercurial gnuplot-nox libcurl4-openssl-dev
	  python3-dev libpq-dev postgresql openssl
	  scdoc bash-completion zsh fish)
scripts/install-packages.sh "${packages[@]}"

builddir="${1:-build}"
shift || true
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" "$@" >/dev/null
elif [ $# -gt 0 ]; then
	meson configure "$builddir" "$@" >/dev/null
fi
ninja -C "$builddir" >/dev/null
