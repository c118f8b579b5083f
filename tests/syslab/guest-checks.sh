#!/bin/bash
# The installed-system lab's checks, run inside the guest by syslab.service (through
# /usr/local/sbin/syslab-boot) from the 9p share, as root, once per boot:
#
#   guest-checks.sh PHASE
#
# Phase 1 (first boot): install the package as a user does, then drive everything through
# the system bus (busctl), udev and systemd. Phase 2 (after a real reboot): check what the
# daemon re-applied at boot before anyone calls it. Each check writes a transcript
# out/NAME.txt and a line "syslab: ok NAME" or "syslab: FAIL NAME" to out/summary and the
# console. Exit 100 asks syslab-boot for a reboot, 0 for power off: after phase 4, or after
# phase N when run.sh put syslab.boots=N on the command line (--boots N).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
phase=${1:?phase}
share=$(cd "$(dirname "$0")" && pwd)
# The second guest of a two-guest run (run.sh boots it with syslab.role=nfs-client) is the NFS
# client; the first is everything else, and the NFS server.
role=main
grep -qw 'syslab.role=nfs-client' /proc/cmdline && role=nfs-client
out=$share/out
[ "$role" = main ] || out=$share/out-$role
# The reboot into the next phase, or power off when this boot is the run's last.
next_boot() {
  if grep -qw "syslab.boots=$phase" /proc/cmdline; then
    exit 0
  fi
  exit 100
}
# Rendezvous of the two guests (files on the shared directory); absent in a one-guest run.
rdv=$share/rdv
mkdir -p "$out"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat LC_ALL=C.UTF-8

BUS=org.rdmamanager.RdmaManager1
ROOT=/org/rdmamanager/RdmaManager1
HOSTOBJ=$ROOT/Host
HOSTIF=$BUS.Host
USER_NAME=rdmauser
# A module commented out in rdma-core's /etc/rdma/modules/rdma.conf on Debian, which nothing else loads: enabled
# through the daemon in phase 1, it must be loaded by rdma-load-modules@rdma after the reboot.
MODULE=${SYSLAB_MODULE:-rds_rdma}
# The settings phase 1 makes and phase 2 expects back.
TOS=106

failures=0
summary() {
  echo "$1" >>"$out/summary"
  echo "$1" >/dev/console
}
# check NAME FUNCTION: runs FUNCTION in a subshell with its output in out/NAME.txt; a
# non-zero exit (or `fail`, which exits the subshell) fails it.
check() {
  local name=$1 fn=$2 rc=0 t0=$SECONDS
  (
    echo "## $name (phase $phase, boot $(cat /proc/sys/kernel/random/boot_id), uptime $(cut -d' ' -f1 /proc/uptime)s)"
    "$fn"
  ) >"$out/$name.txt" 2>&1 || rc=$?
  echo "## exit $rc after $((SECONDS - t0))s" >>"$out/$name.txt"
  if [ "$rc" -eq 0 ]; then summary "syslab: ok $name"; else summary "syslab: FAIL $name"; failures=$((failures + 1)); fi
}
# run CMD...: prints the command, then runs it (its output lands in the transcript).
run() {
  echo "\$ $*"
  "$@"
}
# Ends the check (the subshell check runs it in) as failed.
fail() {
  echo "FAILED: $*"
  exit 1
}
# wait_for SECS DESCRIPTION CMD...: polls CMD every 0.5 s until it succeeds or SECS pass.
wait_for() {
  local secs=$1 what=$2 t0=$SECONDS
  shift 2
  while ! "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - t0)) -ge "$secs" ]; then
      echo "timed out after ${secs}s waiting for: $what"
      return 1
    fi
    sleep 0.5
  done
  echo "after $((SECONDS - t0))s: $what"
}
is_active() { [ "$(systemctl is-active "$1")" = active ]; }
is_inactive() { [ "$(systemctl is-active "$1")" != active ]; }
bcall() { run busctl call "$BUS" "$@"; }
hcall() { run busctl call "$BUS" "$HOSTOBJ" "$HOSTIF" "$@"; }
hprop() { run busctl get-property "$BUS" "$HOSTOBJ" "$HOSTIF" "$@"; }
rprop() { run busctl get-property "$BUS" "$ROOT" "$BUS" "$@"; }
# The object path of the device called $1 (by its Name property), or nothing.
device_path() {
  local p
  for p in $(busctl tree --list "$BUS" 2>/dev/null | grep -E "^$ROOT/Device/[0-9]+$"); do
    if [ "$(busctl get-property "$BUS" "$p" "$BUS.Device" Name 2>/dev/null)" = "s \"$1\"" ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
configfs_port() {
  local dev=$1
  mkdir -p "/sys/kernel/config/rdma_cm/$dev" 2>/dev/null
  echo "/sys/kernel/config/rdma_cm/$dev/ports/1"
}
journal_since_boot() { journalctl -b --no-pager -o short-monotonic "$@"; }

# ------------------------------------------------------------------ phase 1
c_boot() {
  # systemd-analyze time waits for the end of boot, which includes this unit: read the
  # monotonic timestamps instead (microseconds since the kernel started).
  local mu
  mu=$(systemctl show multi-user.target -p ActiveEnterTimestampMonotonic --value)
  run systemctl show -p UserspaceTimestampMonotonic
  echo "multi-user.target reached $((mu / 1000000)) s after the kernel started"
  run systemctl is-system-running
  run systemctl --failed --no-legend
  run uname -r
  run ip -br link
  run ip -br addr
}

c_install() {
  local deb
  deb=$(ls "$share"/rdma-manager_*.deb | head -n 1)
  [ -f "$deb" ] || fail "no package on the share"
  cp "$deb" /root/ || return 1
  # No mirror in the guest: what the package depends on is in the image already.
  run apt-get install -y /root/"${deb##*/}" || return 1
  run dpkg -s rdma-manager | sed -n '1,/^Description/p'
  # Debian's postinst enables and starts the service (dh_installsystemd).
  run systemctl is-enabled rdma-managerd.service
  [ "$(systemctl is-enabled rdma-managerd.service)" = enabled ] || fail "not enabled after install"
}

c_files() {
  local f bad=0
  local files=(
    /usr/sbin/rdma-managerd /usr/bin/rdma-tui
    /lib/systemd/system/rdma-managerd.service
    /usr/share/dbus-1/system.d/org.rdmamanager.RdmaManager1.conf
    /usr/share/dbus-1/system-services/org.rdmamanager.RdmaManager1.service
    /usr/share/polkit-1/actions/org.rdmamanager.rdmamanager1.policy
    /usr/share/doc/rdma-manager/examples/50-rdma-manager-rdma-group.rules
    /lib/udev/rules.d/90-rdma-manager.rules
    /usr/share/man/man8/rdma-managerd.8.gz /usr/share/man/man1/rdma-tui.1.gz
    /usr/share/bash-completion/completions/rdma-tui
    /usr/share/zsh/vendor-completions/_rdma-tui
    /usr/share/fish/vendor_completions.d/rdma-tui.fish
    /usr/bin/rdma-cli /usr/share/man/man1/rdma-cli.1.gz
    /usr/share/bash-completion/completions/rdma-cli
    /usr/share/zsh/vendor-completions/_rdma-cli
    /usr/share/fish/vendor_completions.d/rdma-cli.fish
    /usr/share/bash-completion/completions/rdma-managerd
    /usr/share/zsh/vendor-completions/_rdma-managerd
    /usr/share/fish/vendor_completions.d/rdma-managerd.fish
    /usr/share/applications/org.rdmamanager.RdmaTui.desktop
    /usr/share/dbus-1/interfaces/org.rdmamanager.RdmaManager1.xml
    /etc/systemd/system/dbus-org.rdmamanager.RdmaManager1.service
  )
  run dpkg -L rdma-manager
  for f in "${files[@]}"; do
    if [ -e "$f" ]; then echo "present: $f"; else echo "MISSING: $f"; bad=1; fi
  done
  run readlink /etc/systemd/system/dbus-org.rdmamanager.RdmaManager1.service
  # The bus daemon took the policy: the name may be owned by root only.
  run busctl introspect org.freedesktop.DBus /org/freedesktop/DBus >/dev/null
  # --man=no: minbase has no man(1) to look up Documentation=man:rdma-managerd(8) with.
  run systemd-analyze verify --man=no rdma-managerd.service || bad=1
  return $bad
}

c_activation() {
  run systemctl stop rdma-managerd.service
  is_inactive rdma-managerd.service || fail "still active after stop"
  run systemctl is-active rdma-managerd.service
  # The first call activates it through the bus.
  run busctl call "$BUS" "$ROOT" org.freedesktop.DBus.Peer Ping || return 1
  # The call is answered as soon as the daemon owns its name, which is before it has read the
  # host; the unit is Type=notify and becomes active at READY=1, when start-up is over.
  run busctl get-property "$BUS" "$ROOT" "$BUS" Startup
  wait_for 30 "active after the first call (READY=1)" is_active rdma-managerd.service || return 1
  run systemctl is-active rdma-managerd.service
  run busctl get-property "$BUS" "$ROOT" "$BUS" Startup
  [ "$(busctl get-property "$BUS" "$ROOT" "$BUS" Startup)" = "b false" ] || fail "Startup not false once active"
  run journalctl -b -u dbus.service --no-pager -o cat | grep -i rdmamanager | tail -n 3
}

c_udev() {
  run systemctl stop rdma-managerd.service
  is_inactive rdma-managerd.service || fail "still active after stop"
  run modprobe rdma_rxe || return 1
  run rdma link add rxe0 type rxe netdev eth0 || return 1
  wait_for 60 "rdma-managerd active after rxe0 appeared" is_active rdma-managerd.service || return 1
  run udevadm info /sys/class/infiniband/rxe0 | grep -E 'SYSTEMD_WANTS|TAGS'
  run journalctl -b -u rdma-managerd.service --no-pager -o short-monotonic | tail -n 5
  wait_for 30 "rxe0 published on the bus" device_path rxe0 || return 1
  # The API makes its own link from here on.
  run rdma link delete rxe0
}

c_softlink() {
  local path
  bcall "$ROOT" "$BUS" AddSoftLink sss rxe0 rxe eth0 || return 1
  run rdma link show
  rdma link show | grep -q 'link rxe0/1' || fail "rxe0 not in rdma link show"
  rprop SoftLinks
  run cat /etc/rdma-manager/soft-links.toml
  bcall "$ROOT" "$BUS" RemoveSoftLink s rxe0 || return 1
  run rdma link show
  ! rdma link show | grep -q 'link rxe0/' || fail "rxe0 still there after RemoveSoftLink"
  rprop SoftLinks
  # Again, to keep it for the reboot.
  bcall "$ROOT" "$BUS" AddSoftLink sss rxe0 rxe eth0 || return 1
  path=$(device_path rxe0) || fail "no object for rxe0"
  echo "rxe0 is $path"
}

c_roce() {
  local path cfg
  path=$(device_path rxe0) || fail "no object for rxe0"
  bcall "$path/Port/1" "$BUS.Port" SetRoceMode s v2 || return 1
  bcall "$path/Port/1" "$BUS.Port" SetRoceTos y "$TOS" || return 1
  echo "(v1 must be refused: rxe knows only RoCE v2)"
  if bcall "$path/Port/1" "$BUS.Port" SetRoceMode s v1; then fail "v1 accepted"; fi
  run busctl get-property "$BUS" "$path/Port/1" "$BUS.Port" RoceMode RoceTos RocePersisted
  cfg=$(configfs_port rxe0)
  run cat "$cfg/default_roce_mode" "$cfg/default_roce_tos"
  [ "$(cat "$cfg/default_roce_tos")" = "$TOS" ] || fail "configfs ToS is not $TOS"
  [ "$(cat "$cfg/default_roce_mode")" = "RoCE v2" ] || fail "configfs mode is not RoCE v2"
  run cat /etc/rdma-manager/roce.toml
}

c_rename() {
  local path
  path=$(device_path rxe0) || fail "no object for rxe0"
  bcall "$path" "$BUS.Device" Rename s syslab0 || return 1
  run rdma dev show
  rdma dev show | grep -q ' syslab0:' || fail "not renamed"
  bcall "$path" "$BUS.Device" Rename s rxe0 || return 1
  run rdma dev show
  rdma dev show | grep -q ' rxe0:' || fail "not renamed back"
}

c_naming() {
  bcall "$ROOT" "$BUS" SetRdmaNamingPolicy sb NAME_KERNEL false || return 1
  run cat /etc/udev/rules.d/60-rdma-persistent-naming.rules || return 1
  rprop RdmaNamingPolicy RdmaNamingPolicySource
  [ "$(busctl get-property "$BUS" "$ROOT" "$BUS" RdmaNamingPolicy)" = 's "NAME_KERNEL"' ] \
    || fail "policy not NAME_KERNEL"
  # Put rdma-core's default back, as the file says.
  bcall "$ROOT" "$BUS" SetRdmaNamingPolicy sb NAME_FALLBACK false || return 1
  run journal_since_boot -u systemd-udevd.service | tail -n 5
}

c_modules() {
  run cat /etc/rdma/modules/rdma.conf
  hcall SetModuleEnabled ssb rdma "$MODULE" true || return 1
  run grep -n "^$MODULE" /etc/rdma/modules/rdma.conf || fail "$MODULE not enabled in rdma.conf"
  hcall ApplyModules s rdma || return 1
  run systemctl status --no-pager rdma-load-modules@rdma.service | head -n 5
  [ -d "/sys/module/$MODULE" ] || fail "$MODULE not loaded after ApplyModules"
  hprop ModulesUnit
}

c_memlock() {
  getent group rdma >/dev/null || run groupadd --system rdma
  id "$USER_NAME" >/dev/null 2>&1 || run useradd -m -s /bin/bash -G rdma "$USER_NAME"
  run id "$USER_NAME"
  hcall SetMemlockLimits ss unlimited unlimited || return 1
  run cat /etc/security/limits.d/zz-rdma-manager.conf
  hprop MemlockSoft MemlockHard
  run runuser -l "$USER_NAME" -c 'ulimit -l'
  [ "$(runuser -l "$USER_NAME" -c 'ulimit -l')" = unlimited ] || fail "a login of $USER_NAME does not get unlimited memlock"
}

c_nfs() {
  hprop NfsServer
  hcall SetNfsRdma bq true 0 || return 1
  run ls -l /etc/nfs.conf.d/
  run cat /etc/nfs.conf.d/zz-rdma-manager.conf
  run systemctl status --no-pager nfs-server.service | head -n 6
  run cat /proc/fs/nfsd/portlist
  grep -qx 'rdma 20049' /proc/fs/nfsd/portlist || fail "nfsd does not listen on rdma 20049"
  hprop NfsRdma NfsRdmaPort NfsServer
}

c_journal() {
  run journalctl -b -u rdma-managerd.service --no-pager -o short-monotonic | tail -n 40
  # Fields the daemon itself adds (tracing-journald), beyond systemd's and the message.
  local fields
  fields=$(journalctl -b -u rdma-managerd.service -o json --output-fields= 2>/dev/null \
    | grep -o '"[A-Z][A-Z0-9_]*":' | sort -u | tr -d '":' | tr '\n' ' ')
  echo "fields: $fields"
  run journalctl -b -u rdma-managerd.service -o json --no-pager | tail -n 3
  echo "$fields" | grep -qw TARGET || echo "$fields" | grep -qw CODE_FILE || fail "no structured fields from tracing-journald"
  # Every change is logged once with who asked, what and the outcome (the audit lines):
  # the soft link and the RoCE settings made above by root.
  echo "--- audit lines of this boot:"
  run journalctl -b -u rdma-managerd.service --no-pager -o cat SYSLOG_IDENTIFIER=rdma-managerd OUTCOME=done
  run journalctl -b -u rdma-managerd.service --no-pager -o json OUTCOME=done METHOD=AddSoftLink | tail -n 1
  local m
  for m in AddSoftLink SetRoceMode SetRoceTos; do
    journalctl -b -u rdma-managerd.service -o json OUTCOME=done CALLER_UID=0 METHOD="$m" \
      | grep -q '"ARGUMENTS"' || fail "no audit line of $m by uid 0 with its arguments"
  done
}

c_security() {
  run systemd-analyze security --no-pager rdma-managerd.service
  run systemctl show rdma-managerd.service -p MainPID -p ActiveState -p NRestarts
}

# ------------------------------------------------------------------ phase 2
c_boot2() {
  c_boot
  run journalctl -b -1 --no-pager -o short-monotonic -n 5
  boot_units
}

# rdma-managerd's start to READY=1 at this boot (the installed package, enabled, started by
# systemd), beside the units it meets at boot: each unit's start (InactiveExitTimestamp) to
# active (ActiveEnterTimestamp: READY=1 for a Type=notify unit), in ms, then the daemon's own
# start-up phases (its journal field PHASES). Figures only: it fails nothing.
boot_units() {
  local u start active phases
  for u in rdma-managerd.service NetworkManager.service dbus.service polkit.service \
    systemd-udevd.service rdma-load-modules@rdma.service systemd-networkd.service; do
    start=$(systemctl show "$u" -p InactiveExitTimestampMonotonic --value 2>/dev/null)
    active=$(systemctl show "$u" -p ActiveEnterTimestampMonotonic --value 2>/dev/null)
    if [ "${start:-0}" -gt 0 ] 2>/dev/null && [ "${active:-0}" -ge "$start" ] 2>/dev/null; then
      echo "boot: $u started $((start / 1000)) ms after the kernel, active $(((active - start) / 1000)) ms later"
    else
      echo "boot: $u not started at this boot"
    fi
  done
  phases=$(journalctl -b -u rdma-managerd.service -o json --no-pager 2>/dev/null |
    grep -a -m1 '"start-up phases' | sed -n 's/.*"PHASES":"\([^"]*\)".*/\1/p')
  echo "boot: rdma-managerd start-up phases, ms: ${phases:-not in the journal}"
  # When NetworkManager exported its settings (what the daemon's `networkmanager` phase waits
  # for), beside the daemon's own lines, in the check's transcript.
  run journalctl -b -u NetworkManager.service -u rdma-managerd.service --no-pager \
    -o short-monotonic 2>/dev/null | head -n 40
  return 0
}

c_reboot_softlink() {
  wait_for 120 "rxe0 back (rdma link show)" sh -c 'rdma link show | grep -q "link rxe0/1"' || return 1
  run rdma link show
  run systemctl show rdma-managerd.service -p ActiveState -p ActiveEnterTimestampMonotonic
  run journalctl -b -u rdma-managerd.service --no-pager -o short-monotonic | head -n 30
  echo "--- warnings, with their fields:"
  journalctl -b -u rdma-managerd.service -p warning -o json --no-pager \
    | sed 's/"__[A-Z_]*":"[^"]*",\?//g; s/"_[A-Z_]*":"[^"]*",\?//g'
}

c_reboot_roce() {
  local cfg
  wait_for 60 "rxe0 present" test -d /sys/class/infiniband/rxe0 || return 1
  cfg=$(configfs_port rxe0)
  wait_for 60 "ToS $TOS re-applied" sh -c "[ \"\$(cat $cfg/default_roce_tos)\" = $TOS ]"
  run cat "$cfg/default_roce_mode" "$cfg/default_roce_tos"
  [ "$(cat "$cfg/default_roce_tos")" = "$TOS" ] || fail "ToS not re-applied"
  [ "$(cat "$cfg/default_roce_mode")" = "RoCE v2" ] || fail "mode not RoCE v2"
  # Now the daemon may be asked: what it publishes must be what the kernel has.
  local path
  path=$(device_path rxe0) || fail "no object for rxe0"
  run busctl get-property "$BUS" "$path/Port/1" "$BUS.Port" RoceMode RoceTos
  [ "$(busctl get-property "$BUS" "$path/Port/1" "$BUS.Port" RoceTos)" = "y $TOS" ] || fail "RoceTos on the bus is not $TOS"
}

c_reboot_modules() {
  run grep -n "^$MODULE" /etc/rdma/modules/rdma.conf
  wait_for 60 "$MODULE loaded" test -d "/sys/module/$MODULE" || return 1
  run systemctl status --no-pager rdma-load-modules@rdma.service | head -n 8
  run journalctl -b -u rdma-load-modules@rdma.service --no-pager -o short-monotonic
}

c_reboot_memlock() {
  run runuser -l "$USER_NAME" -c 'ulimit -l'
  [ "$(runuser -l "$USER_NAME" -c 'ulimit -l')" = unlimited ] || fail "not unlimited"
  run systemd-run --wait --pipe --uid="$USER_NAME" -p PAMName=login sh -c 'ulimit -l' || true
}

# rdma-tui in tmux on the real system bus with the real polkitd: a user outside group rdma
# sees the monitor and is refused a change with the action named; in group rdma, with the
# shipped example rule installed, the same change succeeds.
TUI_USER=tuiuser
tui() { runuser -u "$TUI_USER" -- tmux -L syslab "$@"; }
tui_screen() { tui capture-pane -p -t t; }
tui_wait() {
  local secs=$1 text=$2 t0=$SECONDS
  while ! tui_screen 2>/dev/null | grep -qF -- "$text"; do
    if [ $((SECONDS - t0)) -ge "$secs" ]; then
      echo "timed out after ${secs}s waiting for \"$text\" on the screen:"
      tui_screen
      return 1
    fi
    sleep 0.5
  done
  echo "after $((SECONDS - t0))s: \"$text\" on the screen"
}
# Opens the RoCE page's form for the first port and asks for ToS $1. The client runs in a
# login session of the user (su -l: pam_systemd registers it with logind; without a seat it
# is active), as the example polkit rule wants; su stays until tui_stop signals it, so the
# session stays open while the client runs.
tui_set_tos() {
  su -l "$TUI_USER" -c "tmux -L syslab new-session -d -s t -x 110 -y 32 'NO_COLOR=1 rdma-tui' && tmux -L syslab wait-for syslab-done" &
  wait_for 30 "tmux session of $TUI_USER" tui has-session -t t || return 1
  run loginctl list-sessions --no-legend
  tui_wait 60 rxe0 || return 1
  tui_wait 30 ACTIVE || return 1
  echo "--- the overview (monitor) as $TUI_USER:"
  tui_screen
  tui send-keys -t t 6
  tui_wait 20 "RoCE" || return 1
  tui send-keys -t t Enter
  tui_wait 20 "RoCE defaults of" || return 1
  tui send-keys -t t Down BSpace BSpace BSpace
  tui send-keys -t t -l "$1"
  tui send-keys -t t Enter
}
polkit_loads() { journalctl -b -u polkit.service -o cat | grep -c 'Finished loading'; }
tui_stop() {
  tui wait-for -S syslab-done 2>/dev/null
  tui kill-server 2>/dev/null
  wait
  return 0
}
c_tui() {
  local cfg tos_before
  cfg=$(configfs_port rxe0)
  tos_before=$(cat "$cfg/default_roce_tos")
  id "$TUI_USER" >/dev/null 2>&1 || run useradd -m -s /bin/bash "$TUI_USER"
  run id "$TUI_USER"
  tui_set_tos 32 || { tui_stop; return 1; }
  tui_wait 30 org.rdmamanager.rdmamanager1.manage-roce || { tui_stop; return 1; }
  echo "--- refused, as $TUI_USER outside group rdma:"
  tui_screen
  tui_stop
  [ "$(cat "$cfg/default_roce_tos")" = "$tos_before" ] || fail "the ToS changed although refused"

  run usermod -aG rdma "$TUI_USER"
  local loads
  loads=$(polkit_loads)
  run cp /usr/share/doc/rdma-manager/examples/50-rdma-manager-rdma-group.rules /etc/polkit-1/rules.d/
  # A running polkitd reads rules.d again when it changes (inotify); one not running reads
  # it when it starts.
  if is_active polkit.service; then
    wait_for 30 "polkitd loaded its rules again" sh -c "[ \$(journalctl -b -u polkit.service -o cat | grep -c 'Finished loading') -gt $loads ]"
  fi
  run journalctl -b -u polkit.service --no-pager -o short-monotonic | tail -n 4
  tui_set_tos 32 || { tui_stop; return 1; }
  wait_for 30 "configfs ToS 32 after the change in rdma-tui" sh -c "[ \"\$(cat $cfg/default_roce_tos)\" = 32 ]" \
    || { tui_screen; tui_stop; return 1; }
  echo "--- accepted, as $TUI_USER in group rdma with the example rule:"
  tui_screen
  tui_stop
  run cat "$cfg/default_roce_tos"
  # Both attempts are in the journal under the user's uid: refused, then done.
  local uid
  uid=$(id -u "$TUI_USER")
  run journalctl -b -u rdma-managerd.service --no-pager -o cat CALLER_UID="$uid"
  # rdma-tui's forms apply their keys as a state document (ApplyState), which the line holds.
  journalctl -b -u rdma-managerd.service -o cat CALLER_UID="$uid" OUTCOME=refused METHOD=ApplyState \
    | grep -q 'by uid' || fail "no audit line of the refused ApplyState of uid $uid"
  journalctl -b -u rdma-managerd.service -o cat CALLER_UID="$uid" OUTCOME=done METHOD=ApplyState \
    | grep -q 'tos: 32' || fail "no audit line of the ApplyState (tos: 32) of uid $uid that was done"
  # Back to what the reboot checks expect.
  bcall "$(device_path rxe0)/Port/1" "$BUS.Port" SetRoceTos y "$TOS"
}

# NetworkManager runs and manages eth0 (the profile from the image): reactivating the
# connection must leave the daemon's rxe device and RoCE settings alone.
c_networkmanager() {
  local cfg
  run nmcli -t -f DEVICE,TYPE,STATE,CONNECTION device
  [ "$(nmcli -t -f DEVICE,STATE device | grep '^eth0:')" = "eth0:connected" ] || fail "NetworkManager does not have eth0 connected"
  run nmcli connection up eth0 || return 1
  run nmcli -t -f DEVICE,TYPE,STATE,CONNECTION device
  run rdma link show
  rdma link show | grep -q 'link rxe0/1 state ACTIVE' || fail "rxe0 gone or not ACTIVE after NetworkManager reactivated eth0"
  cfg=$(configfs_port rxe0)
  run cat "$cfg/default_roce_tos"
  [ "$(cat "$cfg/default_roce_tos")" = "$TOS" ] || fail "ToS changed"
  run ip -br addr show eth0
}

# Confirm or roll back, end to end on the real kernel and NetworkManager: an address given
# to eth0 (rxe0's netdev) through the daemon's Network.SetIpSettings makes the RoCE v2 GID
# of that address appear in rxe0's GID table (GIDs follow IP addresses); nobody confirms,
# NetworkManager rolls the change back by itself after the 10 s timeout, and the address and
# the GID go, in the kernel and on the daemon's bus.
NM_ADDR=198.51.100.5
NM_GID=0000:0000:0000:0000:0000:ffff:c633:6405
not() { ! "$@"; }
# One grep over the 1024 entries (a cat each took seconds in the guest).
rxe_gid_indexes() {
  grep -lx "$NM_GID" /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | sed 's#.*/##'
}
rxe_has_gid() { [ -n "$(rxe_gid_indexes)" ]; }
daemon_has_gid() {
  busctl get-property "$BUS" "$(device_path rxe0)/Port/1" "$BUS.Port" Gids | grep -q "$NM_GID"
}
eth0_has_addr() { ip -4 -o addr show dev eth0 | grep -q " $NM_ADDR/"; }
c_nm_rollback() {
  local reply change i v2=0
  bcall "$ROOT" "$BUS.Network" GetIpSettings s eth0 || return 1
  rxe_has_gid && fail "the GID of $NM_ADDR is there before the change"
  # The image's own address stays (the second guest's NFS runs over it).
  echo "\$ busctl call $BUS $ROOT $BUS.Network SetIpSettings 'sa{sv}u' eth0 1 ipv4.addresses as 2 192.168.77.1/24 $NM_ADDR/24 10"
  reply=$(busctl call "$BUS" "$ROOT" "$BUS.Network" SetIpSettings 'sa{sv}u' eth0 1 \
    ipv4.addresses as 2 192.168.77.1/24 "$NM_ADDR/24" 10 2>&1) || fail "SetIpSettings: $reply"
  echo "$reply"
  change=$(echo "$reply" | sed -n 's/^o "\(.*\)"$/\1/p')
  [ -n "$change" ] || fail "no pending change in: $reply"
  run busctl get-property "$BUS" "$change" "$BUS.PendingChange" Interface Description Deadline
  run busctl get-property "$BUS" "$ROOT" "$BUS.Network" PendingChanges
  wait_for 10 "$NM_ADDR on eth0" eth0_has_addr || fail "no $NM_ADDR on eth0"
  run ip -br addr show eth0
  wait_for 10 "the GID of $NM_ADDR in rxe0's table" rxe_has_gid || fail "no GID of $NM_ADDR"
  for i in $(rxe_gid_indexes); do
    echo "rxe0 port 1 GID $i: $(cat /sys/class/infiniband/rxe0/ports/1/gids/$i) $(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i)"
    [ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i)" = "RoCE v2" ] && v2=1
  done
  [ "$v2" = 1 ] || fail "no RoCE v2 GID of $NM_ADDR"
  if ! wait_for 10 "the daemon publishes the GID" daemon_has_gid; then
    run busctl get-property "$BUS" "$(device_path rxe0)/Port/1" "$BUS.Port" Gids
    journal_since_boot -u rdma-managerd.service | tail -n 20
    wait_for 60 "the daemon publishes the GID, late" daemon_has_gid
    fail "the daemon's Gids lack $NM_GID after 10 s"
  fi
  bcall "$ROOT" "$BUS.Network" GetIpSettings s eth0
  # Nobody confirms: NetworkManager rolls back by itself.
  wait_for 30 "NetworkManager rolls $NM_ADDR back" not eth0_has_addr || fail "$NM_ADDR still on eth0"
  wait_for 10 "the GID of $NM_ADDR goes" not rxe_has_gid || fail "the GID of $NM_ADDR stayed"
  wait_for 10 "the daemon drops the GID" not daemon_has_gid || fail "the daemon still publishes $NM_GID"
  wait_for 10 "no change pending" sh -c "busctl get-property $BUS $ROOT $BUS.Network PendingChanges | grep -qx 'ao 0'" \
    || fail "a change is still pending"
  run ip -br addr show eth0
  run nmcli -t -f DEVICE,STATE device
  journal_since_boot -u rdma-managerd.service -o cat | grep -E 'pending|NetworkManager' | tail -n 5
  [ "$(nmcli -t -f DEVICE,STATE device | grep '^eth0:')" = "eth0:connected" ] || fail "eth0 is not connected after the rollback"
  ip -4 -o addr show dev eth0 | grep -q ' 192.168.77.1/24' || fail "eth0 lost its own address"
}

# The late netdev: a remembered rxe link over an interface that appears only after the
# daemon started (a unit ordered after it creates the veth pair at boot).
c_late_setup() {
  run ip link add late0 type veth peer name late1 || return 1
  run ip link set late0 up
  run ip link set late1 up
  bcall "$ROOT" "$BUS" AddSoftLink sss rxe1 rxe late0 || return 1
  run rdma link show
  cat >/etc/systemd/system/syslab-late-netdev.service <<'UNIT'
[Unit]
Description=syslab: a network interface that appears after rdma-managerd started
After=rdma-managerd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/ip link add late0 type veth peer name late1
ExecStart=/usr/sbin/ip link set late0 up
ExecStart=/usr/sbin/ip link set late1 up

[Install]
WantedBy=multi-user.target
UNIT
  run systemctl enable syslab-late-netdev.service
}

# IP settings without NetworkManager, as on hosts that run systemd-networkd or netplan
# (Ubuntu, DGX OS): NetworkManager is stopped, a RoCE port's netdev (np0, a dummy with rxe
# device rxenp) gets its address through rdma-cli, first under systemd-networkd (the
# daemon's own .network file: kept when confirmed, put back at the timeout), then under
# netplan (netplan-dbus activated on the system bus: the daemon's /etc/netplan file through
# netplan's Try, kept by Apply, undone by Cancel). NetworkManager runs again afterwards.
NP_IF=np0
np_has_addr() { ip -4 -o addr show dev "$NP_IF" | grep -q " $1/"; }
np_manager() { busctl call "$BUS" "$ROOT" "$BUS.Network" GetIpSettings s "$NP_IF" | grep -q "\"manager\" s \"$1\""; }
no_pending() { busctl get-property "$BUS" "$ROOT" "$BUS.Network" PendingChanges | grep -qx 'ao 0'; }
ip_managers_restore() {
  rm -f /etc/netplan/01-syslab.yaml /etc/netplan/90-rdma-manager.yaml \
    "/etc/systemd/network/50-rdma-manager-$NP_IF.network"
  systemctl stop systemd-networkd.socket systemd-networkd.service 2>/dev/null
  rdma link delete rxenp 2>/dev/null
  ip link delete "$NP_IF" 2>/dev/null
  systemctl start NetworkManager.service
}
c_ip_managers() {
  local rc=0
  ( c_ip_managers_steps ) || rc=$?
  ip_managers_restore
  wait_for 60 "NetworkManager has eth0 connected again" \
    sh -c "nmcli -t -f DEVICE,STATE device | grep -qx 'eth0:connected'" || rc=1
  run nmcli -t -f DEVICE,STATE device
  return "$rc"
}
c_ip_managers_steps() {
  run systemctl stop NetworkManager.service || return 1
  run ip link add "$NP_IF" type dummy || return 1
  run ip link set "$NP_IF" up
  run rdma link add rxenp type rxe netdev "$NP_IF" || return 1
  wait_for 30 "the daemon lists rxenp" device_path rxenp || return 1
  wait_for 10 "no IP manager runs" np_manager none || fail "the manager is not 'none'"
  echo "\$ rdma-cli ip $NP_IF ipv4.method manual ipv4.addresses 198.51.100.21/24"
  local text rc=0
  text=$(rdma-cli ip "$NP_IF" ipv4.method manual ipv4.addresses 198.51.100.21/24 2>&1) || rc=$?
  echo "$text"
  echo "(exit $rc)"
  [ "$rc" -ne 0 ] && grep -q 'no IP manager runs' <<<"$text" || fail "without an IP manager the change was not refused with advice"
  np_has_addr 198.51.100.21 && fail "an address was set although refused"

  echo "--- systemd-networkd"
  run systemctl start systemd-networkd.service || return 1
  wait_for 20 "the daemon sees systemd-networkd" np_manager systemd-networkd || fail "the manager is not systemd-networkd"
  run rdma-cli ip "$NP_IF" ipv4.method manual ipv4.addresses 198.51.100.21/24 --timeout 30 || fail "SetIpSettings under networkd"
  run rdma-cli confirm || fail "confirm under networkd"
  run cat "/etc/systemd/network/50-rdma-manager-$NP_IF.network"
  grep -qx 'Address=198.51.100.21/24' "/etc/systemd/network/50-rdma-manager-$NP_IF.network" || fail "no Address= in the daemon's file"
  np_has_addr 198.51.100.21 || fail "198.51.100.21 is not on $NP_IF"
  run networkctl status "$NP_IF" --no-pager
  # Not confirmed: the daemon puts its previous file back at the deadline.
  run rdma-cli ip "$NP_IF" ipv4.method manual ipv4.addresses 198.51.100.22/24 --timeout 10 || fail "the second change under networkd"
  np_has_addr 198.51.100.22 || fail "198.51.100.22 is not on $NP_IF"
  wait_for 40 "the unconfirmed change rolled back" no_pending || fail "the change is still pending"
  wait_for 20 "198.51.100.22 gone" not np_has_addr 198.51.100.22 || fail "198.51.100.22 stayed"
  np_has_addr 198.51.100.21 || fail "the confirmed 198.51.100.21 did not come back"
  grep -qx 'Address=198.51.100.21/24' "/etc/systemd/network/50-rdma-manager-$NP_IF.network" || fail "the file was not put back"
  run ip -br addr show "$NP_IF"
  # networkd's files go; netplan renders for networkd from here on.
  rm -f "/etc/systemd/network/50-rdma-manager-$NP_IF.network"
  run networkctl reload

  echo "--- netplan"
  printf 'network:\n  version: 2\n  renderer: networkd\n' >/etc/netplan/01-syslab.yaml
  chmod 600 /etc/netplan/01-syslab.yaml
  run cat /etc/netplan/01-syslab.yaml
  wait_for 20 "the daemon sees netplan" np_manager netplan || fail "the manager is not netplan"
  run rdma-cli ip "$NP_IF" ipv4.method manual ipv4.addresses 198.51.100.31/24 --timeout 60 || fail "SetIpSettings under netplan"
  np_has_addr 198.51.100.31 || fail "198.51.100.31 is not on $NP_IF during netplan's try"
  run rdma-cli confirm || fail "confirm under netplan"
  run cat /etc/netplan/90-rdma-manager.yaml
  grep -q '198.51.100.31/24' /etc/netplan/90-rdma-manager.yaml || fail "the address is not in the daemon's netplan file"
  run netplan get "ethernets.$NP_IF"
  run rdma-cli ip "$NP_IF" ipv4.method manual ipv4.addresses 198.51.100.32/24 --timeout 60 || fail "the second change under netplan"
  np_has_addr 198.51.100.32 || fail "198.51.100.32 is not on $NP_IF"
  run rdma-cli rollback || fail "rollback under netplan"
  wait_for 30 "198.51.100.32 gone" not np_has_addr 198.51.100.32 || fail "198.51.100.32 stayed after the rollback"
  grep -q '198.51.100.31/24' /etc/netplan/90-rdma-manager.yaml || fail "the confirmed address left the netplan file"
  grep -q '198.51.100.32' /etc/netplan/90-rdma-manager.yaml && fail "the rolled-back address is in the netplan file"
  run ip -br addr show "$NP_IF"
  bcall "$ROOT" "$BUS.Network" GetIpSettings s "$NP_IF"
  journal_since_boot -u rdma-managerd.service -o cat | grep -Ei 'netplan|networkd' | tail -n 8
}

# Node health (CheckHealth through rdma-cli health, as Slurm's HealthCheckProgram runs it):
# a state document's expectations on rxe1 over late0 pass, also for an unprivileged user
# (reading is open); with late0 down the check exits 11 naming the failed expectations; with
# it up again the port passes and the two changes count as flaps.
HEALTH_DOC=/tmp/health.yml
rxe1_state() {
  busctl get-property "$BUS" "$(device_path rxe1)/Port/1" "$BUS.Port" State | grep -q "\"$1\""
}
c_health() {
  cat >"$HEALTH_DOC" <<'DOC'
health:
  ports:
    - device: rxe1
      port: 1
      state: ACTIVE
      phys-state: LinkUp
      link-layer: Ethernet
      mtu: 1500
  min-ports: 1
DOC
  run cat "$HEALTH_DOC"
  local rc=0 text
  run rdma-cli health "$HEALTH_DOC" || fail "the healthy port failed its check"
  run setpriv --reuid=65534 --regid=65534 --clear-groups rdma-cli health "$HEALTH_DOC" \
    || fail "an unprivileged user could not check"
  run rdma-cli --json health "$HEALTH_DOC" | grep -q '"healthy": true' || fail "--json does not say healthy"
  run ip link set late0 down
  wait_for 30 "rxe1/1 published DOWN" rxe1_state DOWN || return 1
  echo "\$ rdma-cli health $HEALTH_DOC"
  text=$(rdma-cli health "$HEALTH_DOC") || rc=$?
  echo "$text"
  echo "(exit $rc)"
  [ "$rc" -eq 11 ] || fail "exit $rc with the port down, expected 11"
  grep -q '^ERROR:  rdma-cli:  Health check failed:  state rxe1/1:  rxe1/1 state is DOWN, expected ACTIVE$' <<<"$text" \
    || fail "the failed state expectation is not named"
  run ip link set late0 up
  wait_for 30 "rxe1/1 published ACTIVE" rxe1_state ACTIVE || return 1
  run rdma-cli health "$HEALTH_DOC" || fail "the port failed its check once up again"
  rc=0
  echo "\$ rdma-cli health --port rxe1/1 --max-flaps 1 --flap-window 600"
  text=$(rdma-cli health --port rxe1/1 --max-flaps 1 --flap-window 600) || rc=$?
  echo "$text"
  echo "(exit $rc)"
  [ "$rc" -eq 11 ] && grep -q 'flaps rxe1/1:  rxe1/1 changed state 2 times' <<<"$text" \
    || fail "the port's down and up are not two flaps"
}

c_late_netdev() {
  wait_for 120 "rxe1 over late0" sh -c 'rdma link show | grep -q "link rxe1/1 .*netdev late0"' || { run rdma link show; return 1; }
  run rdma link show
  run systemctl show rdma-managerd.service -p ActiveEnterTimestampMonotonic
  run systemctl show syslab-late-netdev.service -p ActiveEnterTimestampMonotonic
  local d n
  d=$(systemctl show rdma-managerd.service -p ActiveEnterTimestampMonotonic --value)
  n=$(systemctl show syslab-late-netdev.service -p ExecMainStartTimestampMonotonic --value)
  [ "$n" -gt "$d" ] || fail "late0 was not created after the daemon started"
  run journalctl -b -u rdma-managerd.service --no-pager -o short-monotonic
  # rxe0 over eth0 came back too.
  rdma link show | grep -q 'link rxe0/1' || fail "rxe0 missing"
}

# GetManagedObjects at scale on the machine's own system bus (issue 13's target: at least 5
# times faster than one `rdma -j dev show`), once on dbus-daemon (phase 3) and once on
# dbus-broker (phase 4): SCALE_DEVICES dummy netdevs with an rxe device each, made with one
# batch of `ip` and `rdma` commands, then rdma-syslab-gmo (tests/src/bin/rdma-syslab-gmo.rs,
# from the share) times the reference tools and the call in the same run. The figures are
# its `gmo:` lines; the check fails only if the devices are not all made and published, or
# a call is not answered, never on a time.
SCALE_DEVICES=${SYSLAB_SCALE_DEVICES:-256}
make_scale_devices() {
  local i ip="" rd=""
  for i in $(seq 0 $((SCALE_DEVICES - 1))); do
    ip+="link add sdum$i type dummy"$'\n'"link set sdum$i up"$'\n'
    rd+="link add srxe$i type rxe netdev sdum$i"$'\n'
  done
  echo "\$ ip -b - (link add sdumN type dummy; link set sdumN up; N = 0..$((SCALE_DEVICES - 1)))"
  ip -b - <<<"$ip" || return 1
  # rdma -b keeps a netlink socket per command: fine at 256 (the guest's limit is 1024).
  echo "\$ rdma -b - (link add srxeN type rxe netdev sdumN)"
  rdma -b - <<<"$rd" || return 1
}
scale_gmo() {
  local t0=$SECONDS n
  run dpkg-query -W dbus-daemon dbus-broker
  run uname -r
  run modprobe rdma_rxe || return 1
  make_scale_devices || fail "could not make $SCALE_DEVICES rxe devices"
  n=$(ls /sys/class/infiniband | grep -c '^srxe')
  echo "$n srxe devices after $((SECONDS - t0))s: $(ls /sys/class/infiniband | wc -l) RDMA devices in all"
  [ "$n" -eq "$SCALE_DEVICES" ] || fail "$n of $SCALE_DEVICES devices made"
  run udevadm settle --timeout=300
  # Every RDMA device the kernel has, the earlier checks' rxe0 and rxe1 too.
  n=$(ls /sys/class/infiniband | wc -l)
  run "$share/rdma-syslab-gmo" --system --devices "$n" --wait-secs 900 || return 1
  run ps -o pid,rss,cputime,args -C dbus-daemon,dbus-broker,dbus-broker-launch,rdma-managerd
  run journalctl -b -u rdma-managerd.service -p warning --no-pager -o short-monotonic | tail -n 10
}
c_gmo_dbus_daemon() {
  [ "$(bus_comm)" = dbus-daemon ] || fail "the system bus is $(bus_comm), not dbus-daemon"
  scale_gmo
}
c_gmo_dbus_broker() {
  [ "$(bus_comm)" = dbus-broker ] || fail "the system bus is $(bus_comm), not dbus-broker"
  scale_gmo
}
# The command name of the process behind dbus.service (dbus-broker-launch's child relays).
bus_comm() {
  local pid child
  pid=$(systemctl show dbus.service -p MainPID --value)
  [ -n "$pid" ] && [ "$pid" != 0 ] || { echo none; return; }
  child=$(pgrep -P "$pid" -x dbus-broker | head -n 1)
  cat "/proc/${child:-$pid}/comm"
}

# dbus-broker, installed in the image but disabled, becomes the system bus at the next boot:
# enabling it makes its Alias=dbus.service, /etc/systemd/system/dbus.service, which takes
# precedence over dbus-daemon's /lib/systemd/system/dbus.service.
c_broker_switch() {
  run systemctl is-enabled dbus-broker.service
  run systemctl enable dbus-broker.service || return 1
  run readlink /etc/systemd/system/dbus.service
  [ "$(readlink -f /etc/systemd/system/dbus.service)" = /usr/lib/systemd/system/dbus-broker.service ] \
    || [ "$(readlink -f /etc/systemd/system/dbus.service)" = /lib/systemd/system/dbus-broker.service ] \
    || fail "dbus.service is not an alias of dbus-broker.service"
  # systemd resolves dbus.service to dbus-broker.service at once, but the running bus stays
  # dbus-daemon until the reboot.
  run systemctl show dbus.service -p Id -p MainPID
  echo "the bus process: $(bus_comm)"
}

# After the reboot: dbus-broker is the bus and the daemon works on it as on dbus-daemon: the
# soft links it re-creates at boot (rxe0 over eth0, rxe1 over the late veth), activation by
# a call, a method call and a property, and no policy denial of the daemon's name.
c_broker_boot() {
  run systemctl show dbus.service -p Id -p MainPID -p ActiveState
  [ "$(systemctl show dbus.service -p Id --value)" = dbus-broker.service ] || fail "dbus.service is not dbus-broker.service"
  [ "$(bus_comm)" = dbus-broker ] || fail "the bus process is $(bus_comm)"
  run pgrep -a dbus
  pgrep -x dbus-daemon >/dev/null && fail "a dbus-daemon runs beside dbus-broker"
  run systemctl is-system-running
  run systemctl --failed --no-legend
}
c_broker_daemon() {
  wait_for 120 "rxe0 and rxe1 back (rdma link show)" sh -c 'rdma link show | grep -q "link rxe0/1" && rdma link show | grep -q "link rxe1/1 .*netdev late0"' \
    || { run rdma link show; return 1; }
  run rdma link show
  run systemctl is-active rdma-managerd.service
  # Activation through dbus-broker, which hands it to systemd (SystemdService=).
  run systemctl stop rdma-managerd.service
  is_inactive rdma-managerd.service || fail "still active after stop"
  run busctl call "$BUS" "$ROOT" org.freedesktop.DBus.Peer Ping || return 1
  wait_for 30 "active after the first call (READY=1)" is_active rdma-managerd.service || return 1
  rprop SoftLinks || return 1
  rprop SoftLinks | grep -q rxe0 || fail "rxe0 not among the daemon's soft links"
  local path
  path=$(device_path rxe0) || fail "no object for rxe0"
  run busctl get-property "$BUS" "$path/Port/1" "$BUS.Port" RoceTos
  [ "$(busctl get-property "$BUS" "$path/Port/1" "$BUS.Port" RoceTos)" = "y $TOS" ] || fail "RoceTos on the bus is not $TOS"
  # A mutating call as root (polkit allows root) through dbus-broker.
  bcall "$path/Port/1" "$BUS.Port" SetRoceTos y "$TOS" || return 1
  echo "--- the bus's warnings since boot:"
  journalctl -b -u dbus-broker.service -p warning --no-pager -o short-monotonic | tail -n 20
  echo "--- the bus's log since boot, lines naming the daemon or a denial:"
  journalctl -b -u dbus-broker.service -u dbus.service --no-pager -o short-monotonic \
    | grep -iE 'rdmamanager|denied|refus' | tail -n 20
  ! journalctl -b -u dbus-broker.service -o cat | grep -i 'rdmamanager' | grep -qi 'denied' \
    || fail "dbus-broker denied something of org.rdmamanager"
  return 0
}

# The packaged rdma-exporter (docs/METRICS.md) under its unit's sandbox: socket-activated, so
# the first scrape starts it as user nobody with no capabilities; it reads the daemon
# over the system bus and its direct socket as any user may. A flap of rxe1's netdev (the late veth) shows in the
# daemon's count of state changes, which the exporter serves.
scrape() {
  timeout 60 bash -c 'exec 3<>/dev/tcp/127.0.0.1/10041 || exit 1
    printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3
    cat <&3'
}
rxe1_state_changes() {
  scrape | sed -n 's/^rdma_port_state_changes_total{device="rxe1",port="1"} //p' | tr -d '\r'
}
rxe1_state_is() { rdma link show rxe1/1 | grep -q "state $1 "; }
exporter_journal() { journalctl -b -u rdma-exporter.service -u rdma-exporter.socket --no-pager -o short-monotonic | tail -n 40; }
# The first scrape starts the exporter, which then reads the daemon's model (hundreds of
# devices here after the scale checks): scrape until it says it follows the daemon.
scraped_ok() {
  local body="" t0=$SECONDS
  while :; do
    body=$(scrape) || { exporter_journal; fail "no answer on 127.0.0.1:10041"; }
    grep -qE '^rdma_exporter_daemon_up 1' <<<"$body" && break
    if [ $((SECONDS - t0)) -ge 120 ]; then
      head -n 12 <<<"$body"
      exporter_journal
      fail "rdma_exporter_daemon_up is not 1 after 120 s"
    fi
    sleep 1
  done
  echo "daemon_up 1 after $((SECONDS - t0))s"
  head -n 12 <<<"$body"
  grep -E '^node_infiniband_info\{.*device="rxe0"' <<<"$body" || fail "no node_infiniband_info of rxe0"
  grep -E '^rdma_port_state\{device="rxe0",port="1",state="ACTIVE"\} 1' <<<"$body" \
    || fail "rxe0/1 not ACTIVE in rdma_port_state"
  grep -E '^rdma_port_transmitted_bytes_total\{device="rxe0",port="1"\}' <<<"$body" \
    || fail "no transmitted bytes of rxe0/1"
  local pid
  pid=$(systemctl show rdma-exporter.service -p MainPID --value)
  run grep -E '^(Uid|CapEff):' "/proc/$pid/status"
  [ "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")" != 0 ] || fail "rdma-exporter runs as root"
  [ "$(awk '/^CapEff:/ {print $2}' "/proc/$pid/status")" = 0000000000000000 ] \
    || fail "rdma-exporter has capabilities"
}
c_exporter() {
  # late0's carrier needs its peer up (the boot's unit leaves late1 down).
  run ip link set late1 up
  wait_for 120 "rxe1 over late0 ACTIVE" rxe1_state_is ACTIVE || { run rdma link show; return 1; }
  run systemctl enable --now rdma-exporter.socket || return 1
  is_inactive rdma-exporter.service || fail "the service runs before the first scrape"
  scraped_ok
  is_active rdma-exporter.service || fail "the first scrape did not start the service"
  # Under its sandbox the exporter reaches the daemon's direct socket (the bus would answer
  # the same: only its log says which).
  exporter_journal | grep "counters on" || true
  exporter_journal | grep -q "counters on the direct socket /run/rdma-manager/direct" \
    || fail "rdma-exporter did not ask for the counters on the direct socket"
  local before after
  before=$(rxe1_state_changes)
  echo "state changes of rxe1/1 before the flap: $before"
  [ -n "$before" ] || fail "no rdma_port_state_changes_total of rxe1/1"
  run ip link set late0 down
  wait_for 30 "rxe1/1 DOWN" rxe1_state_is DOWN || return 1
  run ip link set late0 up
  wait_for 30 "rxe1/1 ACTIVE again" rxe1_state_is ACTIVE || return 1
  # The daemon publishes the count when it re-reads the port; allow it a few polls.
  local i
  for i in $(seq 20); do
    after=$(rxe1_state_changes)
    [ "${after:-0}" -ge $((before + 2)) ] && break
    sleep 0.5
  done
  echo "state changes of rxe1/1 after the flap: $after"
  [ "$after" -ge $((before + 2)) ] || fail "the flap was not counted ($before -> $after)"
  exporter_journal
}
# After the reboot onto dbus-broker: the socket, enabled in phase 3, starts the exporter at
# the first scrape again, and it reads the daemon through dbus-broker.
c_broker_exporter() {
  wait_for 120 "rxe0 back" sh -c 'rdma link show | grep -q "link rxe0/1 state ACTIVE"' || { run rdma link show; return 1; }
  run systemctl is-enabled rdma-exporter.socket
  run systemctl is-active rdma-exporter.socket
  is_active rdma-exporter.socket || fail "rdma-exporter.socket not listening after the reboot"
  scraped_ok
  exporter_journal
}

# NFS over RDMA, server side: nfs-server was set up only through SetNfsRdma (phase 1) and
# listens on rdma 20049 since the boot; the export is the administrator's own line in
# /etc/exports. The client guest mounts with proto=rdma and writes a file; its checksum
# must be the same here.
c_nfs_rdma_server() {
  mkdir -p /srv/nfs && chmod 1777 /srv/nfs
  echo "/srv/nfs 192.168.77.0/24(rw,sync,no_subtree_check,no_root_squash)" >/etc/exports
  run exportfs -ra || return 1
  run exportfs -v
  run cat /proc/fs/nfsd/portlist
  run rdma link show
  run ip -br addr show eth0
  echo ready >"$rdv/server-ready"
  wait_for 900 "the client's verdict" sh -c "[ -e $rdv/client-done ] || [ -e $rdv/client-failed ]" || return 1
  [ -e "$rdv/client-done" ] || fail "the client failed (see its transcripts)"
  run cat "$rdv/client-done"
  local sum file
  read -r sum file <"$rdv/client-done"
  run ls -l /srv/nfs
  run sha256sum "/srv/nfs/$file"
  [ "$(sha256sum "/srv/nfs/$file" | cut -d' ' -f1)" = "$sum" ] || fail "checksum differs on the server"
}

# The client guest: its own rxe over eth0, an address of its own, and the mount.
c_nfs_client_setup() {
  run nmcli connection modify eth0 ipv4.addresses 192.168.77.2/24 || return 1
  run nmcli connection up eth0 || return 1
  run ip -br addr show eth0
  run modprobe rdma_rxe || return 1
  run rdma link add rxe0 type rxe netdev eth0 || return 1
  wait_for 60 "an IPv4 GID on rxe0" sh -c 'grep -q "0000:0000:0000:0000:0000:ffff:c0a8:4d02" /sys/class/infiniband/rxe0/ports/1/gids/*' || return 1
  run rdma link show
  wait_for 1500 "the server's export" test -e "$rdv/server-ready"
}
c_nfs_client_mount() {
  local sum
  [ -e "$rdv/server-ready" ] || fail "the server never got ready"
  run modprobe rpcrdma
  mkdir -p /mnt/nfs
  run mount -t nfs -o vers=4.2,proto=rdma,port=20049 192.168.77.1:/srv/nfs /mnt/nfs || return 1
  run grep /mnt/nfs /proc/mounts
  grep /mnt/nfs /proc/mounts | grep -q 'proto=rdma' || fail "not mounted over rdma"
  run dd if=/dev/urandom of=/mnt/nfs/from-client bs=1M count=8 status=none || return 1
  sync
  run sha256sum /mnt/nfs/from-client
  sum=$(sha256sum /mnt/nfs/from-client | cut -d' ' -f1)
  run umount /mnt/nfs || return 1
  # The server reads it back and compares.
  echo "$sum from-client" >"$rdv/client-done"
}

c_reboot_nfs() {
  wait_for 60 "nfs-server active" is_active nfs-server.service
  run cat /proc/fs/nfsd/portlist
  grep -qx 'rdma 20049' /proc/fs/nfsd/portlist || fail "nfsd does not listen on rdma 20049"
}

# ------------------------------------------------------------------ link tests (two guests)
# The client guest installs the package and enables its responder; the first guest tests the
# link to it through the service (RDMA and ICMP), runs perftest's own clients against the same
# responder for comparison (printed side by side as "linktest:" lines), and checks the
# failures: an address nobody has, a peer whose responder is off, its own port set down, and
# an unprivileged caller refused by polkit. Each failure must come within its timeout.
LT_PEER=192.168.77.2
LT_PORT=rxe0/1
# lt_field FILE KEY: one field of a saved `rdma-cli -j test-link` result.
lt_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# lt_run FILE ARGS...: `rdma-cli -j test-link ARGS` saved in FILE and printed; its exit code.
lt_run() {
  local file=$1 rc=0
  shift
  echo "\$ rdma-cli -j test-link $*"
  rdma-cli -j test-link "$@" >"$file" || rc=$?
  cat "$file"
  echo "(exit $rc)"
  return "$rc"
}
# lt_fails FILE TIMEOUT REASONS ARGS...: the test must fail (exit 7) with one of REASONS
# (space-separated) and end within TIMEOUT seconds plus the bus's slack.
lt_fails() {
  local file=$1 timeout=$2 reasons=$3 rc=0 t0=$SECONDS reason
  shift 3
  lt_run "$file" "$@" --timeout "$timeout" || rc=$?
  echo "ended after $((SECONDS - t0))s"
  [ "$rc" -eq 7 ] || fail "exit $rc, not 7 (the test did not pass)"
  [ $((SECONDS - t0)) -le $((timeout + 10)) ] || fail "took longer than its timeout"
  reason=$(lt_field "$file" reason)
  case " $reasons " in *" $reason "*) ;; *) fail "reason $reason, not one of: $reasons" ;; esac
  echo "linktest: $* -> $reason in $((SECONDS - t0))s"
}
# The result row of perftest's output (the line after its #bytes header).
perftest_row() { awk '/#bytes/ { getline; print; exit }' "$1"; }

c_linktest() {
  set -o pipefail
  wait_for 900 "the client's responder" sh -c "[ -e $rdv/responder-ready ] || [ -e $rdv/responder-failed ]" || return 1
  [ -e "$rdv/responder-ready" ] || fail "the client could not start its responder"
  run rdma link show
  run busctl call "$BUS" "$ROOT" "$BUS" GetLinkResponder
  # The service's RDMA test and perftest's own clients against the client's responder, by
  # hand, in turn on the same link: syslab.linktest_rounds=N rounds (1 unless asked; the
  # figures of docs/PERFORMANCE.md come from more), each printed, then their medians.
  local rounds i lat bw f
  rounds=$(sed -n 's/.*syslab\.linktest_rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
  rounds=${rounds:-1}
  : >/root/lt-rounds.txt
  for ((i = 1; i <= rounds; i++)); do
    f=/root/lt-rdma-$i.json
    lt_run "$f" "$LT_PORT" "$LT_PEER" --kind rdma --timeout 300 || fail "TestLink rdma did not pass (round $i)"
    run ib_send_lat -R -F -d rxe0 -p 18515 "$LT_PEER" | tee /root/hand-lat.txt || fail "ib_send_lat against the responder failed"
    run ib_send_bw -R -F -d rxe0 -p 18516 --report_gbits "$LT_PEER" | tee /root/hand-bw.txt || fail "ib_send_bw against the responder failed"
    lat=$(perftest_row /root/hand-lat.txt)
    bw=$(perftest_row /root/hand-bw.txt)
    # service, then perftest: p50 (t_typical), average, p99, bandwidth.
    echo "$(lt_field "$f" latency_p50_us) $(echo "$lat" | awk '{print $5}')" \
      "$(lt_field "$f" latency_avg_us) $(echo "$lat" | awk '{print $6}')" \
      "$(lt_field "$f" latency_p99_us) $(echo "$lat" | awk '{print $8}')" \
      "$(lt_field "$f" bandwidth_gbps) $(echo "$bw" | awk '{print $4}')" >>/root/lt-rounds.txt
    echo "linktest: round $i (service perftest): $(tail -n 1 /root/lt-rounds.txt)"
  done
  cp /root/lt-rdma-1.json /root/lt-rdma.json
  python3 - /root/lt-rounds.txt <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
names = [("latency p50", "us", "t_typical"), ("latency avg", "us", "t_avg"),
         ("latency p99", "us", "99% percentile"), ("bandwidth", "Gb/s", "BW average")]
for k, (name, unit, theirs) in enumerate(names):
    ours = statistics.median(r[2 * k] for r in rows)
    perf = statistics.median(r[2 * k + 1] for r in rows)
    ratio = ours / perf if perf else float("nan")
    print(f"linktest: {name} median of {len(rows)}: service {ours:g} {unit}, perftest {perf:g} {unit} ({theirs}); service/perftest {ratio:.3f}")
PY
  lt_run /root/lt-icmp-peer.json "$LT_PORT" "$LT_PEER" --kind icmp --timeout 30 || fail "TestLink icmp to the peer did not pass"
  echo "linktest: path gid_index $(lt_field /root/lt-rdma.json gid_index) gid_type $(lt_field /root/lt-rdma.json gid_type) mtu $(lt_field /root/lt-rdma.json mtu)"
  [ "$(lt_field /root/lt-rdma.json gid_index)" -ge 0 ] || fail "the GID used is not in the port's table"
  # An address on the subnet that nobody has.
  lt_fails /root/lt-wrong.json 20 "no-route timeout" "$LT_PORT" 192.168.77.99 --kind rdma
  # A peer with no responder: the client turns its responder off on request.
  echo off >"$rdv/responder-off-please"
  wait_for 60 "the client's responder off" test -e "$rdv/responder-off" || return 1
  lt_fails /root/lt-noresp.json 30 "no-responder" "$LT_PORT" "$LT_PEER" --kind rdma
  # An unprivileged caller: polkit refuses (exit 3), nothing runs.
  echo "\$ runuser -u $USER_NAME -- rdma-cli test-link $LT_PORT $LT_PEER"
  local rc=0
  runuser -u "$USER_NAME" -- rdma-cli test-link "$LT_PORT" "$LT_PEER" || rc=$?
  echo "(exit $rc)"
  [ "$rc" -eq 3 ] || fail "an unprivileged TestLink was not refused by polkit (exit $rc)"
  run rdma-cli -t responder status
  # The port set down: refused with port-down before anything is sent.
  local port
  port=$(device_path rxe0)/Port/1
  run ip link set eth0 down
  wait_for 30 "rxe0's port DOWN" sh -c "busctl get-property $BUS $port $BUS.Port State | grep -q DOWN"
  lt_fails /root/lt-down.json 20 "port-down" "$LT_PORT" "$LT_PEER" --kind rdma
  run ip link set eth0 up
  wait_for 60 "rxe0's port ACTIVE" sh -c "busctl get-property $BUS $port $BUS.Port State | grep -q ACTIVE" || fail "rxe0 did not come back"
  run busctl call "$BUS" "$ROOT" "$BUS" RecentLinkTests
  # The other way: this guest's responder, the client's TestLink (RDMA and ICMP) to it.
  run rdma-cli responder on || fail "this guest's responder did not turn on"
  wait_for 30 "this guest's servers running" sh -c 'rdma-cli -t responder status | cut -d: -f2 | grep -qx yes' \
    || fail "this guest's responder does not run"
  echo ready >"$rdv/back-responder-ready"
  wait_for 600 "the client's tests to this guest" test -e "$rdv/back-tests-done" || fail "the client did not test back"
  run cat "$rdv/back-tests.txt"
  grep -qx 'rdma passed' "$rdv/back-tests.txt" || fail "the client's TestLink rdma to this guest did not pass"
  grep -qx 'icmp passed' "$rdv/back-tests.txt" || fail "the client's TestLink icmp to this guest did not pass"
  run rdma-cli responder off
  run journalctl -b -u rdma-managerd.service --no-pager -o cat -n 30
}

# TestLink icmp under the shipped unit, with Debian's ping (file capability cap_net_raw=ep,
# ICMP datagram sockets closed by net.ipv4.ping_group_range "1 0"): the sandbox gives ping
# CAP_NET_RAW alone. The guest's own eth0 address needs no second guest.
c_linktest_icmp() {
  set -o pipefail
  local addr
  run sysctl net.ipv4.ping_group_range
  run getcap /usr/bin/ping
  addr=$(ip -4 -o addr show dev eth0 | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
  [ -n "$addr" ] || fail "eth0 has no IPv4 address"
  lt_run /root/lt-icmp.json "$LT_PORT" "$addr" --kind icmp --duration 2 --timeout 30 || fail "TestLink icmp did not pass"
  [ "$(lt_field /root/lt-icmp.json round_trips)" -ge 5 ] || fail "fewer than 5 round trips in 2 s"
  # Nothing is left running as nobody, and the daemon's own sets did not change.
  run grep -E '^Cap(Prm|Eff|Bnd)' "/proc/$(systemctl show -P MainPID rdma-managerd.service)/status"
}

# The client: the package, its responder, and the first guest's requests.
# cpu_ticks PID...: their utime + stime together, in clock ticks.
cpu_ticks() {
  local p sum=0
  for p in "$@"; do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}
# rss_kib PID: its resident set.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
c_linktest_responder() {
  local deb
  deb=$(ls "$share"/rdma-manager_*.deb | head -n 1)
  [ -f "$deb" ] || fail "no package on the share"
  cp "$deb" /root/ || return 1
  run apt-get install -y /root/"${deb##*/}" || return 1
  wait_for 60 "rdma-managerd active" is_active rdma-managerd.service || return 1
  run rdma-cli responder on || return 1
  run cat /etc/rdma-manager/link-test.toml
  wait_for 30 "both servers running" sh -c 'rdma-cli -t responder status | cut -d: -f2 | grep -qx yes' || return 1
  run rdma-cli responder status
  run ps -o user,pid,pgid,args -C ib_send_lat,ib_send_bw
  ps -o user= -C ib_send_lat,ib_send_bw | grep -qv '^root' || fail "a responder server runs as root"
  run grep -E '^(CapBnd|CapEff|NoNewPrivs)' "/proc/$(pgrep -o ib_send_lat)/status"
  # Idle, the servers sleep in rdma_cm: their CPU over 20 s (utime + stime, clock ticks).
  local servers t0 t1
  servers=$(pgrep -d ' ' -x 'ib_send_lat|ib_send_bw')
  t0=$(cpu_ticks $servers)
  sleep 20
  t1=$(cpu_ticks $servers)
  echo "linktest: responder idle 20 s: $((t1 - t0)) clock ticks of CPU in its servers ($servers)"
  echo "linktest: rdma-managerd RSS before the tests $(rss_kib "$(systemctl show -P MainPID rdma-managerd)") KiB"
  echo ready >"$rdv/responder-ready"
  wait_for 900 "the first guest's request" sh -c "[ -e $rdv/responder-off-please ] || [ -e $rdv/linktest-done ]"
  if [ -e "$rdv/responder-off-please" ]; then
    run rdma-cli responder off
    # Until they are gone their listeners take connections nobody accepts.
    wait_for 30 "no server left" sh -c '! pgrep -x ib_send_lat && ! pgrep -x ib_send_bw'
    echo off >"$rdv/responder-off"
  fi
  # The first guest's responder, tested from here: "KIND passed" or "KIND failed REASON"
  # lines for it to judge.
  wait_for 600 "the first guest's responder" sh -c "[ -e $rdv/back-responder-ready ] || [ -e $rdv/linktest-done ]"
  if [ -e "$rdv/back-responder-ready" ]; then
    local kind timeout passed
    : >/root/back-tests.txt
    for kind in rdma icmp; do
      timeout=30
      [ "$kind" = rdma ] && timeout=300
      echo "\$ rdma-cli -j test-link rxe0/1 192.168.77.1 --kind $kind --timeout $timeout"
      rdma-cli -j test-link rxe0/1 192.168.77.1 --kind "$kind" --timeout "$timeout" >/root/back-$kind.json || true
      cat /root/back-$kind.json
      passed=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("passed" if r["passed"] else "failed " + r["reason"])' /root/back-$kind.json 2>/dev/null || echo "failed no-result")
      echo "$kind $passed" >>/root/back-tests.txt
    done
    cp /root/back-tests.txt "$rdv/back-tests.txt"
    echo done >"$rdv/back-tests-done"
  fi
  wait_for 600 "the first guest's link tests" test -e "$rdv/linktest-done"
  run rdma-cli responder status
  echo "linktest: rdma-managerd RSS after the tests $(rss_kib "$(systemctl show -P MainPID rdma-managerd)") KiB ($(rdma-cli -t responder status | cut -d: -f5) tests served)"
}

# ------------------------------------------------------------------ Ansible (issue: the fleet)
# The first guest is the control node: Debian's ansible-core runs the playbooks of the share's
# ansible/ against itself (local connection) and, in a two-guest run, the NFS client guest over
# SSH on their wire (root's key is the image's own; both guests boot the same image). The
# collection is the one the package installs under /usr/share/ansible/collections.
LAB_INVENTORY=/root/lab-inventory.ini
CLIENT_ADDR=192.168.77.2
on_client() {
  ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o LogLevel=ERROR -o ConnectTimeout=20 "root@$CLIENT_ADDR" "$@"
}
# playbook FILE [ARGS...]: ansible-playbook from the share's ansible/ on the lab's inventory.
playbook() {
  local file=$1
  shift
  echo "\$ ansible-playbook $file $*"
  (cd "$share/ansible" && ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_NOCOLOR=1 \
    ANSIBLE_RETRY_FILES_ENABLED=False ansible-playbook -i "$LAB_INVENTORY" "$file" "$@")
}
# recap_changed LOG HOST: the changed= count of HOST in the play recap of LOG.
recap_changed() {
  sed -n "s/^$2 *: ok=[0-9]* *changed=\([0-9]*\).*/\1/p" "$1" | tail -n 1
}
lab_hosts() { sed -n 's/^\(main\|client\) .*/\1/p' "$LAB_INVENTORY"; }
# on_host HOST CMD...: runs CMD on the lab host HOST (here, or on the client over SSH).
on_host() {
  local h=$1
  shift
  if [ "$h" = main ]; then "$@"; else on_client "$@"; fi
}
roce_tos_of() { on_host "$1" cat /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos; }
all_tos() {
  local h
  for h in $(lab_hosts); do [ "$(roce_tos_of "$h")" = "$1" ] || return 1; done
}

c_ansible() {
  local h log=/root/ansible-site.log n
  {
    echo "[rdma]"
    echo "main ansible_connection=local"
    [ -d "$rdv" ] && echo "client ansible_host=$CLIENT_ADDR ansible_user=root"
    echo "[rdma:vars]"
    echo "ansible_python_interpreter=/usr/bin/python3"
  } >"$LAB_INVENTORY"
  run cat "$LAB_INVENTORY"
  run ansible-playbook --version
  if [ -d "$rdv" ]; then
    wait_for 900 "the client guest's service installed" test -e "$rdv/client-ansible-ready" || return 1
    run on_client rdma-cli status || fail "cannot reach the client guest over SSH"
  fi
  for h in $(lab_hosts); do
    on_host "$h" mkdir -p /sys/kernel/config/rdma_cm/rxe0 2>/dev/null
  done

  echo "--- 1. the fleet's state applied, confirmed over a new connection"
  set -o pipefail
  playbook site.yml -v | tee "$log" || fail "site.yml failed"
  for h in $(lab_hosts); do
    n=$(recap_changed "$log" "$h")
    echo "$h: changed=$n"
    [ "${n:-0}" -ge 1 ] || fail "site.yml changed nothing on $h"
    run on_host "$h" rdma link show
    on_host "$h" rdma link show | grep -q '^link rxe0/1 ' || fail "no rxe0 on $h"
    [ "$(roce_tos_of "$h")" = "$TOS" ] || fail "ToS on $h is not $TOS"
    run on_host "$h" grep -x rds_rdma /etc/rdma/modules/rdma.conf || fail "rds_rdma not enabled on $h"
  done

  echo "--- 2. the same playbook again: nothing to do"
  playbook site.yml | tee "$log.2" || fail "the second run of site.yml failed"
  for h in $(lab_hosts); do
    [ "$(recap_changed "$log.2" "$h")" = 0 ] || fail "the second run changed $h"
  done

  echo "--- 3. check mode shows the difference and changes nothing"
  playbook check.yml --check --diff | tee "$log.check" || fail "check mode failed"
  grep -q 'tos' "$log.check" || fail "no diff of the ToS in check mode"
  for h in $(lab_hosts); do
    [ "$(recap_changed "$log.check" "$h")" -ge 1 ] || fail "check mode reported no change on $h"
  done
  all_tos "$TOS" || fail "check mode changed a ToS"

  echo "--- 4. a state the service refuses: the task fails with its words, nothing changed"
  for h in $(lab_hosts); do on_host "$h" rdma-cli show --yaml >"/root/before-$h.yml"; done
  if playbook bad.yml | tee "$log.bad"; then fail "bad.yml succeeded"; fi
  grep -q 'nosuchdev0' "$log.bad" || fail "the failure does not name the missing device"
  for h in $(lab_hosts); do
    on_host "$h" rdma-cli show --yaml >"/root/after-$h.yml"
    run diff -u "/root/before-$h.yml" "/root/after-$h.yml" || fail "the refused state changed $h"
    ! on_host "$h" grep -qx ib_isert /etc/rdma/modules/rdma.conf || fail "ib_isert enabled on $h"
  done

  echo "--- 5. an apply nobody confirms rolls back at its timeout"
  playbook unconfirmed.yml | tee "$log.unconfirmed" || fail "unconfirmed.yml failed"
  all_tos 32 || fail "the unconfirmed ToS 32 is not in force"
  wait_for 90 "every host back at ToS $TOS" all_tos "$TOS" || fail "no rollback at the timeout"
  for h in $(lab_hosts); do echo "$h: ToS $(roce_tos_of "$h")"; done
  run cat /etc/rdma-manager/state.d/50-lab.yml
}

c_ansible_client() {
  local deb
  deb=$(ls "$share"/rdma-manager_*.deb | head -n 1)
  cp "$deb" /root/ || return 1
  run apt-get install -y /root/"${deb##*/}" || return 1
  run rdma-cli status || return 1
  # The rxe0 of the NFS checks was made by hand: the first guest's playbook makes it again
  # through the service.
  run rdma link delete rxe0 || return 1
  echo ready >"$rdv/client-ansible-ready"
  wait_for 2400 "the first guest's playbooks" test -e "$rdv/ansible-done"
}

# After the reboot: the state directory's file, never applied before, is in force; the
# fleet's state held; the playbook finds nothing to do.
c_reboot_ansible() {
  local log=/root/ansible-reboot.log
  wait_for 120 "50-lab.yml in StateDirectory" sh -c \
    "busctl get-property $BUS $ROOT $BUS StateDirectory | grep -q 50-lab.yml" || return 1
  rprop StateDirectory
  busctl get-property "$BUS" "$ROOT" "$BUS" StateDirectory | grep -q '50-lab.yml" "applied"' \
    || fail "50-lab.yml was not applied at start"
  run grep -x ib_isert /etc/rdma/modules/rdma.conf || fail "ib_isert not enabled by the state directory"
  run rdma-cli diff /etc/rdma-manager/state.d/50-lab.yml || fail "the state directory's state does not hold"
  { echo "[rdma]"; echo "main ansible_connection=local"; } >"$LAB_INVENTORY"
  set -o pipefail
  playbook site.yml | tee "$log" || fail "site.yml failed after the reboot"
  [ "$(recap_changed "$log" main)" = 0 ] || fail "site.yml changed something after the reboot"
}

if [ "$role" = nfs-client ]; then
  check nfs-client-setup c_nfs_client_setup
  check nfs-client-mount c_nfs_client_mount
  [ -e "$rdv/client-done" ] || echo failed >"$rdv/client-failed"
  # The link checks run unless run.sh was given --no-linktest (syslab.linktest=1 on the
  # guests' command line otherwise).
  if grep -qw 'syslab.linktest=1' /proc/cmdline; then
    check linktest-responder c_linktest_responder
    [ -e "$rdv/responder-ready" ] || echo failed >"$rdv/responder-failed"
  fi
  [ -d "$share/ansible" ] && check ansible-client c_ansible_client
  exit 0
fi

case "$phase" in
  1)
    check boot c_boot
    check install c_install
    check files c_files
    check activation c_activation
    check udev c_udev
    check softlink c_softlink
    check roce c_roce
    check rename c_rename
    check naming c_naming
    check modules c_modules
    check memlock c_memlock
    check nfs c_nfs
    check journal c_journal
    check security c_security
    echo "phase 1: $failures failed" >>"$out/summary"
    next_boot
    ;;
  2)
    # Nobody calls the daemon before these have looked.
    check reboot-softlink c_reboot_softlink
    check reboot-roce c_reboot_roce
    check reboot-modules c_reboot_modules
    check reboot-memlock c_reboot_memlock
    check reboot-nfs c_reboot_nfs
    [ -d "$rdv" ] && check nfs-rdma-server c_nfs_rdma_server
    if [ -d "$rdv" ] && grep -qw 'syslab.linktest=1' /proc/cmdline; then
      check linktest c_linktest
      echo done >"$rdv/linktest-done"
    fi
    if [ -d "$share/ansible" ]; then
      check ansible c_ansible
      [ -d "$rdv" ] && echo done >"$rdv/ansible-done"
    fi
    check reboot-boot c_boot2
    check networkmanager c_networkmanager
    check nm-rollback c_nm_rollback
    check linktest-icmp c_linktest_icmp
    check tui c_tui
    check late-setup c_late_setup
    check health c_health
    check ip-managers c_ip_managers
    echo "phase 2: $failures failed" >>"$out/summary"
    next_boot
    ;;
  3)
    [ -d "$share/ansible" ] && check reboot-ansible c_reboot_ansible
    check late-netdev c_late_netdev
    check gmo-dbus-daemon c_gmo_dbus_daemon
    check exporter c_exporter
    check broker-switch c_broker_switch
    echo "phase 3: $failures failed" >>"$out/summary"
    next_boot
    ;;
  4)
    # dbus-broker is the system bus from this boot on.
    check broker-boot c_broker_boot
    check broker-daemon c_broker_daemon
    check gmo-dbus-broker c_gmo_dbus_broker
    check broker-exporter c_broker_exporter
    echo "phase 4: $failures failed" >>"$out/summary"
    exit 0
    ;;
  *)
    summary "syslab: FAIL phase-$phase (unexpected boot)"
    exit 0
    ;;
esac
