#!/bin/bash
# SPDX-License-Identifier: MIT
# test-front.sh: `logsink`, the front: what it links, `send` through the daemon, the hand-over to logsink-full.
#
# Usage: test-front.sh LOGSINK
#
# The front must hold no code of libsqlite3 or libuv and load neither (its
# symbols, since it is static: lib.sh's check_not_linked). With a daemon,
# `send` is recorded by the front alone: a copy of it with no logsink-full
# to run still records. Without one, the front hands the event
# to logsink-full with its id: one row, that id. Other verbs and --version
# go to logsink-full unchanged.

set -u
LS=${1:?usage: test-front.sh LOGSINK}
USAGE_PROG=logsink
source "$(dirname "$0")/lib.sh"
export BGRUN_DB=$TMP/events.db BGRUN_SOCKET=$TMP/run/sink.sock
unset BGRUN_SINK

# --- what it links: static, or dynamic with the C library alone ---
check_not_linked "does not link libsqlite3 or libuv" "$LS" sqlite libuv

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

# --- a daemon: the front records it ---
mkdir -m 0700 "$TMP/run"
DPID=$("$LS" serve --detach --log "$TMP/daemon.log")
[[ $DPID =~ ^[0-9]+$ ]] && KILL_PIDS+=("$DPID")
check "daemon started" test -S "$BGRUN_SOCKET"
# A copy of the front alone: it has no logsink-full to fall back on.
mkdir "$TMP/alone" && cp "$LS" "$TMP/alone/logsink"
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

finish
