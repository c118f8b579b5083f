#!/usr/bin/env bash
# Builds the installed-system lab's guest: a Debian 12 (bookworm) root file system made with
# mmdebstrap, turned into a raw ext4 disk image with mkfs.ext4 -d (no loop mount), plus the
# kernel and initrd taken out of it. The result is cached under a key that hashes this script
# and its overlay (tests/syslab/overlay/), so a later run with the same inputs restores it in
# no time. See tests/syslab/README.md.
#
#   tests/syslab/build-image.sh [--cache DIR] [--kernel 6.1|6.12] [--force]
#
# --kernel: 6.1 (default) is bookworm's linux-image-amd64; 6.12 the newest
# linux-image-6.12.NNN+deb12-amd64-unsigned apt knows. Prints the directory that holds
# base.img, vmlinuz, initrd.img and info (last line of stdout). Needs root (mmdebstrap --mode=root) and, on the first run, the Debian mirror.
set -euo pipefail

SYSLAB_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(cd "$SYSLAB_DIR/../.." && pwd)
cache="$REPO_DIR/target/syslab-cache"
force=0
kernel=6.1
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

log() { echo "syslab-image: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap --mode=root, mkfs.ext4 -d of root-owned files)"

case "$kernel" in
  6.1) kernel_pkg=linux-image-amd64 ;;
  6.12)
    # The newest 6.12 apt knows (the name changes with every upload); a new one is a new image.
    kernel_pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' \
      | cut -d' ' -f1 | sort -V | tail -n 1)
    [ -n "$kernel_pkg" ] || die "apt knows no linux-image-6.12.*+deb12-amd64-unsigned (apt-get update?)"
    ;;
  *) die "--kernel: 6.1 or 6.12, not $kernel" ;;
esac

# Only what the image is made from goes into the key: this script, the overlay (names,
# modes and contents) and the kernel package. The check scripts travel on the 9p share and
# do not rebuild the image.
key=$(cd "$SYSLAB_DIR" && {
  echo "$kernel_pkg"
  sha256sum build-image.sh
  find overlay -type f -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%a %n'
  find overlay -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
} | sha256sum | cut -c1-16)
cache="$cache/$kernel"
dest="$cache/$key"
if [ "$force" -eq 0 ] && [ -f "$dest/done" ]; then
  log "cached image $dest"
  echo "$dest"
  exit 0
fi

for t in mmdebstrap mkfs.ext4; do
  command -v "$t" >/dev/null || PATH=/usr/sbin:/sbin:$PATH command -v "$t" >/dev/null \
    || die "$t not found: apt-get install mmdebstrap e2fsprogs"
done
export PATH=/usr/sbin:/sbin:$PATH

mkdir -p "$cache"
tmp="$cache/$key.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
rootfs="$tmp/rootfs"
t0=$SECONDS

# dbus-broker is installed for the last phases of the checks, which make it the system bus
# and measure through it; its postinst enables it (Alias=dbus.service), which would make it
# the bus from the first boot: the hooks below disable it, so phases 1 to 3 run on
# dbus-daemon, Debian's default.
# ansible-core and OpenSSH: the first guest drives both guests with the project's Ansible
# collection (guest-checks.sh, `ansible`); root's key below is authorized on every guest of
# this image, so the first reaches the second over their wire.
# netplan.io: the IP settings check (`ip-managers`) drives the daemon under netplan, whose
# D-Bus service is activated on the system bus; nothing in /etc/netplan until then.
packages=systemd,systemd-sysv,udev,dbus,dbus-broker,polkitd,iproute2,kmod,procps,rdma-core,ibverbs-utils,ibverbs-providers,infiniband-diags,rdmacm-utils,perftest,iputils-ping,network-manager,netplan.io,nfs-kernel-server,$kernel_pkg,initramfs-tools,tmux,ansible-core,openssh-server,openssh-client
# Units that cost boot time and do nothing here. systemd-firstboot would prompt on the
# serial console (every run is a first boot: the machine id is generated at boot).
mask="e2scrub_reap.service e2scrub_all.timer NetworkManager-wait-online.service apt-daily.timer
  apt-daily-upgrade.timer fstrim.timer getty@tty1.service systemd-binfmt.service
  proc-sys-fs-binfmt_misc.automount systemd-firstboot.service man-db.timer"

mirror=http://deb.debian.org/debian
log "mmdebstrap bookworm into $rootfs"
# Docs, man pages and locales are left out while building (size and time); the exclusion
# is removed at the end so that the package under test installs all of its files.
mmdebstrap --variant=minbase --mode=root \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --include="$packages" \
  --customize-hook="sync-in '$SYSLAB_DIR/overlay' /" \
  --customize-hook='chmod 0600 "$1"/etc/NetworkManager/system-connections/*.nmconnection' \
  --customize-hook='chmod 0755 "$1"/usr/local/sbin/syslab-boot' \
  --customize-hook="chroot \"\$1\" systemctl mask $(echo $mask)" \
  --customize-hook='chroot "$1" systemctl enable syslab.service' \
  --customize-hook='chroot "$1" systemctl disable dbus-broker.service' \
  --customize-hook='chroot "$1" systemctl --global disable dbus-broker.service' \
  --customize-hook='chroot "$1" passwd -d root' \
  --customize-hook='mkdir -p -m 0700 "$1"/root/.ssh' \
  --customize-hook='chroot "$1" ssh-keygen -q -t ed25519 -N "" -C syslab -f /root/.ssh/id_ed25519' \
  --customize-hook='cp "$1"/root/.ssh/id_ed25519.pub "$1"/root/.ssh/authorized_keys' \
  --customize-hook='rm -f "$1"/etc/dpkg/dpkg.cfg.d/99mmdebstrap' \
  bookworm "$rootfs" \
  "deb $mirror bookworm main" \
  "deb $mirror bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main" >&2
t_debootstrap=$((SECONDS - t0))

vmlinuz=$(ls "$rootfs"/boot/vmlinuz-* | sort -V | tail -n 1)
release=${vmlinuz##*/vmlinuz-}
[ -f "$rootfs/boot/initrd.img-$release" ] || die "no initrd.img-$release in the rootfs"
cp "$vmlinuz" "$tmp/vmlinuz"
cp "$rootfs/boot/initrd.img-$release" "$tmp/initrd.img"
rootfs_mib=$(du -sm "$rootfs" | cut -f1)
npkg=$(chroot "$rootfs" dpkg-query -W -f='.\n' | wc -l)

t1=$SECONDS
mkfs.ext4 -q -F -L syslab -d "$rootfs" "$tmp/base.img" 3G
t_mkfs=$((SECONDS - t1))
rm -rf "$rootfs"
{
  echo "key=$key"
  echo "kernel=$release"
  echo "packages=$npkg"
  echo "rootfs_mib=$rootfs_mib"
  echo "mmdebstrap_s=$t_debootstrap"
  echo "mkfs_s=$t_mkfs"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$tmp/info"
touch "$tmp/done"
rm -rf "$dest"
mv "$tmp" "$dest"
# Older keys are images of older scripts or kernels of this series: keep only this one.
for d in "$cache"/*; do
  [ "$d" = "$dest" ] || rm -rf "$d"
done
log "built $dest in $((SECONDS - t0))s (kernel $release, $npkg packages, rootfs ${rootfs_mib} MiB, mmdebstrap ${t_debootstrap}s, mkfs ${t_mkfs}s)"
echo "$dest"
