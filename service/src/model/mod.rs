//! Plain types for a host's RDMA state and the parsers of every kernel text format.
//! Host configuration files are in [`crate::hostconf`], persistent naming in [`crate::naming`];
//! [`names`], [`ipoib`] and [`crate::hostconf`] are crate rdma-manager-model's, which rdma-tui
//! shares.
//!
//! Nothing here performs I/O: readers in [`crate::kernel`] hand the raw text of a sysfs or
//! configfs attribute to these parsers, so every format is unit-tested without a kernel.

// The rules rdma-tui shares with the daemon, in crate rdma-manager-model.
pub use rdma_manager_model::{ipoib, names};

pub mod attr;
pub mod counters;
pub mod device;
pub mod errno;
pub mod guid;
pub mod netdev;
pub mod port;
pub mod roce;
pub mod softlink;

pub use attr::{AttrError, Field};
pub use counters::{CounterSnapshot, CounterSource, CounterWidth, PortSource};
pub use device::{
    DeviceKind, DeviceSnapshot, GidEntry, GidType, NodeType, PkeyEntry, PortSnapshot,
};
pub use errno::Errno;
pub use guid::Guid;
pub use netdev::{HwAddress, IpoibAttrs, IpoibMode, NetdevAddress, NetdevSnapshot};
pub use port::{LinkLayer, PhysState, PortState, Rate};
pub use roce::RoceMode;
pub use softlink::{SoftLinkError, SoftLinkType};
