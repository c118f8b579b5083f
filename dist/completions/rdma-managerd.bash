# bash completion for rdma-managerd                               -*- shell-script -*-
# generated from rdma-managerd's options (service/src/completions.rs): do not edit

_rdma_managerd()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local sysfs=${RDMA_MANAGERD_SYSFS:-/sys/class/infiniband}
    local i show=0 ibping=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == show ]] && show=1
        [[ ${COMP_WORDS[i]} == ibping ]] && ibping=1
    done
    if [[ $ibping == 1 ]]; then
        case $prev in
            --umad) COMPREPLY=($(compgen -f -- "${cur:-/dev/infiniband/umad}")) ;;
            --umad | --fd | --host | -c | --interval-ms | --timeout-ms) COMPREPLY=() ;;
            *) COMPREPLY=($(compgen -W "--serve --umad --fd --host -c --interval-ms --timeout-ms" -- "$cur")) ;;
        esac
        return
    fi
    if [[ $show == 1 && ( $prev == @(-z|--config) ) ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return
    fi
    if [[ $show == 1 && $cur != -* ]]; then
        # DEVICE, then PORT (a file after -z/--config).
        local positional=()
        for ((i = 1; i < COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in
                show | -*) [[ ${COMP_WORDS[i]} == @(-z|--config) ]] && ((i++)) ;;
                *) positional+=("${COMP_WORDS[i]}") ;;
            esac
        done
        local words=()
        case ${#positional[@]} in
            0) [[ -d $sysfs ]] && words=($(command ls "$sysfs" 2>/dev/null)) ;;
            1) [[ -d $sysfs/${positional[0]}/ports ]] &&
                words=($(command ls "$sysfs/${positional[0]}/ports" 2>/dev/null)) ;;
        esac
        COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
        return
    fi
    local opts="show ibping --system --session --address= --direct-socket= --no-direct-socket --tick-ms= --counters-max-age-ms= --simulate --simulate= --sim-host= --sim-cost= -h --help -V --version"
    [[ $show == 1 ]] && opts="--simulate --simulate= --sim-host= --sim-cost= --json -h --help -V --version -l --list_of_cas -s --short -p --port_list -v --verbose -z --config"
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    [[ ${COMPREPLY[*]} == *= ]] && compopt -o nospace 2>/dev/null
}
complete -F _rdma_managerd rdma-managerd
