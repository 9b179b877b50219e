#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stress.sh: the README's "Reliability" figures, reproduced: load held, faults survived, disk faults, bad inputs.
#
# Usage: tests/stress/stress.sh [--short | --long] [BUILDDIR]   (default
# --short, BUILDDIR build; the build must be there: scripts/test.sh makes it)
#
# Each part prints its figures as lines starting with "figure:", and each
# check is counted: at the end, meson's words ("Ok: N", "Fail: N",
# "Expected Fail: N"), so that .ci/run counts this run. A check that fails
# because of an open finding of issue 12 that another change fixes is an
# "expected fail", printed as "finding N: ..." (never hidden); the day it
# holds it counts as Ok. --short takes about a minute on two CPUs; --long
# runs the sizes the README quotes.
#
# Needs: sqlite3, python3, hg (bundles), flock (util-linux); tmpfs and
# read-only mounts need root (else those cases say "skipped").
set -uo pipefail

mode=short
builddir=build
for a in "$@"; do
	case "$a" in
	--short) mode=short ;;
	--long) mode=long ;;
	-*) echo "stress.sh: unknown option '$a'" >&2; exit 2 ;;
	*) builddir=$a ;;
	esac
done
cd "$(dirname "$0")/../.."
root=$(pwd)
B=$root/$builddir/launcher/bgrun
L=$root/$builddir/logsink/logsink
SPAWN=$root/$builddir/tests/stress/spawn-threads
FIX=$root/tests/clone-fixtures.py
for p in "$B" "$L" "$SPAWN"; do
	if [ ! -x "$p" ]; then
		echo "stress: $p is missing: build first (scripts/test.sh)"
		printf 'Ok:                 0\nFail:               1\n'
		exit 1
	fi
done
for p in sqlite3 python3 hg flock; do
	if ! command -v "$p" >/dev/null; then
		echo "stress: skipped: $p is not installed"
		printf 'Ok:                 0\nFail:               0\nSkipped:            1\n'
		exit 0
	fi
done

if [ $mode = short ]; then
	PROCS=4 LAUNCHES=50 THREADS=8 SPAWNS=250 DAEMON_KILLS=3 DAEMON_EVENTS=100
	SUP_KILLS=3 CLONE_KILLS=8 MUTANTS=12 CLI_RUNS=40 FRAMES=300 BAD_EVERY=8
else
	PROCS=8 LAUNCHES=2000 THREADS=8 SPAWNS=1250 DAEMON_KILLS=20 DAEMON_EVENTS=2000
	SUP_KILLS=20 CLONE_KILLS=100 MUTANTS=1000 CLI_RUNS=2000 FRAMES=5000 BAD_EVERY=1
fi

W=$(mktemp -d /tmp/bgrun-stress.XXXXXX)
PIDS=()
MOUNTS=()
finish() {
	local p m
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$W"
}
trap finish EXIT
cd "$W" || exit 1
export HGRCPATH=$W/hgrc HGUSER=stress HGPLAIN=1
printf '[ui]\nportablefilenames = ignore\n' >"$HGRCPATH"
unset BGRUN_SINK BGRUN_SOCKET

ok=0 bad=0 xfail=0 t0=$SECONDS
pass() { ok=$((ok + 1)); echo "ok - $1"; }
fail() { bad=$((bad + 1)); echo "not ok - $1"; }
# finding N DESC COND...: a check an open finding of issue 12 fails today.
finding() {
	local n=$1 d=$2
	shift 2
	if "$@"; then
		pass "$d (finding $n holds now)"
	else
		xfail=$((xfail + 1))
		echo "finding $n: $d: not yet (issue 12, fixed elsewhere)"
	fi
}
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
figure() { echo "figure: $*"; }
section() { echo "=== $1 (at $((SECONDS - t0)) s)"; }
sql() { sqlite3 -batch -noheader -cmd '.timeout 20000' "$1" "$2" 2>/dev/null; }
# wait_rows DB SQL WANT: polls until SQL gives WANT (60 s).
wait_rows() {
	local end=$((SECONDS + 60))
	until [ "$(sql "$1" "$2")" = "$3" ] || [ $SECONDS -ge $end ]; do sleep 0.05; done
}
# ids_missing DB IDFILE: how many ids of the file have no row; then how
# many rows have an id not in the file.
ids_check() {
	sqlite3 -batch -noheader -cmd '.timeout 20000' "$1" \
		"CREATE TEMP TABLE want(id TEXT PRIMARY KEY);" \
		".import $2 want" \
		"SELECT (SELECT count(*) FROM want WHERE id NOT IN (SELECT id FROM events)) || ' ' || (SELECT count(*) FROM events WHERE id NOT IN (SELECT id FROM want));" 2>/dev/null
}
zombies() { ps -eo ppid=,stat= | awk -v p=$$ '$1 == p && $2 ~ /^Z/' | wc -l; }

section "load held"
# P processes each launching N logged commands (detached: the supervisor
# records each finish); every row must come, and nothing stay behind.
export BGRUN_DB=$W/load.db
for p in $(seq "$PROCS"); do
	(for i in $(seq "$LAUNCHES"); do "$B" --print-id -- true; done >"ids.$p") &
done
wait
cat ids.* >ids.load
n=$((PROCS * LAUNCHES))
wait_rows "$BGRUN_DB" "SELECT count(*) FROM events WHERE result = 'success'" $n
read -r missing extra < <(ids_check "$BGRUN_DB" ids.load)
rows=$(sql "$BGRUN_DB" "SELECT count(*) FROM events WHERE result = 'success'")
figure "logged launches: $n from $PROCS processes: $rows rows success, $missing missing, $extra unexpected, $(zombies) zombies"
check "logged launches: every row present" test "$rows:$missing:$extra" = "$n:0:0"
check "logged launches: no zombie" test "$(zombies)" = 0
out=$("$SPAWN" "$THREADS" "$SPAWNS" /bin/true)
rc=$?
figure "library spawns: $THREADS threads x $SPAWNS: $out"
check "library spawns: none failed, no descriptor left, no zombie" test $rc = 0

section "faults survived"
# The daemon, SIGKILLed at random moments while P processes launch
# through it (BGRUN_SINK=try: the daemon, else the store itself).
export BGRUN_DB=$W/daemon.db BGRUN_SOCKET=$W/s/sink.sock BGRUN_SINK=try
mkdir -p "$W/s"
start_daemon() {
	"$L" --db "$BGRUN_DB" serve --socket "$BGRUN_SOCKET" --detach >"$W/daemon.pid" 2>>"$W/daemon.err"
	DPID=$(cat "$W/daemon.pid")
}
start_daemon
for p in $(seq "$PROCS"); do
	(for i in $(seq $((DAEMON_EVENTS / PROCS))); do "$B" --print-id -- true; done >"dids.$p") &
	PIDS+=($!)
done
for k in $(seq "$DAEMON_KILLS"); do
	sleep "0.$((RANDOM % 5 + 1))" # a random moment (fault injection, not synchronisation)
	kill -KILL "$DPID" 2>/dev/null
	start_daemon
done
wait "${PIDS[@]}" 2>/dev/null
PIDS=()
cat dids.* >ids.daemon
n=$(wc -l <ids.daemon)
wait_rows "$BGRUN_DB" "SELECT count(*) FROM events WHERE result != 'running'" "$n"
read -r missing extra < <(ids_check "$BGRUN_DB" ids.daemon)
kill -TERM "$DPID" 2>/dev/null
figure "daemon: killed $DAEMON_KILLS times during $n launches: $missing lost, $extra duplicated or unknown"
check "daemon killed: 0 lost, 0 duplicated" test "$missing:$extra" = "0:0"
unset BGRUN_SOCKET BGRUN_SINK

# The supervisor (bgrun-start, the command's parent) and the recorder
# (bgrun-record, its child) killed while the command runs: the finish
# (exit status) must still be recorded.
export BGRUN_DB=$W/sup.db
sup_lost=0 rec_lost=0 killed=0 missed=0
for k in $(seq "$SUP_KILLS"); do
	for who in supervisor recorder; do
		read -r id pid < <("$B" --print-id --print-pid -- sleep 2 | tr '\n' ' ')
		sup=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
		victim=$sup
		if [ $who = recorder ]; then
			# It may not be there yet: the supervisor starts it.
			victim=
			end=$((SECONDS + 5))
			until [ -n "$victim" ] || [ $SECONDS -ge $end ]; do
				victim=$(pgrep -P "$sup" -x bgrun-record | head -1)
				[ -n "$victim" ] || sleep 0.01
			done
		fi
		if [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null; then
			killed=$((killed + 1))
		elif ! kill -0 "$pid" 2>/dev/null; then
			# The command had ended before we got there (a loaded
			# machine): nothing was tried, said, not counted.
			missed=$((missed + 1))
		fi
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
		echo "$id $who" >>ids.sup
	done
done
# The commands have ended: give the survivors 5 s to write, then read
# what became of each.
end=$((SECONDS + 5))
until [ "$(sql "$BGRUN_DB" "SELECT count(*) FROM events WHERE exit_code IS NOT NULL")" = $((2 * SUP_KILLS)) ] ||
	[ $SECONDS -ge $end ]; do sleep 0.1; done
while read -r id who; do
	r=$(sql "$BGRUN_DB" "SELECT coalesce(exit_code, result) FROM events WHERE id = '$id'")
	if [ "$r" != 0 ]; then
		if [ $who = supervisor ]; then sup_lost=$((sup_lost + 1)); else rec_lost=$((rec_lost + 1)); fi
	fi
done <ids.sup
figure "supervisor killed: $SUP_KILLS times: $sup_lost finishes lost; recorder killed: $SUP_KILLS times: $rec_lost finishes lost ($killed kills in all; $missed missed: the command had ended before the kill)"
check "supervisor and recorder: each one found and killed (or its command already ended)" test "$((killed + missed)):$((killed > 0))" = "$((2 * SUP_KILLS)):1"
finding 2 "supervisor killed: every finish recorded" test "$sup_lost" = 0
finding 2 "recorder killed: every finish recorded" test "$rec_lost" = 0

# bgrun clone SIGKILLed at random moments: afterwards (--cleanup) nothing
# is left, every clone that made its temporary directory is recorded
# once (success, or lost), and every finished clone is whole.
export BGRUN_DB=$W/clone.db
hg init -q src
python3 "$FIX" tree src 0 >/dev/null 2>&1 || for i in $(seq 200); do echo "$i" >"src/f$i"; done
hg -R src commit -q -A -m one -d '0 0'
hg -R src debugcreatestreamclonebundle "$W/b.hg" >/dev/null
mkdir cl
# How long a whole clone takes here: the kills fall anywhere in 1.2 times that.
t=$(date +%s%N)
"$B" clone -q "$W/b.hg" cl/d0
span=$(( ($(date +%s%N) - t) / 1000000 * 12 / 10 + 1 ))
for k in $(seq "$CLONE_KILLS"); do
	"$B" clone -q "$W/b.hg" "cl/d$k" 2>/dev/null &
	c=$!
	ms=$((RANDOM % span))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))" # a random moment
	kill -KILL "$c" 2>/dev/null
	wait "$c" 2>/dev/null
done
"$B" clone --cleanup -q cl/x
left=$(find cl -maxdepth 1 -name '.*.clone-*' | wc -l)
done_n=$(find cl -maxdepth 1 -name 'd*' | wc -l)
succ=$(sql "$BGRUN_DB" "SELECT count(*) FROM events WHERE event = 'clone' AND result = 'success'")
lost=$(sql "$BGRUN_DB" "SELECT count(*) FROM events WHERE event = 'clone' AND result = 'lost'")
# Killed after their rename into place, before they recorded their end.
fin=$(sql "$BGRUN_DB" "SELECT count(*) FROM events WHERE event = 'clone' AND result = 'lost' AND json_extract(options, '\$.left') = 'finished'")
dups=$(sql "$BGRUN_DB" "SELECT count(*) - count(DISTINCT cwd) FROM events WHERE event = 'clone'")
bad_clones=0
for d in cl/d*; do
	[ -d "$d" ] || continue
	hg -R "$d" verify -q >/dev/null 2>&1 || bad_clones=$((bad_clones + 1))
done
early=$((CLONE_KILLS - (done_n - 1) - (lost - fin)))
figure "clone killed: $CLONE_KILLS times within 1.2 times a whole clone (${span} ms): $((done_n - 1)) had finished ($fin of them killed before they recorded it), $((lost - fin)) killed before they finished (each recorded lost by the cleanup), $early killed before they began (nothing written, nothing to record); $left temporaries or owner files left, $dups recorded twice, $bad_clones of the $done_n finished clones (one not killed) failing hg verify, $succ recorded success"
check "clone killed: no temporary or owner file left after --cleanup" test "$left" = 0
check "clone killed: each finished clone recorded once and whole" test "$((succ + fin)):$bad_clones" = "$done_n:0"
[ "$((succ + fin)):$bad_clones" = "$done_n:0" ] ||
	for d in cl/d*; do # which, to see why
		[ "$(sql "$BGRUN_DB" "SELECT count(*) FROM events WHERE event = 'clone' AND cwd = '$W/$d'")" = 1 ] ||
			echo "# not recorded once: $d"
	done
check "clone killed: no clone recorded twice" test "$dups" = 0

section "disk faults"
# What a user is told, and what becomes of the event, when the log cannot
# be written: full, read-only, corrupt, held by a stopped writer.
disk_case() { # NAME DB [SECONDS]: bgrun --print-id --wait -- true, 60 s at most
	local name=$1 db=$2 err
	err=$(BGRUN_DB=$db timeout "${3:-60}" "$B" --print-id --wait -- true 2>&1 >"$W/disk.id")
	DRC=$?
	DERR=$(printf '%s' "$err" | head -1)
	figure "disk: $name: exit $DRC, told: '${DERR:-nothing}'"
}
if mkdir -p full && mount -t tmpfs -o size=2m tmpfs full 2>/dev/null; then
	MOUNTS+=("$W/full")
	dd if=/dev/zero of=full/fill bs=64k 2>/dev/null
	disk_case "full tmpfs" "$W/full/ev.db"
	check "disk full: the command still runs" test "$DRC" = 0
	finding 1 "disk full: the user is told the event was not recorded" test -n "$DERR"
	mkdir -p ro && mount -t tmpfs -o size=4m tmpfs ro && MOUNTS+=("$W/ro")
	BGRUN_DB=$W/ro/ev.db "$B" --wait -- true
	mount -o remount,ro "$W/ro"
	disk_case "read-only file system" "$W/ro/ev.db"
	check "read-only: the command still runs" test "$DRC" = 0
	finding 1 "read-only: the user is told the event was not recorded" test -n "$DERR"
	q=$("$L" --db "$W/ro/ev.db" query 2>&1 | head -1)
	figure "disk: read-only: logsink query says: '$q'"
	finding 4 "read-only: logsink query reads the populated log" \
		test -n "$(printf '%s' "$q" | grep -v 'no events recorded yet')"
else
	echo "stress: full and read-only file systems skipped (no tmpfs mount: not root?)"
fi
BGRUN_DB=$W/corrupt.db "$B" --wait -- true
# Its pages in the file first: a close leaves a short WAL, from which
# SQLite would read them past the damage.
sqlite3 "$W/corrupt.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
head -c 4096 /dev/urandom | dd of="$W/corrupt.db" bs=1 seek=100 conv=notrunc 2>/dev/null
disk_case "corrupt database" "$W/corrupt.db"
check "corrupt: the command still runs" test "$DRC" = 0
finding 1 "corrupt: the user is told the event was not recorded" test -n "$DERR"
st=$("$L" --db "$W/corrupt.db" status 2>&1 | grep '^spool:')
figure "disk: corrupt database: logsink status says: '$st'"
check "corrupt: logsink status shows the event waiting in the spool" \
	test -n "$(printf '%s' "$st" | grep -E 'spool: +[1-9][0-9]* waiting')"
BGRUN_DB=$W/held.db "$B" --wait -- true
# flock -o: the lock is flock's own (its sleep does not inherit it); it
# holds it once it has started its command.
flock -o "$W/held.db-lock" sleep 60 &
holder=$!
disown "$holder"
PIDS+=("$holder")
end=$((SECONDS + 10))
until [ -n "$(pgrep -P "$holder")" ] || [ $SECONDS -ge $end ]; do sleep 0.02; done
kill -STOP "$holder"
# The lock's bound made short ($BGRUN_LOCK_TIMEOUT, default 10 s): a
# logged launch writes twice (start, finish), each waiting at most that.
BGRUN_LOCK_TIMEOUT=2 disk_case "lock held by a stopped writer (lock timeout 2 s)" "$W/held.db" 30
finding 3 "stopped writer: bgrun --wait returns (bounded wait)" test "$DRC" != 124
finding 3 "stopped writer: the user is told the event was not recorded" test -n "$DERR"
st=$("$L" --db "$W/held.db" status 2>&1 | grep '^spool:')
figure "disk: stopped writer: logsink status says: '$st'"
check "stopped writer: logsink status shows the event waiting in the spool" \
	test -n "$(printf '%s' "$st" | grep -E 'spool: +[1-9][0-9]* waiting')"
pkill -KILL -P "$holder" 2>/dev/null
kill -KILL "$holder" 2>/dev/null

section "bad inputs"
# Frames: random and mutated frames, each on a connection of its own, to a
# real daemon, which must answer a HELLO afterwards.
export BGRUN_DB=$W/frames.db
"$L" --db "$BGRUN_DB" serve --socket "$W/f/sink.sock" --detach >"$W/f.pid" 2>/dev/null
FPID=$(cat "$W/f.pid")
out=$(python3 - "$W/f/sink.sock" "$FRAMES" <<'EOF'
import os, random, socket, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(12)
def frame(body, ver=1, typ=2, seq=1):
    return struct.pack('>IBBI', len(body) + 6, ver, typ, seq) + body
answered = closed = 0
for i in range(n):
    k = i % 5
    if k == 0:
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 64)))
    elif k == 1:
        body = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 200)))
        data = frame(body, 1, rnd.choice([1, 2, 3, 4, 9]), rnd.getrandbits(32))
    elif k == 2:
        data = struct.pack('>I', rnd.choice([0, 1, 5, 0x7fffffff, 0xffffffff])) + b'x' * 8
    elif k == 3:
        tlv = b''.join(struct.pack('>HI', rnd.getrandbits(16), 8) + os.urandom(8) for _ in range(5))
        data = frame(tlv)
    else:
        data = frame(b'\x00\x01\x00\x00\x00\x20' + b'A' * 31)[:-rnd.randint(0, 10)]
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    try:
        got = s.recv(4096)
        answered += bool(got)
    except socket.timeout:
        pass
    closed += 1
    s.close()
print(n, answered, closed)
EOF
)
read -r fn fans fclosed <<<"$out"
alive=no
kill -0 "$FPID" 2>/dev/null && BGRUN_SOCKET=$W/f/sink.sock BGRUN_SINK=daemon "$B" --wait -- true && alive=yes
kill -TERM "$FPID" 2>/dev/null
figure "frames: ${fn:-0} bad frames: ${fans:-0} answered with an error, ${fclosed:-0} connections closed, daemon alive and serving: $alive"
check "frames: the daemon survives every one and serves after" test "$alive:${fn:-0}" = "yes:$FRAMES"

# Bundles: every broken variant of the clone tests, and random mutations
# of a real bundle (bytes changed, cut): exit 0 or 1 with one line, never
# a crash or a hang, nothing left, nothing written outside DEST.
mkdir bb
# A small repository (every kind of name the store encodes, little data):
# the broken variants are made of its bundles.
hg init -q small
python3 "$FIX" tree small -1 >/dev/null 2>&1 || echo x >small/x
hg -R small commit -q -A -m one -d '0 0'
hg -R small debugcreatestreamclonebundle "$W/s.hg" >/dev/null
hg -R small bundle -q -a -t 'none-v2;stream=v2' "$W/b2.hg"
python3 "$FIX" bad "$W/s.hg" "$W/bb/v1" >/dev/null 2>&1
python3 "$FIX" bad2 "$W/b2.hg" "$W/bb/v2" >/dev/null 2>&1
python3 - "$W/s.hg" "$W/b2.hg" "$W/bb/mut" "$MUTANTS" <<'EOF'
import os, random, sys
a, b, out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
os.makedirs(out, exist_ok=True)
rnd = random.Random(5)
src = [open(a, 'rb').read(), open(b, 'rb').read()]
for i in range(n):
    d = bytearray(src[i % 2])
    how = rnd.randrange(3)
    if how == 0:
        for _ in range(rnd.randint(1, 8)):
            d[rnd.randrange(min(len(d), 4096))] = rnd.getrandbits(8)
    elif how == 1:
        d = d[:rnd.randrange(len(d))]
    else:
        p = rnd.randrange(min(len(d), 2048))
        d[p:p] = os.urandom(rnd.randint(1, 16))
    open(os.path.join(out, 'm%04d.hg' % i), 'wb').write(d)
EOF
touch "$W/before-bundles"
nb=0 crash=0 multi=0 leftb=0 okb=0 refused=0
k=0
for f in bb/v1/*.hg bb/v2/*.hg bb/mut/*.hg; do
	[ -e "$f" ] || continue
	k=$((k + 1))
	case $f in bb/mut/*) ;; *) [ $((k % BAD_EVERY)) = 0 ] || continue ;; esac
	nb=$((nb + 1))
	err=$(timeout 60 "$B" clone --no-log "$f" bd 2>&1 >/dev/null)
	rc=$?
	case $rc in
	0) okb=$((okb + 1)) ;;
	1) refused=$((refused + 1))
	   [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || multi=$((multi + 1)) ;;
	*) crash=$((crash + 1)); echo "# $f: exit $rc: $err" ;;
	esac
	[ -n "$(find . -maxdepth 1 -name '.bd.clone-*')" ] && leftb=$((leftb + 1))
	rm -rf bd ./.bd.clone-*
done
outside=$(find "$W" -newer "$W/before-bundles" -name 'escape*' | wc -l)
figure "bundles: $nb bad bundles: $refused refused in one line, $okb applied (mutations of file bytes), $crash crashes or hangs, $multi refusals not in one line, $leftb left a temporary, $outside files outside DEST"
check "bundles: no crash, hang, leftover or escape; one line each" test "$crash:$multi:$leftb:$outside" = "0:0:0:0"

# The command line: random combinations of options and bad values; each
# run ends (20 s) with a defined exit code and no crash.
export BGRUN_DB=$W/cli.db
opts=(--wait --no-log --print-id --print-pid -a -s --clear-env --no-ensurestart
      "--timeout=" "--timeout=abc" "--timeout=-1" "--timeout=1ms" "--kill-after=x"
      "--tag=" "--tag=$(printf '\x1b[31m')" "-E" "-E=" "-E X" "-u" "-u=" "--env=A=B"
      "-o /dev/null" "-e /dev/full" "-o /nonexistent/x" "-C /nonexistent" "-C /"
      "--db=$W/cli2.db" "--bogus" "-" "--" "-i /dev/null" "--stdin=/nonexistent")
cmds=("true" "false" "/nonexistent" "/etc/passwd" "" "sh -c exit\ 3")
ncli=0 cli_bad=0
for i in $(seq "$CLI_RUNS"); do
	args=()
	for j in $(seq $((RANDOM % 4))); do
		read -r -a w <<<"${opts[RANDOM % ${#opts[@]}]}"
		args+=("${w[@]}")
	done
	read -r -a c <<<"${cmds[RANDOM % ${#cmds[@]}]}"
	t=$SECONDS
	timeout 20 "$B" "${args[@]}" -- "${c[@]}" >/dev/null 2>"$W/cli.err" </dev/null
	rc=$?
	ncli=$((ncli + 1))
	# 124 and 137 are --timeout's (bgrun(1)), unless timeout(1) said it.
	case $rc in
	0|1|2|3|125|126|127) ;;
	124|137) [ $((SECONDS - t)) -lt 19 ] ||
		{ cli_bad=$((cli_bad + 1)); echo "# bgrun ${args[*]} -- ${c[*]}: hung (20 s)"; } ;;
	*) cli_bad=$((cli_bad + 1)); echo "# bgrun ${args[*]} -- ${c[*]}: exit $rc: $(head -1 "$W/cli.err")" ;;
	esac
done
for v in "query --since nonsense" "query --limit -5" "show" "show zzzz" "prune" \
	 "prune --older-than x" "stats --since" "bogus" "query --json --csv" "send"; do
	read -r -a w <<<"$v"
	timeout 20 "$L" --db "$W/cli.db" "${w[@]}" >/dev/null 2>&1 </dev/null
	rc=$?
	ncli=$((ncli + 1))
	case $rc in 0|1|2) ;; *) cli_bad=$((cli_bad + 1)); echo "# logsink $v: exit $rc" ;; esac
done
figure "command line: $ncli runs with random options and bad values: $cli_bad crashes, hangs or undefined exit codes"
check "command line: every run ends with a defined exit code" test "$cli_bad" = 0

echo "stress ($mode): $((SECONDS - t0)) s"
echo "Ok:                 $ok"
echo "Expected Fail:      $xfail"
echo "Fail:               $bad"
echo "Skipped:            0"
[ "$bad" -eq 0 ]
