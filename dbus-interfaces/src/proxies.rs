//! Client proxies of rdma-managerd's interfaces, for rdma-tui, tests and tools.
//!
//! They are generated when the crate builds from the committed introspection XML in
//! `dbus-interfaces/xml/`, the reviewed contract the service is compared with
//! (`service/src/dbus/contract.rs`): one trait per interface (`ManagerProxy` for
//! `org.rdmamanager.RdmaManager1`, `PortProxy` for `...Port`, ...), one method per D-Bus
//! method, signal and property, named in snake case, documented with the XML's comments. The
//! structs of [`crate::types`] and the aliases below are used where the generator's table
//! (`codegen/proxies.rs`, `NAMED`) names them; a test checks each has the XML's signature.

pub use crate::types::HostStep;
use crate::types::{
    Gid, HealthCheck, LeftChild, LinkResponder, LinkTestResult, ManagedLimits, MovedChild,
    NamePreview, NameRule, Owner, PersistedChild, Pkey, PortCounters, QosProfile, RdmaModule,
    SoftLink, StateChange, StateFile, StateStale, SubnetManager, UnitState, VfGuid,
};
use zbus::zvariant::OwnedObjectPath;

/// One port's throughput at one tick: (port object, TX bytes/s, RX bytes/s, TX packets/s,
/// RX packets/s, flags).
pub type PortSample = (OwnedObjectPath, f64, f64, f64, f64, u8);
/// One recorded sample: (time µs since the epoch, TX bytes/s, RX bytes/s, TX packets/s,
/// RX packets/s, flags).
pub type HistorySample = (u64, f64, f64, f64, f64, u8);

/// Sample flags.
pub mod sample_flags {
    /// A 32-bit PMA counter saturated: the rate is a lower bound.
    pub const SATURATED: u8 = 1;
    /// No rate for this tick.
    pub const NO_DATA: u8 = 2;
    /// Coarse history only: the average covers fewer than 10 samples.
    pub const PARTIAL: u8 = 4;
}

include!(concat!(env!("OUT_DIR"), "/proxies.rs"));
