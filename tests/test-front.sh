#!/bin/bash
# SPDX-License-Identifier: MIT
# test-front.sh: `logsink`, the front: what it links, `send` through the daemon, the hand-over to logsink-full.
#
# Usage: test-front.sh LOGSINK
#
# Linked dynamically (-Dstatic_fronts=false, the sanitizers), the front
# must hold no code of libsqlite3 or libuv and load neither (lib.sh's
# check_not_linked); without a daemon it hands the event to logsink-full
# with its id: one row, that id. Linked statically, it holds the store
# (SQLite's code, never libuv's) and records every `send` itself, the
# embedded store included: a copy of it with no logsink-full beside it
# still records, with or without a daemon; only a user that /etc/passwd
# does not name goes to logsink-full. Other verbs and --version go to
# logsink-full unchanged.

set -u
LS=${1:?usage: test-front.sh LOGSINK}
USAGE_PROG=logsink
source "$(dirname "$0")/lib.sh"
export BGRUN_DB=$TMP/events.db BGRUN_SOCKET=$TMP/run/sink.sock
unset BGRUN_SINK

# --- what it links: static with the store, or dynamic with the C library alone ---
if readelf -d "$LS" | grep -q NEEDED; then
	STATIC=0
	check_not_linked "dynamic: does not link libsqlite3 or libuv" "$LS" sqlite libuv
else
	STATIC=1
	check_not_linked "static: holds no libuv" "$LS" libuv
	check "static: holds the store (SQLite's code)" eval 'nm "$LS" | grep -q " T sqlite3_open_v2$"'
fi
mkdir "$TMP/alone" && cp "$LS" "$TMP/alone/logsink"

# --- passed through ---
capture "$LS" --version
check "--version: from logsink-full" eval '[[ $OUT =~ ^logsink\ [0-9]+\.[0-9]+\.[0-9]+$ ]]' 
capture "$LS" bogus
expect_usage "unknown verb" "logsink: unknown command 'bogus'"

# --- no daemon: logsink-full records it, with the front's id ---
capture "$LS" send --event e1 --print-id
eq "no daemon: exit 0" "$RC" 0
ID1=$OUT
eq "no daemon: one row, that id" \
	"$(sqlite3 "$BGRUN_DB" "SELECT count(*), min(id) FROM events WHERE event = 'e1'")" \
	"1|$ID1"
capture "$LS" send --event e1b --field id=given-id --print-id
eq "no daemon, --field id: kept" "$OUT" given-id
if [ "$STATIC" = 1 ]; then
	# A copy of the front alone: it has no logsink-full to fall back on.
	capture "$TMP/alone/logsink" send --event e1c --print-id
	eq "static, no daemon: the front alone records, exit 0" "$RC" 0
	eq "static, no daemon: the front alone's row" \
		"$(sqlite3 "$BGRUN_DB" "SELECT id FROM events WHERE event = 'e1c'")" "$OUT"
	# A uid /etc/passwd does not name: logsink-full's (here: none to run).
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	   ! getent passwd 54321 >/dev/null; then
		# Its own directory, outside ours (0700, root's).
		NAMELESS=$(mktemp -d) && chmod 0777 "$NAMELESS"
		cp "$LS" "$NAMELESS/logsink-alone"
		capture setpriv --reuid 54321 --regid 54321 --clear-groups \
			env BGRUN_DB="$NAMELESS/events.db" \
			BGRUN_SOCKET="$NAMELESS/sock" HOME="$NAMELESS" \
			"$NAMELESS/logsink-alone" send --event e1d
		check "static, a user /etc/passwd does not name: handed to logsink-full" \
			eval '[ "$RC" != 0 ] && [[ $ERR == *"cannot run "*logsink-full* ]]'
		capture setpriv --reuid 54321 --regid 54321 --clear-groups \
			env BGRUN_DB="$NAMELESS/events.db" \
			BGRUN_SOCKET="$NAMELESS/sock" HOME="$NAMELESS" \
			"$LS" send --event e1d
		eq "static, that user: logsink-full records, exit 0" "$RC" 0
		eq "static, that user: the row, by uid" \
			"$(sqlite3 "$NAMELESS/events.db" "SELECT uid, coalesce(user, 'NULL') FROM events WHERE event = 'e1d'")" \
			"54321|NULL"
		rm -rf "$NAMELESS"
	else
		echo "# skipped: a user /etc/passwd does not name (needs root, setpriv, a free uid 54321)"
	fi
fi

# --- a daemon: the front records it ---
mkdir -m 0700 "$TMP/run"
DPID=$("$LS" serve --detach --log "$TMP/daemon.log")
[[ $DPID =~ ^[0-9]+$ ]] && KILL_PIDS+=("$DPID")
check "daemon started" test -S "$BGRUN_SOCKET"
# The copy of the front alone: it has no logsink-full to fall back on.
capture "$TMP/alone/logsink" send --event e2 --field exit_code=3 --print-id
eq "daemon: the front alone records, exit 0" "$RC" 0
ID2=$OUT
capture "$LS" send --event e3
kill -TERM "$DPID"
until ! kill -0 "$DPID" 2>/dev/null; do sleep 0.02; done
check "daemon: it counted both events" \
	grep -q 'stopped: 2 events committed' "$TMP/daemon.log"
eq "daemon: the row" \
	"$(sqlite3 "$BGRUN_DB" "SELECT id, exit_code FROM events WHERE event = 'e2'")" \
	"$ID2|3"
# The front is static and names no user (no NSS there): the daemon does.
eq "daemon: the row's user, by uid and name" \
	"$(sqlite3 "$BGRUN_DB" "SELECT uid, user FROM events WHERE event = 'e2'")" \
	"$(id -u)|$(id -un)"
eq "no daemon: the row's user, by uid and name" \
	"$(sqlite3 "$BGRUN_DB" "SELECT uid, user FROM events WHERE event = 'e1'")" \
	"$(id -u)|$(id -un)"

# --- a refusal (a daemon for another database): logsink-full, same id ---
BGRUN_DB=$TMP/other.db DPID=$("$LS" serve --detach --log "$TMP/daemon2.log")
[[ $DPID =~ ^[0-9]+$ ]] && KILL_PIDS+=("$DPID")
capture "$LS" send --event e4 --print-id
eq "other database: exit 0" "$RC" 0
eq "other database: recorded here, that id" \
	"$(sqlite3 "$BGRUN_DB" "SELECT id FROM events WHERE event = 'e4'")" "$OUT"
kill -TERM "$DPID"

# --- a daemon that runs on: its WAL is checkpointed as it goes ---
# (Its checkpointer's connection once never opened the WAL: the
# database file stayed at its first page and the WAL grew by about
# 30 KiB an event, until the daemon stopped.)
export BGRUN_DB=$TMP/long.db
DPID=$("$LS" serve --detach --log "$TMP/daemon3.log")
[[ $DPID =~ ^[0-9]+$ ]] && KILL_PIDS+=("$DPID")
"$LS" send --event long0
SIZE0=$(stat -c %s "$BGRUN_DB")
n=1
while [ "$(stat -c %s "$BGRUN_DB")" -le "$SIZE0" ] && [ "$n" -lt 1500 ]; do
	"$LS" send --event long || break
	n=$((n + 1))
done
check "running daemon: a checkpoint fills the database (after $n events)" \
	test "$(stat -c %s "$BGRUN_DB")" -gt "$SIZE0"
check "running daemon: the WAL stays under 16 MiB" \
	test "$(stat -c %s "$BGRUN_DB-wal")" -lt $((16 << 20))
kill -TERM "$DPID"
until ! kill -0 "$DPID" 2>/dev/null; do sleep 0.02; done
eq "running daemon: every event stored" \
	"$(sqlite3 "$BGRUN_DB" "SELECT count(*) FROM events")" "$n"

finish
