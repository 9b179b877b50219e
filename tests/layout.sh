#!/bin/bash
# SPDX-License-Identifier: MIT
# layout.sh: the platform seam holds: no shared file names what only the POSIX platform has.
#
# Usage: layout.sh SOURCE-ROOT
#
# Only src/unix/ and include/bgrun/unix.h may say epoll, pidfd, eventfd,
# pthread_atfork, /proc/, environ (the word) or /bin/sh, comments
# included: a Windows port adds src/win/ and include/bgrun/win.h and edits
# no shared file. Each offending line is printed.

set -u
ROOT=${1:?usage: layout.sh SOURCE-ROOT}
USAGE_PROG=layout.sh
source "$(dirname "$0")/lib.sh"

PATTERN='epoll|pidfd|eventfd|pthread_atfork|/proc/|\<environ\>|/bin/sh'

# The files the seam covers, relative to ROOT.
shared_files() {
	(cd "$ROOT" && find src include -type f | LC_ALL=C sort) |
		grep -v -e '^src/unix/' -e '^include/bgrun/unix\.h$'
}

FILES=$(shared_files)
check "there are shared files to look at" test -n "$FILES"
check "src/unix/ is where the POSIX platform is" test -d "$ROOT/src/unix"
HITS=$(cd "$ROOT" && printf '%s\n' "$FILES" |
	tr '\n' '\0' | xargs -0 grep -n -E "$PATTERN" --)
if [ -z "$HITS" ]; then
	pass "no shared file names epoll, pidfd, eventfd, pthread_atfork, /proc/, environ or /bin/sh"
else
	fail "no shared file names epoll, pidfd, eventfd, pthread_atfork, /proc/, environ or /bin/sh"
	printf '%s\n' "$HITS" | sed 's/^/#   /'
fi

finish
