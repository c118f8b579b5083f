# bash completion for rdma-tui                                    -*- shell-script -*-
# Options, and after --ibstat the RDMA devices and their ports (from sysfs, as ibstat reads).

_rdma_tui()
{
    local cur prev words cword
    _init_completion -n = 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    }
    local sysfs=${RDMA_TUI_SYSFS:-/sys/class/infiniband}
    local opts="--demo --system --session --address= --direct-socket= --no-mouse --ibstat --json --counters --help --version"
    # ibstat's options, after --ibstat.
    local ibstat_opts="--list_of_cas --short --port_list --verbose --config -l -s -p -v -z"

    if [[ $cur == --direct-socket=* ]]; then
        COMPREPLY=($(compgen -P --direct-socket= -f -- "${cur#--direct-socket=}"))
        return
    fi
    # After --ibstat: DEVICE, then PORT (a file after -z/--config).
    local i ibstat=-1
    for ((i = 1; i < cword; i++)); do
        [[ ${words[i]} == --ibstat ]] && ibstat=$i
    done
    if [[ $ibstat -ge 0 && ( $prev == -z || $prev == --config ) ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return
    fi
    if [[ $cur != -* && $ibstat -ge 0 ]]; then
        local positional=()
        for ((i = ibstat + 1; i < cword; i++)); do
            [[ ${words[i]} == -z || ${words[i]} == --config ]] && { ((i++)); continue; }
            [[ ${words[i]} != -* ]] && positional+=("${words[i]}")
        done
        case ${#positional[@]} in
            0)
                local devs=()
                [[ -d $sysfs ]] && devs=($(command ls "$sysfs" 2>/dev/null))
                COMPREPLY=($(compgen -W "${devs[*]}" -- "$cur"))
                return
                ;;
            1)
                local ports=()
                [[ -d $sysfs/${positional[0]}/ports ]] &&
                    ports=($(command ls "$sysfs/${positional[0]}/ports" 2>/dev/null))
                COMPREPLY=($(compgen -W "${ports[*]}" -- "$cur"))
                return
                ;;
        esac
        COMPREPLY=()
        return
    fi
    [[ $ibstat -ge 0 ]] && opts="$opts $ibstat_opts"
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    [[ ${COMPREPLY[*]} == *= ]] && compopt -o nospace 2>/dev/null
}
complete -F _rdma_tui rdma-tui
