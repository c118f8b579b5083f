//! `org.rdmamanager.RdmaManager1.Port`: a port's properties, what they show of the engine's
//! state, and its methods.

use std::collections::HashMap;
use std::sync::Arc;

use rdma_manager_dbus::types::{Gid, LinkTestResult, Owner, Pkey, QosProfile};
use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};

use crate::config::Desired;
use crate::dbus::object_paths::ObjectPaths;
use crate::dbus::values::counter_source_name;
use crate::dbus::Context;
use crate::engine::DeviceState;
use crate::model::PortSnapshot;

use super::{read, Cell, Unreadable};

bus_object! {
    /// A port's properties.
    view PortView;
    /// `org.rdmamanager.RdmaManager1.Port` at `Device/<index>/Port/<n>`.
    object PortObject;
    interface "org.rdmamanager.RdmaManager1.Port";
    properties {
        /// The device object this belongs to; "/" when not known.
        device as "Device": OwnedObjectPath,
        /// Kernel name of the device.
        device_name as "DeviceName": String,
        /// Port number (from 1).
        number as "Number": u32,
        /// Logical state: DOWN, INIT, ARMED, ACTIVE or ACTIVE_DEFER (INIT with an SM LID of 0 means no subnet manager configured the port).
        state as "State": String,
        /// Physical state: Sleep, Polling, Disabled, PortConfigurationTraining, LinkUp, LinkErrorRecovery, Phy Test.
        phys_state as "PhysState": String,
        /// InfiniBand or Ethernet (RoCE, iWARP, rxe, siw).
        link_layer as "LinkLayer": String,
        /// Rate as sysfs prints it, e.g. "200 Gb/sec (4X HDR)".
        rate as "Rate": String,
        /// Rate in Gb/s (2.5 for 1X SDR); 0 when unknown.
        rate_gbps as "RateGbps": f64,
        /// Active link width as the rate names it ("1X", "2X", "4X", "8X", "12X", as ibv_devinfo's active_width); "" when unknown.
        active_width as "ActiveWidth": String,
        /// Active lane speed as the rate names it (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR); "" when the kernel names none.
        active_speed as "ActiveSpeed": String,
        /// IB MTU in use, in bytes (256, 512, 1024, 2048 or 4096), as ibv_devinfo's active_mtu: on RoCE it follows the netdev's MTU (1024 for 1500); 0 when not known (read through libibverbs only: see Unreadable).
        active_mtu as "ActiveMtu": u32,
        /// Largest IB MTU the port supports, in bytes, as ibv_devinfo's max_mtu; 0 when not known.
        max_mtu as "MaxMtu": u32,
        /// Length of the GID table, used entries or not (ibv_devinfo's gid_tbl_len).
        gid_table_length as "GidTableLength": u32,
        /// Length of the P_Key table, used entries or not (ibv_devinfo's pkey_tbl_len).
        pkey_table_length as "PkeyTableLength": u32,
        /// Base LID assigned by the subnet manager (0 on Ethernet ports or before the SM assigns one).
        lid as "Lid": u32,
        /// LID of the master subnet manager (0 when none was seen).
        sm_lid as "SmLid": u32,
        /// LID mask count.
        lmc as "Lmc": u8,
        /// Service level for talking to the subnet manager.
        sm_sl as "SmSl": u8,
        /// Port capability mask (cap_mask).
        capability_mask as "CapabilityMask": u32,
        /// Port GUID (the low 64 bits of GID 0), as ibstat prints it.
        port_guid as "PortGuid": String,
        /// Used GID table entries: (index, GID, type "IB/RoCE v1" or "RoCE v2", netdev of a RoCE GID).
        gids as "Gids": Vec<Gid>,
        /// Non-zero P_Key table entries: (index, P_Key with the full-membership bit 0x8000).
        pkeys as "Pkeys": Vec<Pkey>,
        /// The network interface carrying this port's traffic, if any.
        netdev as "Netdev": String,
        /// Who configures the netdev's IP settings: ("networkmanager", profile id, profile UUID) when a NetworkManager profile does, ("", "", "") when nobody does (Network.GetIpSettings tells whether it is active and NetworkManager's device state).
        netdev_owner as "NetdevOwner": Owner,
        /// Where throughput is counted: pma64, pma32 (32-bit PMA counters, which saturate), hw_counters, netdev or none.
        counter_source as "CounterSource": String,
        /// Attributes the kernel did not give, with the reason (missing, read failed: EINVAL, malformed ...); their properties show empty or zero.
        unreadable as "Unreadable": HashMap<String, String>,
        /// rdma_cm's default RoCE version for connections from this port (configfs default_roce_mode): "v1" or "v2"; "" when this is not a RoCE port or it cannot be read (see Unreadable).
        roce_mode as "RoceMode": String,
        /// rdma_cm's default type of service for RoCE connections from this port (configfs default_roce_tos); 0 when not a RoCE port.
        roce_tos as "RoceTos": u8,
        /// The RoCE versions this port supports, from the types of its GID table entries: "v1", "v2".
        roce_modes as "RoceModes": Vec<String>,
        /// Whether the daemon remembers a RoCE mode or ToS for this port (roce.toml) and re-applies it at start and when the device appears.
        roce_persisted as "RocePersisted": bool,
        /// Changes of the logical state the daemon has seen since it started (down and up again counts two), counted as they happen, on the port's event or the poll that sees it move: a link flap between two reads of a monitor still counts.
        state_changes as "StateChanges": u64,
        /// The port type the driver or firmware holds: "ib", "eth" or "auto" (mlx4 sensing it, VPI in mlx5 firmware; LinkLayer says what runs); "" when the driver has none (PortTypeControl "").
        port_type as "PortType": String,
        /// How the port type changes: "runtime" (mlx4: at once), "firmware" (mlx5: at the next boot, through mstconfig); "" when it cannot (software devices, other drivers, mlx5 without mstconfig installed).
        port_type_control as "PortTypeControl": String,
        /// The port type the firmware applies at the next boot ("firmware" control only; "" otherwise).
        port_type_next as "PortTypeNext": String,
        /// Whether the firmware holds a port type for the next boot that differs from the one in use: the change waits for a reboot.
        port_type_reboot_needed as "PortTypeRebootNeeded": bool,
    }
    methods {
        /// Sets rdma_cm's default RoCE version of this port ("v1" or "v2"; "1", "2",
        /// "IB/RoCE v1" and "RoCE v2" are accepted too) and remembers it. Both ends of a
        /// connection must use the same version.
        op set_roce_mode(mode: &str) -> () as ManageRoce
            = |e, v| e.set_roce_mode(crate::dbus::device_index(&v.device), v.number, mode).await;

        /// Sets rdma_cm's default type of service for RoCE connections of this port and
        /// remembers it.
        op set_roce_tos(tos: u8) -> () as ManageRoce
            = |e, v| e.set_roce_tos(crate::dbus::device_index(&v.device), v.number, tos).await;

        /// Sets the port type ("ib", "eth" or "auto"). mlx4: at once (the driver re-registers
        /// the device), checked first against the driver's rule (port 1 may be eth only when
        /// port 2 is), and remembered in rdma-core's /etc/rdma/mlx4.conf, re-applied when the
        /// device appears. mlx5: staged in firmware for the next boot (PortTypeNext,
        /// PortTypeRebootNeeded). NotSupported where the driver has none or a tool is missing.
        op set_port_type(port_type: &str) -> () as ManageAdapter
            = |e, v| e.set_port_type(crate::dbus::device_index(&v.device), v.number, port_type).await;
        /// Sets this RoCE port's QoS profile (lossless RoCE) through DCB netlink on its
        /// network interface and mlx5's traffic_class and ecn files, reads it back, and
        /// remembers it (qos.toml): PFC priorities, ETS (8 bandwidths summing to 100 and the traffic class of
        /// priorities 0 to 7, or both empty to leave ETS), DSCP to priority (with entries the
        /// port trusts DSCP, without it trusts PCP), traffic class
        /// (-1 leaves it) and an ECN priority mask (-1 leaves it). A port whose driver has no
        /// DCB is NotSupported with the kernel's reason; a read-back that differs undoes
        /// every change. The RoCE ToS is SetRoceTos.
        // Six fields of the profile, the object and the caller's header.
        #[allow(clippy::too_many_arguments)]
        op set_qos_profile(
            pfc: Vec<u8>,
            ets_bandwidth: Vec<u8>,
            ets_prio_tc: Vec<u8>,
            dscp: Vec<(u8, u8)>,
            traffic_class: i32,
            ecn: i32,
        ) -> () as ManageAdapter
            = |e, v| match crate::dbus::qos::from_bus(&QosProfile {
                // Trust follows the DSCP map (see the model's rule): DSCP with one.
                trust: if dscp.is_empty() { "pcp" } else { "dscp" }.to_string(),
                pfc,
                ets_bandwidth,
                ets_prio_tc,
                dscp,
                traffic_class,
                ecn,
            }) {
                Ok(p) => e.set_qos_profile(crate::dbus::device_index(&v.device), v.number, p).await,
                Err(err) => Err(err),
            };

        /// This RoCE port's QoS profile as the kernel has it (see SetQosProfile; -1 for a
        /// traffic class or ECN the driver does not offer), and whether the daemon
        /// remembers one for the port and re-applies it when the device appears.
        async fn get_qos_profile(&self) -> Result<(QosProfile, bool), Error> {
            let v = read(&self.view);
            let (p, persisted) = self
                .ctx
                .engine()
                .await?
                .qos_profile(crate::dbus::device_index(&v.device), v.number)
                .await
                .map_err(crate::dbus::errors::op_error)?;
            Ok((crate::dbus::qos::to_bus(&p), persisted))
        }

        /// Tests the link from this port to a peer and returns the result. peer: an IPv4 or IPv6 address, or a GID that is one (a RoCE v2 entry); for kind "ibping" the peer port's LID (a LID for another kind is NotSupported). kind "rdma": rdma_cm RC from this port (perftest's ib_send_lat, a 1000-message ping-pong, then ib_send_bw) against the peer's responder (SetLinkResponder) or perftest's servers started by hand on ports 18515 and 18516; duration 0 uses perftest's iteration counts, N > 0 runs the bandwidth test N seconds (the peer's server must be given -D N too). kind "icmp": echo requests every 200 ms out of the port's netdev for duration seconds (2 when 0). kind "ibping" (InfiniBand ports only, else NotSupported): infiniband-diags' ping (a Get of vendor class 0x32, OUI 0x001405, over QP1) every 200 ms for duration seconds (2 when 0), each answered within those 200 ms or counted in errors (so a peer that never answers ends the test in its duration, as no-responder), against the peer's responder (SetLinkResponder) or `ibping -S` run by hand. timeout: the most the test may take, 1 to 600 s (0: 30); the tools are then killed and the result says "timeout". A test that ran returns its result with passed false and the reason (port-down, no-route, no-responder, rejected, timeout, tool-failed, unexpected-output) rather than an error; errors are for bad arguments (InvalidArgument), kinds of peer that cannot be tested (NotSupported) and too many tests at once (Busy). The tools run without the daemon's privileges.
        async fn test_link(
            &self,
            peer: &str,
            kind: &str,
            duration: u32,
            timeout: u32,
            #[zbus(header)] header: Header<'_>,
            #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
        ) -> Result<LinkTestResult, Error> {
            let arguments = crate::audit_args![peer, kind, duration, timeout];
            self.ctx
                .change(&header, Action::TestLink, arguments, async {
                    let v = read(&self.view);
                    let port = crate::linktest::PortInfo {
                        device: v.device_name,
                        port: v.number,
                        state: v.state,
                        link_layer: v.link_layer,
                        netdev: v.netdev,
                        gids: v.gids,
                        roce_mode: v.roce_mode,
                        roce_tos: v.roce_tos,
                        active_mtu: v.active_mtu,
                    };
                    let link_tests = self.ctx.link_tests().await?;
                    // The stages are sent as signals while the test runs, in order, the
                    // last (done) before the method returns.
                    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                    let progress = move |stage: crate::linktest::Stage, r: &LinkTestResult| {
                        let _ = tx.send((stage, r.clone()));
                    };
                    let test = link_tests.test(port, peer, kind, duration, timeout, &progress);
                    tokio::pin!(test);
                    let outcome = loop {
                        tokio::select! {
                            biased;
                            Some((stage, r)) = rx.recv() => {
                                linktest_progress(&emitter, stage, r).await;
                            }
                            outcome = &mut test => break outcome,
                        }
                    };
                    while let Ok((stage, r)) = rx.try_recv() {
                        linktest_progress(&emitter, stage, r).await;
                    }
                    outcome.map_err(crate::dbus::errors::op_error)
                })
                .await
        }

        /// A link test from this port as it goes, to every client (a page that watches the
        /// port sees a test another client runs): stage "running" when it starts (the path
        /// known, no figure yet), "bandwidth" when an RDMA test's latency is measured and its
        /// bandwidth test runs, "done" with the result TestLink returns; the result so far,
        /// in TestLink's form.
        #[zbus(signal)]
        pub async fn link_test_progress(
            emitter: &SignalEmitter<'_>,
            stage: &str,
            result: LinkTestResult,
        ) -> zbus::Result<()>;

        /// The recorded throughput, oldest first: (time µs since the epoch, TX bytes/s,
        /// RX bytes/s, TX packets/s, RX packets/s, flags), one a sampling period for up to
        /// HistoryLength periods (5 minutes at 1 s).
        async fn get_throughput_history(
            &self,
        ) -> Result<Vec<(u64, f64, f64, f64, f64, u8)>, Error> {
            self.throughput(false).await
        }

        /// The coarse history, oldest first, in the same form: one average of 10 sampling
        /// periods (10 s) for up to CoarseHistoryLength of them (an hour), each stamped at
        /// its period's end; flag 4 marks an average over fewer than 10 samples. The
        /// period being filled is not included (GetThroughputHistory has its samples).
        async fn get_throughput_history_coarse(
            &self,
        ) -> Result<Vec<(u64, f64, f64, f64, f64, u8)>, Error> {
            self.throughput(true).await
        }

        /// Reads the port's counters now: (source, saturated, counters by name). Byte counts
        /// are `tx_bytes`/`rx_bytes` (PMA data words already times 4); PMA error counters
        /// and the driver's `hw_counters` follow under their kernel names (`hw.` prefix).
        async fn get_counters(&self) -> Result<(String, bool, HashMap<String, u64>), Error> {
            let v = read(&self.view);
            let snap = self
                .ctx
                .engine().await?
                .read_counters(&v.device_name, v.number)
                .await
                .map_err(crate::dbus::errors::op_error)?;
            let mut counters = crate::dbus::counters::by_name(&snap);
            // Per-priority PFC frames, where the netdev has DCB.
            counters.extend(
                self.ctx
                    .engine()
                    .await?
                    .flow_control_counters(crate::dbus::device_index(&v.device), v.number)
                    .await,
            );
            Ok((
                crate::dbus::values::counter_source_name(&snap.source).to_string(),
                snap.saturated,
                counters,
            ))
        }
    }
}

impl PortObject {
    /// The fine (`coarse` false) or coarse ring of this port, as the bus carries it.
    #[allow(clippy::type_complexity)]
    async fn throughput(&self, coarse: bool) -> Result<Vec<(u64, f64, f64, f64, f64, u8)>, Error> {
        let v = read(&self.view);
        let engine = self.ctx.engine().await?;
        let key = (crate::dbus::device_index(&v.device), v.number);
        let samples = if coarse {
            engine.history_coarse(key)
        } else {
            engine.history(key)
        };
        // (t d d d d y) is 48 bytes with its alignment.
        crate::dbus::limits::charge_current(samples.len() as u64 * 48);
        Ok(samples
            .into_iter()
            .map(|s| {
                (
                    engine.clock.wall_us(s.tick),
                    f64::from(s.rates.tx_bytes),
                    f64::from(s.rates.rx_bytes),
                    f64::from(s.rates.tx_packets),
                    f64::from(s.rates.rx_packets),
                    s.flags,
                )
            })
            .collect())
    }
}

/// Sends one stage of a link test (`Port.LinkTestProgress`). Rare (three a test at most, and
/// tests are few), so broadcast without `signal_guard`'s questions; one that cannot be sent
/// is logged, and TestLink's answer still carries the result.
async fn linktest_progress(
    emitter: &SignalEmitter<'_>,
    stage: crate::linktest::Stage,
    result: LinkTestResult,
) {
    if let Err(e) = PortObject::link_test_progress(emitter, stage.as_str(), result).await {
        tracing::debug!(path = %emitter.path(), error = %e, "LinkTestProgress not sent");
    }
}

pub fn port_view(
    d: &DeviceState,
    p: &PortSnapshot,
    config: &Desired,
    nm_profiles: Option<&[crate::nm::client::ProfileSummary]>,
    paths: &ObjectPaths,
    state_changes: u64,
    port_types: Option<&crate::kernel::port_type::PortTypes>,
) -> PortView {
    let port_type = port_types.and_then(|t| Some((t.control, t.port(p.number)?)));
    let mut u = Unreadable::default();
    let source = d.sources.get(&p.number);
    let roce = d.roce.get(&p.number);
    // Only RoCE ports have a reading; a failed one is named in Unreadable.
    let (roce_mode, roce_tos) = match roce {
        Some(r) => (
            match &r.mode {
                Ok(m) => m.short().to_string(),
                Err(e) => {
                    u.0.insert("RoceMode".into(), e.clone());
                    String::new()
                }
            },
            match &r.tos {
                Ok(t) => *t,
                Err(e) => {
                    u.0.insert("RoceTos".into(), e.clone());
                    0
                }
            },
        ),
        None => (String::new(), 0),
    };
    let roce_modes = match roce {
        Some(_) => crate::model::roce::supported_modes(p)
            .into_iter()
            .map(|m| m.short().to_string())
            .collect(),
        None => Vec::new(),
    };
    let roce_persisted = match (&d.snap.node_guid, &config.roce) {
        (Ok(g), Ok(s)) => s.entry(*g, p.number).is_some_and(|e| !e.is_empty()),
        _ => false,
    };
    PortView {
        device: paths.device(d.index),
        device_name: d.snap.name.clone(),
        number: p.number,
        state: u.text("State", &p.state, |s| s.sysfs_name().to_string()),
        phys_state: u.text("PhysState", &p.phys_state, |s| s.sysfs_name().to_string()),
        link_layer: u.text("LinkLayer", &p.link_layer, |l| l.as_str().to_string()),
        rate: u.text("Rate", &p.rate, |r| r.to_sysfs()),
        rate_gbps: p
            .rate
            .as_ref()
            .map(|r| f64::from(r.deci_gbps) / 10.0)
            .unwrap_or(0.0),
        active_width: p
            .rate
            .as_ref()
            .map(|r| format!("{}X", r.width))
            .unwrap_or_default(),
        active_speed: p
            .rate
            .as_ref()
            .ok()
            .and_then(|r| r.speed.clone())
            .unwrap_or_default(),
        active_mtu: u.take("ActiveMtu", &p.active_mtu),
        max_mtu: u.take("MaxMtu", &p.max_mtu),
        gid_table_length: u.take("GidTableLength", &p.gid_table_len),
        pkey_table_length: u.take("PkeyTableLength", &p.pkey_table_len),
        lid: u.take("Lid", &p.lid),
        sm_lid: u.take("SmLid", &p.sm_lid),
        lmc: u.take("Lmc", &p.lmc),
        sm_sl: u.take("SmSl", &p.sm_sl),
        capability_mask: u.take("CapabilityMask", &p.cap_mask),
        port_guid: p.port_guid().map(|g| g.to_string()).unwrap_or_default(),
        gids: p
            .gids
            .iter()
            .map(|g| Gid {
                index: g.index,
                gid: crate::model::device::gid_sysfs_form(&g.gid),
                gid_type: g
                    .gid_type
                    .as_ref()
                    .map(|t| t.as_str().to_string())
                    .unwrap_or_default(),
                netdev: g.ndev.clone().unwrap_or_default(),
            })
            .collect(),
        pkeys: p
            .pkeys
            .iter()
            .map(|k| Pkey {
                index: k.index,
                pkey: k.pkey,
            })
            .collect(),
        netdev: source.and_then(|s| s.netdev.clone()).unwrap_or_default(),
        netdev_owner: source
            .and_then(|s| s.netdev.as_deref())
            .and_then(|n| {
                nm_profiles?
                    .iter()
                    .find(|p| p.interface.as_deref() == Some(n))
            })
            .map(|p| Owner::network_manager(&p.id, &p.uuid))
            .unwrap_or_default(),
        counter_source: source
            .map(|s| counter_source_name(&s.counters))
            .unwrap_or("none")
            .to_string(),
        unreadable: u.0,
        roce_mode,
        roce_tos,
        roce_modes,
        roce_persisted,
        state_changes,
        port_type: port_type
            .map(|(_, r)| r.configured.as_str().to_string())
            .unwrap_or_default(),
        port_type_control: port_type
            .map(|(c, _)| c.as_str().to_string())
            .unwrap_or_default(),
        port_type_next: port_type
            .and_then(|(_, r)| r.next_boot)
            .map(|t| t.as_str().to_string())
            .unwrap_or_default(),
        port_type_reboot_needed: port_type.is_some_and(|(_, r)| r.reboot_needed()),
    }
}
