#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-deb.sh: the Debian packages, built from a clean copy of the tree, then checked by lintian.
# Usage: scripts/build-deb.sh [--out DIR] [--check] [--update-symbols]
#   --out DIR          where the .deb files go (default: build-deb/)
#   --check            run the test suite in the package build (default:
#                      DEB_BUILD_OPTIONS=nocheck; .ci/run runs it anyway)
#   --update-symbols   rewrite debian/libbgrun1.symbols from the built
#                      libraries (after an intended ABI addition)
# Installs the build dependencies (apt-get build-dep against
# debian/control; as root, or through sudo), copies the files git tracks
# into a temporary directory, runs dpkg-buildpackage -b -us -uc there
# (dpkg-gensymbols at check level 4: any difference between the
# libraries' exports and debian/libbgrun1.symbols fails the build), and
# fails if lintian reports an error.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
out=$top/build-deb
check=0 update=0
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$(realpath -m "${2:?--out needs a directory}"); shift 2 ;;
	--check) check=1; shift ;;
	--update-symbols) update=1; shift ;;
	*) echo "build-deb.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done

scripts/install-packages.sh dpkg-dev debhelper dh-python lintian fakeroot git
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
DEBIAN_FRONTEND=noninteractive $sudo apt-get build-dep -y -qq ./ >/dev/null

version=$(dpkg-parsechangelog -S Version)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/bgrun-$version
mkdir "$src"
# The tracked files as they are in the work tree: no build directory, no
# stray file, as a clean clone would be.
git ls-files -z | tar -C "$top" --null -T - -cf - | tar -C "$src" -xf -
cd "$src"
opts=nocheck
[ $check -eq 1 ] && opts=
if [ $update -eq 1 ]; then
	rm -f debian/libbgrun1.symbols
	DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1 ||
		{ tail -40 "$work/build.log"; exit 1; }
	dpkg-gensymbols -v"$version" -plibbgrun1 -Pdebian/libbgrun1 \
		-O"$top/debian/libbgrun1.symbols" >/dev/null
	echo "build-deb.sh: wrote debian/libbgrun1.symbols ($(grep -c '^ ' "$top/debian/libbgrun1.symbols") symbols)"
	exit 0
fi
if ! DPKG_GENSYMBOLS_CHECK_LEVEL=4 DEB_BUILD_OPTIONS=$opts \
	dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1; then
	tail -60 "$work/build.log"
	echo "build-deb.sh: dpkg-buildpackage failed (a symbols difference: scripts/build-deb.sh --update-symbols)"
	exit 1
fi
# Only the library's own names are exported.
if grep '^ ' debian/libbgrun1.symbols | grep -v '^ bgrun_'; then
	echo "build-deb.sh: symbols other than bgrun_* are exported"
	exit 1
fi
cd "$work"
rc=0
lintian --fail-on error bgrun_"$version"_*.changes >"$work/lintian.log" 2>&1 || rc=$?
cat "$work/lintian.log"
mkdir -p "$out"
mv "$work"/*.deb "$out"/
echo "build-deb.sh: $(ls "$out"/*.deb | wc -l) packages in $out; lintian: $(grep -c '^E:' "$work/lintian.log" || true) errors, $(grep -c '^W:' "$work/lintian.log" || true) warnings"
exit $rc
