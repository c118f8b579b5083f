#!/bin/sh
# The kernel lab's daemon phase (tests/lab/README.md). /init runs this in the guest, as
# /bin/lab-daemon-checks, after the scenario runner: it starts a real system bus and
# rdma-managerd on the real kernel, then checks over D-Bus with busctl that an rxe device made
# with `rdma link add` appears as an object and disappears on `rdma link delete`.
#
# Every check prints one line `lab-daemon: ok ...` or `lab-daemon: FAIL ...` on stdout (the
# console); other lines are `lab-daemon: note ...`. Exit status 0 only if no check failed.
# Nothing here writes to /dev/ttyS1: the transcript belongs to the scenario runner.

# Functions below run through wait_for, which shellcheck cannot follow.
# shellcheck disable=SC2317
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat

NAME=org.rdmamanager.RdmaManager1
ROOT=/org/rdmamanager/RdmaManager1
OM=org.freedesktop.DBus.ObjectManager
SOCK=/run/dbus/system_bus_socket
DEV=rxe_lab
NETDEV=veth1   # up with carrier after the scenario runner; no RDMA device left on it
DAEMON_LOG=/tmp/rdma-managerd.log
BUS_LOG=/tmp/dbus-daemon.log
POLKIT_LOG=/tmp/polkitd.log
SOFT_LINKS=/etc/rdma-manager/soft-links.toml
ROCE_TOML=/etc/rdma-manager/roce.toml
CM=/sys/kernel/config/rdma_cm
MONITOR_LOG=/tmp/busctl-monitor.log

fails=0
ok()   { echo "lab-daemon: ok $*"; }
fail() { echo "lab-daemon: FAIL $*"; fails=$((fails + 1)); }
note() { echo "lab-daemon: note $*"; }
bus()  { busctl --system --no-pager --no-legend "$@"; }

# Centiseconds since boot, and the seconds between two of them.
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
since() { awk -v a="$1" -v b="$(now_cs)" 'BEGIN { printf "%.2f s", (b - a) / 100 }'; }

# wait_for SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds; false on timeout.
wait_for() {
  _limit=$(($(now_cs) + $1 * 100))
  shift
  until "$@"; do
    [ "$(now_cs)" -lt "$_limit" ] || return 1
    sleep 0.1
  done
}

# Whether process $1 runs (a zombie does not: it exited and awaits `wait`).
alive() {
  [ -r "/proc/$1/stat" ] || return 1
  [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# Prints a log file with a prefix on every line.
show_log() {
  [ -s "$2" ] || return 0
  sed "s/^/$1| /" "$2"
}

# The finish: logs, then the exit status.
finish() {
  [ -n "${monitor_pid:-}" ] && kill "$monitor_pid" 2>/dev/null
  show_log dbus-daemon "$BUS_LOG"
  show_log polkitd "$POLKIT_LOG"
  show_log rdma-managerd "$DAEMON_LOG"
  if [ "$fails" -eq 0 ]; then
    note "all checks passed"
    exit 0
  fi
  note "$fails check(s) failed"
  exit 1
}

# The Device objects the service exports, one path a line.
device_paths() {
  bus --list tree "$NAME" 2>/dev/null | grep -E "^$ROOT/Device/[0-9]+\$"
}

# Sets dev_path to the Device object whose Name is $DEV; false if there is none.
find_device() {
  for _p in $(device_paths); do
    if [ "$(bus get-property "$NAME" "$_p" "$NAME.Device" Name 2>/dev/null)" = "s \"$DEV\"" ]; then
      dev_path=$_p
      return 0
    fi
  done
  return 1
}
device_gone() { ! device_paths | grep -qx "$dev_path"; }

# (Not `busctl status`: it fetches the owner's credentials, which fails with ENOMEDIUM without
# a cgroup file system.)
name_owned() {
  [ "$(bus call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s "$NAME" 2>/dev/null)" = "b true" ]
}
owned_or_dead() { name_owned || ! alive "$daemon_pid"; }
daemon_gone() { ! alive "$daemon_pid"; }
# Whether busctl monitor logged signal $1 carrying the object path $dev_path.
monitor_saw() {
  awk -v m="Member=$1" -v p="OBJECT_PATH \"$dev_path\";" '
    index($0, "Member=") { cur = (index($0, m) > 0) }
    cur && index($0, p) { found = 1 }
    END { exit !found }' "$MONITOR_LOG"
}

# Port 1's State over D-Bus and in sysfs ("4: ACTIVE" -> ACTIVE).
port_states_agree() {
  dbus_state=$(bus get-property "$NAME" "$dev_path/Port/1" "$NAME.Port" State 2>&1)
  sysfs_state=$(cat "/sys/class/infiniband/$DEV/ports/1/state" 2>&1)
  [ "$dbus_state" = "s \"${sysfs_state#*: }\"" ]
}

# ---------------------------------------------------------------- leftovers
left=$(ls /sys/class/infiniband 2>/dev/null)
for d in $left; do
  note "deleting $d, left by the scenario runner"
  rdma link delete "$d" || fail "rdma link delete $d (left by the scenario runner)"
done

# ---------------------------------------------------------------- system bus
mkdir -p /run/dbus
t0=$(now_cs)
dbus-daemon --system --nofork --nopidfile --nosyslog >"$BUS_LOG" 2>&1 &
bus_pid=$!
if wait_for 20 test -S "$SOCK"; then
  ok "system bus: dbus-daemon $(dbus-daemon --version | awk 'NR == 1 { print $NF }') listening on $SOCK after $(since "$t0")"
else
  fail "system bus: no $SOCK after $(since "$t0") (dbus-daemon running: $(alive "$bus_pid" && echo yes || echo no))"
  finish
fi

# ---------------------------------------------------------------- polkit
# Every change below is authorized by a real polkitd: root is allowed by polkit itself.
t0=$(now_cs)
/usr/lib/polkit-1/polkitd --no-debug >"$POLKIT_LOG" 2>&1 &
polkit_pid=$!
polkit_owned() {
  [ "$(bus call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s org.freedesktop.PolicyKit1 2>/dev/null)" = "b true" ]
}
if wait_for 30 polkit_owned; then
  ok "polkitd owns org.freedesktop.PolicyKit1 after $(since "$t0")"
else
  fail "polkitd does not own org.freedesktop.PolicyKit1 after $(since "$t0") (running: $(alive "$polkit_pid" && echo yes || echo no))"
fi

# ---------------------------------------------------------------- the daemon
start_daemon() {
  t0=$(now_cs)
  RUST_LOG=info NO_COLOR=1 rdma-managerd >>"$DAEMON_LOG" 2>&1 &
  daemon_pid=$!
  wait_for 60 owned_or_dead
}
stop_daemon() {
  alive "$daemon_pid" || return 1
  kill -TERM "$daemon_pid"
  wait_for 10 daemon_gone || return 1
  wait "$daemon_pid"
}
t0=$(now_cs)
RUST_LOG=info NO_COLOR=1 rdma-managerd >"$DAEMON_LOG" 2>&1 &
daemon_pid=$!
wait_for 60 owned_or_dead
if name_owned; then
  ok "rdma-managerd owns $NAME on the system bus after $(since "$t0")"
else
  fail "rdma-managerd does not own $NAME after $(since "$t0") (running: $(alive "$daemon_pid" && echo yes || echo no))"
  finish
fi
# The name is owned before the host is read; Startup says when start-up is over.
startup_over() { [ "$(bus get-property "$NAME" "$ROOT" "$NAME" Startup 2>/dev/null)" = "b false" ]; }
if wait_for 60 startup_over; then
  ok "start-up over (Startup false) after $(since "$t0")"
else
  fail "Startup still true after $(since "$t0"): $(bus get-property "$NAME" "$ROOT" "$NAME" Startup 2>&1)"
fi

v=$(bus get-property "$NAME" "$ROOT" "$NAME" Simulated 2>&1)
if [ "$v" = "b false" ]; then ok "Simulated is false (the real host)"; else fail "Simulated: $v"; fi

intro=$(bus introspect "$NAME" "$ROOT" 2>/tmp/introspect.err)
if echo "$intro" | grep -q "^$OM " && echo "$intro" | grep -q "^$NAME "; then
  ok "introspect $ROOT: $(echo "$intro" | grep -c '^[a-z].* interface ') interfaces, $OM and $NAME among them"
else
  fail "introspect $ROOT: $(head -n 3 /tmp/introspect.err) $(echo "$intro" | head -n 3)"
fi
if [ -s /tmp/introspect.err ]; then
  note "busctl introspect warned $(wc -l </tmp/introspect.err) time(s): $(sort /tmp/introspect.err | uniq -c | tr -s ' ' | tr '\n' ';')"
fi

n=$(device_paths | wc -l)
if [ "$n" -eq 0 ]; then
  ok "no Device object while the kernel has no RDMA device"
else
  fail "$n Device object(s) while the kernel has no RDMA device: $(device_paths | tr '\n' ' ')"
fi

# Signals of the ObjectManager, for InterfacesAdded and InterfacesRemoved.
busctl --system --no-pager monitor --match "type='signal',interface='$OM'" >"$MONITOR_LOG" 2>&1 &
monitor_pid=$!
wait_for 10 grep -q "Monitoring bus message stream" "$MONITOR_LOG" \
  || note "busctl monitor did not start: $(head -n 2 "$MONITOR_LOG")"

# ---------------------------------------------------------------- add
dev_path=""
if rdma link add "$DEV" type rxe netdev "$NETDEV"; then
  t0=$(now_cs)
  ok "rdma link add $DEV type rxe netdev $NETDEV"
else
  fail "rdma link add $DEV type rxe netdev $NETDEV"
  finish
fi
if wait_for 10 find_device; then
  ok "$DEV appeared as $dev_path after $(since "$t0")"
else
  fail "no Device object named $DEV after $(since "$t0"): $(device_paths | tr '\n' ' ')"
  finish
fi

kidx=$(rdma dev show "$DEV" 2>&1 | awk -F: 'NR == 1 { print $1 }')
if [ "${dev_path##*/}" = "$kidx" ]; then
  ok "the object path ends in the kernel index $kidx (rdma dev show)"
else
  fail "object $dev_path, kernel index ${kidx:-unknown}"
fi

v=$(bus get-property "$NAME" "$dev_path" "$NAME.Device" ParentNetdev 2>&1)
if [ "$v" = "s \"$NETDEV\"" ]; then ok "$DEV ParentNetdev is $NETDEV"; else fail "$DEV ParentNetdev: $v"; fi

if wait_for 5 port_states_agree; then
  ok "$dev_path/Port/1 State is ${dbus_state#s } (sysfs: $sysfs_state)"
else
  fail "$dev_path/Port/1 State: $dbus_state (sysfs: $sysfs_state)"
fi

gmo=$(bus --json=pretty call "$NAME" "$ROOT" "$OM" GetManagedObjects 2>&1)
if echo "$gmo" | grep -q "\"$dev_path/Port/1\""; then
  ok "GetManagedObjects: $(echo "$gmo" | wc -l) lines (--json=pretty), $dev_path/Port/1 among the objects"
else
  fail "GetManagedObjects: no $dev_path/Port/1 in: $(echo "$gmo" | head -n 5)"
fi

if wait_for 5 monitor_saw InterfacesAdded; then
  ok "busctl monitor saw InterfacesAdded for $dev_path"
else
  fail "busctl monitor saw no InterfacesAdded for $dev_path"
fi

# ---------------------------------------------------------------- rdma-tui --ibstat
# With rdma-tui in the image (run-lab.sh --tui-bin): what it prints from the daemon's objects
# must be what rdma-core's ibstat prints from sysfs, byte for byte. A second device, made after
# rxe_lab but sorting before it (ibstat's order is strcmp, not the kernel's index order).
DEV2=rxe_a
NETDEV2=veth0   # the other end of the pair, up, with no RDMA device left on it
IB_OUT=/tmp/ibstat.out
IB_ERR=/tmp/ibstat.err
TUI_OUT=/tmp/rdma-tui.out
TUI_ERR=/tmp/rdma-tui.err

# ibstat_pair ARGS...: ibstat ARGS and rdma-tui --ibstat ARGS, their output in the files above
# and their exit statuses in ib_rc and tui_rc.
ibstat_pair() {
  ibstat "$@" >"$IB_OUT" 2>"$IB_ERR"
  ib_rc=$?
  rdma-tui --ibstat "$@" >"$TUI_OUT" 2>"$TUI_ERR"
  tui_rc=$?
}
# Both succeed and print the same bytes.
ibstat_same() {
  ibstat_pair "$@"
  [ "$ib_rc" -eq 0 ] && [ "$tui_rc" -eq 0 ] && cmp -s "$IB_OUT" "$TUI_OUT"
}
# After a failed ibstat_same: why, and the difference, as notes.
ibstat_differs() {
  fail "rdma-tui --ibstat${*:+ $*}$when: status $tui_rc, ibstat${*:+ $*}: status $ib_rc, outputs $(cmp "$IB_OUT" "$TUI_OUT" 2>&1)"
  diff "$IB_OUT" "$TUI_OUT" 2>&1 | sed 's/^/lab-daemon: note ibstat-vs-rdma-tui| /'
  sed 's/^/lab-daemon: note rdma-tui stderr| /' "$TUI_ERR"
  sed 's/^/lab-daemon: note ibstat stderr| /' "$IB_ERR"
}
# check_same ARGS...: waits up to 10 s for the daemon to show what the kernel shows. $when,
# if set, says in which situation.
when=""
check_same() {
  if wait_for 10 ibstat_same "$@"; then
    ok "rdma-tui --ibstat${*:+ $*} equals ibstat${*:+ $*} byte for byte$when ($(wc -l <"$TUI_OUT") lines, $(grep -c "^CA" "$TUI_OUT") device(s))"
  else
    ibstat_differs "$@"
  fi
  when=""
}
# check_fails MESSAGE ARGS...: both fail with MESSAGE on stderr and nothing on stdout.
check_fails() {
  _msg=$1
  shift
  ibstat_pair "$@"
  if [ "$ib_rc" -ne 0 ] && [ "$tui_rc" -ne 0 ] && [ ! -s "$IB_OUT" ] && [ ! -s "$TUI_OUT" ] \
     && grep -qF "$_msg" "$IB_ERR" && grep -qF "$_msg" "$TUI_ERR"; then
    ok "rdma-tui --ibstat $* fails as ibstat does (status $tui_rc, ibstat $ib_rc): $_msg"
  else
    fail "rdma-tui --ibstat $* (status $tui_rc): $(head -c 300 "$TUI_OUT" "$TUI_ERR" | tr '\n' ' '); ibstat (status $ib_rc): $(head -c 300 "$IB_OUT" "$IB_ERR" | tr '\n' ' ')"
  fi
}
# Whether ibstat shows the states $1 (rxe_a) and $2 (rxe_lab), in that (strcmp) order.
ibstat_states() {
  [ "$(ibstat 2>/dev/null | awk '/State: / && !/Physical/ { printf "%s ", $2 }')" = "$1 $2 " ]
}

if command -v rdma-tui >/dev/null; then
  if rdma link add "$DEV2" type rxe netdev "$NETDEV2"; then
    ok "rdma link add $DEV2 type rxe netdev $NETDEV2 (for the ibstat comparisons)"
  else
    fail "rdma link add $DEV2 type rxe netdev $NETDEV2"
  fi
  check_same
  if [ "$(grep "^CA '" "$TUI_OUT" | tr '\n' ' ')" = "CA '$DEV2' CA '$DEV' " ]; then
    ok "rdma-tui --ibstat lists $DEV2 before $DEV (strcmp order; kernel indexes $(rdma dev show "$DEV2" | awk -F: 'NR == 1 { print $1 }') and $kidx)"
  else
    fail "rdma-tui --ibstat device order: $(grep "^CA" "$TUI_OUT" | tr '\n' ' ')"
  fi
  check_same "$DEV"
  check_same "$DEV" 1
  check_same "$DEV2" 1
  check_fails "'nosuch' IB device can't be found" nosuch
  check_fails "CA: '$DEV' has no port number 2 - max (1)" "$DEV" 2
  # The ports follow their netdevs: $NETDEV2 down takes both ends' carrier, so both ports go
  # DOWN (Disabled); rdma-tui must follow the kernel there and back.
  if ip link set "$NETDEV2" down && wait_for 10 ibstat_states Down Down; then
    when=" with both ports Down ($NETDEV2 down)"
    check_same
  else
    fail "after ip link set $NETDEV2 down, ibstat shows: $(ibstat 2>&1 | grep -E "^CA|State" | tr -s '\t\n' '  ')"
  fi
  if ip link set "$NETDEV2" up && wait_for 20 ibstat_states Active Active; then
    when=" with both ports Active again ($NETDEV2 up)"
    check_same
  else
    fail "after ip link set $NETDEV2 up, ibstat shows: $(ibstat 2>&1 | grep -E "^CA|State" | tr -s '\t\n' '  ')"
  fi
  dev2_gone() { ! rdma-tui --ibstat 2>/dev/null | grep -q "^CA '$DEV2'"; }
  if rdma link delete "$DEV2" && wait_for 10 dev2_gone; then
    ok "rdma link delete $DEV2: gone from rdma-tui --ibstat"
  else
    fail "rdma link delete $DEV2, or it stays in rdma-tui --ibstat"
  fi
else
  note "no rdma-tui in the image (run-lab.sh --tui-bin): ibstat comparisons skipped"
fi

# ---------------------------------------------------------------- delete
if rdma link delete "$DEV"; then
  t0=$(now_cs)
  ok "rdma link delete $DEV"
  if wait_for 10 device_gone; then
    ok "$dev_path disappeared after $(since "$t0")"
  else
    fail "$dev_path still exported $(since "$t0") after the delete"
  fi
  if wait_for 5 monitor_saw InterfacesRemoved; then
    ok "busctl monitor saw InterfacesRemoved for $dev_path"
  else
    fail "busctl monitor saw no InterfacesRemoved for $dev_path"
  fi
else
  fail "rdma link delete $DEV"
fi


# ---------------------------------------------------------------- configuration over D-Bus
# The daemon's own operations on the real kernel, through busctl and polkit: a soft link
# that is remembered, RoCE defaults through configfs, a rename, and a restart after which
# the kernel has forgotten both.
call() { busctl --system --no-pager "$@" 2>&1; }
dev_prop() { bus get-property "$NAME" "$dev_path" "$NAME.Device" "$1" 2>&1; }
port_prop() { bus get-property "$NAME" "$dev_path/Port/1" "$NAME.Port" "$1" 2>&1; }
cm_attr() { cat "$CM/$1/ports/1/$2" 2>&1; }
named() { [ "$(dev_prop Name)" = "s \"$1\"" ]; }
tos_is() { [ "$(port_prop RoceTos)" = "y $1" ] && [ "$(cm_attr "$2" default_roce_tos)" = "$1" ]; }

out=$(call call "$NAME" "$ROOT" "$NAME" AddSoftLink sss "$DEV" rxe "$NETDEV")
case "$out" in
  "o \"$ROOT/Device/"*)
    dev_path=$(echo "$out" | sed 's/^o "\(.*\)"$/\1/')
    ok "AddSoftLink $DEV rxe $NETDEV through polkit: $dev_path" ;;
  *) fail "AddSoftLink $DEV rxe $NETDEV: $out"; finish ;;
esac
if [ -d "/sys/class/infiniband/$DEV" ] && grep -q "name = \"$DEV\"" "$SOFT_LINKS" 2>/dev/null; then
  ok "$DEV is in the kernel and remembered in $SOFT_LINKS"
else
  fail "$DEV in the kernel: $(ls /sys/class/infiniband | tr '\n' ' '); $SOFT_LINKS: $(cat "$SOFT_LINKS" 2>&1 | tr '\n' ' ')"
fi
out=$(call call "$NAME" "$ROOT" "$NAME" AddSoftLink sss rxe_dup rxe "$NETDEV")
case "$out" in
  *"$NETDEV"*"$DEV"*|*"$DEV"*"$NETDEV"*) ok "a second rxe on $NETDEV refused: $out" ;;
  *) fail "a second rxe on $NETDEV: $out" ;;
esac

out=$(call call "$NAME" "$dev_path/Port/1" "$NAME.Port" SetRoceMode s v2)
v=$(cm_attr "$DEV" default_roce_mode)
if [ -z "$out" ] && [ "$v" = "RoCE v2" ] && [ "$(port_prop RoceMode)" = 's "v2"' ]; then
  ok "SetRoceMode v2: configfs default_roce_mode is \"$v\", RoceMode v2"
else
  fail "SetRoceMode v2: reply \"$out\", configfs \"$v\", RoceMode $(port_prop RoceMode)"
fi
before=$(cat "$ROCE_TOML" 2>&1)
out=$(call call "$NAME" "$dev_path/Port/1" "$NAME.Port" SetRoceMode s v1)
case "$out" in
  *v2*)
    if [ "$(cm_attr "$DEV" default_roce_mode)" = "RoCE v2" ] && [ "$(cat "$ROCE_TOML" 2>&1)" = "$before" ]; then
      ok "SetRoceMode v1 refused with the reason, nothing changed: $out"
    else
      fail "SetRoceMode v1 refused but something changed: configfs $(cm_attr "$DEV" default_roce_mode)"
    fi ;;
  *) fail "SetRoceMode v1 on rxe: $out" ;;
esac
out=$(call call "$NAME" "$dev_path/Port/1" "$NAME.Port" SetRoceTos y 96)
if [ -z "$out" ] && tos_is 96 "$DEV" && grep -q 96 "$ROCE_TOML" 2>/dev/null; then
  ok "SetRoceTos 96: configfs and RoceTos agree, remembered in $ROCE_TOML"
else
  fail "SetRoceTos 96: reply \"$out\", configfs $(cm_attr "$DEV" default_roce_tos), RoceTos $(port_prop RoceTos), $ROCE_TOML: $(cat "$ROCE_TOML" 2>&1 | tr '\n' ' ')"
fi

# A rename: the configfs group stays bound to the old name (ENODEV); the daemon follows the
# device and its settings are there under the new name.
if rdma dev set "$DEV" name rxe_renamed; then
  if wait_for 10 named rxe_renamed; then
    ok "rdma dev set $DEV name rxe_renamed: the same object $dev_path is renamed"
  else
    fail "after rdma dev set name rxe_renamed, $dev_path Name: $(dev_prop Name)"
  fi
  if wait_for 10 tos_is 96 rxe_renamed; then
    ok "after the rename, RoCE settings under $CM/rxe_renamed: mode $(cm_attr rxe_renamed default_roce_mode), ToS $(cm_attr rxe_renamed default_roce_tos); old group: $(cm_attr "$DEV" default_roce_tos)"
  else
    fail "after the rename: RoceTos $(port_prop RoceTos), $CM/rxe_renamed: $(cm_attr rxe_renamed default_roce_tos)"
  fi
  rdma dev set rxe_renamed name "$DEV" || fail "rdma dev set rxe_renamed name $DEV"
  wait_for 10 named "$DEV" || fail "after renaming back, Name: $(dev_prop Name)"
else
  fail "rdma dev set $DEV name rxe_renamed"
fi

# A restart after the kernel forgot: the link is re-created, then its RoCE settings.
if stop_daemon; then ok "rdma-managerd stopped"; else fail "rdma-managerd did not stop"; fi
rdma link delete "$DEV" || fail "rdma link delete $DEV while the daemon is stopped"
start_daemon
if name_owned; then ok "rdma-managerd started again after $(since "$t0")"; else fail "rdma-managerd did not start again"; finish; fi
if wait_for 10 find_device; then
  ok "$DEV re-created from $SOFT_LINKS as $dev_path after $(since "$t0")"
  if wait_for 10 tos_is 96 "$DEV"; then
    ok "its RoCE ToS 96 re-applied (a new device starts at 0): mode $(cm_attr "$DEV" default_roce_mode)"
  else
    fail "RoCE not re-applied: RoceTos $(port_prop RoceTos), configfs $(cm_attr "$DEV" default_roce_tos)"
  fi
else
  fail "$DEV not re-created after the restart: $(ls /sys/class/infiniband | tr '\n' ' ')"
fi

out=$(call call "$NAME" "$ROOT" "$NAME" RemoveSoftLink s "$DEV")
if [ -z "$out" ] && wait_for 10 device_gone && ! grep -q "name = \"$DEV\"" "$SOFT_LINKS"; then
  ok "RemoveSoftLink $DEV: gone from the kernel and from $SOFT_LINKS"
else
  fail "RemoveSoftLink $DEV: \"$out\", kernel: $(ls /sys/class/infiniband | tr '\n' ' '), file: $(cat "$SOFT_LINKS" 2>&1 | tr '\n' ' ')"
fi

# ---------------------------------------------------------------- stop
if alive "$daemon_pid"; then
  kill -TERM "$daemon_pid"
  if wait_for 10 daemon_gone; then
    wait "$daemon_pid"
    rc=$?
    if [ "$rc" -eq 0 ]; then ok "rdma-managerd stopped on SIGTERM with status 0"; else fail "rdma-managerd exit status $rc after SIGTERM"; fi
  else
    fail "rdma-managerd still running 10 s after SIGTERM"
  fi
else
  wait "$daemon_pid"
  fail "rdma-managerd died during the checks (status $?)"
fi
finish
