//! Persistent names of RDMA devices and IPoIB netdevs: the udev rules files users also edit
//! (`udev_rules`, the rule tokenizer and the daemon's marked block), IPoIB naming by port GUID
//! (`udev_ipoib`), rdma-core's `rdma_rename` policies (`rdma_rename`) and their override
//! (`udev_rdma_naming`). Pure: text in, text out; the engine's `ops_naming` reads and writes.

pub mod rdma_rename;
pub mod udev_ipoib;
pub mod udev_rdma_naming;
pub mod udev_rules;
