//! `org.rdmamanager.RdmaManager1.Host`: host setup's properties, what they show of the
//! engine's state, and its methods.

use std::collections::HashMap;
use std::sync::Arc;

use rdma_manager_dbus::text::cap_message;
use rdma_manager_dbus::types::{HostStep, ManagedLimits, RdmaModule, SubnetManager, UnitState};
use zbus::zvariant::Value;

use crate::dbus::object_paths::ObjectPaths;
use crate::dbus::values::{managed_limits, unit_state};
use crate::dbus::Context;
use crate::engine::ObservedState;

use super::{cap_map, Cell};

bus_object! {
    /// Host setup's properties.
    view HostSetupView;
    /// `org.rdmamanager.RdmaManager1.Host` at `Host`.
    object HostSetupObject;
    interface "org.rdmamanager.RdmaManager1.Host";
    properties {
        /// One entry per module line of every /etc/rdma/modules/*.conf: (set, the file's name without .conf; module; description, the comment above it; enabled in the file; loaded now, /sys/module/NAME exists; line number).
        modules as "Modules": Vec<RdmaModule>,
        /// ActiveState of rdma-load-modules@rdma.service, the unit that loads the rdma set; empty when systemd cannot be asked.
        modules_unit as "ModulesUnit": String,
        /// The soft memlock limit a member of group rdma gets from pam_limits: "unlimited", a number of KiB, or empty when no limits file sets it (the limit of the process that opened the session applies).
        memlock_soft as "MemlockSoft": String,
        /// The hard memlock limit a member of group rdma gets, as MemlockSoft.
        memlock_hard as "MemlockHard": String,
        /// Where each limit comes from: "soft" and "hard" to "file:line"; a key is absent when no line sets that limit.
        memlock_origin as "MemlockOrigin": HashMap<String, String>,
        /// (soft, hard) in the daemon's own file /etc/security/limits.d/zz-rdma-manager.conf; ("", "") when it has none.
        memlock_managed as "MemlockManaged": ManagedLimits,
        /// Sentences about the limits: the daemon's file overridden by another entry (which and why), version caveats, when changes take effect, the default when no line sets a limit.
        memlock_notes as "MemlockNotes": Vec<String>,
        /// Whether the NFS server listens for RDMA: [nfsd] rdma as nfs-utils reads nfs.conf and its drop-ins.
        nfs_rdma as "NfsRdma": bool,
        /// The port the NFS server listens on for RDMA ([nfsd] rdma-port, default 20049); 0 when NfsRdma is false.
        nfs_rdma_port as "NfsRdmaPort": u16,
        /// Where the settings come from: "rdma" and "rdma-port" to "file:line"; a key is absent when no file sets it.
        nfs_rdma_origin as "NfsRdmaOrigin": HashMap<String, String>,
        /// Sentences about the NFS settings: lines nfs-utils reads differently than they seem, overridden settings, when changes take effect.
        nfs_notes as "NfsNotes": Vec<String>,
        /// (load state, active state, unit-file state) of nfs-server.service; load state "not-found" means not installed; all empty when systemd cannot be asked.
        nfs_server as "NfsServer": UnitState,
        /// Whether firewalld runs.
        firewalld as "Firewalld": bool,
        /// (load state, active state, unit-file state) of opensm.service, the subnet manager, as NfsServer.
        opensm as "Opensm": UnitState,
        /// Per InfiniBand port: (port object, "device/port", port state such as ACTIVE, SM LID, verdict): "seen" when the SM LID is not 0, "stuck-init" when the port is INIT with SM LID 0 (no subnet manager answers), "none" otherwise.
        subnet_managers as "SubnetManagers": Vec<SubnetManager>,
    }
    methods {
        /// Enables or disables a module in /etc/rdma/modules/SET.conf by (un)commenting its line, keeping every other byte; a module not listed is appended when enabled. Takes effect when the set's unit next runs (ApplyModules).
        op set_module_enabled(set: &str, module: &str, enabled: bool) -> () as ManageHost
            = |e| e.set_module_enabled(set, module, enabled).await;

        /// Restarts rdma-load-modules@SET.service, which loads the modules the set enables (it does not unload disabled ones); returns the steps: (step, outcome, detail).
        op apply_modules(set: &str) -> Vec<HostStep> as ManageHost
            = |e| e.apply_modules(set).await.map(crate::dbus::values::steps);

        /// Sets the memlock limits of group rdma in /etc/security/limits.d/zz-rdma-manager.conf: "unlimited" or a positive number of KiB each, soft not above hard; returns notes (when it takes effect, entries that override it).
        op set_memlock_limits(soft: &str, hard: &str) -> Vec<String> as ManageHost
            = |e| e.set_memlock_limits(soft, hard).await;

        /// Removes the daemon's limits file; the other limits files decide again. Nothing to remove is success.
        op reset_memlock_limits() -> () as ManageHost = |e| e.reset_memlock_limits().await;

        /// Enables NFS over RDMA on this NFS server (port 0 means 20049): the drop-in /etc/nfs.conf.d/zz-rdma-manager.conf, xprtrdma and svcrdma in rdma.conf, the port in firewalld's default zone when it runs, then a restart of nfs-server.service; or disables it (port must be 0). Returns the steps: (step, outcome done, unchanged, skipped, failed or not-run, detail).
        op set_nfs_rdma(enabled: bool, port: u16) -> Vec<HostStep> as ManageHost
            = |e| e.set_nfs_rdma(enabled, port).await.map(crate::dbus::values::steps);

        /// Starts opensm.service, the subnet manager, and waits for the job to end.
        op start_subnet_manager() -> () as ManageHost
            = |e| e.subnet_manager(crate::engine::SmVerb::Start).await;

        /// Stops opensm.service and waits for the job to end.
        op stop_subnet_manager() -> () as ManageHost
            = |e| e.subnet_manager(crate::engine::SmVerb::Stop).await;

        /// Enables (starts at boot) or disables opensm.service, as systemctl enable or disable does.
        op set_subnet_manager_enabled(enabled: bool) -> () as ManageHost = |e| {
                let verb = match enabled {
                    true => crate::engine::SmVerb::Enable,
                    false => crate::engine::SmVerb::Disable,
                };
                e.subnet_manager(verb).await
            };
    }
}

/// The verdict on a port's subnet manager: an SM LID means one answered; INIT with none means
/// the port waits for one that never came (the guide's sign that no opensm runs).
pub fn sm_verdict(state: Option<crate::model::PortState>, sm_lid: u32) -> &'static str {
    match (state, sm_lid) {
        (_, l) if l != 0 => "seen",
        (Some(crate::model::PortState::Init), 0) => "stuck-init",
        _ => "none",
    }
}

/// The Host object: host setup as last read, and per InfiniBand port what it says about the
/// subnet manager (recomputed from the ports at every publish, so it follows them).
pub fn host_view(st: &ObservedState, paths: &ObjectPaths) -> HostSetupView {
    let h = &st.host_setup;
    let mut sms = Vec::new();
    for d in st.devices.values() {
        for p in &d.snap.ports {
            if p.link_layer != Ok(crate::model::LinkLayer::InfiniBand) {
                continue;
            }
            let state = p.state.as_ref().ok().copied();
            let sm_lid = p.sm_lid.as_ref().ok().copied().unwrap_or(0);
            sms.push(SubnetManager {
                port: paths.port(d.index, p.number),
                name: format!("{}/{}", d.name(), p.number),
                state: state
                    .map(|s| s.sysfs_name().to_string())
                    .unwrap_or_default(),
                sm_lid,
                verdict: sm_verdict(state, sm_lid).to_string(),
            });
        }
    }
    HostSetupView {
        // Every text below comes from files that users edit: capped (see "Sizes" in
        // docs/RELIABILITY.md).
        modules: h
            .modules
            .iter()
            .map(|m| RdmaModule {
                set: cap_message(&m.set),
                module: cap_message(&m.module),
                description: cap_message(&m.description),
                enabled: m.enabled,
                loaded: m.loaded,
                line: m.line,
            })
            .collect(),
        modules_unit: h.modules_unit.clone(),
        memlock_soft: cap_message(&h.memlock_soft),
        memlock_hard: cap_message(&h.memlock_hard),
        memlock_origin: cap_map(&h.memlock_origin),
        memlock_managed: managed_limits(&h.memlock_managed),
        memlock_notes: h.memlock_notes.iter().map(|n| cap_message(n)).collect(),
        nfs_rdma: h.nfs_rdma,
        nfs_rdma_port: h.nfs_rdma_port,
        nfs_rdma_origin: cap_map(&h.nfs_rdma_origin),
        nfs_notes: h.nfs_notes.iter().map(|n| cap_message(n)).collect(),
        nfs_server: unit_state(&h.nfs_server),
        firewalld: h.firewalld,
        opensm: unit_state(&h.opensm),
        subnet_managers: sms,
    }
}
