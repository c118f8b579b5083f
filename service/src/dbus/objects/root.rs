//! The root object, `org.rdmamanager.RdmaManager1`: its properties, what they show of the
//! engine's state, and its methods.

use std::collections::HashMap;
use std::sync::Arc;

use rdma_manager_dbus::text::cap_message;
use rdma_manager_dbus::types::{
    HealthCheck, LinkResponder, LinkTestResult, NamePreview, NameRule, SoftLink, StateChange,
    StateFile, StateStale,
};
use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};

use crate::config::ConfigError;
use crate::dbus::object_paths::ObjectPaths;
use crate::dbus::Context;
use crate::engine::ObservedState;

use super::Cell;

bus_object! {
    /// The root object's properties.
    view RootView;
    /// `org.rdmamanager.RdmaManager1` at the root.
    object RootObject;
    interface "org.rdmamanager.RdmaManager1";
    properties {
        /// The daemon's version.
        version as "Version": String,
        /// True when the daemon runs on a simulated host (the simulate option), not the kernel.
        simulated as "Simulated": bool,
        /// True while the daemon starts: it owns its name before it has read the host, so that it answers at once; until the host is read the root lists no device. False once every device is read and published and what was persisted is re-applied (PropertiesChanged says so). GetManagedObjects and the methods that change something wait for that; Get and GetAll answer at once with what is published so far. As NetworkManager's Startup.
        startup as "Startup": bool,
        /// Every RDMA device object.
        devices as "Devices": Vec<OwnedObjectPath>,
        /// Every IPoIB interface object.
        ipoib_interfaces as "IpoibInterfaces": Vec<OwnedObjectPath>,
        /// Throughput sampling period in microseconds.
        sample_interval_us as "SampleIntervalUs": u64,
        /// Samples of history kept per port at SampleIntervalUs (GetThroughputHistory).
        history_length as "HistoryLength": u32,
        /// Averages kept per port in the coarse history (GetThroughputHistoryCoarse).
        coarse_history_length as "CoarseHistoryLength": u32,
        /// Period of a coarse average in microseconds: 10 sampling periods.
        coarse_interval_us as "CoarseIntervalUs": u64,
        /// Soft links the daemon remembers and re-creates (name, type rxe or siw, network interface), from soft-links.toml.
        soft_links as "SoftLinks": Vec<SoftLink>,
        /// Files the daemon reads that cannot be used, by path, with the reason. Its persisted files under /etc/rdma-manager and the udev rules files it manages: changes in their area are refused until they are fixed. Host setup files (limits.conf and limits.d, nfs.conf and its drop-ins, the module lists): one not regular, too large or unreadable (with the errno) is read as absent, and lines their readers skip are named with their numbers.
        config_errors as "ConfigErrors": HashMap<String, String>,
        /// IPoIB naming rules of /etc/udev/rules.d/70-persistent-ipoib.rules: (port GUID as ibstat prints it, interface name, managed by rdma-managerd, line number). Rules not managed are the users' own and are never rewritten.
        ipoib_names as "IpoibNames": Vec<NameRule>,
        /// The RDMA device naming policy udev applies when a device is added: NAME_KERNEL, NAME_ONBOARD, NAME_PCI, NAME_GUID or NAME_FALLBACK.
        rdma_naming_policy as "RdmaNamingPolicy": String,
        /// The rules file the policy is read from (the override in /etc/udev/rules.d or rdma-core's file); empty when none exists and rdma-core's default is assumed.
        rdma_naming_policy_source as "RdmaNamingPolicySource": String,
        /// Fixed RDMA device names (NAME_FIXED) in the rules file RdmaNamingPolicySource names: (node GUID as ibstat prints it, name, managed by rdma-managerd, line number).
        rdma_fixed_names as "RdmaFixedNames": Vec<NameRule>,
        /// (stale, reason, since): true while the daemon cannot re-read the host (out of file descriptors, for one) and publishes the last state it read, which may be behind the kernel; the reason; when it became stale, in microseconds since the Unix epoch. (false, "", 0) when the state is current. The daemon re-reads until it can and clears it by itself.
        state_stale as "StateStale": StateStale,
        /// The files of /etc/rdma-manager/state.d applied at start, in name order: (file, outcome "applied", "unchanged", "refused" or "rolled-back", what changed such as "3 changes", the refusal or failure). Empty until they are applied, shortly after Startup becomes false.
        state_directory as "StateDirectory": Vec<StateFile>,
    }
    methods {
        /// Creates a Soft-RoCE (`rxe`) or Soft-iWARP (`siw`) device over a network interface,
        /// as `rdma link add NAME type TYPE netdev NETDEV` does; returns its object.
        op add_soft_link(name: &str, r#type: &str, netdev: &str) -> OwnedObjectPath as ManageLinks
            = |e| e.add_soft_link(name, r#type, netdev).await.map(|index| {
                crate::dbus::values::object_path(rdma_manager_dbus::device_path(index))
            });

        /// Removes an rxe or siw device, as `rdma link delete NAME` does.
        op remove_soft_link(name: &str) -> () as ManageLinks = |e| e.remove_soft_link(name).await;

        /// Gives the IPoIB interface of the port with this GUID (0002:c903:0031:78f2, 0x0002c903003178f2 or 00:02:c9:03:00:31:78:f2) a persistent name in 70-persistent-ipoib.rules, and renames the interface now if apply_now is true.
        op set_ipoib_name(port_guid: &str, name: &str, apply_now: bool) -> () as ManageNaming
            = |e| e.set_ipoib_name(port_guid, name, apply_now).await;

        /// Removes the persistent name rdma-managerd gave a port's IPoIB interface; the interface keeps its current name until it is added again.
        op remove_ipoib_name(port_guid: &str) -> () as ManageNaming
            = |e| e.remove_ipoib_name(port_guid).await;

        /// Sets the naming policy of RDMA devices (NAME_KERNEL, NAME_ONBOARD, NAME_PCI, NAME_GUID, NAME_FALLBACK) in the override of 60-rdma-persistent-naming.rules; with apply_now, renames present devices to the names the policy gives them.
        op set_rdma_naming_policy(policy: &str, apply_now: bool) -> () as ManageNaming
            = |e| e.set_rdma_naming_policy(policy, apply_now).await;

        /// Gives the RDMA device with this node GUID a fixed name (NAME_FIXED) in the override; with apply_now, renames it now.
        op set_rdma_fixed_name(node_guid: &str, name: &str, apply_now: bool) -> () as ManageNaming
            = |e| e.set_rdma_fixed_name(node_guid, name, apply_now).await;

        /// Removes the fixed name rdma-managerd gave a device; the policy names it from its next addition.
        op remove_rdma_fixed_name(node_guid: &str) -> () as ManageNaming
            = |e| e.remove_rdma_fixed_name(node_guid).await;

        /// For every RDMA device and every policy (and its fixed name, if it has one): (device, policy, the name rdma_rename gives, or empty, true for what the rules in force do when the device is next added, the reason there is no name or what to know about it).
        async fn preview_rdma_names(
            &self,
        ) -> Result<Vec<NamePreview>, Error> {
            let rows = self
                .ctx
                .engine().await?
                .preview_rdma_names()
                .await
                .map_err(crate::dbus::errors::op_error)?;
            Ok(rows
                .into_iter()
                .map(|r| NamePreview {
                    device: r.device,
                    policy: r.policy,
                    name: r.name,
                    active: r.active,
                    reason: r.reason,
                })
                .collect())
        }

        /// Every port's counters in one reply: when they were read (µs since the epoch) and per port (object, source, saturated, counters by name), each as Port.GetCounters gives them, except that the traffic counters (tx_bytes, rx_bytes, tx_packets, rx_packets, and saturated) are those the daemon's port poll read at its last tick, at most a tick before the reading, rather than read again. Also answered on the direct socket. Calls within the daemon's counters max age (its option counters-max-age-ms, 10 s by default) of a reading share it, whoever makes them (the time says which reading), so no number of monitors multiplies the reads; nothing is read while nobody calls. Read only: no authorization.
        async fn get_all_counters(
            &self,
        ) -> Result<(u64, Vec<crate::dbus::counters::PortRow>), Error> {
            let engine = self.ctx.engine().await?;
            let reading = self.ctx.counters().all(engine).await?;
            crate::dbus::limits::charge_current(reading.bytes);
            Ok((reading.time_us, reading.ports.as_ref().clone()))
        }

        /// The host's whole RDMA configuration as a state document, in `format` "yaml" or "json": soft links, RoCE mode and ToS per port, IPoIB interfaces, naming, module lists, memlock limits, NFS over RDMA and the subnet manager, every section present (docs/STATE.md). Applying it changes nothing. Read only: no authorization.
        async fn get_state(&self, format: &str) -> Result<String, Error> {
            crate::dbus::state::get_state(&self.ctx, format).await
        }

        /// What applying the state document would change, in order: (key path, "add", "remove" or "set", value now, value wanted, the polkit action it asks). Changes nothing; a document that is refused gets InvalidArgument (or NotFound for a name the host lacks) with its key path and line.
        async fn diff_state(&self, document: &str) -> Result<Vec<StateChange>, Error> {
            crate::dbus::state::diff_state(&self.ctx, document).await
        }

        /// Applies a state document: asks polkit for the action of every area it changes, runs the changes as their one-shot methods do, reads the host back and checks that every setting holds; a failed step or check undoes every change made (Failed, naming the step). Returns the changes (as DiffState) and, with a timeout (10 to 3600 s), a PendingChange that undoes them unless confirmed in time; "/" with timeout 0 or when nothing changed.
        async fn apply_state(
            &self,
            document: &str,
            timeout: u32,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<(Vec<StateChange>, OwnedObjectPath), Error> {
            crate::dbus::state::apply_state(&self.ctx, &header, document, timeout).await
        }

        /// A node health check: the verdict on every expectation of the document's `health` section (docs/STATE.md), or, with an empty document, of the health sections of the state directory's files: (expectation, subject such as "mlx5_0/1", "board MT_0000000223" or "host", passed, observed, expected, message). Ports: present, state, phys-state, min-rate-gbps, link-layer, mtu (of the port's IPoIB interface or netdev); min-ports; firmware-equal (per board); error-counters (read at both ends of a window of at most 20 s that the call waits out); flaps (state changes seen in the last window-seconds). A refused or empty document gets InvalidArgument with its key path and line; a device or port the host lacks is a failed "present". Read only: no authorization.
        async fn check_health(&self, document: &str) -> Result<Vec<HealthCheck>, Error> {
            crate::dbus::health::check_health(&self.ctx, document).await
        }

        /// Enables (true) or disables the link-test responder and remembers it (/etc/rdma-manager/link-test.toml, re-applied at start): perftest's servers, ib_send_lat on rdma_cm port 18515 and ib_send_bw on 18516, run without privileges and started again after every test, so that peers' TestLink and perftest's own clients (`ib_send_lat -R -p 18515 HOST`, `ib_send_bw -R -p 18516 HOST` with the option report_gbits) test against this host.
        async fn set_link_responder(
            &self,
            enabled: bool,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<(), Error> {
            let arguments = crate::audit_args![enabled];
            self.ctx
                .change(&header, Action::TestLink, arguments, async {
                    self.ctx
                        .link_tests()
                        .await?
                        .set_responder(enabled)
                        .await
                        .map_err(crate::dbus::errors::op_error)
                })
                .await
        }

        /// The link-test responder: (enabled, both servers running, restarts, tests served, the last failure, latency port, bandwidth port). Read only: no authorization.
        async fn get_link_responder(&self) -> Result<LinkResponder, Error> {
            Ok(self.ctx.link_tests().await?.responder())
        }

        /// The last link tests run through any port (at most 32), oldest first, as TestLink returned them. Read only: no authorization.
        async fn recent_link_tests(&self) -> Result<Vec<LinkTestResult>, Error> {
            let recent = self.ctx.link_tests().await?.recent();
            // A result is a few hundred bytes; the list is bounded (RECENT).
            crate::dbus::limits::charge_current(recent.len() as u64 * 512);
            Ok(recent)
        }

        /// One tick's throughput of every port: the tick's time (µs since the epoch) and per
        /// port (object, TX bytes/s, RX bytes/s, TX packets/s, RX packets/s, flags).
        /// Flags: 1 = a 32-bit counter saturated (the rate is a lower bound), 2 = no data.
        #[zbus(signal)]
        pub async fn throughput_sampled(
            emitter: &SignalEmitter<'_>,
            time_us: u64,
            samples: Vec<(OwnedObjectPath, f64, f64, f64, f64, u8)>,
        ) -> zbus::Result<()>;
    }
}

/// The root's view of `st`; `startup` while the daemon is still starting (see `Startup`).
pub fn root_view(
    st: &ObservedState,
    simulated: bool,
    startup: bool,
    tick_us: u64,
    paths: &ObjectPaths,
) -> RootView {
    RootView {
        version: env!("CARGO_PKG_VERSION").to_string(),
        simulated,
        startup,
        devices: st.devices.keys().map(|i| paths.device(*i)).collect(),
        ipoib_interfaces: st.ipoib.keys().map(|i| paths.ipoib(*i)).collect(),
        sample_interval_us: tick_us,
        history_length: crate::engine::history::FINE_TICKS as u32,
        coarse_history_length: crate::engine::history::COARSE_LEN as u32,
        coarse_interval_us: tick_us.saturating_mul(crate::engine::history::COARSE_TICKS),
        soft_links: st
            .config
            .soft_links
            .as_ref()
            .map(|s| {
                s.links
                    .iter()
                    .map(|l| SoftLink {
                        name: l.name.clone(),
                        kind: l.kind.as_str().to_string(),
                        netdev: l.netdev.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        config_errors: st
            .config
            .errors()
            .into_iter()
            .map(|e| match e {
                ConfigError::Malformed { path, .. }
                | ConfigError::Unreadable { path, .. }
                | ConfigError::Unwritable { path, .. } => (path.clone(), e.to_string()),
            })
            .chain(st.naming.errors.clone())
            // Host setup's files are not the daemon's own, but a problem with one is a
            // problem with a file the daemon reads: one property tells them all.
            .chain(st.host_setup.file_problems.clone())
            // The reasons quote the files; each value is capped so that the property stays
            // far below the bus's message limit whatever a file holds.
            .map(|(path, why)| (cap_message(&path), cap_message(&why)))
            .collect(),
        ipoib_names: st
            .naming
            .ipoib_rules
            .iter()
            .map(|r| NameRule {
                guid: r.port_guid.to_string(),
                name: cap_message(&r.name),
                managed: r.managed,
                line: r.line,
            })
            .collect(),
        rdma_naming_policy: cap_message(&st.naming.policy),
        rdma_naming_policy_source: cap_message(&st.naming.policy_source),
        rdma_fixed_names: st
            .naming
            .fixed
            .iter()
            .map(|(g, n, m, l)| NameRule {
                guid: g.to_string(),
                name: cap_message(n),
                managed: *m,
                line: *l,
            })
            .collect(),
        state_stale: st
            .stale
            .as_ref()
            .map(|s| StateStale {
                stale: true,
                reason: s.reason.clone(),
                since_us: s.since_unix_us,
            })
            .unwrap_or_default(),
        state_directory: crate::dbus::state::directory_rows(&st.state_directory),
    }
}
