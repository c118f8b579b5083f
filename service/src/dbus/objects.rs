//! The bus objects: root, Device, Port and Ipoib interfaces. Each holds its property values
//! in a shared cell that the publisher replaces; getters read the cell and never touch the
//! kernel, so a slow kernel call can never hold up a property read or GetManagedObjects.
//!
//! `bus_object!` declares, from one list, the view struct, its D-Bus getters, the comparison
//! that yields the PropertiesChanged payload and the full list GetManagedObjects encodes, so
//! they cannot drift apart. `bus_interface!` writes its methods: a change that only asks
//! polkit, calls the engine and maps its error is one `op` line.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rdma_manager_dbus::types::{
    Gid, HealthCheck, HostStep, LinkResponder, LinkTestResult, ManagedLimits, NamePreview,
    NameRule, Owner, PersistedChild, Pkey, PortCounters, QosProfile, RdmaModule, SoftLink,
    StateChange, StateFile, StateStale, SubnetManager, UnitState, VfGuid,
};
use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};

use super::Context;

/// A property cell shared by an object and the publisher.
pub type Cell<T> = Arc<RwLock<T>>;

/// A copy of a cell's value.
pub(crate) fn read<T: Clone>(cell: &Cell<T>) -> T {
    cell.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Declares a `#[zbus::interface]` impl whose methods may be written as one-line operations:
///
/// ```text
/// /// Doc comment (the XML's documentation).
/// op remove_soft_link(name: &str) -> () as ManageLinks = |e| e.remove_soft_link(name).await;
/// op rename(new_name: &str) -> () as ManageNaming = |e, v| e.rename_device(v.index, new_name).await;
/// op set_mode(mode: &str) -> () as ManageIpoib
///     = |e, v| e.ipoib_set_mode(v.ifindex, mode).await, then super::ipoib::pending_if_any;
/// ```
///
/// An `op` is a change: it asks polkit for the [`Action`] (`Context::change`, which also
/// writes the audit line with every argument), runs the body with `e` the engine (and `v` a
/// copy of the object's view, for a `bus_object!`), turns the engine's error into the D-Bus
/// error (`errors::op_error`), and passes the result to `then` when given (a
/// `async fn(&Arc<Context>, T) -> Result<R, Error>`). Other methods and signals are written
/// as zbus wants them and kept in their place, which is the order the introspection (and so
/// the XML) lists them in.
macro_rules! bus_interface {
    (impl $obj:ident as $iface:literal { $($items:tt)* }) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface, [] $($items)*);
    };
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]) => {
        #[zbus::interface(name = $iface)]
        impl $obj {
            $($acc)*
        }
    };
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]
        $(#[$m:meta])* op $name:ident ($($arg:ident : $aty:ty),* $(,)?) -> $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@op $obj, $iface, [$($acc)*],
            [$(#[$m])*], $name, [$($arg : $aty),*], [] $($rest)*);
    };
    // An operation's return type, token by token up to `as` (see `@ret`).
    (@op $obj:ident, $iface:literal, [$($acc:tt)*], [$($attrs:tt)*], $name:ident,
        [$($arg:ident : $aty:ty),*], [$($ret:tt)*]
        as $action:ident = |$e:ident $(, $v:ident)?| $body:expr $(, then $post:path)? ;
        $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface, [$($acc)*
            $($attrs)*
            async fn $name(
                &self,
                $($arg: $aty,)*
                #[zbus(header)] header: zbus::message::Header<'_>,
            ) -> Result<$($ret)*, rdma_manager_dbus::Error> {
                let arguments = $crate::audit_args![$($arg),*];
                self.ctx
                    .change(&header, rdma_manager_dbus::Action::$action, arguments, async {
                        $( let $v = $crate::dbus::objects::read(&self.view); )?
                        let $e = self.ctx.engine().await?;
                        let out = { $body }.map_err($crate::dbus::errors::op_error)?;
                        $( let out = $post(&self.ctx, out).await?; )?
                        Ok(out)
                    })
                    .await
            }
        ] $($rest)*);
    };
    (@op $obj:ident, $iface:literal, [$($acc:tt)*], [$($attrs:tt)*], $name:ident,
        [$($arg:ident : $aty:ty),*], [$($ret:tt)*] $t:tt $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@op $obj, $iface, [$($acc)*], [$($attrs)*],
            $name, [$($arg : $aty),*], [$($ret)* $t] $($rest)*);
    };
    // Any other method, a property or a signal, as zbus wants it. Its return type is passed
    // on token by token (`@ret`): zbus recognises a `Result` only in the tokens themselves.
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]
        $(#[$m:meta])* $vis:vis async fn $name:ident $params:tt -> $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@ret $obj, $iface, [$($acc)*],
            [$(#[$m])* $vis async fn $name $params ->], [] $($rest)*);
    };
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]
        $(#[$m:meta])* $vis:vis fn $name:ident $params:tt -> $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@ret $obj, $iface, [$($acc)*],
            [$(#[$m])* $vis fn $name $params ->], [] $($rest)*);
    };
    (@ret $obj:ident, $iface:literal, [$($acc:tt)*], [$($head:tt)*], [$($ret:tt)*]
        { $($body:tt)* } $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface,
            [$($acc)* $($head)* $($ret)* { $($body)* }] $($rest)*);
    };
    // A signal: no body.
    (@ret $obj:ident, $iface:literal, [$($acc:tt)*], [$($head:tt)*], [$($ret:tt)*]
        ; $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface,
            [$($acc)* $($head)* $($ret)* ;] $($rest)*);
    };
    (@ret $obj:ident, $iface:literal, [$($acc:tt)*], [$($head:tt)*], [$($ret:tt)*]
        $t:tt $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@ret $obj, $iface, [$($acc)*], [$($head)*],
            [$($ret)* $t] $($rest)*);
    };
}
pub(crate) use bus_interface;

macro_rules! bus_object {
    (
        $(#[$vmeta:meta])*
        view $view:ident;
        $(#[$ometa:meta])*
        object $obj:ident;
        interface $iface:literal;
        properties {
            $( $(#[$pmeta:meta])* $field:ident as $pname:literal : $ty:ty, )*
        }
        methods { $($methods:tt)* }
    ) => {
        $(#[$vmeta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $view {
            $( $(#[$pmeta])* pub $field: $ty, )*
        }

        impl $view {
            /// The properties that differ from `old`, by D-Bus name, as PropertiesChanged
            /// carries them.
            pub fn changed(&self, old: &$view) -> Vec<(&'static str, Value<'static>)> {
                let mut out = Vec::new();
                $(
                    if self.$field != old.$field {
                        out.push(($pname, Value::from(self.$field.clone())));
                    }
                )*
                out
            }

            /// Every property by D-Bus name, as GetAll and GetManagedObjects give them.
            pub fn all(&self) -> Vec<(&'static str, Value<'static>)> {
                vec![$( ($pname, Value::from(self.$field.clone())), )*]
            }
        }

        $(#[$ometa])*
        pub struct $obj {
            pub view: Cell<$view>,
            pub ctx: Arc<Context>,
        }

        // The getters go straight into the impl: they need no parsing.
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface, [
            $(
                $(#[$pmeta])*
                #[zbus(property, name = $pname)]
                fn $field(&self) -> $ty {
                    self.view.read().unwrap_or_else(|p| p.into_inner()).$field.clone()
                }
            )*
        ] $($methods)*);
    };
}

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
                super::values::object_path(rdma_manager_dbus::device_path(index))
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
                .map_err(super::errors::op_error)?;
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

        /// Every port's counters in one reply: when they were read (µs since the epoch) and per port (object, source, saturated, counters by name), each as Port.GetCounters gives them. Calls within the daemon's counters max age (its option counters-max-age-ms, 10 s by default) of a reading share it, whoever makes them (the time says which reading), so no number of monitors multiplies the reads; nothing is read while nobody calls. Read only: no authorization.
        async fn get_all_counters(&self) -> Result<(u64, Vec<PortCounters>), Error> {
            let engine = self.ctx.engine().await?;
            let reading = self.ctx.counters().all(engine).await?;
            super::limits::charge_current(reading.bytes);
            Ok((reading.time_us, reading.ports.as_ref().clone()))
        }

        /// The host's whole RDMA configuration as a state document, in `format` "yaml" or "json": soft links, RoCE mode and ToS per port, IPoIB interfaces, naming, module lists, memlock limits, NFS over RDMA and the subnet manager, every section present (docs/STATE.md). Applying it changes nothing. Read only: no authorization.
        async fn get_state(&self, format: &str) -> Result<String, Error> {
            super::state::get_state(&self.ctx, format).await
        }

        /// What applying the state document would change, in order: (key path, "add", "remove" or "set", value now, value wanted, the polkit action it asks). Changes nothing; a document that is refused gets InvalidArgument (or NotFound for a name the host lacks) with its key path and line.
        async fn diff_state(&self, document: &str) -> Result<Vec<StateChange>, Error> {
            super::state::diff_state(&self.ctx, document).await
        }

        /// Applies a state document: asks polkit for the action of every area it changes, runs the changes as their one-shot methods do, reads the host back and checks that every setting holds; a failed step or check undoes every change made (Failed, naming the step). Returns the changes (as DiffState) and, with a timeout (10 to 3600 s), a PendingChange that undoes them unless confirmed in time; "/" with timeout 0 or when nothing changed.
        async fn apply_state(
            &self,
            document: &str,
            timeout: u32,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<(Vec<StateChange>, OwnedObjectPath), Error> {
            super::state::apply_state(&self.ctx, &header, document, timeout).await
        }

        /// A node health check: the verdict on every expectation of the document's `health` section (docs/STATE.md), or, with an empty document, of the health sections of the state directory's files: (expectation, subject such as "mlx5_0/1", "board MT_0000000223" or "host", passed, observed, expected, message). Ports: present, state, phys-state, min-rate-gbps, link-layer, mtu (of the port's IPoIB interface or netdev); min-ports; firmware-equal (per board); error-counters (read at both ends of a window of at most 20 s that the call waits out); flaps (state changes seen in the last window-seconds). A refused or empty document gets InvalidArgument with its key path and line; a device or port the host lacks is a failed "present". Read only: no authorization.
        async fn check_health(&self, document: &str) -> Result<Vec<HealthCheck>, Error> {
            super::health::check_health(&self.ctx, document).await
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
                        .map_err(super::errors::op_error)
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
            super::limits::charge_current(recent.len() as u64 * 512);
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

bus_object! {
    /// A device's properties.
    view DeviceView;
    /// `org.rdmamanager.RdmaManager1.Device` at `Device/<index>`.
    object DeviceObject;
    interface "org.rdmamanager.RdmaManager1.Device";
    properties {
        /// Kernel device index: stable across renames; the object path ends with it.
        index as "Index": u32,
        /// Kernel name (mlx5_0, rxe0, ...); changes when the device is renamed.
        name as "Name": String,
        /// hardware, rxe (Soft-RoCE), siw (Soft-iWARP) or virtual.
        kind as "Kind": String,
        /// Node type as sysfs prints it: CA, RNIC, switch, router, ...
        node_type as "NodeType": String,
        /// Protocol of the device as RDMA netlink reports it: ib, roce, iw, opa; empty if not reported.
        protocol as "Protocol": String,
        /// Node GUID as ibstat prints it (0x followed by 16 hex digits).
        node_guid as "NodeGuid": String,
        /// System image GUID, as ibstat prints it.
        sys_image_guid as "SysImageGuid": String,
        /// Firmware version (fw_ver); empty for soft devices.
        fw_version as "FwVersion": String,
        /// HCA type (hca_type), e.g. MT4123; empty when the driver has none.
        hca_type as "HcaType": String,
        /// Hardware revision (hw_rev).
        hw_rev as "HwRev": String,
        /// Board id (board_id), e.g. MT_0000000223.
        board_id as "BoardId": String,
        /// Node description sent to the subnet manager (node_desc).
        node_desc as "NodeDesc": String,
        /// PCI address (or auxiliary device) of the hardware; empty for soft devices.
        pci_address as "PciAddress": String,
        /// The network interface a soft device (rxe, siw) runs over; empty otherwise.
        parent_netdev as "ParentNetdev": String,
        /// Network interfaces of the same PCI function (IPoIB or Ethernet), or the parent of a soft device.
        netdevs as "Netdevs": Vec<String>,
        /// The port objects, in port order.
        ports as "Ports": Vec<OwnedObjectPath>,
        /// Attributes the kernel did not give, with the reason (missing, read failed: EINVAL, malformed ...); their properties show empty or zero.
        unreadable as "Unreadable": HashMap<String, String>,
        /// The SR-IOV VFs of an InfiniBand PF, by VF index: (vf, PCI address, node GUID and port GUID the PF's driver holds, node GUID and port GUID remembered in vf-guids.toml), GUIDs as `ip link` writes them, empty when none; a remembered VF that is not enabled has an empty PCI address. Empty for any other device.
        vf_guids as "VfGuids": Vec<VfGuid>,
    }
    methods {
        /// Renames the device now, as `rdma dev set NAME name NEW` does; the kernel forgets it when the device is added again (SetRdmaFixedName persists a name).
        op rename(new_name: &str) -> () as ManageNaming = |e, v| e.rename_device(v.index, new_name).await;
        /// Sets the node and port GUID of SR-IOV VF `vf` of this PF, as `ip link set PF vf VF node_guid G port_guid G` does, rebinds the VF to its driver so that it takes them, reads them back and remembers them (/etc/rdma-manager/vf-guids.toml, by the PF's node GUID and the VF index), to set them again whenever the VFs are created. GUIDs as `ip link` (00:11:22:33:44:55:66:77) or sysfs (0011:2233:4455:6677) write them; zero, all-ones and a GUID another device, port or VF of the host has or is remembered with are refused (InvalidArgument, AlreadyExists), as is a VF index the PF has not enabled; a PF netdev whose kernel driver cannot set VF GUIDs is NotSupported with the kernel's reason. Nothing is changed on failure.
        op set_vf_guids(vf: u32, node_guid: &str, port_guid: &str) -> () as ManageAdapter = |e, v| e.set_vf_guids(v.index, vf, node_guid, port_guid).await;
        /// Forgets the GUIDs remembered for VF `vf` (NotFound when none are); the PF's driver keeps the current ones until the VFs are destroyed (the kernel has no GUID-less state to go back to).
        op reset_vf_guids(vf: u32) -> () as ManageAdapter = |e, v| e.reset_vf_guids(v.index, vf).await;
    }
}

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
            = |e, v| e.set_roce_mode(super::device_index(&v.device), v.number, mode).await;

        /// Sets rdma_cm's default type of service for RoCE connections of this port and
        /// remembers it.
        op set_roce_tos(tos: u8) -> () as ManageRoce
            = |e, v| e.set_roce_tos(super::device_index(&v.device), v.number, tos).await;

        /// Sets the port type ("ib", "eth" or "auto"). mlx4: at once (the driver re-registers
        /// the device), checked first against the driver's rule (port 1 may be eth only when
        /// port 2 is), and remembered in rdma-core's /etc/rdma/mlx4.conf, re-applied when the
        /// device appears. mlx5: staged in firmware for the next boot (PortTypeNext,
        /// PortTypeRebootNeeded). NotSupported where the driver has none or a tool is missing.
        op set_port_type(port_type: &str) -> () as ManageAdapter
            = |e, v| e.set_port_type(super::device_index(&v.device), v.number, port_type).await;
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
            = |e, v| match super::qos::from_bus(&QosProfile {
                // Trust follows the DSCP map (see the model's rule): DSCP with one.
                trust: if dscp.is_empty() { "pcp" } else { "dscp" }.to_string(),
                pfc,
                ets_bandwidth,
                ets_prio_tc,
                dscp,
                traffic_class,
                ecn,
            }) {
                Ok(p) => e.set_qos_profile(super::device_index(&v.device), v.number, p).await,
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
                .qos_profile(super::device_index(&v.device), v.number)
                .await
                .map_err(super::errors::op_error)?;
            Ok((super::qos::to_bus(&p), persisted))
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
                    outcome.map_err(super::errors::op_error)
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
                .map_err(super::errors::op_error)?;
            let mut counters = super::counters::by_name(&snap);
            // Per-priority PFC frames, where the netdev has DCB.
            counters.extend(
                self.ctx
                    .engine()
                    .await?
                    .flow_control_counters(super::device_index(&v.device), v.number)
                    .await,
            );
            Ok((
                super::values::counter_source_name(&snap.source).to_string(),
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
        let key = (super::device_index(&v.device), v.number);
        let samples = if coarse {
            engine.history_coarse(key)
        } else {
            engine.history(key)
        };
        // (t d d d d y) is 48 bytes with its alignment.
        super::limits::charge_current(samples.len() as u64 * 48);
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

bus_object! {
    /// An IPoIB interface's properties.
    view IpoibView;
    /// `org.rdmamanager.RdmaManager1.Ipoib` at `Ipoib/<ifindex>`.
    object IpoibObject;
    interface "org.rdmamanager.RdmaManager1.Ipoib";
    properties {
        /// Interface name (ib0, ib0.8001, ...).
        name as "Name": String,
        /// Interface index; the object path ends with it.
        ifindex as "Ifindex": u32,
        /// The parent interface object of a P_Key child; "/" for a port's own interface.
        parent as "Parent": OwnedObjectPath,
        /// Name of the parent interface of a P_Key child; empty otherwise.
        parent_name as "ParentName": String,
        /// The device object this belongs to; "/" when not known.
        device as "Device": OwnedObjectPath,
        /// The RDMA port object the interface runs on; "/" when not known.
        port as "Port": OwnedObjectPath,
        /// P_Key with the full-membership bit (0x8000) as the kernel stores it; 0xffff is the default partition.
        pkey as "Pkey": u16,
        /// datagram or connected.
        mode as "Mode": String,
        /// Whether user-space multicast is allowed (umcast).
        umcast as "Umcast": bool,
        /// MTU in bytes.
        mtu as "Mtu": u32,
        /// 20-byte IPoIB hardware address (flags, QPN, GID).
        hw_address as "HwAddress": String,
        /// Port GUID (the low 64 bits of GID 0), as ibstat prints it.
        port_guid as "PortGuid": String,
        /// Operational state: up, down, lowerlayerdown, unknown ...
        oper_state as "OperState": String,
        /// Its IPv4 and IPv6 addresses as ADDRESS/PREFIX, from the kernel (what ip address lists), whichever manager (or nobody) configured them; kept current by the kernel's address events.
        addresses as "Addresses": Vec<String>,
        /// Whether connected mode is possible: false on enhanced IPoIB (ConnectX-4 and later with ipoib_enhanced).
        connected_mode_supported as "ConnectedModeSupported": bool,
        /// P_Key child interface objects of this interface.
        children as "Children": Vec<OwnedObjectPath>,
        /// Attributes the kernel did not give, with the reason (missing, read failed: EINVAL, malformed ...); their properties show empty or zero.
        unreadable as "Unreadable": HashMap<String, String>,
        /// Who configures this interface: ("networkmanager", profile id, profile UUID) when a NetworkManager profile does (the daemon then refuses to change it and does not re-create it), ("rdma-manager", "", "") when ipoib.toml remembers it, ("", "", "") when nobody does.
        owner as "Owner": Owner,
        /// Whether the daemon remembers this interface in ipoib.toml: a P_Key child it re-creates, or a port's interface with settings it re-applies.
        persisted as "Persisted": bool,
        /// The remembered settings re-applied when the interface appears (mode, mtu, umcast), as text.
        persisted_settings as "PersistedSettings": HashMap<String, String>,
        /// On a port's own interface: the remembered P_Key children (P_Key with the full-membership bit, name), re-created when it appears; empty on a child.
        persisted_children as "PersistedChildren": Vec<PersistedChild>,
        /// Whether the interface has carrier: IPoIB turns it on once it has joined its partition's broadcast multicast group, so this is also that join's state (false while the interface is down).
        carrier as "Carrier": bool,
        /// Whether the interface's partition (its P_Key, either membership) is in its port's P_Key table; false: the subnet manager has not given the port this partition and the interface cannot join it. True when the port is not known.
        pkey_in_port_table as "PkeyInPortTable": bool,
        /// Why the interface does not run, in words (not set up, its parent or port down, its P_Key not in the port's table, the broadcast group not joined); empty when it is up with carrier.
        down_reason as "DownReason": String,
    }
    methods {
        /// Creates a P_Key child of this port interface, as `ip link add link PARENT name NAME
        /// type ipoib pkey PKEY` does, applies the settings and remembers it; returns its object.
        /// An empty name gives the kernel's `PARENT.xxxx` (the P_Key as given, the parent cut to
        /// 10 characters if needed). Settings: mode (s), mtu (u), umcast (b). The kernel sets
        /// the full-membership bit: P_Key 0x0002 joins the partition as 0x8002. Where
        /// NetworkManager manages this interface, the child is a NetworkManager profile
        /// (named PARENT.xxxx, IPv4 and IPv6 disabled until given IP settings) that
        /// NetworkManager creates and keeps, pending confirmation (Network.PendingChanges);
        /// returns its object once it exists, or "/" when NetworkManager has not made it
        /// within 5 s.
        async fn create_child(
            &self,
            pkey: u16,
            name: &str,
            settings: HashMap<String, zbus::zvariant::OwnedValue>,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<OwnedObjectPath, Error> {
            let arguments = crate::audit_args![pkey, name, settings];
            self.ctx
                .change(&header, Action::ManageIpoib, arguments, async {
                let settings = super::ipoib::child_settings(&settings)?;
                let parent = read(&self.view).ifindex;
                let created = self
                    .ctx
                    .engine().await?
                    .ipoib_create_child(parent, u32::from(pkey), name, settings)
                    .await
                    .map_err(super::errors::op_error)?;
                super::ipoib::child_created(&self.ctx, created).await
                })
                .await
        }

        /// Deletes this P_Key child, as `ip link delete` does, and forgets it. A port's own
        /// interface cannot be deleted. Of a child NetworkManager owns, its profile is deleted
        /// (NetworkManager removes the child), pending confirmation (Network.PendingChanges).
        op delete() -> () as ManageIpoib
            = |e, v| e.ipoib_delete(v.ifindex).await, then super::ipoib::pending_if_any;

        /// Sets the transport mode, datagram or connected, and remembers it. The kernel
        /// resizes the MTU with the mode (connected: 65520). Of an interface NetworkManager
        /// owns, in its profile, pending confirmation (Network.PendingChanges).
        op set_mode(mode: &str) -> () as ManageIpoib
            = |e, v| e.ipoib_set_mode(v.ifindex, mode).await, then super::ipoib::pending_if_any;

        /// Sets the MTU and remembers it: datagram mode allows 72 to the port's InfiniBand MTU
        /// minus 4 (at most 4092), connected mode 68 to 65520. Of an interface NetworkManager
        /// owns, in its profile, pending confirmation (Network.PendingChanges).
        op set_mtu(mtu: u32) -> () as ManageIpoib
            = |e, v| e.ipoib_set_mtu(v.ifindex, mtu).await, then super::ipoib::pending_if_any;

        /// Allows (true) or stops (false) user-space multicast (umcast) and remembers it.
        op set_umcast(umcast: bool) -> () as ManageIpoib
            = |e, v| e.ipoib_set_umcast(v.ifindex, umcast).await;
    }
}

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
            = |e| e.apply_modules(set).await.map(super::values::steps);

        /// Sets the memlock limits of group rdma in /etc/security/limits.d/zz-rdma-manager.conf: "unlimited" or a positive number of KiB each, soft not above hard; returns notes (when it takes effect, entries that override it).
        op set_memlock_limits(soft: &str, hard: &str) -> Vec<String> as ManageHost
            = |e| e.set_memlock_limits(soft, hard).await;

        /// Removes the daemon's limits file; the other limits files decide again. Nothing to remove is success.
        op reset_memlock_limits() -> () as ManageHost = |e| e.reset_memlock_limits().await;

        /// Enables NFS over RDMA on this NFS server (port 0 means 20049): the drop-in /etc/nfs.conf.d/zz-rdma-manager.conf, xprtrdma and svcrdma in rdma.conf, the port in firewalld's default zone when it runs, then a restart of nfs-server.service; or disables it (port must be 0). Returns the steps: (step, outcome done, unchanged, skipped, failed or not-run, detail).
        op set_nfs_rdma(enabled: bool, port: u16) -> Vec<HostStep> as ManageHost
            = |e| e.set_nfs_rdma(enabled, port).await.map(super::values::steps);

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
