#!/bin/bash
# Writes service/link/text-order.ld: the functions a release rdma-managerd runs, placed
# together before the rest of its code (docs/PERFORMANCE.md, "Memory, thirteenth pass").
#
#     tests/text-order/regenerate.sh          # about 10 minutes; needs valgrind, dbus, systemd (busctl)
#     tests/text-order/regenerate.sh --lab    # and the scale lab on a real kernel (QEMU, tests/lab)
#     ... --keep                              # keep the profiles, the map and the lab's transcript
#
# Run it again after a change of toolchain or dependencies (their symbols' hashes change: the
# copies of generic functions the script names exactly are then found only in .text.warm,
# among their siblings), and after a change that adds code the daemon runs all the time.
# target/release/rdma-bench --only=history says how much code each section holds.
#
# It builds the daemon with a link map, runs it under callgrind on two simulated hosts
# while a client makes the calls rdma-tui and busctl make, and gives both profiles and the
# map to rdma-text-order (tests/src/bin/rdma-text-order.rs). With --lab it also runs the
# scale lab on Debian's 6.12 with 256 rxe devices and fault-around off
# (rdma_lab_scale_text_pages=1), and places the functions on the pages of code the daemon
# touched there after those of the profiles (.text.lab): what only the real kernel runs
# (uverbs, RDMA netlink, rtnetlink, udev), and the neighbours that shared their pages.
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in valgrind dbus-daemon busctl; do
    command -v "$tool" >/dev/null || { echo "regenerate.sh: $tool is needed" >&2; exit 1; }
done
lab=false keep=false
for arg in "$@"; do
    case $arg in
        --lab) lab=true ;;
        --keep) keep=true ;;
        *) echo "usage: regenerate.sh [--lab] [--keep]" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d)
if $keep; then
    trap 'kill "${bus_pid:-}" 2>/dev/null || true; echo "regenerate.sh: kept $work" >&2' EXIT
else
    trap 'kill "${bus_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
fi

# As `make build` and the packages build it (CI builds the daemon with the test programs,
# which gives every shared dependency the same features): which packages are built together
# decides the features of shared dependencies, and with them the hashes in the symbols' names.
# rdma-lab-scale comes along: the test programs give shared dependencies the same features.
RDMA_MANAGER_LINK_MAP="$work/map" cargo build --release --bin rdma-managerd --bin rdma-tui \
    --bin rdma-lab-scale
cp target/release/rdma-managerd "$work/rdma-managerd"
cargo build -p rdma-manager-tests --bin rdma-text-order

bus_address=$(dbus-daemon --session --fork --print-address=1 --print-pid=1 >"$work/bus"; sed -n 1p "$work/bus")
bus_pid=$(sed -n 2p "$work/bus")
export DBUS_SESSION_BUS_ADDRESS=$bus_address
S=org.rdmamanager.RdmaManager1
R=/org/rdmamanager/RdmaManager1
# Under valgrind every call is 50 times slower.
call() { busctl --user --timeout=600 "$@" >/dev/null 2>&1 || true; }

# What a client does: rdma-tui's pages (GetManagedObjects, properties, the history, the
# counters), busctl's tree and introspection, and calls refused for bad input or authority.
client_calls() {
    for _ in 1 2 3; do call call $S $R org.freedesktop.DBus.ObjectManager GetManagedObjects; done
    call tree $S
    call introspect $S $R
    call introspect $S $R/Device/0/Port/1
    call call $S $R/Device/0 org.freedesktop.DBus.Properties GetAll s $S.Device
    call call $S $R/Device/0/Port/1 org.freedesktop.DBus.Properties GetAll s $S.Port
    call call $S $R/Ipoib/2 org.freedesktop.DBus.Properties GetAll s $S.Ipoib
    call call $S $R/Host org.freedesktop.DBus.Properties GetAll s $S.Host
    call get-property $S $R $S Devices
    call call $S $R/Device/0/Port/1 $S.Port GetThroughputHistory
    call call $S $R/Device/0/Port/1 $S.Port GetThroughputHistoryCoarse
    call call $S $R/Device/0/Port/1 $S.Port GetCounters
    call call $S $R org.freedesktop.DBus.Peer Ping
    call call $S $R/Ipoib/2 $S.Ipoib SetMtu u 99999
    call call $S $R/Device/0 $S.Device Rename s 'bad name!'
    call call $S $R/Device/0/Port/9 org.freedesktop.DBus.Properties GetAll s $S.Port
}

# profile NAME HOST TICK_MS SECONDS: the daemon under callgrind on a simulated HOST, the
# client's calls once it owns its name, then SECONDS of ticks, then an interrupt.
profile() {
    local name=$1 host=$2 tick=$3 secs=$4
    valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
        --compress-pos=no --callgrind-out-file="$work/$name.callgrind" \
        "$work/rdma-managerd" --address="$bus_address" --sim-host="$host" --tick-ms="$tick" \
        >"$work/$name.log" 2>&1 &
    local pid=$!
    until busctl --user list 2>/dev/null | grep -q "^$S "; do
        kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
        sleep 2
    done
    client_calls
    sleep "$secs"
    kill -INT "$pid"
    wait "$pid" || true
    while busctl --user list 2>/dev/null | grep -q "^$S "; do sleep 1; done
}

profile small large:16:2:64 100 60
profile large large:256:2:1024 1000 60

pages=()
if $lab; then
    tests/lab/run-lab.sh --scenario-bin target/release/rdma-lab-scale \
        --daemon-bin "$work/rdma-managerd" --no-daemon-checks --kernels 6.12 --mem 2048 \
        --timeout 900 --append rdma_lab_scale_text_pages=1 --out "$work/lab"
    for t in "$work"/lab/*.transcript; do pages+=(--pages "$t"); done
fi

target/debug/rdma-text-order --map "$work/map" --out service/link/text-order.ld \
    "${pages[@]}" "$work"/*.callgrind
