#!/bin/bash
# rdma-managerd's resident set as link tests accumulate: a test's result joins a list of the
# last 32, its tools are children that come and go, so past 32 tests it should level off.
#
#   cargo build --release --workspace --bins      # the daemon with --sim-host
#   dbus-run-session -- tests/bench/linktest-rss.sh [COUNTS]
#
# Runs rdma-managerd on the simulated demo host (session bus) and `rdma-cli test-link
# rxe0/1 192.0.2.10 --kind icmp --duration 1` until each count in COUNTS (default
# "32 64 128 256"), printing the daemon's VmRSS at each. Nobody answers 192.0.2.10: each
# test runs Debian's ping for its second and ends as no-responder, through the same path as
# one that passes. BIN chooses the binaries' directory. docs/PERFORMANCE.md.
set -eu
COUNTS=${1:-32 64 128 256}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release}
"$BIN/rdma-managerd" --session --sim-host=demo >/dev/null 2>&1 &
D=$!
trap 'kill $D 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  "$BIN/rdma-cli" --session -t general >/dev/null 2>&1 && break
  sleep 0.2
done
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$D/status"; }
echo "linktest-rss: tests 0 rss_kib $(rss)"
n=0
for count in $COUNTS; do
  while [ "$n" -lt "$count" ]; do
    "$BIN/rdma-cli" --session -t test-link rxe0/1 192.0.2.10 --kind icmp --duration 1 \
      --timeout 5 >/dev/null 2>&1 || true
    n=$((n + 1))
  done
  echo "linktest-rss: tests $n rss_kib $(rss)"
done
