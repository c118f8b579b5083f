# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_rdma_cli_global_optspecs
    string join \n t/terse j/json w/wait= system session address= h/help V/version
end

function __fish_rdma_cli_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_rdma_cli_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_rdma_cli_using_subcommand
    set -l cmd (__fish_rdma_cli_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "show" -d 'The host\'s state: every setting by key path, or the whole document (--yaml, --json) that apply takes'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "set" -d 'Set settings by their key paths, as show prints them (roce[mlx5_0/1].tos 106): applied as a state document of their own, verified, rolled back on failure'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "status" -d 'Devices and ports, as `nmcli device status` lists devices'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "diff" -d 'What `apply FILE` would change; exit 0 when nothing, 10 when something'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "apply" -d 'Apply a state document: everything or nothing, verified, rolled back on failure'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "confirm" -d 'Confirm a pending change (default: the only one)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "rollback" -d 'Roll back a pending change (default: the only one)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "link" -d 'Soft RDMA links (rxe, siw)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "roce" -d 'RoCE default mode or type of service of a port'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "ipoib" -d 'IPoIB interfaces and their P_Key children'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "ip" -d 'IP settings of an RDMA netdev through the host\'s IP manager, with nmcli\'s keys'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "naming" -d 'Persistent names of RDMA devices and IPoIB interfaces (udev rules)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "modules" -d 'rdma-core\'s module lists: SET MODULE on|off, or apply SET (load them now)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "memlock" -d 'The memlock limits of group rdma: SOFT HARD (KiB or unlimited), or reset'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "nfs" -d 'NFS over RDMA: on|off [port N]'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "sm" -d 'The subnet manager (opensm)'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "vf-guid" -d 'SR-IOV VF GUIDs of an InfiniBand PF: set DEVICE VF NODE_GUID PORT_GUID, reset DEVICE VF'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "health" -d 'Node health check (NHC style): exit 0 when every expectation holds, 11 and one `ERROR:` line per failed expectation otherwise. Expectations: the health section of FILE, else the options, else the state directory\'s health sections'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "test-link" -d 'Test the link from a port to a peer: RDMA (latency and bandwidth through rdma_cm), ICMP over the port\'s netdev, or on InfiniBand ibping to a LID; exit 7 when it ran and did not pass'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "responder" -d 'The link-test responder, which peers test against: on, off, or its status'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "qos" -d 'QoS profile of a RoCE port (lossless RoCE): show it, or change the settings named as KEY VALUE pairs, the others kept: trust pcp|dscp, pfc 3,4|none, ets BW0,..,BW7/TC0,..,TC7, dscp 26:3,48:6|none, traffic-class 0-255, ecn 3|none'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "port-type" -d 'Port type of a VPI adapter\'s port: mlx4 switches now, mlx5 at the next boot'
complete -c rdma-cli -n "__fish_rdma_cli_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -l yaml -d 'Print the state document as YAML'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand show" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -l timeout -d 'Keep the change pending for SECONDS: it is rolled back unless confirmed' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -l dry-run -d 'Only say what would change, as diff does (exit 0 when nothing, 10 when something)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand set" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand status" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand diff" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -l timeout -d 'Keep the change pending for SECONDS: it is rolled back unless confirmed' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand apply" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand confirm" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand rollback" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -f -a "add" -d 'Add a soft link: NAME type rxe|siw netdev DEV'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -f -a "delete" -d 'Delete a soft link'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and not __fish_seen_subcommand_from add delete help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from add" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from delete" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a soft link: NAME type rxe|siw netdev DEV'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete a soft link'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand link; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand roce" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -f -a "add" -d 'Add a P_Key child: PARENT pkey 0xNNNN [name NAME] [mode M] [mtu N]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -f -a "delete" -d 'Delete a P_Key child'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -f -a "set" -d 'Change an interface: [mode datagram|connected] [mtu N] [umcast on|off]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and not __fish_seen_subcommand_from add delete set help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from add" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from delete" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from set" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a P_Key child: PARENT pkey 0xNNNN [name NAME] [mode M] [mtu N]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete a P_Key child'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from help" -f -a "set" -d 'Change an interface: [mode datagram|connected] [mtu N] [umcast on|off]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ipoib; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -l timeout -d 'Leave the change pending for SECONDS: rolled back unless confirmed' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand ip" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -f -a "policy" -d 'The host\'s RDMA device naming policy'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -f -a "fixed" -d 'A fixed name for an RDMA device (NAME_FIXED), by node GUID'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -f -a "unfix" -d 'Forget a device\'s fixed name'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -f -a "ipoib" -d 'A persistent IPoIB interface name, by port GUID'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -f -a "ipoib-remove" -d 'Forget an IPoIB interface name'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and not __fish_seen_subcommand_from policy fixed unfix ipoib ipoib-remove help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -l now -d 'Rename the devices now, not only from the next boot'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from policy" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -l now -d 'Rename the device now, not only from the next boot'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from fixed" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from unfix" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -l now -d 'Rename the interface now, not only from the next boot'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from ipoib-remove" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from help" -f -a "policy" -d 'The host\'s RDMA device naming policy'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from help" -f -a "fixed" -d 'A fixed name for an RDMA device (NAME_FIXED), by node GUID'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from help" -f -a "unfix" -d 'Forget a device\'s fixed name'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from help" -f -a "ipoib" -d 'A persistent IPoIB interface name, by port GUID'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from help" -f -a "ipoib-remove" -d 'Forget an IPoIB interface name'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand naming; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand modules" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand memlock" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand nfs" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand sm" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -f -a "set" -d 'Set a VF\'s node and port GUID (ip link\'s 00:11:22:33:44:55:66:77 or sysfs\'s 0011:2233:4455:6677), rebind the VF and remember them'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -f -a "reset" -d 'Forget the GUIDs remembered for a VF (the driver keeps the current ones)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and not __fish_seen_subcommand_from set reset help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from set" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from reset" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from help" -f -a "set" -d 'Set a VF\'s node and port GUID (ip link\'s 00:11:22:33:44:55:66:77 or sysfs\'s 0011:2233:4455:6677), rebind the VF and remember them'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from help" -f -a "reset" -d 'Forget the GUIDs remembered for a VF (the driver keeps the current ones)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand vf-guid; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l port -d 'The ports the port options apply to: DEVICE or DEVICE/PORT, repeated (default: every port); each must be present' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l state -d 'Expected logical state (ACTIVE, ...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l phys-state -d 'Expected physical state (LinkUp, ...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l min-rate -d 'Expected rate, at least GBPS Gb/s' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l link-layer -d 'Expected link layer (InfiniBand or Ethernet)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l mtu -d 'Expected MTU of the ports\' network interface (IPoIB interface or netdev)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l min-ports -d 'At least N RDMA ports present' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l counter-window -d 'No error counter rises over SECONDS (1 to 20; the check waits them out)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l max-flaps -d 'At most N state changes of each port in the last --flap-window seconds' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l flap-window -d 'The flap window, in seconds' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l firmware-equal -d 'Hardware devices of one board run one firmware version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand health" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -l kind -d 'What to test' -r -f -a "rdma\t'rdma_cm RC: latency ping-pong, then bandwidth (perftest)'
icmp\t'ICMP echo over the port\'s netdev (ping)'
ibping\t'InfiniBand ping of the peer port\'s LID (infiniband-diags\' ibping, vendor class 0x32)'"
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -l duration -d 'Seconds: ICMP or ibping requests for this long (default 2); RDMA bandwidth for this long against a server given -D SECONDS (default: perftest\'s iteration counts)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -l timeout -d 'The most the test may take, 1 to 600 seconds (default 30)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand test-link" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand responder" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand completions" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand qos" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -s w -l wait -d 'Give up after SECONDS (0: wait as long as it takes; default 90)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -l address -d 'rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)' -r
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -s t -l terse -d 'Terse output for scripts: colon-separated fields, no header (`:` and `\\` escaped with `\\`)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -s j -l json -d 'JSON output, where the output is data (status, show, diff, steps)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -l system -d 'rdma-managerd on the system bus (the default)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -l session -d 'rdma-managerd on the session bus (rdma-managerd --session --simulate)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -s h -l help -d 'Print help'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand port-type" -s V -l version -d 'Print version'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "show" -d 'The host\'s state: every setting by key path, or the whole document (--yaml, --json) that apply takes'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "set" -d 'Set settings by their key paths, as show prints them (roce[mlx5_0/1].tos 106): applied as a state document of their own, verified, rolled back on failure'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "status" -d 'Devices and ports, as `nmcli device status` lists devices'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "diff" -d 'What `apply FILE` would change; exit 0 when nothing, 10 when something'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "apply" -d 'Apply a state document: everything or nothing, verified, rolled back on failure'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "confirm" -d 'Confirm a pending change (default: the only one)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "rollback" -d 'Roll back a pending change (default: the only one)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "link" -d 'Soft RDMA links (rxe, siw)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "roce" -d 'RoCE default mode or type of service of a port'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "ipoib" -d 'IPoIB interfaces and their P_Key children'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "ip" -d 'IP settings of an RDMA netdev through the host\'s IP manager, with nmcli\'s keys'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "naming" -d 'Persistent names of RDMA devices and IPoIB interfaces (udev rules)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "modules" -d 'rdma-core\'s module lists: SET MODULE on|off, or apply SET (load them now)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "memlock" -d 'The memlock limits of group rdma: SOFT HARD (KiB or unlimited), or reset'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "nfs" -d 'NFS over RDMA: on|off [port N]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "sm" -d 'The subnet manager (opensm)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "vf-guid" -d 'SR-IOV VF GUIDs of an InfiniBand PF: set DEVICE VF NODE_GUID PORT_GUID, reset DEVICE VF'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "health" -d 'Node health check (NHC style): exit 0 when every expectation holds, 11 and one `ERROR:` line per failed expectation otherwise. Expectations: the health section of FILE, else the options, else the state directory\'s health sections'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "test-link" -d 'Test the link from a port to a peer: RDMA (latency and bandwidth through rdma_cm), ICMP over the port\'s netdev, or on InfiniBand ibping to a LID; exit 7 when it ran and did not pass'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "responder" -d 'The link-test responder, which peers test against: on, off, or its status'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "completions" -d 'Print a shell completion script'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "qos" -d 'QoS profile of a RoCE port (lossless RoCE): show it, or change the settings named as KEY VALUE pairs, the others kept: trust pcp|dscp, pfc 3,4|none, ets BW0,..,BW7/TC0,..,TC7, dscp 26:3,48:6|none, traffic-class 0-255, ecn 3|none'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "port-type" -d 'Port type of a VPI adapter\'s port: mlx4 switches now, mlx5 at the next boot'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and not __fish_seen_subcommand_from show set status diff apply confirm rollback link roce ipoib ip naming modules memlock nfs sm vf-guid health test-link responder completions qos port-type help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from link" -f -a "add" -d 'Add a soft link: NAME type rxe|siw netdev DEV'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from link" -f -a "delete" -d 'Delete a soft link'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from ipoib" -f -a "add" -d 'Add a P_Key child: PARENT pkey 0xNNNN [name NAME] [mode M] [mtu N]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from ipoib" -f -a "delete" -d 'Delete a P_Key child'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from ipoib" -f -a "set" -d 'Change an interface: [mode datagram|connected] [mtu N] [umcast on|off]'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from naming" -f -a "policy" -d 'The host\'s RDMA device naming policy'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from naming" -f -a "fixed" -d 'A fixed name for an RDMA device (NAME_FIXED), by node GUID'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from naming" -f -a "unfix" -d 'Forget a device\'s fixed name'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from naming" -f -a "ipoib" -d 'A persistent IPoIB interface name, by port GUID'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from naming" -f -a "ipoib-remove" -d 'Forget an IPoIB interface name'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from vf-guid" -f -a "set" -d 'Set a VF\'s node and port GUID (ip link\'s 00:11:22:33:44:55:66:77 or sysfs\'s 0011:2233:4455:6677), rebind the VF and remember them'
complete -c rdma-cli -n "__fish_rdma_cli_using_subcommand help; and __fish_seen_subcommand_from vf-guid" -f -a "reset" -d 'Forget the GUIDs remembered for a VF (the driver keeps the current ones)'
