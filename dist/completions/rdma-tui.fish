# fish completion for rdma-tui: options, and after --ibstat the RDMA devices.
complete -c rdma-tui -f
complete -c rdma-tui -l demo -d 'Start a simulated rdma-managerd on a private bus'
complete -c rdma-tui -l system -d 'rdma-managerd on the system bus'
complete -c rdma-tui -l session -d 'rdma-managerd on the session bus'
complete -c rdma-tui -l address -r -d 'rdma-managerd on the bus at this D-Bus address'
complete -c rdma-tui -l no-mouse -d 'Leave the mouse to the terminal'
complete -c rdma-tui -l ibstat -d 'Print what ibstat prints, and exit'
complete -c rdma-tui -l json -d 'Print the whole state as JSON, and exit'
complete -c rdma-tui -s h -l help -d 'Show the usage'
complete -c rdma-tui -s V -l version -d 'Show the version'
complete -c rdma-tui -n '__fish_seen_argument -l ibstat' -a '(command ls /sys/class/infiniband 2>/dev/null)' -d 'RDMA device'
