# SPDX-License-Identifier: MIT
# fish completion for logsink: its commands, each command's options, and
# the ids of recent events for show.

function __logsink_ids
    logsink query --json --limit 50 2>/dev/null | sed -n 's/.*"id" *: *"[^"]*\([^"]\{8\}\)".*/\1/p'
end

set -l cmds query ls show stats prune mark-lost status pg-init serve send
complete -c logsink -f
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a query -d 'List events, newest first'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a ls -d 'List events, newest first'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a show -d 'Everything about one event'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a stats -d 'Runs, failures and durations per command'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a prune -d 'Delete old events'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a mark-lost -d 'Record vanished running events as lost'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a status -d 'Where the log is, whether it can be written'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a pg-init -d 'Create the fleet table in PostgreSQL'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a serve -d 'Run the sink daemon'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -a send -d 'Record one event'
complete -c logsink -n "not __fish_seen_subcommand_from $cmds" -l version -d 'Output version information and exit'
complete -c logsink -l db -r -F -d 'The event log'
complete -c logsink -s h -l help -d 'Display the help and exit'

# The filters of query and stats.
set -l F '__fish_seen_subcommand_from query ls stats'
complete -c logsink -n $F -l since -x -a 'now today yesterday 1h 1d 1w' -d 'Events at or after TIME'
complete -c logsink -n $F -l until -x -a 'now today yesterday 1h 1d 1w' -d 'Events before TIME'
complete -c logsink -n $F -l failed -d 'Events that did not succeed'
complete -c logsink -n $F -l result -x -a 'running success failed signaled timeout spawn_failed lost' -d 'Events with result R'
complete -c logsink -n $F -l cmd -x -d 'Commands matching GLOB'
complete -c logsink -n $F -l tag -x -d 'Events recorded with bgrun --tag'
complete -c logsink -n $F -l cwd -x -a '(__fish_complete_directories)' -d 'Commands run in DIR'
complete -c logsink -n $F -l source -x -a 'bgrun hg logsink clone-hook' -d 'Events of source S'
complete -c logsink -n $F -l event -x -a 'commandfinish command commandexception' -d 'Events named E'
complete -c logsink -n $F -l host -x -a '(__fish_print_hostnames)' -d 'Events of host NAME'
complete -c logsink -n $F -l limit -x -d 'At most N events (rows)'
complete -c logsink -n $F -l table -d 'An aligned table'
complete -c logsink -n $F -l json -d 'One JSON object per line'
complete -c logsink -n $F -l csv -d 'CSV with a header line'
complete -c logsink -n '__fish_seen_subcommand_from query ls' -l id -x -d 'Events whose id contains PART'
set -l S '__fish_seen_subcommand_from stats'
complete -c logsink -n $S -l by -x -a 'command argv0 tag host day' -d 'One row per KEY'
complete -c logsink -n $S -l sort -x -a 'count failures p50 p95 max' -d 'The order of the rows'
complete -c logsink -n $S -l plot -r -F -d "Plot each run's duration over time (PNG)"

complete -c logsink -n '__fish_seen_subcommand_from show' -l json -d 'The event as one JSON object'
complete -c logsink -n '__fish_seen_subcommand_from show' -x -a '(__logsink_ids)'

set -l P '__fish_seen_subcommand_from prune'
complete -c logsink -n $P -l older-than -x -a '1d 1w 30d' -d 'How old an event must be to go'
complete -c logsink -n $P -l keep -x -d 'Keep the N newest events of each command'
complete -c logsink -n $P -s n -l dry-run -d 'Say what would go, change nothing'

set -l D '__fish_seen_subcommand_from serve'
complete -c logsink -n $D -l socket -r -F -d 'Where to listen'
complete -c logsink -n $D -l foreground -d 'Stay in the foreground'
complete -c logsink -n $D -l detach -d 'Run in the background'
complete -c logsink -n $D -l log -r -F -d 'Append messages to FILE'
complete -c logsink -n $D -l allow-root -d 'Also take events from root'
complete -c logsink -n $D -l max-connections -x -d 'At most N clients at once'
complete -c logsink -n $D -l max-pending -x -d 'Stop reading a client with N events unacked'
complete -c logsink -n $D -l queue-max -x -d 'Stop reading everyone with N events queued'
complete -c logsink -n $D -l idle-timeout -x -d 'Close a silent connection after DUR'
complete -c logsink -n $D -l frame-timeout -x -d 'Close a connection whose frame is late'
complete -c logsink -n $D -l max-per-process -x -d 'At most N connections of one process'
complete -c logsink -n $D -l reserve -x -d 'Keep N connections for processes that hold none'
complete -c logsink -n $D -l exit-idle -x -d 'Exit once nobody connected for DUR'
complete -c logsink -n $D -l batch-max -x -d 'Events per transaction at most'
complete -c logsink -n $D -l commit-delay -x -d 'Let a transaction wait DUR for more events'
complete -c logsink -n $D -l ready-fd -x -d 'Write READY PID to descriptor N'
complete -c logsink -n $D -l forward -x -d 'Ship every event to PostgreSQL'
complete -c logsink -n $D -l forward-host -x -d 'The host recorded in PostgreSQL'
complete -c logsink -n $D -l forward-batch -x -d 'Events per PostgreSQL transaction'
complete -c logsink -n $D -l forward-connections -x -d 'Batches in flight, a connection each'
complete -c logsink -n $D -l forward-yield -x -d 'Wait DUR at most for pauses of the writer'
complete -c logsink -n $D -l stop -d 'Stop the daemon serving the socket'

set -l E '__fish_seen_subcommand_from send'
complete -c logsink -n $E -l event -x -d "The event's name"
complete -c logsink -n $E -l source -x -d 'Where it comes from'
complete -c logsink -n $E -l message -x -d 'A message'
complete -c logsink -n $E -l field -x -d 'NAME=VALUE: any field of the event'
complete -c logsink -n $E -l from-hg-env -d "From Mercurial's logtoprocess environment"
complete -c logsink -n $E -l socket -r -F -d "The daemon's socket"
complete -c logsink -n $E -l print-id -d "Print the event's id"
