#!/bin/bash
# Regenerates the expected outputs in this directory with the real ibstat.
#
# Needs root, Debian's infiniband-diags 44.0-2 (`apt-get install infiniband-diags`) and a
# kernel without /sys/class/infiniband of its own (or one whose devices you don't mind
# hiding): it mounts a tmpfs over /sys/class in a private mount namespace, writes the
# fixture files the tests in ../tests.rs build as DeviceSnapshot values, and records
# ibstat's stdout (<case>.stdout), its stderr with the pid replaced by PID
# (<case>.stderr, only when not empty) and its exit status (<case>.rc).
#
#   sudo unshare -m bash service/src/ibstat/testdata/oracle.sh
set -eu
OUT=$(cd "$(dirname "$0")" && pwd)
mount -t tmpfs none /sys/class
IB=/sys/class/infiniband
mkdir -p $IB

w() { # w FILE VALUE; the value "-" means: no such file
  [ "$2" = "-" ] && return 0
  mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"
}
# mkdev NAME NODE_TYPE NODE_GUID SYS_IMAGE_GUID FW_VER HW_REV HCA_TYPE
mkdev() { local D=$IB/$1; mkdir -p $D/ports
  w $D/node_type "$2"; w $D/node_guid "$3"; w $D/sys_image_guid "$4"
  w $D/fw_ver "$5"; w $D/hw_rev "$6"; w $D/hca_type "$7"; }
# mkport DEV N STATE PHYS_STATE RATE LID SM_LID LMC SM_SL CAP_MASK LINK_LAYER GID0 PKEY0
mkport() { local P=$IB/$1/ports/$2; mkdir -p $P
  w $P/state "$3"; w $P/phys_state "$4"; w $P/rate "$5"; w $P/lid "$6"; w $P/sm_lid "$7"
  w $P/lid_mask_count "$8"; w $P/sm_sl "$9"; w $P/cap_mask "${10}"; w $P/link_layer "${11}"
  w $P/gids/0 "${12}"; w $P/pkeys/0 "${13}"; }
reset() { rm -rf "${IB:?}"/*; }
# run CASE ARGS...
run() { local case=$1; shift; set +e
  ibstat "$@" > "$OUT/$case.stdout" 2> "$OUT/$case.stderr.tmp"; echo $? > "$OUT/$case.rc"; set -e
  sed -E 's/\[[0-9]+\]/[PID]/' "$OUT/$case.stderr.tmp" > "$OUT/$case.stderr"; rm "$OUT/$case.stderr.tmp"
  [ -s "$OUT/$case.stderr" ] || rm "$OUT/$case.stderr"; }

Z=fe80:0000:0000:0000:0000:0000:0000:00

# Scenario "lab": the rxe0 of the lab captures, a two-port mlx4, a ConnectX-6, an iWARP RNIC.
reset
mkdev rxe0 "1: CA" 04f6:b9ff:fe05:ca57 04f6:b9ff:fe05:ca57 "" - -
mkport rxe0 1 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (1X FDR10)" 0x0 0x0 0 0 0x00010000 Ethernet fe80:0000:0000:0000:04f6:b9ff:fe05:ca57 0xffff
mkdev mlx4_1 "1: CA" 0002:c903:0031:78f0 0002:c903:0031:78f3 2.42.5000 0xb0 MT26428
mkport mlx4_1 1 "4: ACTIVE" "5: LinkUp" "40 Gb/sec (4X QDR)" 0x2 0x2 1 0 0x02510868 InfiniBand fe80:0000:0000:0000:0002:c903:0031:78f1 0xffff
mkport mlx4_1 2 "4: ACTIVE" "5: LinkUp" "40 Gb/sec (4X QDR)" 0x0 0x0 0 0 0x04010000 Ethernet fe80:0000:0000:0000:0202:c9ff:fe31:78f2 0xffff
mkdev mlx5_0 "1: CA" b8ce:f603:0012:3456 b8ce:f603:0012:3456 20.31.1014 0x0 MT4123
mkport mlx5_0 1 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)" 0x7 0x1 0 0 0xa651e848 InfiniBand fe80:0000:0000:0000:b8ce:f603:0012:3456 0xffff
mkdev iwp0s1 "4: RNIC" 0000:0000:0000:0001 0000:0000:0000:0001 1.0 - -
mkport iwp0s1 1 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (4X)" 0x0 0x0 0 0 0x0 Ethernet fe80:0000:0000:0000:0000:0000:0000:0001 -
run lab_all
run lab_list -l
run lab_ports -p
run lab_short -s
run lab_rxe0 rxe0
run lab_rxe0_1 rxe0 1
run lab_mlx4_1 mlx4_1
run lab_mlx4_1_2 mlx4_1 2
run lab_mlx4_1_3 mlx4_1 3
run lab_mlx4_1_0 mlx4_1 0
run lab_mlx5_0_short -s mlx5_0
run lab_iwp0s1 iwp0s1
# Every option of ibstat: alone, combined, long, with a device and a port, after them.
run opt_list_mlx4_1 -l mlx4_1
run opt_ports_mlx4_1 -p mlx4_1
run opt_short_mlx4_1_2 -s mlx4_1 2
run opt_lp -lp
run opt_ls -l -s
run opt_long --list_of_cas
run opt_long_short --short
run opt_long_ports --port_list
run opt_after mlx4_1 --short
run opt_mlx4_1_hex mlx4_1 0x2
run opt_mlx4_1_junk mlx4_1 2abc
run opt_mlx4_1_word mlx4_1 abc
run opt_mlx4_1_neg -- mlx4_1 -1
run opt_verbose -v
run opt_config -z /nonexistent/ibdiag.conf
run opt_ports_nosuch -p nosuch
run opt_list_nosuch -l nosuch
run opt_list_iwp0s1 -l iwp0s1

# Scenario "odd": unusual and malformed values that libibumad still accepts.
reset
mkdev r1 "1: CA" 0000:0000:0000:0001 0000:0000:0000:0001 12345678901234567890abc hw_rev_is_longer_than_20 MT4123_and_a_very_long_hca_type_string_over_forty
mkport r1 1 "2: INIT" "7: Phy Test" "2.5 Gb/sec (1X SDR)" 0x0 0x0 0 0 0x0 - ${Z}01 0xffff
mkport r1 2 "5: ACTIVE_DEFER" "0: weird" "10 Gb/sec (4X)" 0xffff 0x0 0 0 0x0 Unknown ${Z}02 0x7fff
mkport r1 3 "ACTIVE" "LinkUp" "fast" garbage 0x12 300 0 0xzz Ethernet 0000:0000:0000:0000:0000:0000:0000:0000 0xffff
mkport r1 4 "1: DOWN" "3: Disabled" "56 Gb/sec (4X FDR)" 0x0 0x0 0 0 0x0 InfiniBand ${Z}04 0xffff
mkport r1 5 "3: ARMED" "6: LinkErrorRecovery" "100 Gb/sec (4X EDR)" 0x0 0x0 0 0 0x0 InfiniBand ${Z}05 0xffff
mkport r1 6 "9: WHAT" "1: Sleep" "14 Gb/sec (1X FDR)" 0x0 0x0 0 0 0x0 InfiniBand ${Z}06 0xffff
mkport r1 7 "0: NOP" "2: Polling" "10 Gb/sec (1X fdr10)" 0x0 0x0 0 0 0x0 InfiniBand ${Z}07 0xffff
mkport r1 8 "4: ACTIVE" "4: PortConfigurationTraining" "800 Gb/sec (4X XDR)" 0x0 0x0 0 0 0x1ffffffff InfiniBand ${Z}08 0xffff
mkdev r2 "1: CA" "zz:1:2:3" "0x0001:2:3:4:5" - - -
mkdev sw3 "2: switch" 0000:0000:0000:0003 0000:0000:0000:0003 1.2.3 - -
mkport sw3 0 "4: ACTIVE" "5: LinkUp" "40 Gb/sec (4X QDR)" 0x1 0x1 0 0 0x0 InfiniBand ${Z}03 0xffff
mkdev mlx5_10 "1: CA" 0000:0000:0000:000a 0000:0000:0000:000a - - -
mkdev mlx5_2 "3: router" 0000:0000:0000:0002 0000:0000:0000:0002 - - -
run odd_all
run odd_ports -p
run odd_list -l
run odd_r1_3 r1 3

# Scenario "fail": devices libibumad cannot read. Each alone, then all together.
reset
okport() { mkport $1 $2 "4: ACTIVE" "5: LinkUp" "40 Gb/sec (4X QDR)" 0x1 0x1 0 0 0x0 InfiniBand ${Z}0$2 0xffff; }
mkdev a0 "1: CA" - 0000:0000:0000:0001 - - -; okport a0 1
mkdev a1 "1: CA" 04f6:b9ff:fe05 0000:0000:0000:0001 - - -; okport a1 1
mkdev a2 "1: CA" 0000:0000:0000:0001 0000:0000:0000:0001 - - -
mkport a2 1 "4: ACTIVE" "5: LinkUp" "40 Gb/sec (4X QDR)" 0x1 0x1 0 - 0x0 InfiniBand ${Z}01 0xffff
mkdev a3 "1: CA" 0000:0000:0000:0001 0000:0000:0000:0001 - - -
mkport a3 1 "4: ACTIVE" "5: LinkUp" "40 Gb/sec (4X QDR)" 0x1 0x1 0 0 0x0 InfiniBand ${Z}01 -
mkdev a5 "1: CA" 0000:0000:0000:0001 0000:0000:0000:0001 - - -; okport a5 1; okport a5 10
mkdev a9 "" 0000:0000:0000:0001 0000:0000:0000:0001 - - -; okport a9 1
mkdev b1 "1: CA" 0000:0000:0000:0001 0000:0000:0000:0001 - - -
mkport b1 1 "4: ACTIVE" "5: LinkUp" - 0x1 0x1 0 0 0x0 InfiniBand ${Z}01 0xffff
mkdev Aok "1: CA" 0000:0000:0000:0007 0000:0000:0000:0007 - - -; okport Aok 1
for d in a0 a1 a2 a3 a5 a9 b1; do run fail_$d $d; done
run fail_all
run fail_list -l
run fail_ports -p
run fail_short -s

# Scenario "names": libibumad's 20-byte name buffer.
reset
for n in abcdefghijklmnopqr abcdefghijklmnopqrs rocex525400c0fe123455; do
  mkdev $n "1: CA" 0000:0000:0000:0009 0000:0000:0000:0009 - - -; okport $n 1
done
run names_list -l
for n in abcdefghijklmnopqr abcdefghijklmnopqrs rocex525400c0fe123455; do
  run names_${#n} $n; run names_${#n}_ports -p $n
done
