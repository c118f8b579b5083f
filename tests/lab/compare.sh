#!/usr/bin/env bash
# Compares each real-kernel transcript in DIR with the simulated host imitating the same
# kernel. Usage: tests/lab/compare.sh SCENARIO_BIN DIR [--record]
# --record also copies the real transcripts to tests/lab/expected/, which the normal test run
# compares the simulated host against.
set -euo pipefail
bin=$1 dir=$2 record=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for t in "$dir"/*.transcript; do
  release=$(basename "$t" .transcript)
  "$bin" sim "$release" > "$dir/$release.sim"
  if diff -u --label "simulated $release" --label "real $release" "$dir/$release.sim" "$t"; then
    echo "$release: simulated host and real kernel agree ($(wc -l < "$t") lines)"
  else
    status=1
  fi
  if [ "$record" = "--record" ]; then
    mkdir -p "$here/expected"
    cp "$t" "$here/expected/$release.transcript"
  fi
done
exit "$status"
