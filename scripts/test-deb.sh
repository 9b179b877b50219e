#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-deb.sh: the Debian packages' whole cycle on this machine: build (scripts/build-deb.sh), install with apt-get, use from the installed paths only, purge, nothing left.
# Usage: scripts/test-deb.sh   (as root, or with sudo; .ci/run runs it last)
# Prints each check as ok / not ok, then meson-like "Ok: N" / "Fail: N"
# lines for .ci/run's count; exit status 1 if a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
ok=0 bad=0
pass() { echo "ok - $1"; ok=$((ok + 1)); }
fail() { echo "not ok - $1"; bad=$((bad + 1)); }
check() {
	local desc=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		pass "$desc"
	else
		fail "$desc"
		sed 's/^/#   /' "$tmp/out" | tail -15
	fi
}
summary() {
	echo "Ok:                 $ok"
	echo "Fail:               $bad"
	[ "$bad" -eq 0 ]
	exit
}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

debs=$tmp/debs
if ! scripts/build-deb.sh --out "$debs" >"$tmp/build.log" 2>&1; then
	tail -40 "$tmp/build.log"
	fail "build-deb.sh: the packages build and lintian reports no error"
	summary
fi
pass "build-deb.sh: the packages build and lintian reports no error"
grep '^[WE]:' "$tmp/build.log" | sed 's/^/# lintian: /'

pkgs=(bgrun libbgrun1 libbgrun-dev python3-bgrun bgrun-postgresql)
files=()
for p in "${pkgs[@]}"; do
	files+=("$debs/${p}_"*_"$(dpkg --print-architecture).deb")
done
check "apt-get install of the five packages" \
	env DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${files[@]}"

# From here on, the installed paths only: no build tree on PATH or in
# the loader's path, a fresh HOME, Debian's python3.
home=$tmp/home
mkdir -p "$home"
chmod 755 "$home"
run() {
	env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 \
		BGRUN_DB="$home/events.db" HGRCPATH="$home/hgrc" HGUSER=test \
		"$@"
}
check "bgrun is /usr/bin/bgrun" test "$(run sh -c 'command -v bgrun')" = /usr/bin/bgrun
check "bgrun --version" run bgrun --version
check "bgrun -w -- true: exit 0" run bgrun -w -- true
check "logsink query: the launch is recorded" \
	sh -c "$(declare -f run); home='$home'; run logsink query --json | grep -q '\"argv\":\[\"true\"\]'"
printf 'hello\n' >"$tmp/in"
check "bgrun --no-log -w with output to a file" \
	sh -c "$(declare -f run); home='$home'; run bgrun --no-log -w -o '$tmp/o' -- cat '$tmp/in' && grep -qx hello '$tmp/o'"

# bgrun clone of a small stream bundle made by the installed hg.
if command -v hg >/dev/null; then
	run hg init "$tmp/repo" >/dev/null
	for i in 1 2 3; do echo "$i" >"$tmp/repo/f$i"; done
	run hg -R "$tmp/repo" commit -q -A -m one
	run hg -R "$tmp/repo" bundle -q -a -t 'none-v2;stream=v2' "$tmp/s.hg"
	check "bgrun clone of a stream bundle" run bgrun clone -q "$tmp/s.hg" "$tmp/clone"
	check "hg verify of the clone" run hg -q -R "$tmp/clone" verify
	# From a server: the package's bgrun-clone-http.so is found and
	# loaded (no one listens on port 9: the connection is what fails).
	check "bgrun clone from a URL loads its HTTP module" \
		sh -c "$(declare -f run); home='$home'; run bgrun clone http://127.0.0.1:9/ '$tmp/hclone' 2>&1 | grep -q \"Couldn't connect to server\""
else
	fail "hg is installed (the clone and extension checks need it)"
fi

# A C program built against the installed libbgrun-dev.
cat >"$tmp/prog.c" <<'C'
#include <bgrun.h>
#include <stdio.h>
int main(void)
{
	const char *argv[] = { "true", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	struct bgrun_status st;

	o.argv = argv;
	o.detach = false;
	if (bgrun_spawn(&o, &child) < 0 || bgrun_child_wait(child, -1, &st) < 0)
		return 1;
	bgrun_child_free(child);
	printf("%s exit %d\n", BGRUN_VERSION, st.exit_code);
	return st.exited && st.exit_code == 0 ? 0 : 1;
}
C
check "a C program builds with pkg-config --cflags --libs bgrun" \
	sh -c "cc -o '$tmp/prog' '$tmp/prog.c' \$(pkg-config --cflags --libs bgrun)"
check "it runs against the installed libbgrun.so.1" run "$tmp/prog"
check "it links the installed library" \
	sh -c "ldd '$tmp/prog' | grep -Eq 'libbgrun.so.1 => (/usr)?/lib/'"

check "python3 -c 'import bgrun' (Debian's python3, the installed module)" \
	sh -c "$(declare -f run); home='$home'; run /usr/bin/python3 -c 'import bgrun, sys; sys.exit(0 if bgrun.__file__.startswith(\"/usr/lib/python3/dist-packages/\") else 1)'"
if command -v hg >/dev/null; then
	printf '[extensions]\nbgrun =\n[bgrun]\nlog = commandfinish\n' >"$home/hgrc"
	run hg -R "$tmp/repo" status >/dev/null
	check "hg with the extension records a commandfinish" \
		sh -c "$(declare -f run); home='$home'; run logsink query --source hg --json | grep -q commandfinish"
fi
check "the user units are installed (not enabled)" \
	test -f /usr/lib/systemd/user/logsink.socket -a -f /usr/lib/systemd/user/logsink.service

# The documentation that ships: man pages, completions, the example.
shipped=(/usr/share/man/man1/bgrun.1.gz /usr/share/man/man1/bgrun-clone.1.gz
	/usr/share/man/man1/logsink.1.gz /usr/share/man/man5/bgrun-config.5.gz
	/usr/share/man/man3/libbgrun.3.gz
	/usr/share/bash-completion/completions/bgrun
	/usr/share/bash-completion/completions/logsink
	/usr/share/zsh/vendor-completions/_bgrun /usr/share/zsh/vendor-completions/_logsink
	/usr/share/fish/vendor_completions.d/bgrun.fish
	/usr/share/fish/vendor_completions.d/logsink.fish
	/usr/share/doc/bgrun/examples/config.example)
# A minimal image may tell dpkg not to install some paths (path-exclude
# in /etc/dpkg/dpkg.cfg.d/, as Docker's Debian images do for
# /usr/share/man and /usr/share/doc): there the package is checked to
# hold the file instead.
excluded() {
	local pat
	while read -r pat; do
		# shellcheck disable=SC2053 # a dpkg glob, as dpkg matches it
		[[ $1 == $pat ]] && return 1
	done < <(sed -n 's/^path-include=//p' "$dpkg_cfg"/* 2>/dev/null)
	while read -r pat; do
		# shellcheck disable=SC2053
		[[ $1 == $pat ]] && return 0
	done < <(sed -n 's/^path-exclude=//p' "$dpkg_cfg"/* 2>/dev/null)
	return 1
}
dpkg_cfg=${DPKG_CFG_D:-/etc/dpkg/dpkg.cfg.d}
for f in "${shipped[@]}"; do
	if excluded "$f"; then
		check "in the package (dpkg excludes it here): $f" \
			sh -c "for d in '$debs'/bgrun_*.deb '$debs'/libbgrun-dev_*.deb; do dpkg-deb -c \"\$d\"; done | grep ' .$f\$' >/dev/null"
	else
		check "installed: $f" test -s "$f"
	fi
done
excluded /usr/share/man/man1/bgrun.1.gz || ! command -v man >/dev/null ||
check "man bgrun: the installed page, without a warning" \
	sh -c 'MANWIDTH=80 man --warnings -P cat bgrun 2>"$0/man.err" | grep -qx NAME && ! grep . "$0/man.err"' "$tmp"
if [ -f /usr/share/bash-completion/bash_completion ]; then
	check "bash-completion loads the installed completion of bgrun" \
		bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader bgrun; complete -p bgrun | grep -q _bgrun'
fi
excluded /usr/share/doc/bgrun/examples/config.example ||
check "the example configuration parses: bgrun -w -- true with it" \
	sh -c "$(declare -f run); home='$home'; run env BGRUN_CONFIG=/usr/share/doc/bgrun/examples/config.example bgrun -w -- true"

# Purge: every file of the packages gone.
for p in "${pkgs[@]}"; do
	dpkg -L "$p" 2>/dev/null | while read -r f; do [ -f "$f" ] && echo "$f"; done
done >"$tmp/installed"
check "apt-get purge of the five packages" \
	env DEBIAN_FRONTEND=noninteractive $sudo apt-get purge -y -qq "${pkgs[@]}"
for p in "${pkgs[@]}"; do
	check "purged: dpkg -L $p knows nothing" sh -c "! dpkg -L $p >/dev/null 2>&1"
done
for f in "${shipped[@]}"; do
	check "purged: $f" test ! -e "$f"
done
check "purged: none of the packages' files is left" \
	sh -c "! xargs -r ls -d <'$tmp/installed' 2>/dev/null | grep ."
check "purged: nothing under /usr/libexec/bgrun, /usr/include/bgrun, /usr/lib/*/libbgrun*" \
	sh -c '! ls -d /usr/libexec/bgrun /usr/include/bgrun /usr/include/bgrun.h /usr/lib/*/libbgrun* /usr/lib/python3/dist-packages/bgrun* 2>/dev/null | grep .'
summary
