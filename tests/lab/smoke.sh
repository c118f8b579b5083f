#!/usr/bin/env bash
# Smoke test of the kernel lab itself, independent of the project's binaries: compiles a tiny
# dynamically linked C "scenario runner" (proves that ldd-copied libraries work in the guest),
# which runs rdma-core/iproute2 tools against rxe over the veth pair, and boots the lab with it.
#
# Usage: tests/lab/smoke.sh [run-lab.sh options, e.g. --kernels "6.1" --out DIR]
set -euo pipefail
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK="${LAB_WORK:-$LAB_DIR/work}"
mkdir -p "$WORK/smoke"

if ! command -v cc >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || { echo "smoke: no C compiler (install gcc)" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev
fi

cat >"$WORK/smoke/rdma-lab-smoke.c" <<'EOF'
/* Kernel lab smoke test: runs reference tools and prints their output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int run(const char *cmd) {
  char buf[4096];
  size_t n;
  int st;
  FILE *p;
  printf("=== %s\n", cmd);
  fflush(stdout);
  p = popen(cmd, "r");
  if (!p) { perror("popen"); return -1; }
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) fwrite(buf, 1, n, stdout);
  st = pclose(p);
  st = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  printf("--- rc=%d\n", st);
  fflush(stdout);
  return st;
}

int main(int argc, char **argv) {
  static const char *must[] = {
    "rdma link add rxe0 type rxe netdev veth0 2>&1",
    "rdma link add rxe1 type rxe netdev veth1 2>&1",
    "rdma -j dev show 2>&1",
    "rdma -j link show 2>&1",
    "rdma -d -j dev show 2>&1",
    "rdma -j statistic show 2>&1",
    "rdma dev show 2>&1",
    "rdma link show 2>&1",
    "ibstat 2>&1",
    "ibstat rxe0 2>&1",
    "ibstatus 2>&1",
    "ibv_devices 2>&1",
    "ibv_devinfo -d rxe0 2>&1",
    "cat /sys/class/infiniband/rxe0/node_guid /sys/class/infiniband/rxe1/node_guid 2>&1",
    "cat /sys/class/infiniband/rxe0/ports/1/gids/0 /sys/class/infiniband/rxe1/ports/1/gids/0 2>&1",
    "ip -br link show 2>&1",
    NULL,
  };
  int i, bad = 0;
  if (argc != 2 || strcmp(argv[1], "real") != 0) {
    fprintf(stderr, "usage: %s real\n", argv[0]);
    return 2;
  }
  fprintf(stderr, "smoke: starting\n");
  for (i = 0; must[i]; i++)
    if (run(must[i]) != 0) bad++;
  fprintf(stderr, "smoke: %d failing commands\n", bad);
  return bad ? 1 : 0;
}
EOF
cc -O2 -Wall -o "$WORK/smoke/rdma-lab-smoke" "$WORK/smoke/rdma-lab-smoke.c"
exec "$LAB_DIR/run-lab.sh" --scenario-bin "$WORK/smoke/rdma-lab-smoke" "$@"
