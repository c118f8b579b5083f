//! The bus objects: root, Device, Port and Ipoib interfaces. Each holds its property values
//! in a shared cell that the publisher replaces; getters read the cell and never touch the
//! kernel, so a slow kernel call can never hold up a property read or GetManagedObjects.
//!
//! `bus_object!` declares, from one list, the view struct, its D-Bus getters and the
//! comparison that yields the PropertiesChanged payload, so the three cannot drift apart.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};

use super::Context;

/// A property cell shared by an object and the publisher.
pub type Cell<T> = Arc<RwLock<T>>;

fn read<T: Clone>(cell: &Cell<T>) -> T {
    cell.read().unwrap_or_else(|p| p.into_inner()).clone()
}

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
        }

        $(#[$ometa])*
        pub struct $obj {
            pub view: Cell<$view>,
            pub ctx: Arc<Context>,
        }

        #[zbus::interface(name = $iface)]
        impl $obj {
            $(
                $(#[$pmeta])*
                #[zbus(property, name = $pname)]
                fn $field(&self) -> $ty {
                    self.view.read().unwrap_or_else(|p| p.into_inner()).$field.clone()
                }
            )*
            $($methods)*
        }
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
        /// True when the daemon runs on a simulated host (`--simulate`).
        simulated as "Simulated": bool,
        /// Every RDMA device object.
        devices as "Devices": Vec<OwnedObjectPath>,
        /// Every IPoIB interface object.
        ipoib_interfaces as "IpoibInterfaces": Vec<OwnedObjectPath>,
        /// Throughput sampling period in microseconds.
        sample_interval_us as "SampleIntervalUs": u64,
        /// Samples of history kept per port.
        history_length as "HistoryLength": u32,
    }
    methods {
        /// Creates a Soft-RoCE (`rxe`) or Soft-iWARP (`siw`) device over a network interface,
        /// as `rdma link add NAME type TYPE netdev NETDEV` does; returns its object.
        async fn add_soft_link(
            &self,
            name: &str,
            r#type: &str,
            netdev: &str,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<OwnedObjectPath, Error> {
            self.ctx.authorize(&header, Action::ManageLinks).await?;
            let index = self
                .ctx
                .engine()?
                .add_soft_link(name, r#type, netdev)
                .await
                .map_err(super::errors::op_error)?;
            Ok(super::view::object_path(rdma_manager_dbus::device_path(index)))
        }

        /// Removes an rxe or siw device, as `rdma link delete NAME` does.
        async fn remove_soft_link(
            &self,
            name: &str,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<(), Error> {
            self.ctx.authorize(&header, Action::ManageLinks).await?;
            self.ctx
                .engine()?
                .remove_soft_link(name)
                .await
                .map_err(super::errors::op_error)
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
        index as "Index": u32,
        name as "Name": String,
        kind as "Kind": String,
        node_type as "NodeType": String,
        protocol as "Protocol": String,
        node_guid as "NodeGuid": String,
        sys_image_guid as "SysImageGuid": String,
        fw_version as "FwVersion": String,
        hca_type as "HcaType": String,
        hw_rev as "HwRev": String,
        board_id as "BoardId": String,
        node_desc as "NodeDesc": String,
        pci_address as "PciAddress": String,
        parent_netdev as "ParentNetdev": String,
        netdevs as "Netdevs": Vec<String>,
        ports as "Ports": Vec<OwnedObjectPath>,
        unreadable as "Unreadable": HashMap<String, String>,
    }
    methods {}
}

bus_object! {
    /// A port's properties.
    view PortView;
    /// `org.rdmamanager.RdmaManager1.Port` at `Device/<index>/Port/<n>`.
    object PortObject;
    interface "org.rdmamanager.RdmaManager1.Port";
    properties {
        device as "Device": OwnedObjectPath,
        device_name as "DeviceName": String,
        number as "Number": u32,
        state as "State": String,
        phys_state as "PhysState": String,
        link_layer as "LinkLayer": String,
        rate as "Rate": String,
        rate_gbps as "RateGbps": f64,
        lid as "Lid": u32,
        sm_lid as "SmLid": u32,
        lmc as "Lmc": u8,
        sm_sl as "SmSl": u8,
        capability_mask as "CapabilityMask": u32,
        port_guid as "PortGuid": String,
        gids as "Gids": Vec<(u32, String, String, String)>,
        pkeys as "Pkeys": Vec<(u32, u16)>,
        netdev as "Netdev": String,
        counter_source as "CounterSource": String,
        unreadable as "Unreadable": HashMap<String, String>,
    }
    methods {
        /// The recorded throughput, oldest first: (time µs since the epoch, TX bytes/s,
        /// RX bytes/s, TX packets/s, RX packets/s, flags), one a second for up to 15 minutes.
        async fn get_throughput_history(
            &self,
        ) -> Result<Vec<(u64, f64, f64, f64, f64, u8)>, Error> {
            let v = read(&self.view);
            let engine = self.ctx.engine()?;
            let key = (super::device_index(&v.device), v.number);
            Ok(engine
                .history(key)
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

        /// Reads the port's counters now: (source, saturated, counters by name). Byte counts
        /// are `tx_bytes`/`rx_bytes` (PMA data words already times 4); PMA error counters
        /// and the driver's `hw_counters` follow under their kernel names (`hw.` prefix).
        async fn get_counters(&self) -> Result<(String, bool, HashMap<String, u64>), Error> {
            let v = read(&self.view);
            let snap = self
                .ctx
                .engine()?
                .host
                .read_counters(&v.device_name, v.number)
                .await
                .map_err(|e| super::errors::op_error(crate::engine::OpError::from_host(e)))?;
            let mut out = HashMap::new();
            for (k, f) in [
                ("tx_bytes", &snap.tx_bytes),
                ("rx_bytes", &snap.rx_bytes),
                ("tx_packets", &snap.tx_packets),
                ("rx_packets", &snap.rx_packets),
            ] {
                if let Ok(x) = f {
                    out.insert(k.to_string(), *x);
                }
            }
            for (k, x) in &snap.pma {
                out.insert(k.clone(), *x);
            }
            for (k, x) in &snap.hw {
                out.insert(format!("hw.{k}"), *x);
            }
            Ok((
                super::view::counter_source_name(&snap.source).to_string(),
                snap.saturated,
                out,
            ))
        }
    }
}

bus_object! {
    /// An IPoIB interface's properties.
    view IpoibView;
    /// `org.rdmamanager.RdmaManager1.Ipoib` at `Ipoib/<ifindex>`.
    object IpoibObject;
    interface "org.rdmamanager.RdmaManager1.Ipoib";
    properties {
        name as "Name": String,
        ifindex as "Ifindex": u32,
        parent as "Parent": OwnedObjectPath,
        parent_name as "ParentName": String,
        device as "Device": OwnedObjectPath,
        port as "Port": OwnedObjectPath,
        pkey as "Pkey": u16,
        mode as "Mode": String,
        umcast as "Umcast": bool,
        mtu as "Mtu": u32,
        hw_address as "HwAddress": String,
        port_guid as "PortGuid": String,
        oper_state as "OperState": String,
        connected_mode_supported as "ConnectedModeSupported": bool,
        children as "Children": Vec<OwnedObjectPath>,
        unreadable as "Unreadable": HashMap<String, String>,
    }
    methods {}
}
