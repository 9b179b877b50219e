#!/bin/bash
# SPDX-License-Identifier: MIT
# test-config.sh: the user's configuration file (bgrun/config.h), as bgrun and logsink read it.
#
# Usage: test-config.sh BGRUN LOGSINK [EXAMPLE] (meson passes them; EXAMPLE
# is contrib/config.example, parsed as shipped and uncommented). Every check
# runs real programs on a real event log in a temporary directory; with
# --wait the finish is recorded before bgrun returns, so nothing polls.

set -u

BGRUN=${1:?usage: test-config.sh BGRUN LOGSINK}
LOGSINK=${2:?usage: test-config.sh BGRUN LOGSINK}
EXAMPLE=${3:+$(realpath "$3")}
USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
exec </dev/null
unset BGRUN_DB BGRUN_SINK BGRUN_SOCKET BGRUN_CONFIG
export HOME=$TMP/home XDG_CONFIG_HOME= XDG_STATE_HOME=$TMP/state
mkdir -p "$HOME/.config/bgrun"
# A daemon would take the events elsewhere: none for this test.
export XDG_RUNTIME_DIR=$TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR"

count() { "$LOGSINK" --db "$1" query --json 2>/dev/null | grep -c '"id"'; }

# --- the default place: ~/.config/bgrun/config ------------------------------
cat >"$HOME/.config/bgrun/config" <<CFG
# bgrun's configuration
[log]
db = $TMP/from-config.db
[sink]
mode = embedded
CFG
capture "$BGRUN" -w -- true
eq "[log] db: exit 0" "$RC" 0
eq "[log] db: the event is in the configured log" "$(count "$TMP/from-config.db")" 1
check "[log] db: not in the default one" test ! -e "$TMP/state/bgrun/events.db"
capture "$LOGSINK" query --json
eq "[log] db: logsink query reads it too" "$(grep -c '"id"' "$TMP/.stdout")" 1
BGRUN_DB=$TMP/from-env.db capture "$BGRUN" -w -- true
eq "the environment before the file: exit 0" "$RC" 0
eq "the environment before the file: BGRUN_DB wins" "$(count "$TMP/from-env.db")" 1
eq "the environment before the file: the configured log unchanged" "$(count "$TMP/from-config.db")" 1
capture "$BGRUN" --db "$TMP/from-option.db" -w -- true
eq "the option before both: --db wins" "$(count "$TMP/from-option.db")" 1
eq "the option before both: the configured log unchanged" "$(count "$TMP/from-config.db")" 1

# The chain sees the same settings: a bgrun run by the command logs there too.
capture "$BGRUN" -w -- "$BGRUN" -w -- true
eq "a nested bgrun: exit 0" "$RC" 0
eq "a nested bgrun: both events in the configured log" "$(count "$TMP/from-config.db")" 3

printf '[log]\ndb = ~/tilde.db\n' >"$TMP/tilde.conf"
BGRUN_CONFIG=$TMP/tilde.conf capture "$BGRUN" -w -- true
eq "[log] db = ~/...: in \$HOME" "$(count "$HOME/tilde.db")" 1

# --- XDG_CONFIG_HOME, then BGRUN_CONFIG -------------------------------------
mkdir -p "$TMP/xdg/bgrun"
printf '[log]\ndb = %s\n' "$TMP/xdg.db" >"$TMP/xdg/bgrun/config"
XDG_CONFIG_HOME=$TMP/xdg capture "$BGRUN" -w -- true
eq "XDG_CONFIG_HOME/bgrun/config: read instead" "$(count "$TMP/xdg.db")" 1
printf '[log]\ndb = %s\n' "$TMP/named.db" >"$TMP/named.conf"
BGRUN_CONFIG=$TMP/named.conf capture "$BGRUN" -w -- true
eq "BGRUN_CONFIG names the file" "$(count "$TMP/named.db")" 1
BGRUN_CONFIG= BGRUN_DB=$TMP/none.db capture "$BGRUN" -w -- true
eq "BGRUN_CONFIG empty: no file read, exit 0" "$RC" 0
eq "BGRUN_CONFIG empty: the environment's log" "$(count "$TMP/none.db")" 1

# --- broken files: one line, the position, never the text; exit 2 -----------
# (An indented line after an item continues its value; after a section, it is an error.)
printf '[sink]\nmode = embedded\n[log]\n  secret-looking text\n' >"$TMP/broken.conf"
BGRUN_CONFIG=$TMP/broken.conf capture "$BGRUN" -w -- true
eq "a broken config: bgrun exits 2" "$RC" 2
eq "a broken config: bgrun's one line" "$ERR" \
	"bgrun: $TMP/broken.conf:4: parse error (unexpected leading whitespace)"
BGRUN_CONFIG=$TMP/broken.conf capture "$LOGSINK" query
eq "a broken config: logsink exits 2" "$RC" 2
eq "a broken config: logsink's one line" "$ERR" \
	"logsink: $TMP/broken.conf:4: parse error (unexpected leading whitespace)"
BGRUN_CONFIG=$TMP/broken.conf capture "$LOGSINK" send --event x
eq "a broken config: logsink send exits 2 too" "$RC" 2
printf 'root:$6$hash-that-is-secret:19000::::::\n' >"$TMP/shadow-like"
BGRUN_CONFIG=$TMP/shadow-like capture "$BGRUN" -w -- true
eq "a file that is not a config: exit 2" "$RC" 2
case "$ERR" in
*secret*) fail "a file that is not a config: its text is not printed"
	  printf '#   got: %s\n' "$ERR" ;;
*) pass "a file that is not a config: its text is not printed" ;;
esac
printf '%%include %s\n' "$TMP/named.conf" >"$TMP/including.conf"
BGRUN_CONFIG=$TMP/including.conf capture "$BGRUN" -w -- true
eq "%include: the included file's keys" "$(count "$TMP/named.db")" 2
printf '%%include %s\n[log]\n%%unset db\n' "$TMP/named.conf" >"$TMP/unset.conf"
BGRUN_CONFIG=$TMP/unset.conf capture "$BGRUN" -w -- true
eq "%unset: the key is gone (the default log)" "$(count "$TMP/state/bgrun/events.db")" 1
mkdir "$TMP/adir"
BGRUN_CONFIG=$TMP/adir capture "$BGRUN" -w -- true
eq "a directory as the config: exit 2" "$RC" 2
eq "a directory as the config: says so" "$ERR" "bgrun: $TMP/adir: Is a directory"

# --- [serve] forward: logsink serve forwards as with --forward -------------
printf '[log]\ndb = %s\n[serve]\nforward = postgresql://nobody@127.0.0.1:1/none\nforward-host = cfg-host\n' \
	"$TMP/serve.db" >"$TMP/serve.conf"
BGRUN_CONFIG=$TMP/serve.conf "$LOGSINK" serve --socket "$TMP/s.sock" \
	--log "$TMP/serve.log" --exit-idle 60s </dev/null >/dev/null 2>&1 &
SERVE_PID=$!
KILL_PIDS+=("$SERVE_PID")
end=$((SECONDS + 20))
until grep -q 'forwarding to' "$TMP/serve.log" 2>/dev/null ||
      grep -qi 'postgresql.*not\|libpq' "$TMP/serve.log" 2>/dev/null ||
      ! kill -0 "$SERVE_PID" 2>/dev/null || [ $SECONDS -ge $end ]; do
	sleep 0.02
done
if grep -qi 'without libpq\|cannot load' "$TMP/serve.log" 2>/dev/null; then
	echo "# skipped [serve] forward: this logsink has no PostgreSQL module"
else
	check "[serve] forward: the daemon forwards to the configured server" \
		grep -q 'forwarding to .*127.0.0.1' "$TMP/serve.log"
fi
kill "$SERVE_PID" 2>/dev/null
wait "$SERVE_PID" 2>/dev/null

# --- contrib/config.example: it parses, and each item it shows works -------
if [ -z "$EXAMPLE" ]; then
	echo "# skipped: contrib/config.example (no path given)"
	finish
fi
# As shipped every item is commented out: the same as no file.
before=$(count "$TMP/state/bgrun/events.db")
BGRUN_CONFIG=$EXAMPLE capture "$BGRUN" -w -- true
eq "config.example as shipped: bgrun exit 0" "$RC" 0
eq "config.example as shipped: the default log" \
	"$(count "$TMP/state/bgrun/events.db")" $((before + 1))
BGRUN_CONFIG=$EXAMPLE capture "$LOGSINK" query
eq "config.example as shipped: logsink exit 0" "$RC" 0
# Every item uncommented ('#name = value'), the example's socket moved
# into this test's runtime directory: the real parser takes each one.
sed -E 's/^#([a-z][a-z0-9.-]* = )/\1/' "$EXAMPLE" |
	sed "s|/run/user/1000|$XDG_RUNTIME_DIR|" >"$TMP/example.conf"
check "config.example shows items (#name = value)" \
	test "$(grep -cE '^[a-z][a-z0-9.-]* = ' "$TMP/example.conf")" -ge 8
eq "config.example: every item line is uncommented" \
	"$(grep -cE '^[a-z][a-z0-9.-]* = ' "$TMP/example.conf")" \
	"$(grep -cE '^#[a-z][a-z0-9.-]* = ' "$EXAMPLE")"
BGRUN_CONFIG=$TMP/example.conf capture "$BGRUN" -w -- true
eq "config.example uncommented: bgrun exit 0" "$RC" 0
eq "config.example uncommented: [log] db = ~/...: the event there" \
	"$(count "$HOME/.local/state/bgrun/events.db")" 1
BGRUN_CONFIG=$TMP/example.conf capture "$LOGSINK" status
check "config.example uncommented: logsink status names that log" \
	grep -qxF "log:      $HOME/.local/state/bgrun/events.db" "$TMP/.stdout"
check "config.example uncommented: and the [sink] socket" \
	grep -qF "($XDG_RUNTIME_DIR/bgrun/sink.sock)" "$TMP/.stdout"
BGRUN_CONFIG=$TMP/example.conf capture "$BGRUN" clone "$TMP/no-such.hg" "$TMP/no-clone"
eq "config.example uncommented: bgrun clone reads its [hooks] (exit 1: no bundle, not 2)" "$RC" 1
# [log] strict as the example spells it, set to true, with a log that
# cannot be written (a directory): nothing launched.
mkdir "$TMP/dir-as-db"
sed -e 's/^strict = false$/strict = true/' \
	-e "s|^db = .*|db = $TMP/dir-as-db|" "$TMP/example.conf" >"$TMP/example-strict.conf"
BGRUN_CONFIG=$TMP/example-strict.conf capture "$BGRUN" -w -- touch "$TMP/ran"
eq "config.example, strict = true, an unwritable log: exit 125" "$RC" 125
check "config.example, strict = true, an unwritable log: nothing ran" test ! -e "$TMP/ran"

finish
