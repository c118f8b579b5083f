//! NetworkManager, which owns IPoIB and the IP settings of RDMA netdevs on hosts where it
//! runs (RHEL's default): the profiles the daemon writes through it, and a client of its
//! D-Bus API.
//!
//! - [`profile`]: an IPoIB profile (transport mode, MTU, P_Key and parent, IPv4 and IPv6
//!   settings) checked as NetworkManager would check it and turned into the settings nmcli
//!   would send for the same intent.
//! - [`client`]: [`client::NetworkManager`]: adds, lists and deletes profiles.

pub mod client;
pub mod device;
pub mod keys;
pub mod profile;
