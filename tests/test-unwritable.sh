#!/bin/bash
# SPDX-License-Identifier: MIT
# test-unwritable.sh: a log that cannot be written is said, never silent: full, read-only, corrupt, no daemon, no home.
#
# Usage: test-unwritable.sh BGRUN LOGSINK (absolute paths; meson passes them).
# What bgrun says before it launches (one line: where the record waits, or
# that it cannot be kept), --strict-log, what logsink status, query and
# send say, and that the next writer that works stores what waited. The
# file-system cases run in a mount namespace of their own (root, or
# skipped): a 2 MB tmpfs filled up, and one remounted read-only.

set -u

BGRUN=${1:?usage: test-unwritable.sh BGRUN LOGSINK}
LS=${2:?usage: test-unwritable.sh BGRUN LOGSINK}
# The mounts are this script's alone, and go with it.
if [ -z "${BGRUN_TEST_NS:-}" ] && [ "$(id -u)" = 0 ] &&
	unshare -m --propagation private true 2>/dev/null; then
	BGRUN_TEST_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
TMP=$(pwd -P)
exec </dev/null
# Our own socket directory: the dropped count lives there.
export BGRUN_SOCKET=$TMP/run/sink.sock
unset BGRUN_SINK BGRUN_STRICT_LOG XDG_STATE_HOME
# No configuration file but the one a check writes.
export BGRUN_CONFIG=
mkdir -m 0700 "$TMP/run"
run() { capture "$BGRUN" "$@"; }
lsink() { capture "$LS" "$@"; }
# rows DB: how many events logsink finds.
rows() { "$LS" --db "$1" query --json 2>/dev/null | wc -l; }

# --- a database that is not one: kept in the spool, stored once repaired ---
export BGRUN_DB=$TMP/corrupt/events.db
mkdir "$TMP/corrupt"
printf 'this is not a database, not at all\n' >"$BGRUN_DB"
run --wait --print-id -- true
ID=$OUT
eq "corrupt: the command still runs" "$RC" 0
eq "corrupt: one line on stderr" "$ERR_LINES" 1
check "corrupt: it says why and where the record waits" \
	eval '[[ $ERR == "bgrun: $BGRUN_DB is not an SQLite database: event $ID cannot be recorded now; it waits in the spool $BGRUN_DB.spool" ]]'
lsink status
eq "corrupt: status says something needs looking at" "$RC" 1
check "corrupt: status: not writable" eval '[[ $OUT == *"writable: no: $BGRUN_DB is not an SQLite database"* ]]'
check "corrupt: status: one event waiting" eval '[[ $OUT == *"spool:    1 waiting, 0 set aside"* ]]'
run --strict-log -- touch "$TMP/ran"
eq "corrupt: --strict-log: exit 125" "$RC" 125
check "corrupt: --strict-log: the command was not launched" test ! -e "$TMP/ran"
eq "corrupt: --strict-log: the message" "$ERR" \
	"bgrun: $BGRUN_DB is not an SQLite database: not launched (--strict-log)"
BGRUN_STRICT_LOG=1 run -- touch "$TMP/ran"
eq "corrupt: BGRUN_STRICT_LOG=1: exit 125" "$RC" 125
check "corrupt: BGRUN_STRICT_LOG=1: not launched" test ! -e "$TMP/ran"
printf '[log]\nstrict = true\n' >"$TMP/strict.conf"
BGRUN_CONFIG=$TMP/strict.conf run -- touch "$TMP/ran"
eq "corrupt: [log] strict = true: exit 125, not launched" \
	"$RC:$(test -e "$TMP/ran"; echo $?)" "125:1"
BGRUN_STRICT_LOG=no run --wait -- touch "$TMP/ran"
eq "corrupt: BGRUN_STRICT_LOG=no: launched" "$RC:$(test -e "$TMP/ran"; echo $?)" "0:0"
rm -f "$TMP/ran"
rm "$BGRUN_DB"
run --wait -- true
eq "repaired: no message" "$ERR" ""
eq "repaired: the next launch stored the two that waited too" "$(rows "$BGRUN_DB")" 3
check "repaired: the waiting one is there" eval '"$LS" show "$ID" >/dev/null'
lsink status
eq "repaired: status: all is well" "$RC" 0
check "repaired: status: nothing waits" eval '[[ $OUT == *"spool:    0 waiting"* ]]'

# --- BGRUN_SINK=daemon, no daemon: said; query and stats warn ---
BGRUN_SINK=daemon run --wait -- true
eq "no daemon: the command still runs" "$RC" 0
check "no daemon: said, with the spool" \
	eval '[[ $ERR == "bgrun: no logsink daemon answers on $BGRUN_SOCKET (BGRUN_SINK=daemon): event "*" cannot be recorded now; it waits in the spool $BGRUN_DB.spool" ]]'
lsink query
eq "no daemon: query still reads the log" "$RC" 0
eq "no daemon: query warns of the waiting event" "$ERR" \
	"logsink: 1 events wait in the spool $BGRUN_DB.spool and are not shown (the next writer that works stores them; see 'logsink status')"
lsink stats
check "no daemon: stats warns too" eval '[[ $ERR == *"1 events wait in the spool"* ]]'
lsink status
check "no daemon: status: the daemon does not answer" eval '[[ $OUT == *"daemon:   not running ($BGRUN_SOCKET)"* ]]'
run --wait -- true
eq "no daemon: the next embedded writer stores it" "$(rows "$BGRUN_DB")" 5

# --- a database damaged past its header: only SQLite sees it, at a write ---
# The header is intact, so the check before the launch passes; the
# recorder's write fails ("database disk image is malformed") and keeps
# the event in the spool with that reason. bgrun --wait says so after the
# wait; the next launch says so before (--strict-log refuses it); logsink
# status says why; a new file in its place makes the reason void.
export BGRUN_DB=$TMP/damaged/events.db
mkdir "$TMP/damaged"
run --wait -- true
# Its pages in the file (a close leaves a short WAL: SQLite would read
# the pages from there), then pages 1 and 2 past the 100-byte header
# overwritten.
sqlite3 "$BGRUN_DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
head -c 4096 /dev/zero | tr '\0' '\377' |
	dd of="$BGRUN_DB" bs=1 seek=100 conv=notrunc 2>/dev/null
MALFORMED="$BGRUN_DB: database disk image is malformed"
run --wait --print-id -- true
ID=$OUT
eq "damaged: the command still runs" "$RC" 0
eq "damaged: one line on stderr" "$ERR_LINES" 1
eq "damaged: after the wait: not recorded, why, and where it waits" "$ERR" \
	"bgrun: $MALFORMED: event $ID was not recorded; it waits in the spool $BGRUN_DB.spool"
lsink status
eq "damaged: status: exit 1" "$RC" 1
check "damaged: status: not writable, SQLite's reason" \
	eval '[[ $OUT == *"writable: no: $MALFORMED (the last write failed)"* ]]'
check "damaged: status: why the spool holds it" \
	eval '[[ $OUT == *"reason:   $MALFORMED"* ]]'
run --wait --print-id -- true
eq "damaged, next launch: told before it launches, once" \
	"$RC:$ERR_LINES:$ERR" \
	"0:1:bgrun: $MALFORMED (the last write failed): event $OUT cannot be recorded now; it waits in the spool $BGRUN_DB.spool"
run --strict-log -- touch "$TMP/ran"
eq "damaged: --strict-log: exit 125, nothing launched" \
	"$RC:$(test -e "$TMP/ran"; echo $?)" "125:1"
eq "damaged: --strict-log: the message" "$ERR" \
	"bgrun: $MALFORMED (the last write failed): not launched (--strict-log)"
rm -f "$TMP/ran"
mv "$BGRUN_DB" "$TMP/damaged.db"
run --wait -- true
eq "damaged, replaced by a new file: no message" "$ERR" ""
eq "damaged, replaced: what waited is stored" "$(rows "$BGRUN_DB")" 3
lsink status
eq "damaged, replaced: status: all is well" "$RC" 0
check "damaged, replaced: no reason left" eval '[[ $OUT != *reason:* ]]'

# --- the lock held past its bound (a stopped writer): said after --wait ---
# Held here as a stopped `logsink prune` would hold it.
export BGRUN_DB=$TMP/held/events.db
mkdir "$TMP/held"
run --wait -- true
exec {LOCK}>>"$BGRUN_DB-lock"
flock -x "$LOCK"
BGRUN_LOCK_TIMEOUT=1 run --wait --print-id -- true {LOCK}>&-
ID=$OUT
eq "lock held: the command still runs" "$RC" 0
eq "lock held: one line after the wait: why, and where it waits" "$ERR" \
	"bgrun: $BGRUN_DB-lock: another writer has held the log's lock for over 1 s (stopped?): event $ID was not recorded; it waits in the spool $BGRUN_DB.spool"
lsink status
check "lock held: status: why it waits" \
	eval '[[ $OUT == *"reason:   $BGRUN_DB-lock: another writer has held the log"* ]]'
exec {LOCK}>&-
run --wait -- true
eq "lock free again: no message, the waiting event stored" \
	"$ERR:$(rows "$BGRUN_DB")" ":3"

# --- HOME=/ as a user who cannot write there ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BGRUN"; then
	capture env -u BGRUN_DB HOME=/ setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$BGRUN" --wait -- true
	eq "HOME=/: the command still runs" "$RC" 0
	check "HOME=/: said in one line: nowhere to keep it" \
		eval '[[ ${ERR%%$'"'\\n'"'*} == "bgrun: cannot write in /: Permission denied: event "*" cannot be recorded, nor kept in the spool" ]]'
	# The output cannot be kept either ($BGRUN_OUTPUT_DIR: this script's).
	check "HOME=/: and one line for the output" \
		eval '[[ ${ERR#*$'"'\\n'"'} == "bgrun: cannot keep the output of event "*" in $BGRUN_OUTPUT_DIR: Permission denied; it is discarded" && $ERR_LINES == 2 ]]'
else
	echo "ok - HOME=/ # SKIP needs root, setpriv and a bgrun nobody may run"
fi

if [ -z "${BGRUN_TEST_NS:-}" ]; then
	echo "ok - full and read-only file systems # SKIP no mount namespace (not root?)"
	finish
fi

# --- a full file system (2 MB tmpfs, the spool on it too): dropped, counted ---
mkdir "$TMP/full"
mount -t tmpfs -o size=2m tmpfs "$TMP/full"
export BGRUN_DB=$TMP/full/events.db
dd if=/dev/zero of="$TMP/full/fill" bs=64k 2>/dev/null
run --wait --print-id -- true
ID=$OUT
eq "full: the command still runs" "$RC" 0
eq "full: --print-id prints the id" "${#ID}" 36
check "full: and says it cannot be recorded nor kept" \
	eval '[[ $ERR == "bgrun: the file system of $TMP/full is full ("*" KiB free): event $ID cannot be recorded, nor kept in the spool" ]]'
run --strict-log -- touch "$TMP/ran"
eq "full: --strict-log: exit 125, nothing launched" "$RC:$(test -e "$TMP/ran"; echo $?)" "125:1"
lsink send --event full-test
eq "full: logsink send: not recorded" "$RC" 1
check "full: logsink send: dropped, said in one line" \
	eval '[[ $ERR == *"not kept in the spool: No space left on device (dropped, counted by logsink status)" && $ERR_LINES == 1 ]]'
lsink status
eq "full: status: exit 1" "$RC" 1
check "full: status: two events dropped (the launch's and send's)" \
	eval '[[ $OUT == *"dropped:  2 ($TMP/run/dropped)"* ]]'
rm "$TMP/full/fill"
run --wait -- true
eq "full, freed: recorded again, silently" "$ERR:$(rows "$BGRUN_DB")" ":1"

# --- a read-only file system: said; a populated log is still read ---
mkdir "$TMP/ro"
mount -t tmpfs -o size=4m tmpfs "$TMP/ro"
export BGRUN_DB=$TMP/ro/events.db
run --wait -- true
run --wait -- true
mount -o remount,ro "$TMP/ro"
run --wait --print-id -- true
eq "read-only: the command still runs" "$RC" 0
check "read-only: said in one line" \
	eval '[[ $ERR == "bgrun: $BGRUN_DB is on a read-only file system: event $OUT cannot be recorded, nor kept in the spool" ]]'
lsink query
eq "read-only: query reads the log" "$RC:$OUT_LINES" "0:3"
lsink status
check "read-only: status: not writable" eval '[[ $OUT == *"writable: no: $BGRUN_DB is on a read-only file system"* ]]'
umount "$TMP/ro" "$TMP/full"

finish
