#!/usr/bin/env bash
# The installed-system lab: rdma-manager's Debian package installed into a systemd-booted
# Debian 12 guest under QEMU (software emulation), driven as a user drives it, across a real
# reboot. See tests/syslab/README.md.
#
#   tests/syslab/run.sh [--kernel 6.1|6.12] [--deb PATH] [--gmo-bin PATH] [--out DIR]
#                       [--timeout SECS] [--cache DIR] [--one-guest] [--no-ansible]
#                       [--no-linktest] [--boots 2|3|4] [--append 'KERNEL ARGS']
#
# Builds (or restores) the image, builds the package unless --deb is given and the
# GetManagedObjects timing client (rdma-syslab-gmo) unless --gmo-bin is given, boots the guest
# over a throw-away overlay and waits for it to power off; a second guest, the NFS client,
# runs at the same time on a QEMU socket network with the first (unless --one-guest). Per-check transcripts land in
# DIR/checks/, the console in DIR/console.log, and one line per check ("syslab: ok NAME" or
# "syslab: FAIL NAME") in DIR/summary. Exit status 0 only if every expected check passed.
# --boots N ends the run after the Nth boot (default 4: install, reboot, broker switch, boot
# on dbus-broker); the checks of the later boots are then not expected.
set -euo pipefail

SYSLAB_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(cd "$SYSLAB_DIR/../.." && pwd)
deb=""
gmo_bin=""
out="$REPO_DIR/target/syslab"
timeout_secs=2700
cache="$REPO_DIR/target/syslab-cache"
two=1
ansible=1
linktest=1
kernel=6.1
boots=4
append=""
while [ $# -gt 0 ]; do
  case "$1" in
    --deb) deb=$2; shift 2 ;;
    --gmo-bin) gmo_bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --timeout) timeout_secs=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --one-guest) two=0; shift ;;
    --no-ansible) ansible=0; shift ;;
    --no-linktest) linktest=0; shift ;;
    --kernel) kernel=$2; shift 2 ;;
    --boots) boots=$2; shift 2 ;;
    --append) append=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
log() { echo "syslab: $*" >&2; }
die() { log "error: $*"; exit 1; }
case "$boots" in 2|3|4) ;; *) die "--boots $boots: give 2, 3 or 4" ;; esac
t_start=$SECONDS

# The checks each boot must report, in order; a missing line is a failure (the phase did not
# get that far).
EXPECTED_PHASE1="boot install files activation udev softlink roce rename naming modules memlock nfs journal security"
EXPECTED_PHASE2="reboot-softlink reboot-roce reboot-modules reboot-memlock reboot-nfs reboot-boot networkmanager nm-rollback linktest-icmp tui late-setup health ip-managers"
EXPECTED_PHASE3="late-netdev gmo-dbus-daemon broker-switch"
EXPECTED_PHASE4="broker-boot broker-daemon gmo-dbus-broker"
EXPECTED_TWO="nfs-rdma-server nfs-client-setup nfs-client-mount"
# The link tests between the two guests (left out with --no-linktest: the guests are not
# told syslab.linktest=1).
EXPECTED_LINKTEST="linktest linktest-responder"
# The Ansible checks (left out with --no-ansible: the share then has no ansible/).
EXPECTED_ANSIBLE="ansible reboot-ansible"
EXPECTED_ANSIBLE_TWO="ansible-client"

need=(mmdebstrap e2fsprogs qemu-utils qemu-system-x86 dpkg-dev debhelper)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}); run as root to install them"
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

t0=$SECONDS
image=$("$SYSLAB_DIR/build-image.sh" --cache "$cache" --kernel "$kernel" | tail -n 1)
t_image=$((SECONDS - t0))
[ -f "$image/base.img" ] || die "no image in $image"
log "image $image ($(grep -h '^kernel=' "$image/info")) ready after ${t_image}s"

t0=$SECONDS
if [ -z "$deb" ]; then
  deb=$("$SYSLAB_DIR/build-deb.sh" | tail -n 1)
fi
t_deb=$((SECONDS - t0))
[ -f "$deb" ] || die "no package at $deb"

# The timing client runs in the guest from the share: a release binary of the tests crate
# (the host is Debian 12 like the guest). cargo does nothing if it is up to date.
if [ -z "$gmo_bin" ]; then
  log "cargo build --release -p rdma-manager-tests --bin rdma-syslab-gmo"
  (cd "$REPO_DIR" && cargo build --release -q -p rdma-manager-tests --bin rdma-syslab-gmo) >&2
  gmo_bin="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/rdma-syslab-gmo"
fi
[ -x "$gmo_bin" ] || die "no timing client at $gmo_bin"

rm -rf "$out"
mkdir -p "$out/share/out" "$out/checks"
cp "$SYSLAB_DIR/guest-checks.sh" "$out/share/"
[ "$ansible" -eq 0 ] || cp -r "$SYSLAB_DIR/ansible" "$out/share/"
[ "$linktest" -eq 0 ] || [ "$two" -eq 0 ] || append="syslab.linktest=1 $append"
# The guest powers off after boot N instead of rebooting into the next.
[ "$boots" -eq 4 ] || append="syslab.boots=$boots $append"
cp "$deb" "$out/share/"
cp "$gmo_bin" "$out/share/rdma-syslab-gmo"
[ "$two" -eq 0 ] || mkdir -p "$out/share/rdv" "$out/share/out-nfs-client"
qemu-img create -q -f qcow2 -b "$image/base.img" -F raw "$out/run.qcow2"
[ "$two" -eq 0 ] || qemu-img create -q -f qcow2 -b "$image/base.img" -F raw "$out/client.qcow2"

# guest NAME DISK MAC NETDEV CONSOLE [EXTRA-APPEND]: one QEMU, killed after the timeout.
guest() {
  timeout -k 10 "$timeout_secs" qemu-system-x86_64 \
    -accel tcg -cpu max,la57=off -m 2048 -smp 2 -vga none -display none -monitor none \
    -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 panic=-1 net.ifnames=0 systemd.show_status=1 $append ${6:-}" \
    -drive "file=$2,if=virtio,format=qcow2" \
    -netdev "socket,id=n0,$4" -device "virtio-net-pci,netdev=n0,mac=$3" \
    -virtfs "local,path=$out/share,mount_tag=syslab,security_model=none,id=syslab" \
    -serial "file:$5" -pidfile "$out/qemu-$1.pid" </dev/null >"$out/qemu-$1.log" 2>&1
}

# The guests' eth0 are virtio NICs joined by a socket netdev on 127.0.0.1: the first
# listens, the second (if any) connects. rxe needs a netdev; nothing leaves the machine.
port=$(( 20000 + RANDOM % 20000 ))
log "booting (timeout ${timeout_secs}s, console $out/console.log)"
t0=$SECONDS
guest main "$out/run.qcow2" 52:54:00:77:00:01 "listen=127.0.0.1:$port" "$out/console.log" &
main_pid=$!
client_pid=""
if [ "$two" -eq 1 ]; then
  # The client connects once the first QEMU listens.
  for _ in $(seq 1 100); do
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
    sleep 0.1
  done
  log "booting the NFS client guest (console $out/console-client.log)"
  guest client "$out/client.qcow2" 52:54:00:77:00:02 "connect=127.0.0.1:$port" \
    "$out/console-client.log" syslab.role=nfs-client &
  client_pid=$!
fi
qrc=0
wait "$main_pid" || qrc=$?
t_boot=$((SECONDS - t0))
crc=0
if [ -n "$client_pid" ]; then
  # A client still waiting for a server that is gone would wait until its timeout.
  if [ ! -e "$out/share/rdv/server-ready" ] && [ -s "$out/qemu-client.pid" ]; then
    log "the first guest ended before its NFS export was ready: stopping the client"
    kill "$(cat "$out/qemu-client.pid")" 2>/dev/null || true
  fi
  # Once the first guest is done nothing the client waits for can come: it is given a few
  # minutes to finish and power off, not the rest of its timeout.
  for _ in $(seq 1 300); do
    kill -0 "$client_pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$client_pid" 2>/dev/null && [ -s "$out/qemu-client.pid" ]; then
    log "the client guest is still running 300s after the first guest ended: stopping it"
    kill "$(cat "$out/qemu-client.pid")" 2>/dev/null || true
  fi
  wait "$client_pid" || crc=$?
fi
rm -f "$out/run.qcow2" "$out/client.qcow2"

cp "$out"/share/out/*.txt "$out/checks/" 2>/dev/null || true
[ "$two" -eq 0 ] || cp "$out"/share/out-nfs-client/*.txt "$out/checks/" 2>/dev/null || true
summary="$out/summary"
: >"$summary"
cat "$out"/share/out*/summary 2>/dev/null | grep -a '^syslab: ' >"$summary" || true
failed=0
expected="$EXPECTED_PHASE1 $EXPECTED_PHASE2"
[ "$boots" -lt 3 ] || expected="$expected $EXPECTED_PHASE3"
[ "$boots" -lt 4 ] || expected="$expected $EXPECTED_PHASE4"
[ "$two" -eq 0 ] || expected="$expected $EXPECTED_TWO"
[ "$ansible" -eq 0 ] || expected="$expected $EXPECTED_ANSIBLE"
# reboot-ansible runs in the third boot.
[ "$boots" -ge 3 ] || expected=$(echo "$expected" | sed 's/ reboot-ansible//')
[ "$ansible" -eq 0 ] || [ "$two" -eq 0 ] || expected="$expected $EXPECTED_ANSIBLE_TWO"
[ "$linktest" -eq 0 ] || [ "$two" -eq 0 ] || expected="$expected $EXPECTED_LINKTEST"
for name in $expected; do
  if ! grep -qx "syslab: \(ok\|FAIL\) $name" "$summary"; then
    echo "syslab: FAIL $name (did not run)" >>"$summary"
  fi
done
grep -q '^syslab: FAIL' "$summary" && failed=1
why="powered off"
[ "$qrc" -eq 124 ] && { why="TIMED OUT after ${timeout_secs}s"; failed=1; }
[ "$qrc" -ne 0 ] && [ "$qrc" -ne 124 ] && { why="qemu exit $qrc"; failed=1; }
[ "$crc" -eq 0 ] || { why="$why; the client guest: qemu exit $crc"; failed=1; }
# Boot times as the guest saw them: the uptime when the test unit started, per boot.
boots=$(grep -a -o 'syslab: boot [0-9]*, uptime [0-9.]*s' "$out/console.log" | sed 's/syslab: //' | tr '\n' ';' || true)

{
  echo "== installed-system lab summary, kernel $(sed -n 's/^kernel=//p' "$image/info") (total $((SECONDS - t_start))s, output in $out)"
  echo "  image ${t_image}s, package ${t_deb}s, guest ${t_boot}s ($why); ${boots:-no boot reached the test unit}"
  sed 's/^/  /' "$summary"
  # The GetManagedObjects figures on each bus (docs/PERFORMANCE.md).
  cat "$out"/checks/gmo-*.txt 2>/dev/null | grep -a '^gmo: ' | sed 's/^/  /' || true
  # rdma-managerd's start to READY=1 at boot beside the other units (docs/PERFORMANCE.md).
  grep -a '^boot: ' "$out"/checks/reboot-boot.txt 2>/dev/null | sed 's/^/  /' || true
} | tee "$out/report"
# What a failed check printed last, so that a run whose directory is gone (CI's) still says
# why: each FAIL's own output, then the waits that ran out in every check (a guest waiting on
# the other guest fails later than the cause).
for name in $(sed -n 's/^syslab: FAIL \([^ ]*\).*/\1/p' "$summary"); do
  echo "== the last lines of $name's output ($out/checks/$name.txt)"
  tail -n 25 "$out/checks/$name.txt" 2>/dev/null | cut -c1-200 | sed 's/^/  /' || echo "  (no output)"
done
if [ "$failed" -ne 0 ]; then
  echo "== waits that ran out"
  grep -a -H 'timed out after\|^FAILED:' "$out"/checks/*.txt 2>/dev/null | cut -c1-200 | sed 's/^/  /' || echo "  none"
fi
exit "$failed"
