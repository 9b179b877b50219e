# SPDX-License-Identifier: MIT
# fish completion for bgrun: its options, its verbs (clone, and those
# 'bgrun --help' lists), the command to launch, and the ids of running
# jobs for the verbs that take them (once 'bgrun ps' exists).

# The verbs: clone, and the ones 'bgrun --help' lists under "Verbs".
function __bgrun_verbs
    set -l verbs (bgrun --help 2>/dev/null | awk '
        /^Verbs/ { on = 1; next }
        on && /^  [a-z][a-z-]* / { n = $1; $1 = ""; sub(/^ +/, ""); print n "\t" $0; next }
        on { on = 0 }')
    string match -q -r '^clone\t' -- $verbs
    or set -a verbs "clone"\t"apply a Mercurial stream clone bundle"
    printf '%s\n' $verbs
end

# True before the command line has a verb or a command.
function __bgrun_no_command
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for t in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $t
            case -- --
                return 1
            case -o -e -i -C -E -u --stdout --stderr --stdin --cwd --env \
                --unset --tag --timeout --kill-after --db
                set skip 1
            case '-*'
                continue
            case '*'
                return 1
        end
    end
    return 0
end

# True when the first word is the verb $argv[1].
function __bgrun_verb_is
    set -l tokens (commandline -opc)
    test (count $tokens) -ge 2; and test "$tokens[2]" = "$argv[1]"
end

# The short ids (the ID column) of the running jobs; nothing is run
# unless 'ps' is a verb.
# TODO: a 'bgrun ps --ids' would spare cutting them from the JSON.
function __bgrun_job_ids
    __bgrun_verbs | string match -q -r '^ps\t'; or return
    bgrun ps --json 2>/dev/null | sed -n 's/.*"id" *: *"[^"]*\([^"]\{8\}\)".*/\1/p'
end

# True when the first word is not a verb: the command line launches.
function __bgrun_launching
    set -l tokens (commandline -opc)
    test (count $tokens) -ge 2; or return 0
    not contains -- $tokens[2] (__bgrun_verbs | string replace -r '\t.*' '')
end

complete -c bgrun -f
complete -c bgrun -n __bgrun_no_command -a '(__bgrun_verbs)'
complete -c bgrun -n __bgrun_no_command -a '(__fish_complete_subcommand)'
complete -c bgrun -n 'not __bgrun_no_command; and __bgrun_launching' -a '(__fish_complete_subcommand)'

# Launching.
set -l L '__bgrun_no_command'
complete -c bgrun -n $L -s o -l stdout -r -F -d "Write the command's stdout to FILE"
complete -c bgrun -n $L -s e -l stderr -r -F -d 'Write its stderr to FILE'
complete -c bgrun -n $L -s a -l append -d 'Append to the output files'
complete -c bgrun -n $L -s i -l stdin -r -F -d 'Read stdin from FILE'
complete -c bgrun -n $L -s C -l cwd -x -a '(__fish_complete_directories)' -d 'Run the command in DIR'
complete -c bgrun -n $L -s E -l env -x -a '(set -n | string replace -r \'$\' =)' -d 'Set a variable'
complete -c bgrun -n $L -s u -l unset -x -a '(set -n)' -d 'Remove a variable'
complete -c bgrun -n $L -l clear-env -d 'Start from an empty environment'
complete -c bgrun -n $L -s s -l shell -d 'COMMAND is a /bin/sh script'
complete -c bgrun -n $L -s w -l wait -d "Wait, exit with the command's status"
complete -c bgrun -n $L -l no-ensurestart -d 'Queue the launch, then wait for its outcome'
complete -c bgrun -n $L -l print-pid -d "Print the command's pid"
complete -c bgrun -n $L -l no-log -d 'Launch the command alone, record nothing'
complete -c bgrun -n $L -l tag -x -d 'Record TEXT with the event'
complete -c bgrun -n $L -l timeout -x -a '10s 5m 1h' -d 'SIGTERM the command after DUR'
complete -c bgrun -n $L -l kill-after -x -a '10s 5m 1h' -d 'Then SIGKILL it DUR later'
complete -c bgrun -n $L -l print-id -d 'Print the event id'
complete -c bgrun -n $L -l db -r -F -d 'The event log database'
complete -c bgrun -n $L -l strict-log -d 'Do not launch when the log cannot be written'
complete -c bgrun -n $L -l on-exit -x -d 'Run the sh script CMD when the job ends'
complete -c bgrun -n $L -l no-on-exit -d 'Not the configuration\'s on-exit commands'
complete -c bgrun -n $L -l no-output -d 'Do not keep the output'
complete -c bgrun -n $L -l split-output -d 'Keep stdout and stderr apart'
complete -c bgrun -n $L -l max-output -r -d 'Keep at most the last SIZE bytes'
complete -c bgrun -n $L -l no-keep-env -d "Do not keep the command's environment for restart"
complete -c bgrun -n $L -s h -l help -d 'Display the help and exit'
complete -c bgrun -n $L -l version -d 'Output version information and exit'

# bgrun clone.
set -l C '__bgrun_verb_is clone'
complete -c bgrun -n $C -F
complete -c bgrun -n $C -s v -l verbose -d 'Say what happens'
complete -c bgrun -n $C -s q -l quiet -d 'No summary line'
complete -c bgrun -n $C -l close-threads -x -d 'Threads closing files in the background'
complete -c bgrun -n $C -l close-threshold -x -d 'Use them from N files on'
complete -c bgrun -n $C -l write-threads -x -d 'Threads creating and writing the files'
complete -c bgrun -n $C -l chunk-size -x -d 'Bundle read and file write size'
complete -c bgrun -n $C -l copy-file-range -d 'Copy file bytes in the kernel'
complete -c bgrun -n $C -l hook -x -d 'Shell command run in DEST after a successful clone'
complete -c bgrun -n $C -l config -r -F -d 'hgrc-like file with post-clone hooks'
complete -c bgrun -n $C -l db -r -F -d 'The event log'
complete -c bgrun -n $C -l no-log -d 'Record nothing'
complete -c bgrun -n $C -s U -l update -d "Run 'hg update' in DEST"
complete -c bgrun -n $C -l wait -d 'Wait for the post-clone hooks to finish'
complete -c bgrun -n $C -l timeout -x -d 'URL: give up after SECONDS without data'
complete -c bgrun -n $C -l insecure -d "URL: do not verify the server's certificate"
complete -c bgrun -n $C -l cacert -r -F -d 'URL: the CA certificates to verify it with'
complete -c bgrun -n $C -l no-clonebundles -d "URL: ignore the server's clonebundles"
complete -c bgrun -n $C -l cleanup -d 'Only remove what killed clones left'
complete -c bgrun -n $C -s h -l help -d 'Display the help and exit'

# The verbs that take job ids.
for v in kill wait restart show logs
    complete -c bgrun -n "__bgrun_verb_is $v" -x -a '(__bgrun_job_ids)'
end
