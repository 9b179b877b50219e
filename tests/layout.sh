#!/bin/bash
# SPDX-License-Identifier: MIT
# layout.sh: the platform seam holds: no shared file names what only the POSIX platform has.
#
# Usage: layout.sh SOURCE-ROOT
#
# Only src/unix/ and include/bgrun/unix.h may say epoll, pidfd, eventfd,
# pthread_atfork, /proc/, environ (the word) or /bin/sh, comments
# included; likewise only src/win/ and include/bgrun/win.h may name the
# Windows API (<windows.h>, its types and the calls a port would use).
# Each offending line is printed.

set -u
ROOT=${1:?usage: layout.sh SOURCE-ROOT}
USAGE_PROG=layout.sh
source "$(dirname "$0")/lib.sh"

PATTERN='epoll|pidfd|eventfd|pthread_atfork|/proc/|\<environ\>|/bin/sh'

WIN_PATTERN='windows\.h|\<(HANDLE|DWORD|WCHAR|BOOL|WINAPI)\>|CreateProcess|GetLastError|WaitForSingleObject|RegisterWait|DuplicateHandle|GetStdHandle|STARTUPINFO|JobObject|CreateFileW|LockFileEx'

# The files the seam covers, relative to ROOT: all of src/ and include/
# but the platform's own ($1: unix or win).
shared_files() {
	(cd "$ROOT" && find src include -type f | LC_ALL=C sort) |
		grep -v -e "^src/$1/" -e "^include/bgrun/$1\.h\$"
}

# check_seam PLATFORM PATTERN WHAT
check_seam() {
	local files hits
	files=$(shared_files "$1")
	hits=$(cd "$ROOT" && printf '%s\n' "$files" |
		tr '\n' '\0' | xargs -0 grep -n -E "$2" --)
	if [ -z "$hits" ]; then
		pass "no file outside src/$1/ and include/bgrun/$1.h names $3"
	else
		fail "no file outside src/$1/ and include/bgrun/$1.h names $3"
		printf '%s\n' "$hits" | sed 's/^/#   /'
	fi
}

FILES=$(shared_files unix)
check "there are shared files to look at" test -n "$FILES"
check "src/unix/ is where the POSIX platform is" test -d "$ROOT/src/unix"
check "src/win/ is where the Windows platform is" test -d "$ROOT/src/win"
check_seam unix "$PATTERN" "epoll, pidfd, eventfd, pthread_atfork, /proc/, environ or /bin/sh"
check_seam win "$WIN_PATTERN" "the Windows API"

finish
