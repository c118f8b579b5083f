#!/bin/bash
# rdma-exporter against node_exporter's infiniband collector on the same simulated host tree:
# scrape latency, CPU per scrape (the exporter's own, and what its GetAllCounters call costs
# rdma-managerd and the bus), resident set, and whether node_exporter's series agree.
#
#   cargo build --release --workspace --bins      # the daemon with --sim-host
#   dbus-run-session -- tests/bench/exporter-vs-node-exporter.sh [large:256:2:0] [SCRAPES]
#
# Needs prometheus-node-exporter (Debian 12: 1.5.0) and curl. docs/PERFORMANCE.md.
set -eu
SPEC=${1:-large:256:2:0}
N=${2:-20}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release}
TREE=$(mktemp -d /dev/shm/rdma-exporter-bench.XXXXXX)
trap 'kill $E $NE $D 2>/dev/null; rm -rf "$TREE"' EXIT
# Every scrape a read of every port's counters, as a Prometheus every 15 s gets: the daemon
# would otherwise serve scrapes 1.1 s apart from one reading (its 10 s counters max age).
# rdma-exporter asks for the counters on the daemon's direct socket, as on the system bus.
"$BIN/rdma-managerd" --session --sim-host="$SPEC" --simulate="$TREE" --counters-max-age-ms=0 \
  --direct-socket="$TREE/direct" >/dev/null 2>&1 &
D=$!
for _ in $(seq 1 300); do
  busctl --user get-property org.rdmamanager.RdmaManager1 /org/rdmamanager/RdmaManager1 \
    org.rdmamanager.RdmaManager1 Startup 2>/dev/null | grep -q false && break
  sleep 0.2
done
"$BIN/rdma-exporter" --session --direct-socket "$TREE/direct" --listen 127.0.0.1:19942 \
  >/dev/null 2>&1 &
E=$!
prometheus-node-exporter --path.sysfs="$TREE/sys" --collector.disable-defaults \
  --collector.infiniband --web.listen-address=127.0.0.1:19943 >/dev/null 2>&1 &
NE=$!
sleep 3
BUS=$(pgrep -P "$PPID" dbus-daemon || true)
ticks() { [ -n "$1" ] && awk '{print $14+$15}' "/proc/$1/stat" || echo 0; }
hz=$(getconf CLK_TCK)
echo "host $SPEC, $N scrapes each, 1.1 s apart (past the exporter's 1 s reuse)"
echo "rdma-exporter RSS before any scrape: $(awk '/VmRSS/ {print $2}' /proc/$E/status) KiB"
curl -s http://127.0.0.1:19942/metrics >"$TREE/exporter.txt"
curl -s http://127.0.0.1:19943/metrics >"$TREE/node.txt"
# node_exporter's series that both serve, compared value for value.
python3 - "$TREE/exporter.txt" "$TREE/node.txt" <<'PY'
import sys
def series(path):
    out = {}
    for l in open(path):
        if l.startswith("node_infiniband_"):
            k, v = l.rsplit(" ", 1)
            name, _, labels = k.partition("{")
            k = name + "{" + ",".join(sorted(labels.rstrip("}").split(","))) + "}"
            out[k] = float(v)
    return out
e, n = series(sys.argv[1]), series(sys.argv[2])
both = set(e) & set(n)
differ = [k for k in both if e[k] != n[k]]
print(f"node_infiniband_* series: exporter {len(e)}, node_exporter {len(n)}, both {len(both)}, values differing {len(differ)}")
for k in sorted(set(n) - set(e))[:5]:
    print("  only node_exporter:", k)
for k in sorted(differ)[:5]:
    print("  differs:", k, e[k], n[k])
PY
sleep 1.1
for who in rdma-exporter node_exporter; do
  if [ $who = rdma-exporter ]; then url=http://127.0.0.1:19942/metrics; p=$E; else url=http://127.0.0.1:19943/metrics; p=$NE; fi
  c0=$(ticks $p); d0=$(ticks $D); b0=$(ticks "$BUS")
  : >"$TREE/$who.times"
  for _ in $(seq 1 "$N"); do
    curl -s -o /dev/null -w '%{time_total}\n' "$url" >>"$TREE/$who.times"
    sleep 1.1
  done
  c1=$(ticks $p); d1=$(ticks $D); b1=$(ticks "$BUS")
  p50=$(sort -n "$TREE/$who.times" | sed -n "$(( (N + 1) / 2 ))p")
  awk -v w=$who -v n=$N -v hz=$hz -v c=$((c1 - c0)) -v d=$((d1 - d0)) -v b=$((b1 - b0)) -v p=$p50 \
    'BEGIN { printf "%s: latency p50 %.1f ms; CPU per scrape: own %.1f ms, rdma-managerd %.1f ms, dbus-daemon %.1f ms\n", w, p * 1000, c * 1000 / hz / n, d * 1000 / hz / n, b * 1000 / hz / n }'
done
echo "rdma-exporter RSS after: $(awk '/VmRSS/ {print $2}' /proc/$E/status) KiB; node_exporter: $(awk '/VmRSS/ {print $2}' /proc/$NE/status) KiB"
