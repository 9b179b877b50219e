#!/bin/bash
# SPDX-License-Identifier: MIT
# test-clone-debris.sh: what a clone killed with SIGKILL leaves, and who removes it: the next clone into the same directory, or `bgrun clone --cleanup`; running clones are left alone.
#
# Usage: test-clone-debris.sh BGRUN (meson passes it). A clone reads its
# bundle from a FIFO kept open, so it is caught mid-way for certain: the
# test waits (polling, with a deadline) for its temporary directory, then
# kills it. Exit 1 if a check failed, 77 if hg or sqlite3 is missing.

set -u

BGRUN=${1:?usage: test-clone-debris.sh BGRUN}
CLONE_NEEDS="hg sqlite3"
. "$(dirname "$0")/clone-lib.sh"

export BGRUN_DB=$TMP/events.db
sql() { sqlite3 -batch -noheader -cmd '.timeout 10000' "$BGRUN_DB" "$1"; }
# temps DIR: the temporary directories of clones in DIR, by name.
temps() { find "$1" -maxdepth 1 -type d -name '.*.clone-*' -printf '%f\n' | sort; }
# owners DIR: the owner files of clones in DIR, by name.
owners() { find "$1" -maxdepth 1 -type f -name '.*.clone-*.owner' -printf '%f\n' | sort; }

# A repository big enough that 300 kB of its bundle is not the whole.
hg init -q src
for i in $(seq 40); do head -c 20000 /dev/urandom >"src/f$i"; done
hg -R src commit -q -A -m one -d '0 0'
hg -R src debugcreatestreamclonebundle "$TMP/b.hg" >/dev/null

# started DIR DEST: starts `bgrun clone - DIR/DEST` on a FIFO fed the
# start of the bundle (fd 3 stays open: it waits for the rest), and waits
# for its temporary directory. Sets PID.
started() {
	local dir=$1 dest=$2 deadline=$((SECONDS + 30))
	rm -f "$TMP/fifo"
	mkfifo "$TMP/fifo"
	"$BGRUN" clone - "$dir/$dest" <"$TMP/fifo" >/dev/null 2>"$TMP/started.err" &
	PID=$!
	KILL_PIDS+=("$PID")
	exec 3>"$TMP/fifo"
	head -c 300000 "$TMP/b.hg" >&3
	until [ -n "$(temps "$dir")" ] &&
		[ -s "$dir/$(temps "$dir" | head -1).owner" ] ||
		[ $SECONDS -ge $deadline ]; do
		sleep 0.02
	done
}
# killed DIR DEST: a clone to DIR/DEST killed with SIGKILL mid-way.
killed() {
	started "$1" "$2"
	kill -KILL "$PID"
	wait "$PID" 2>/dev/null
	exec 3>&-
}

mkdir p
killed p one
eq "a killed clone leaves its temporary directory" "$(temps p | wc -l)" 1
T1=$(temps p)
eq "its owner file is beside it" "$(owners p)" "$T1.owner"
check "the owner file names the clone's process" grep -q "^pid $PID$" "p/$T1.owner"
ID1=$(sed -n 's/^id //p' "p/$T1.owner")
check "the owner file names the boot" \
	grep -qx "boot $(cat /proc/sys/kernel/random/boot_id)" "p/$T1.owner"
check "the killed clone recorded nothing itself (no log yet)" test ! -e "$BGRUN_DB"

# The next clone into the same directory (another DEST) removes it.
capture "$BGRUN" clone "$TMP/b.hg" p/two
eq "the next clone: exit 0" "$RC" 0
eq "the next clone: says what it removed" "$ERR" \
	"bgrun: clone: removed p/$T1, left by a killed clone (pid $PID)"
eq "the next clone: the temporary directory is gone" "$(temps p)" ""
eq "the next clone: so is the owner file, and its own" "$(owners p)" ""
check "the next clone: its own clone is there" test -d p/two/.hg/store
eq "the next clone: nothing of ours in DEST" "$(find p/two -maxdepth 1 -name '.*' -printf '%f\n')" ".hg"
eq "the killed clone is recorded, under its id, as lost" \
	"$(sql "SELECT event, result, pid, cwd, json_extract(options, '\$.removed_by') FROM events WHERE id = '$ID1'")" \
	"clone|lost|$PID|$TMP/p/one|clone"

# --cleanup: the same without a clone, for DEST's directory or here.
killed p three
T3=$(temps p)
ID3=$(sed -n 's/^id //p' "p/$T3.owner")
capture "$BGRUN" clone --cleanup p/three
eq "--cleanup DEST: exit 0" "$RC" 0
eq "--cleanup DEST: says what it removed" "$ERR" \
	"bgrun: clone: removed p/$T3, left by a killed clone (pid $PID)"
eq "--cleanup DEST: the temporary directory is gone" "$(temps p)" ""
eq "--cleanup DEST: recorded" \
	"$(sql "SELECT result, json_extract(options, '\$.removed_by') FROM events WHERE id = '$ID3'")" \
	"lost|cleanup"
killed "$TMP" four
capture "$BGRUN" clone --cleanup -q
eq "--cleanup (here), -q: exit 0, silent" "$RC:$ERR" "0:"
eq "--cleanup (here): removed" "$(temps "$TMP")" ""
capture "$BGRUN" clone --cleanup -v p
eq "--cleanup with nothing to do: exit 0, -v says so" "$RC:$ERR" \
	"0:bgrun: clone: --cleanup: 0 killed clones found"
capture "$BGRUN" clone --cleanup "$TMP/no/such/dir/x"
eq "--cleanup in a missing directory: exit 1" "$RC" 1
check "--cleanup in a missing directory: one line" test "$ERR_LINES" = 1
capture "$BGRUN" clone --cleanup a b
expect_usage "--cleanup with two operands" "bgrun: clone: too many arguments"

# A running clone's temporary directory stays, and the clone ends well.
mkdir q
started q live
TL=$(temps q)
capture "$BGRUN" clone --cleanup q/x
eq "a running clone: --cleanup leaves it" "$RC:$(temps q)" "0:$TL"
capture "$BGRUN" clone "$TMP/b.hg" q/other
eq "a running clone: a clone beside it leaves it" "$RC:$(temps q)" "0:$TL"
tail -c +300001 "$TMP/b.hg" >&3
exec 3>&-
wait "$PID"
eq "a running clone: it finishes (exit 0)" "$?" 0
KILL_PIDS=()
check "a running clone: its DEST is complete" test -s q/live/.hg/store/00changelog.i
eq "a running clone: nothing left" "$(temps q)$(owners q)" ""

# Forged or foreign owner files: another boot's owner is gone; a live
# process's (this shell's) is not; a temporary without an owner file, a
# misnamed one, or another user's, is not ours to judge; an empty owner
# file (its clone killed before it wrote it) goes, unrecorded.
forge() { # DIR NAME BOOT PID [PHASE]
	mkdir -p "$1/$2/.hg/store"
	printf 'bgrun clone temporary directory\npid %s\nstart \nboot %s\nid forged:%s\nstarted 0\ndest x\n%s' \
		"$4" "$3" "$2" "${5:+$5
}" >"$1/$2.owner"
}
GONE=00000000-0000-0000-0000-000000000000
mkdir r
forge r .a.clone-00000a $GONE $$
forge r .b.clone-00000b "$(cat /proc/sys/kernel/random/boot_id)" $$
mkdir -p r/.c.clone-00000c/.hg
forge r .d.clone-zzzzzz $GONE $$
mkdir -p r/.f.clone-00000f
: >r/.f.clone-00000f.owner
capture "$BGRUN" clone --cleanup -q r/x
eq "forged: another boot's removed, a live pid's, an ownerless one and a misnamed one kept" \
	"$(temps r | tr '\n' ' ')" ".b.clone-00000b .c.clone-00000c .d.clone-zzzzzz .f.clone-00000f "
eq "forged: of the owner files, the removed one's and the empty one are gone" \
	"$(owners r | tr '\n' ' ')" ".b.clone-00000b.owner .d.clone-zzzzzz.owner "
eq "forged: the empty one is not recorded" \
	"$(sql "SELECT count(*) FROM events WHERE json_extract(options, '\$.temporary') = 'r/.f.clone-00000f'")" 0
eq "forged: the removed one is recorded, with a new id for one the store refuses" \
	"$(sql "SELECT count(*), json_extract(options, '\$.left') FROM events WHERE json_extract(options, '\$.temporary') = 'r/.a.clone-00000a'")" "1|temporary"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	forge r .e.clone-00000e $GONE $$
	chown -R nobody r/.e.clone-00000e r/.e.clone-00000e.owner
	capture "$BGRUN" clone --cleanup -q r/x
	check "forged: another user's is kept" test -d r/.e.clone-00000e
	check "forged: another user's owner file is kept" test -e r/.e.clone-00000e.owner
fi

# An owner file without its temporary: a clone killed after its rename
# into place ("renaming"), after a rename that failed ("failed"), or
# before it made its temporary (no phase).
mkdir s
forge s .g.clone-0000a1 $GONE $$ renaming
forge s .h.clone-0000a2 $GONE $$
forge s .i.clone-0000a3 $GONE $$ "renaming
failed"
rm -rf s/.g.clone-0000a1 s/.h.clone-0000a2 s/.i.clone-0000a3
capture "$BGRUN" clone --cleanup s/x
eq "owner file only: exit 0, each said" "$RC:$(sort <<<"$ERR")" "0:bgrun: clone: x: a clone (pid $$) finished it but was killed before it recorded its end
bgrun: clone: x: a clone (pid $$) was killed before it recorded its end; it left nothing
bgrun: clone: x: a clone (pid $$) was killed before it recorded its end; it left nothing"
eq "owner file only: each taken" "$(owners s)" ""
eq "owner file only: recorded lost, with what each had reached" \
	"$(sql "SELECT json_extract(options, '\$.temporary'), result, json_extract(options, '\$.left') FROM events WHERE json_extract(options, '\$.temporary') LIKE 's/.%' ORDER BY 1")" \
	"s/.g.clone-0000a1|lost|finished
s/.h.clone-0000a2|lost|nothing
s/.i.clone-0000a3|lost|nothing"

# A clone killed after its rename into place, while it waits for the
# log's lock to record its end (held here): its repository is whole, and
# the cleanup records it (before, nothing said it had ever run).
mkdir u
exec 4>>"$BGRUN_DB-lock"
flock -n 4 || echo "not ok - cannot take the log's lock"
BGRUN_LOCK_TIMEOUT=120 "$BGRUN" clone -q "$TMP/b.hg" u/done >/dev/null 2>&1 &
PID=$!
KILL_PIDS+=("$PID")
deadline=$((SECONDS + 30))
until [ -s u/done/.hg/store/00changelog.i ] || [ $SECONDS -ge $deadline ]; do
	sleep 0.02
done
kill -KILL "$PID"
wait "$PID" 2>/dev/null
exec 4>&-
KILL_PIDS=()
check "killed after its rename: DEST is whole" hg -R u/done verify -q
eq "killed after its rename: its owner file says so" \
	"$(owners u | wc -l):$(tail -1 "u/$(owners u | head -1)" 2>/dev/null)" "1:renaming"
ID6=$(sed -n 's/^id //p' "u/$(owners u | head -1)")
capture "$BGRUN" clone --cleanup u/x
eq "killed after its rename: --cleanup says it finished" "$RC:$ERR" \
	"0:bgrun: clone: u/done: a clone (pid $PID) finished it but was killed before it recorded its end"
eq "killed after its rename: recorded once, lost, finished" \
	"$(sql "SELECT count(*), result, json_extract(options, '\$.left'), cwd FROM events WHERE id = '$ID6'")" \
	"1|lost|finished|$TMP/u/done"
eq "killed after its rename: nothing left" "$(temps u)$(owners u)" ""

# A sweeper killed while it records what it found (waiting for the log's
# lock, held here) leaves the owner file and the temporary for the next
# one, which records that clone once.
killed p seven
T7=$(temps p)
ID7=$(sed -n 's/^id //p' "p/$T7.owner")
exec 4>>"$BGRUN_DB-lock"
flock -n 4 || echo "not ok - cannot take the log's lock"
# next_ticket: the lock file's queue counter (src/unix/filelock.c), which
# a writer moves on when it starts waiting for the lock.
next_ticket() { od -An -tu4 -N4 "$BGRUN_DB-lock" | tr -d ' '; }
T0=$(next_ticket)
BGRUN_LOCK_TIMEOUT=120 "$BGRUN" clone --cleanup -q p/seven 2>/dev/null &
SWEEPER=$!
KILL_PIDS+=("$SWEEPER")
deadline=$((SECONDS + 30))
until [ "$(next_ticket)" != "$T0" ] || [ $SECONDS -ge $deadline ]; do
	sleep 0.02
done
check "a sweeper killed while recording: it was waiting for the log" test "$(next_ticket)" != "$T0"
kill -KILL "$SWEEPER"
wait "$SWEEPER" 2>/dev/null
exec 4>&-
KILL_PIDS=()
eq "a sweeper killed while recording: the owner file and temporary stay" \
	"$(owners p):$(temps p)" "$T7.owner:$T7"
capture "$BGRUN" clone --cleanup -q p/seven
eq "a sweeper killed while recording: the next one takes them" "$RC:$(owners p)$(temps p)" "0:"
eq "a sweeper killed while recording: the clone is recorded once" \
	"$(sql "SELECT count(*), result FROM events WHERE id = '$ID7'")" "1|lost"

# --no-log: removed and said, not recorded.
killed p five
T5=$(temps p)
ID5=$(sed -n 's/^id //p' "p/$T5.owner")
capture "$BGRUN" clone --no-log --cleanup p/five
eq "--no-log --cleanup: removed" "$RC:$(temps p)" "0:"
eq "--no-log --cleanup: not recorded" "$(sql "SELECT count(*) FROM events WHERE id = '$ID5'")" 0

exit $FAILED
