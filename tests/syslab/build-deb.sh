#!/usr/bin/env bash
# Builds the project's Debian package the way dist/README.md says a user builds it
# (cp -r dist/debian . && dpkg-buildpackage -us -uc -b), and moves what dpkg-buildpackage
# writes to the parent directory into DIR.
#
#   tests/syslab/build-deb.sh [--out DIR]      (default target/syslab-deb)
#
# Prints the path of rdma-manager_*.deb (last line of stdout). cargo runs inside the package
# build (make build); with CARGO_TARGET_DIR set, that directory's release binaries are the
# ones installed. -d: Debian 12's rustc is older than the workspace's rust-version (1.85),
# so the build-dependency check is skipped and the toolchain on PATH is used, as
# dist/README.md says.
set -euo pipefail

SYSLAB_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(cd "$SYSLAB_DIR/../.." && pwd)
out="$REPO_DIR/target/syslab-deb"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "build-deb.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
log() { echo "syslab-deb: $*" >&2; }
die() { log "error: $*"; exit 1; }

command -v dpkg-buildpackage >/dev/null || die "dpkg-buildpackage not found: apt-get install dpkg-dev"
command -v dh >/dev/null || die "dh not found: apt-get install debhelper"

cd "$REPO_DIR"
# debian/ at the top is where dpkg-buildpackage looks (gitignored). Only a copy this script
# made is replaced: anything else there is someone's work.
if [ -e debian ] && [ ! -e debian/.syslab-copy ]; then
  die "$REPO_DIR/debian exists and was not made by this script; move it away"
fi
rm -rf debian
cp -r dist/debian debian
touch debian/.syslab-copy
# The copy goes when the script ends, also on failure.
trap 'rm -rf "$REPO_DIR/debian"' EXIT

version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
parent=$(dirname "$REPO_DIR")
t0=$SECONDS
log "dpkg-buildpackage -us -uc -b -d (rdma-manager $version, $arch)"
# make install takes the binaries from where cargo put them.
BINDIR_SRC="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release" \
  dpkg-buildpackage -us -uc -b -d >&2
log "package built in $((SECONDS - t0))s"

mkdir -p "$out"
rm -f "$out"/rdma-manager*
for f in "$parent"/rdma-manager_"${version}"_"$arch".deb "$parent"/rdma-manager-dbgsym_"${version}"_"$arch".deb \
         "$parent"/rdma-manager_"${version}"_"$arch".buildinfo "$parent"/rdma-manager_"${version}"_"$arch".changes; do
  [ -e "$f" ] && mv "$f" "$out/"
done
deb="$out/rdma-manager_${version}_${arch}.deb"
[ -f "$deb" ] || die "dpkg-buildpackage made no $deb"
dpkg-deb --contents "$deb" >&2
echo "$deb"
