#!/bin/bash
# SPDX-License-Identifier: MIT
# test-hg.sh: the real Mercurial's logtoprocess feeding `logsink send --from-hg-env`, with the daemon or embedded.
#
# Usage: test-hg.sh LOGSINK MODE   (MODE: daemon or embedded)
#
# A private HGRCPATH enables logtoprocess for command, commandfinish and
# commandexception, plus a test extension whose `boom` command raises.
# Six hg commands run (init, add, commit, st, a failing cat, boom); each must
# leave its events with the right canonical command, return code and a
# duration no longer than the wall time measured around it. daemon: a
# daemon is started and BGRUN_SINK=daemon forces every event through it;
# embedded: BGRUN_SINK=embedded, no daemon. Hooks run detached, so rows are
# polled for with a deadline. Exit 77 without hg or sqlite3.

set -u
LS=${1:?usage: test-hg.sh LOGSINK MODE}
MODE=${2:?usage: test-hg.sh LOGSINK MODE}
for p in hg sqlite3; do
	if ! command -v "$p" >/dev/null; then
		echo "# skipped: $p is not installed (scripts/setup.sh installs it)"
		exit 77
	fi
done

USAGE_PROG=logsink
source "$(dirname "$0")/lib.sh"
q() { sqlite3 -batch -noheader "$BGRUN_DB" "$1"; }

export BGRUN_DB=$TMP/state/events.db
export BGRUN_SOCKET=$TMP/run/sink.sock
export HGRCPATH=$TMP/hgrc HGUSER=test HGPLAIN=1 HGENCODING=utf-8 HOME=$TMP
unset BGRUN_SINK

cat >"$TMP/boom.py" <<'EOF'
from mercurial import registrar
cmdtable = {}
command = registrar.command(cmdtable)

@command(b'boom', [], b'hg boom', norepo=True)
def boom(ui, **opts):
    raise RuntimeError('boom from the test extension')
EOF
cat >"$HGRCPATH" <<EOF
[extensions]
logtoprocess =
boom = $TMP/boom.py
[logtoprocess]
command = "$LS" send --from-hg-env
commandfinish = "$LS" send --from-hg-env
commandexception = "$LS" send --from-hg-env
EOF

if [ "$MODE" = embedded ]; then
	# `logsink send` from arguments: every field by its name, and refusals.
	id=$(BGRUN_SINK=embedded "$LS" send --event deploy --source ci \
		--message 'it went out' --field exit_code=3 --field argv=make \
		--field 'argv=a b' --field tag=t1 --field duration_ns=42 --print-id)
	eq "send: exit 0, prints the id" "$?:${#id}" "0:36"
	eq "send: the fields" "$(q "SELECT event, source, message, exit_code,
		json(argv), display, tag, duration_ns FROM events WHERE id = '$id'")" \
		"deploy|ci|it went out|3|[\"make\",\"a b\"]|make 'a b'|t1|42"
	"$LS" send --event x --field nosuch=1 2>"$TMP/err"
	eq "send: unknown field: exit 2" "$?" 2
	grep -q "no event field is called 'nosuch'" "$TMP/err" &&
		pass "send: unknown field: message" || fail "send: unknown field: message"
	"$LS" send --event x --field pid=12x 2>/dev/null
	eq "send: not an integer: exit 2" "$?" 2
	"$LS" send --message lonely 2>/dev/null
	eq "send: no event: exit 2" "$?" 2
	BGRUN_SINK=embedded "$LS" send --event x --field result=nonsense 2>"$TMP/err"
	eq "send: refused by the store: exit 1" "$?" 1
	grep -q "unknown result" "$TMP/err" && pass "send: refused: says why" ||
		fail "send: refused: says why"
	env -u EVENT "$LS" send --from-hg-env 2>/dev/null
	eq "send --from-hg-env without EVENT: exit 1" "$?" 1
	q "DELETE FROM events" 2>/dev/null || sqlite3 "$BGRUN_DB" "DELETE FROM events"
fi

if [ "$MODE" = daemon ]; then
	DAEMON_PID=$("$LS" serve --detach --log "$TMP/daemon.log") ||
		{ echo "# the daemon did not start"; cat "$TMP/daemon.log"; exit 1; }
	KILL_PIDS+=("$DAEMON_PID")
	export BGRUN_SINK=daemon
else
	export BGRUN_SINK=embedded
fi

# run NAME RC HG-ARGS...: runs hg, checks its exit code, notes its wall time.
declare -A WALL
run() {
	local name=$1 want=$2 t0 t1 rc
	shift 2
	t0=$(date +%s%N)
	hg "$@" >/dev/null 2>"$TMP/hg.err"
	rc=$?
	t1=$(date +%s%N)
	WALL[$name]=$((t1 - t0))
	eq "hg $* exits $want" "$rc" "$want"
}
run init 0 init repo
cd repo || exit 1
echo a >a
run add 0 add a
run commit 0 commit -m first
run status 0 st
run cat 1 cat nosuchfile
run boom 1 boom
grep -q 'RuntimeError: boom' "$TMP/hg.err" && pass "boom raised" || fail "boom raised"

# 6 commands: 6 command + 6 commandfinish + 1 commandexception.
deadline=$((SECONDS + 60))
while [ "$(q "SELECT count(*) FROM events WHERE source = 'hg'" 2>/dev/null)" != 13 ] &&
	[ $SECONDS -lt $deadline ]; do
	sleep 0.05 # polling a condition with a deadline
done
eq "13 hg events recorded" "$(q "SELECT count(*) FROM events WHERE source = 'hg'")" 13
eq "one commandfinish per command" \
	"$(q "SELECT count(*) FROM events WHERE event = 'commandfinish'")" 6
eq "one command event per command" \
	"$(q "SELECT count(*) FROM events WHERE event = 'command'")" 6

# check NAME CANONICAL RC RESULT
check() {
	local name=$1 canon=$2 rc=$3 result=$4 row
	row=$(q "SELECT display, exit_code, result, duration_ns > 0,
		duration_ns <= ${WALL[$name]}, end_ns - start_ns = duration_ns,
		json_extract(options, '\$.canonical_command'),
		json_extract(options, '\$.return_code'), pid > 0, message LIKE '% exited $rc after %'
		FROM events WHERE event = 'commandfinish' AND display = 'hg $canon'")
	eq "commandfinish $name" "$row" "hg $canon|$rc|$result|1|1|1|$canon|$rc|1|1"
}
check init init 0 success
check add add 0 success
check commit commit 0 success
check status status 0 success
check cat cat 1 failed
check boom boom 1 failed
eq "command events carry the command line" \
	"$(q "SELECT message FROM events WHERE event = 'command' ORDER BY message")" \
	"add a
boom
cat nosuchfile
commit -m first
init repo
st"
eq "commandexception has the traceback" \
	"$(q "SELECT count(*) FROM events WHERE event = 'commandexception'
		AND message LIKE '%RuntimeError: boom from the test extension%'")" 1
eq "the hg pid links the events of one command" \
	"$(q "SELECT count(DISTINCT pid) FROM events WHERE source = 'hg'")" 6
eq "nothing left in the spool" "$(ls "$BGRUN_DB.spool" 2>/dev/null | wc -l)" 0

if [ "$MODE" = daemon ]; then
	kill -TERM "$DAEMON_PID"
	deadline=$((SECONDS + 30))
	while [ -e "$BGRUN_SOCKET" ] && [ $SECONDS -lt $deadline ]; do
		sleep 0.05
	done
	KILL_PIDS=()
	# The daemon counted them: they did not go around it.
	n=$(sed -n 's/.*stopped: \([0-9]*\) events committed.*/\1/p' "$TMP/daemon.log")
	eq "the daemon committed all 13" "$n" 13
fi
finish
