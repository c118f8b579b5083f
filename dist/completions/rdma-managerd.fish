# fish completion for rdma-managerd
# generated from rdma-managerd's options (service/src/completions.rs): do not edit

complete -c rdma-managerd -f
complete -c rdma-managerd -n '__fish_use_subcommand' -a show -d 'print the host as ibstat does'
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -a '(command ls /sys/class/infiniband 2>/dev/null)'
complete -c rdma-managerd -n '__fish_use_subcommand' -a ibping -d "infiniband-diags' ibping on a port's umad device"
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l system
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l session
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l address -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l direct-socket -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l no-direct-socket
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l tick-ms -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l counters-max-age-ms -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l simulate
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l simulate -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l sim-host -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l sim-cost -r
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -s h
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l help
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -s V
complete -c rdma-managerd -n 'not __fish_seen_subcommand_from show ibping' -l version
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l simulate
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l simulate -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l sim-host -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l sim-cost -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l json
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s h
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l help
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s V
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l version
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s l
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l list_of_cas
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s s
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l short
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s p
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l port_list
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s v
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l verbose
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -s z -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -l config -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -l serve
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -l umad -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -l fd -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -l host -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -s c -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -l interval-ms -r
complete -c rdma-managerd -n '__fish_seen_subcommand_from ibping' -l timeout-ms -r
