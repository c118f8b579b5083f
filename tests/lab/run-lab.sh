#!/usr/bin/env bash
# Kernel lab: boot Debian's real kernels under QEMU (TCG) with Soft-RoCE (rdma_rxe) over a
# veth pair, run the project's scenario runner inside, and collect its output; with
# --daemon-bin, then run rdma-managerd on a real system bus in the guest and check it (with
# --tui-bin also rdma-tui --ibstat against the real ibstat).
# Usage: tests/lab/run-lab.sh --scenario-bin PATH [--daemon-bin PATH [--tui-bin PATH]]
#          [--kernels "6.1 6.12"] [--out DIR] [--compare-with FILE] [--timeout SECS] [--apt-update]
#          [--no-daemon-checks] [--mem MB] [--append "KERNEL ARGS"] [--with-perf] [--extra-bin PATH]...
# See tests/lab/README.md.
set -euo pipefail
shopt -s inherit_errexit
trap 'printf "[lab] ERROR: command failed (line %s): %s\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$LAB_DIR/../.." && pwd)
WORK="${LAB_WORK:-$LAB_DIR/work}"

PACKAGES=(qemu-system-x86 busybox-static cpio xz-utils kmod iproute2 ethtool
          infiniband-diags ibverbs-utils ibverbs-providers)
# Only with --daemon-bin: the system bus (dbus-daemon and Debian's system.conf) and busctl.
DAEMON_PACKAGES=(dbus-daemon dbus-system-bus-common systemd polkitd)
# Roots of the module set, in load order. Hard dependencies are added from modules.dep;
# crc32_generic is a soft dependency of rdma_rxe (requested through the crypto API), so it
# stays explicit. nlmon lets the scenarios compare their netlink requests with iproute2's and ethtool's.
# Modules marked ? are optional.
MODULES=(configfs udp_tunnel ip6_udp_tunnel crc32_generic veth dummy ib_core ib_uverbs
         iw_cm ib_cm rdma_cm rdma_ucm rdma_rxe ib_umad ib_ipoib? nlmon)
# Tools from the host copied into the guest: guest path = host program.
GUEST_TOOLS=(/usr/sbin/ip=ip /usr/sbin/rdma=rdma /usr/sbin/dcb=dcb /usr/sbin/devlink=devlink
             /usr/sbin/ethtool=ethtool
             /usr/sbin/ibstat=ibstat
             /usr/sbin/ibstatus=ibstatus /usr/bin/ibv_devices=ibv_devices
             /usr/bin/ibv_devinfo=ibv_devinfo)

scenario_bin=""
daemon_bin=""
tui_bin=""
kernels="6.1 6.12"
out_dir="$WORK/out"
compare_with=""
timeout_secs=300
force_update=0
daemon_checks=1
mem_mb=1024
append=""
with_perf=0
extra_bins=()

log()  { printf '[lab] %s\n' "$*" >&2; }
die()  { printf '[lab] ERROR: %s\n' "$*" >&2; exit 1; }
usage() {
  sed -n 's/^# \{0,1\}//; 6,8p' "${BASH_SOURCE[0]}" >&2
  exit "${1:-2}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --scenario-bin) [ $# -ge 2 ] || usage; scenario_bin=$2; shift 2 ;;
    --daemon-bin)   [ $# -ge 2 ] || usage; daemon_bin=$2; shift 2 ;;
    --tui-bin)      [ $# -ge 2 ] || usage; tui_bin=$2; shift 2 ;;
    --kernels)      [ $# -ge 2 ] || usage; kernels=$2; shift 2 ;;
    --out)          [ $# -ge 2 ] || usage; out_dir=$2; shift 2 ;;
    --compare-with) [ $# -ge 2 ] || usage; compare_with=$2; shift 2 ;;
    --timeout)      [ $# -ge 2 ] || usage; timeout_secs=$2; shift 2 ;;
    --apt-update)   force_update=1; shift ;;
    --no-daemon-checks) daemon_checks=0; shift ;;
    --mem)          [ $# -ge 2 ] || usage; mem_mb=$2; shift 2 ;;
    --append)       [ $# -ge 2 ] || usage; append=$2; shift 2 ;;
    --with-perf)    with_perf=1; shift ;;
    --extra-bin)    [ $# -ge 2 ] || usage; extra_bins+=("$2"); shift 2 ;;
    -h|--help)      usage 0 ;;
    *)              printf '[lab] unknown argument: %s\n' "$1" >&2; usage ;;
  esac
done

[ -n "$scenario_bin" ] || { log "--scenario-bin is required"; usage; }
if [ ! -f "$scenario_bin" ] || [ ! -x "$scenario_bin" ]; then
  die "scenario binary not executable: $scenario_bin"
fi
scenario_bin=$(readlink -f "$scenario_bin")
if [ -n "$daemon_bin" ]; then
  if [ ! -f "$daemon_bin" ] || [ ! -x "$daemon_bin" ]; then
    die "daemon binary not executable: $daemon_bin"
  fi
  daemon_bin=$(readlink -f "$daemon_bin")
  PACKAGES+=("${DAEMON_PACKAGES[@]}")
fi
[ "$with_perf" -eq 0 ] || PACKAGES+=(linux-perf)
if [ -n "$tui_bin" ]; then
  [ -n "$daemon_bin" ] || die "--tui-bin needs --daemon-bin (rdma-tui reads the daemon's objects)"
  if [ ! -f "$tui_bin" ] || [ ! -x "$tui_bin" ]; then
    die "rdma-tui binary not executable: $tui_bin"
  fi
  tui_bin=$(readlink -f "$tui_bin")
fi
for i in "${!extra_bins[@]}"; do
  b=${extra_bins[$i]}
  [ -f "$b" ] && [ -x "$b" ] || die "--extra-bin not executable: $b"
  extra_bins[$i]=$(readlink -f "$b")
done
if [ -n "$compare_with" ]; then
  [ -f "$compare_with" ] || die "--compare-with file not found: $compare_with"
  compare_with=$(readlink -f "$compare_with")
fi
case "$timeout_secs" in ''|*[!0-9]*) die "--timeout needs a number of seconds" ;; esac
read -r -a kernel_list <<<"$kernels"
[ "${#kernel_list[@]}" -gt 0 ] || die "--kernels is empty"

t_start=$SECONDS
mkdir -p "$WORK/debs" "$WORK/kernels" "$WORK/initramfs" "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

# ---------------------------------------------------------------- apt
apt_updated=0
apt_update_once() {
  [ "$apt_updated" -eq 0 ] || return 0
  apt_updated=1
  if [ "$(id -u)" -ne 0 ]; then
    log "not root: skipping apt-get update"
    return 0
  fi
  log "apt-get update"
  apt-get update -qq >&2 || die "apt-get update failed"
}

pkg_installed() {
  dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "prerequisites present"
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}): run as root or install them"
  apt_update_once
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
    || die "apt-get install failed"
}

# Package-name pattern for a kernel series.
series_regex() {
  case "$1" in
    6.1)  echo '^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
    6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
    *)    local s=${1//./\\.}
          echo "^linux-image-${s}\.[0-9]+(-[0-9]+)?(\+deb[0-9]+)?-amd64(-unsigned)?\$" ;;
  esac
}

# Newest package of a series that apt can provide (has a candidate version).
discover_pkg() {
  local re name cand
  re=$(series_regex "$1")
  while read -r name; do
    cand=$(apt-cache policy "$name" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
    if [ -n "$cand" ] && [ "$cand" != "(none)" ]; then
      printf '%s %s\n' "$name" "$cand"
      return 0
    fi
  done < <(apt-cache search --names-only "$re" 2>/dev/null | awk '{print $1}' | sort -rV)
  return 1
}

# Sets FETCHED_DEB to the path of a cached .deb for kernel $1 (series or exact package name).
FETCHED_DEB=""
fetch_kernel() {
  local spec=$1 name ver deb tmp
  local found=""
  if [[ "$spec" == linux-image-* ]]; then
    name=$spec
    ver=$(apt-cache policy "$name" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] && found="$name $ver"
  else
    found=$(discover_pkg "$spec") || found=""
    if [ -z "$found" ] && [ "$apt_updated" -eq 0 ]; then
      apt_update_once
      found=$(discover_pkg "$spec") || found=""
    fi
  fi
  if [ -z "$found" ]; then
    # Offline fallback: newest cached package of this series.
    local re cached="" f b
    re=$(series_regex "$spec")
    for f in "$WORK"/debs/*.deb; do
      [ -e "$f" ] || continue
      b=$(basename "$f")
      if [[ "${b%%_*}" =~ $re ]] || [ "${b%%_*}" = "$spec" ]; then
        cached=$(printf '%s\n%s\n' "$cached" "$b" | sed '/^$/d' | sort -V | tail -n 1)
      fi
    done
    [ -n "$cached" ] || { log "no package found for kernel '$spec'"; return 1; }
    log "apt knows no package for '$spec'; using cached $cached"
    FETCHED_DEB="$WORK/debs/$cached"
    return 0
  fi
  read -r name ver <<<"$found"
  deb="$WORK/debs/${name}_${ver//:/%3a}_amd64.deb"
  if [ -s "$deb" ]; then
    log "kernel $spec: $name $ver (cached)"
  else
    log "kernel $spec: downloading $name $ver"
    tmp=$(mktemp -d "$WORK/debs/.dl.XXXXXX") || return 1
    local sandbox=()
    [ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)
    if ! (cd "$tmp" && apt-get download -qq "${sandbox[@]}" "$name=$ver" >&2); then
      rm -rf "$tmp"
      if [ "$apt_updated" -eq 0 ]; then
        apt_update_once
        fetch_kernel "$spec"
        return
      fi
      log "apt-get download $name=$ver failed"
      return 1
    fi
    mv "$tmp"/*.deb "$deb" || return 1
    rm -rf "$tmp"
  fi
  FETCHED_DEB=$deb
}

# Extracts a .deb once; prints the extraction root.
extract_kernel() {
  local deb=$1 dir tmp
  dir="$WORK/kernels/$(basename "$deb" .deb)"
  if [ ! -f "$dir/.extracted" ]; then
    log "extracting $(basename "$deb")"
    rm -rf "$dir"
    tmp=$(mktemp -d "$WORK/kernels/.x.XXXXXX")
    dpkg-deb -x "$deb" "$tmp"
    mv "$tmp" "$dir"
    touch "$dir/.extracted"
  fi
  echo "$dir"
}

# ---------------------------------------------------------------- initramfs
# Copies a host file (following symlinks) to the same or a given path in the image.
copy_file() {
  local src=$1 dst=$2 root=$3
  mkdir -p "$root$(dirname "$dst")"
  cp -L --preserve=mode "$src" "$root$dst"
}

# Copies the shared libraries a dynamically linked program needs (as listed by ldd).
copy_libs() {
  local bin=$1 root=$2 line lib
  # ldd fails on static binaries and scripts: nothing to copy then.
  local out
  out=$(ldd "$bin" 2>/dev/null) || return 0
  while read -r line; do
    lib=""
    case "$line" in
      *"=> not found"*) die "$bin: library not found on the host: $line" ;;
      *" => /"*) lib=${line#* => }; lib=${lib%% (*} ;;
      /*) lib=${line%% (*} ;;
    esac
    [ -n "$lib" ] || continue
    [ -e "$root$lib" ] || copy_file "$lib" "$lib" "$root"
  done <<<"$out"
}

copy_program() {
  local host=$1 guest=$2 root=$3
  copy_file "$host" "$guest" "$root"
  copy_libs "$host" "$root"
}

# Like copy_program, without the debug info (the release profile keeps it: ten times the
# size, and the guest has no use for it). Scripts and programs strip refuses stay as they are.
copy_stripped() {
  copy_program "$1" "$2" "$3"
  if command -v strip >/dev/null; then strip --strip-debug "$3$2" 2>/dev/null || true; fi
}

host_tool() {
  local p
  p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$1") || die "tool '$1' not found on the host"
  echo "$p"
}

# Writes the ordered module list (dependencies first) of kernel tree $1/$2 to stdout.
resolve_modules() {
  local kroot=$1 rel=$2
  local mdir="$kroot/lib/modules/$rel"
  awk -v wanted="${MODULES[*]}" -v builtin_file="$mdir/modules.builtin" '
    function norm(p,   n) { n = p; sub(/.*\//, "", n); sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", n); gsub(/-/, "_", n); return n }
    function visit(m, optional,   i, n, d) {
      if (m in done) return 1
      if (m in builtin) { done[m] = 1; print "# builtin " m; return 1 }
      if (!(m in path)) {
        if (optional) { print "# absent " m; return 1 }
        print "MISSING " m; return 0
      }
      done[m] = 1
      n = split(deps[m], d, " ")
      for (i = 1; i <= n; i++) if (!visit(norm(d[i]), 0)) return 0
      print path[m]
      return 1
    }
    FILENAME == builtin_file { builtin[norm($0)] = 1; next }
    {
      m = $1; sub(/:$/, "", m); name = norm(m)
      path[name] = m
      deps[name] = ""
      for (i = 2; i <= NF; i++) deps[name] = deps[name] " " $i
    }
    END {
      n = split(wanted, w, " ")
      for (i = 1; i <= n; i++) {
        opt = (w[i] ~ /\?$/); m = w[i]; sub(/\?$/, "", m)
        if (!visit(m, opt)) exit 1
      }
    }' "$mdir/modules.builtin" "$mdir/modules.dep"
}

write_init() {
  cat >"$1" <<'EOF'
#!/bin/sh
# rdma-manager kernel lab init (generated by tests/lab/run-lab.sh)
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
dmesg -n 1
mkdir -p /dev/pts /dev/shm /tmp /run /root
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

finish() {
  echo "LAB-EXIT $1" >/dev/ttyS1
  sync
  sleep 1
  poweroff -f
}
fail() {
  echo "lab-init: $*" >&2
  finish 250
}

# Output post-processing off: the transcript must be byte-exact (no CR before LF).
stty -F /dev/ttyS1 raw -echo || fail "stty on /dev/ttyS1"

# Each line: <module path> <required|optional> [parameters...]
while read -r mod need params; do
  case "$mod" in ''|'#'*) continue ;; esac
  # shellcheck disable=SC2086
  if ! insmod "$mod" $params; then
    [ "$need" = optional ] && { echo "lab-init: optional module $mod not loaded" >&2; continue; }
    fail "insmod $mod failed"
  fi
done </etc/lab-modules
mount -t configfs configfs /sys/kernel/config || fail "mount configfs"

ip link set lo up || fail "lo up"
ip link add veth0 address 02:00:00:00:00:01 type veth peer name veth1 address 02:00:00:00:00:02 \
  || fail "veth pair"
ip link set veth0 up || fail "veth0 up"
ip link set veth1 up || fail "veth1 up"

echo "lab-init: $(uname -r) ready, running scenarios" >&2
/bin/rdma-lab-scenarios real >/dev/ttyS1
status=$?
# The daemon phase (with --daemon-bin): its lines go to the console, never to ttyS1. A failure
# there turns a passing run into LAB-EXIT 240.
if [ -x /bin/lab-daemon-checks ]; then
  echo "lab-init: scenario runner exit $status, starting the daemon phase" >&2
  if ! /bin/lab-daemon-checks; then
    echo "lab-init: daemon checks failed" >&2
    [ "$status" -ne 0 ] || status=240
  fi
fi
finish $status
EOF
  chmod 0755 "$1"
}

build_initramfs() {
  local kroot=$1 rel=$2 img=$3
  local root="$WORK/initramfs/$rel"
  local mdir="$kroot/lib/modules/$rel"
  rm -rf "$root"
  mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,root,etc,usr/bin,usr/sbin,lib/modules}

  # Module dependency data: Debian's packages do not ship modules.dep (depmod runs in
  # postinst), so generate it in the extracted tree once.
  if [ ! -s "$mdir/modules.dep" ]; then
    depmod -b "$kroot" "$rel" || die "depmod failed for $rel"
  fi
  local order
  order=$(resolve_modules "$kroot" "$rel" || true)
  if grep -q '^MISSING' <<<"$order"; then
    die "$rel: required module not found: $(grep '^MISSING' <<<"$order" | tr '\n' ' ')"
  fi
  : >"$root/etc/lab-modules"
  local rp name gdst need params
  while read -r rp; do
    case "$rp" in
      '# builtin '*|'# absent '*) log "  $rel: ${rp#\# }"; continue ;;
    esac
    name=$(basename "$rp"); name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
    gdst="/lib/modules/$rel/$(dirname "$rp")/$name"
    mkdir -p "$root$(dirname "$gdst")"
    case "$rp" in
      *.ko.xz)  xz -dc "$mdir/$rp" >"$root$gdst" ;;
      *.ko.zst) zstd -qdc "$mdir/$rp" >"$root$gdst" ;;
      *.ko.gz)  gzip -dc "$mdir/$rp" >"$root$gdst" ;;
      *.ko)     cp "$mdir/$rp" "$root$gdst" ;;
      *)        die "unexpected module path $rp" ;;
    esac
    need=required
    [ "${name%.ko}" = ib_ipoib ] && need=optional
    params=""
    # No dummy0 with a random MAC: the guest's netdevs stay exactly lo, veth0, veth1.
    [ "${name%.ko}" = dummy ] && params="numdummies=0"
    printf '%s %s %s\n' "$gdst" "$need" "$params" >>"$root/etc/lab-modules"
  done <<<"$order"
  cp "$mdir"/modules.builtin "$mdir"/modules.order "$root/lib/modules/$rel/" 2>/dev/null || true
  log "  $rel modules: $(awk '{n=$1; sub(/.*\//,"",n); sub(/\.ko$/,"",n); printf "%s ", n}' "$root/etc/lab-modules")"

  # busybox (static) and the tools, with their libraries.
  cp "$(host_tool busybox)" "$root/bin/busybox"
  file_is_static "$root/bin/busybox" || die "busybox is not static: install busybox-static"
  # /bin/sh is Debian's dash, not busybox: busybox-static's shell runs its own applets before
  # PATH (so `sh -c "ip ..."` would get busybox ip, which cannot make veth pairs). Commands
  # that busybox provides but the host tools do not stay busybox applets in /bin.
  copy_program "$(readlink -f /bin/sh)" /bin/sh "$root"
  ln -s /usr/sbin/ip "$root/bin/ip"   # before --install, which never overwrites
  local t guest host
  for t in "${GUEST_TOOLS[@]}"; do
    guest=${t%%=*}; host=$(host_tool "${t#*=}")
    copy_program "$host" "$guest" "$root"
  done
  # Convenience aliases so either location works.
  ln -s ../sbin/ip "$root/usr/bin/ip"
  ln -s ../sbin/rdma "$root/usr/bin/rdma"
  # libibverbs loads its providers with dlopen: ldd cannot see them.
  cp -a /etc/libibverbs.d "$root/etc/"
  local pdir=/usr/lib/x86_64-linux-gnu/libibverbs p
  [ -d "$pdir" ] || pdir=/lib/x86_64-linux-gnu/libibverbs
  for p in "$pdir"/*.so; do copy_program "$p" "$p" "$root"; done
  copy_stripped "$scenario_bin" /bin/rdma-lab-scenarios "$root"
  # The host's perf (linux-perf), for a profile of the guest (rdma-lab-scale's idle runs):
  # opt-in, its libraries add about 24 MB to the image.
  if [ "$with_perf" -eq 1 ]; then
    copy_program "$(host_tool perf)" /usr/bin/perf "$root"
  fi
  # Programs a scenario runs beside the daemon (rdma-lab-scale's exporter comparison:
  # rdma-exporter and Debian's prometheus-node-exporter), as /usr/bin/NAME.
  local x
  for x in "${extra_bins[@]}"; do
    copy_program "$x" "/usr/bin/$(basename "$x")" "$root"
  done
  [ -e "$root/lib64/ld-linux-x86-64.so.2" ] || copy_file /lib64/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2 "$root"

  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\n' >"$root/etc/group"
  [ -z "$daemon_bin" ] || add_daemon_phase "$root"
  write_init "$root/init"

  (cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) | gzip -1 >"$img.tmp"
  mv "$img.tmp" "$img"
}

# The daemon phase: rdma-managerd, a system bus (dbus-daemon with Debian's system.conf and the
# service's bus policy), busctl, and the checks /init runs after the scenario runner.
add_daemon_phase() {
  local root=$1
  copy_stripped "$daemon_bin" /usr/sbin/rdma-managerd "$root"
  # rdma-tui --ibstat is compared with ibstat by the checks when it is there.
  [ -z "$tui_bin" ] || copy_stripped "$tui_bin" /usr/bin/rdma-tui "$root"
  copy_program "$(host_tool dbus-daemon)" /usr/bin/dbus-daemon "$root"
  copy_program "$(host_tool busctl)" /usr/bin/busctl "$root"
  copy_file /usr/share/dbus-1/system.conf /usr/share/dbus-1/system.conf "$root"
  local policy=/usr/share/dbus-1/system.d/org.rdmamanager.RdmaManager1.conf
  if [ -f "$REPO_DIR/dist/dbus/org.rdmamanager.RdmaManager1.conf" ]; then
    copy_file "$REPO_DIR/dist/dbus/org.rdmamanager.RdmaManager1.conf" "$policy" "$root"
  else
    # Not in this tree yet: the same policy, minimal. Only root owns the name; anyone may
    # call the service and receive its signals (polkit decides inside the daemon).
    mkdir -p "$root$(dirname "$policy")"
    cat >"$root$policy" <<'EOF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root">
    <allow own="org.rdmamanager.RdmaManager1"/>
  </policy>
  <policy context="default">
    <allow send_destination="org.rdmamanager.RdmaManager1"/>
    <allow receive_sender="org.rdmamanager.RdmaManager1"/>
  </policy>
</busconfig>
EOF
  fi
  # dbus-daemon --system drops to the messagebus user; D-Bus wants a machine id. zbus looks
  # for the system bus at /var/run/dbus/system_bus_socket.
  printf 'messagebus:x:100:101::/nonexistent:/usr/sbin/nologin\n' >>"$root/etc/passwd"
  printf 'messagebus:x:101:\n' >>"$root/etc/group"
  printf '6c61622d6461656d6f6e2d6d61636869\n' >"$root/etc/machine-id"
  # polkitd decides every change the checks make (root is authorized by polkit itself): its
  # bus policy, the project's actions, and the polkitd user it drops to.
  copy_program /usr/lib/polkit-1/polkitd /usr/lib/polkit-1/polkitd "$root"
  copy_file /usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf \
    /usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf "$root"
  copy_file "$REPO_DIR/dist/polkit/org.rdmamanager.rdmamanager1.policy" \
    /usr/share/polkit-1/actions/org.rdmamanager.rdmamanager1.policy "$root"
  mkdir -p "$root/etc/polkit-1/rules.d" "$root/usr/share/polkit-1/rules.d" "$root/var/lib/polkit-1"
  printf 'polkitd:x:996:996:polkit:/nonexistent:/usr/sbin/nologin\n' >>"$root/etc/passwd"
  printf 'polkitd:x:996:\n' >>"$root/etc/group"
  mkdir -p "$root/var"
  ln -s ../run "$root/var/run"
  # --no-daemon-checks: the daemon's files only, for a scenario program that runs the
  # daemon itself (rdma-lab-scale).
  [ "$daemon_checks" -eq 1 ] || return 0
  cp "$LAB_DIR/guest-daemon-checks.sh" "$root/bin/lab-daemon-checks"
  chmod 0755 "$root/bin/lab-daemon-checks"
}

file_is_static() {
  ! ldd "$1" >/dev/null 2>&1
}

# ---------------------------------------------------------------- boot
summary=()
failed=0
ran_releases=()

# Runs one kernel. Records the result in summary/failed/ran_releases; returns 0 unless the
# script itself is broken (then set -e stops everything).
run_kernel() {
  local spec=$1 deb kroot rel vmlinuz img raw transcript console t0 status
  t0=$SECONDS
  if ! fetch_kernel "$spec"; then
    log "kernel $spec: could not be fetched"
    summary+=("$spec: FETCH FAILED")
    failed=1
    return 0
  fi
  deb=$FETCHED_DEB
  kroot=$(extract_kernel "$deb")
  local mods=("$kroot"/lib/modules/*/modules.order)
  [ -f "${mods[0]}" ] || die "no lib/modules/<release>/modules.order in $deb"
  rel=$(basename "$(dirname "${mods[0]}")")
  vmlinuz="$kroot/boot/vmlinuz-$rel"
  [ -f "$vmlinuz" ] || die "no $vmlinuz"
  img="$WORK/initramfs/$rel.cpio.gz"
  log "kernel $rel: building initramfs"
  build_initramfs "$kroot" "$rel" "$img"
  log "kernel $rel: initramfs $(du -h "$img" | cut -f1), $((SECONDS - t0)) s so far"

  raw="$out_dir/$rel.ttyS1"
  transcript="$out_dir/$rel.transcript"
  console="$out_dir/$rel.console.log"
  rm -f "$raw" "$transcript" "$console"
  : >"$raw"
  local tb=$SECONDS qrc=0
  log "kernel $rel: booting (timeout ${timeout_secs}s)"
  timeout -k 10 "$timeout_secs" qemu-system-x86_64 \
    -accel tcg -cpu max,la57=off -m "$mem_mb" -smp 2 \
    -kernel "$vmlinuz" -initrd "$img" \
    -append "console=ttyS0 quiet loglevel=1 panic=-1${append:+ $append}" \
    -nographic -no-reboot -nic none -monitor none \
    -serial stdio -serial "file:$raw" \
    </dev/null >"$console" 2>&1 || qrc=$?
  local boot_s=$((SECONDS - tb))

  local last
  last=$(tail -n 1 "$raw")
  if [[ "$last" =~ LAB-EXIT\ ([0-9]+)$ ]] && [ "$(tail -c 1 "$raw" | od -An -tx1 | tr -d ' ')" = 0a ]; then
    status=${BASH_REMATCH[1]}
    # Strip exactly "LAB-EXIT <status>\n"; anything before it on that line stays.
    head -c -"$(( ${#status} + 10 ))" "$raw" >"$transcript"
    rm -f "$raw"
  else
    cp "$raw" "$transcript"
    rm -f "$raw"
    local why="qemu exit $qrc"
    [ "$qrc" -eq 124 ] && why="timed out after ${timeout_secs}s"
    log "kernel $rel: guest did not reach LAB-EXIT ($why); see $console"
    summary+=("$rel: NO LAB-EXIT ($why), total $((SECONDS - t0))s")
    failed=1
    daemon_summary "$rel" "$console"
    return 0
  fi
  ran_releases+=("$rel")
  local lines
  lines=$(wc -l <"$transcript")
  summary+=("$rel: LAB-EXIT $status, transcript $lines lines, boot+run ${boot_s}s, total $((SECONDS - t0))s")
  log "kernel $rel: LAB-EXIT $status after ${boot_s}s"
  if [ "$status" -eq 240 ] && [ -n "$daemon_bin" ]; then
    failed=1   # the scenarios passed; daemon_summary reports the failed checks
  elif [ "$status" -ne 0 ]; then
    failed=1
    log "kernel $rel: scenario runner failed (status $status); see $console"
  fi
  daemon_summary "$rel" "$console"
  return 0
}

# With --daemon-bin: the daemon phase's check lines from the console log of kernel $1. No
# line at all counts as a failure (the phase did not run).
daemon_summary() {
  [ -n "$daemon_bin" ] && [ "$daemon_checks" -eq 1 ] || return 0
  local rel=$1 console=$2 lines n_ok n_fail
  lines=$(grep -a 'lab-daemon: \(ok\|FAIL\) ' "$console" | tr -d '\r' || true)
  n_ok=$(grep -c 'lab-daemon: ok ' <<<"$lines" || true)
  n_fail=$(grep -c 'lab-daemon: FAIL ' <<<"$lines" || true)
  summary+=("$rel: daemon checks $n_ok ok, $n_fail FAIL")
  while read -r line; do
    [ -n "$line" ] && summary+=("  ${line#*lab-daemon: }")
  done < <(grep 'lab-daemon: FAIL ' <<<"$lines" || true)
  if [ "$n_fail" -gt 0 ] || [ "$n_ok" -eq 0 ]; then
    failed=1
    log "kernel $rel: daemon checks failed; see $console"
  fi
}

# ---------------------------------------------------------------- main
if [ "$force_update" -eq 1 ]; then apt_update_once; fi
ensure_packages

for k in "${kernel_list[@]}"; do
  run_kernel "$k"
done

if [ -n "$compare_with" ]; then
  for rel in "${ran_releases[@]}"; do
    if diff -u --label "simulated: $compare_with" --label "real: $rel" \
         "$compare_with" "$out_dir/$rel.transcript"; then
      summary+=("$rel: transcript identical to $compare_with")
    else
      summary+=("$rel: transcript DIFFERS from $compare_with")
      failed=1
    fi
  done
fi

echo "== kernel lab summary (total $((SECONDS - t_start))s, output in $out_dir)"
for s in "${summary[@]}"; do echo "  $s"; done
exit "$failed"
