//! rtnetlink requests for IPoIB netdevs, and link notifications.
//!
//! Requests are laid out the way iproute2's `ip link` lays them out (ip/iplink.c,
//! ip/iplink_ipoib.c), so that what the kernel sees from us is what it sees from `ip`:
//!
//! - `ip link add link ib0 name ib0.8002 type ipoib pkey 0x8002 mode connected`:
//!   RTM_NEWLINK, NLM_F_REQUEST|NLM_F_ACK|NLM_F_CREATE|NLM_F_EXCL, ifinfomsg all zero,
//!   IFLA_LINK (parent ifindex), IFLA_IFNAME, IFLA_LINKINFO { IFLA_INFO_KIND "ipoib",
//!   IFLA_INFO_DATA { IFLA_IPOIB_PKEY, IFLA_IPOIB_MODE, IFLA_IPOIB_UMCAST } }.
//! - `ip link set DEV mtu M up type ipoib mode connected`: RTM_NEWLINK,
//!   NLM_F_REQUEST|NLM_F_ACK (changelink), IFF_UP in ifi_flags/ifi_change, IFLA_MTU,
//!   IFLA_LINKINFO { kind "ipoib", data { MODE, UMCAST } }. iproute2 puts the ifindex in the
//!   header; we name the device with IFLA_IFNAME instead (the kernel looks it up by name when
//!   ifi_index is 0), so that no other request can slip between a lookup and the change.
//! - `ip link set DEV name NEW`: RTM_NEWLINK with the ifindex and IFLA_IFNAME NEW.
//! - `ip link del DEV`: RTM_DELLINK.
//!
//! Kernel answers become [`HostError::Kernel`] with `Op::Rtnl("newlink")` and so on; a netdev
//! that does not exist becomes [`HostError::NotFound`].

mod events;
#[cfg(test)]
pub(crate) mod netns;
#[cfg(test)]
mod tests;
pub mod vf_guid;

use futures::StreamExt;
use netlink_packet_core::{
    NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST,
};
use netlink_packet_route::link::{
    InfoData, InfoIpoib, InfoKind, IpoibMode as NlIpoibMode, LinkAttribute, LinkFlags, LinkInfo,
    LinkLayerType, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;
use serde::Serialize;

use super::error::{HostError, Op};
use super::{NetdevChange, NewIpoibChild};
use crate::model::{Errno, IpoibMode};

pub use events::{decode_datagram, spawn_link_events, LinkNames};

/// IFNAMSIZ - 1: the longest interface name the kernel accepts.
pub const IFNAME_MAX: usize = 15;

/// The IPoIB attributes of a netdev as rtnetlink reports them (IFLA_LINKINFO of kind `ipoib`).
///
/// Children created over rtnetlink have no `pkey`/`mode`/`umcast` sysfs files: this is where
/// those values come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RtnlIpoib {
    pub ifindex: u32,
    /// IFLA_LINK: present for children (the parent's ifindex), absent for a port's own netdev.
    pub parent_ifindex: Option<u32>,
    /// With the full-membership bit as the kernel stores it.
    pub pkey: Option<u16>,
    pub mode: Option<IpoibMode>,
    pub umcast: Option<bool>,
}

/// An rtnetlink connection whose I/O task runs on the current tokio runtime.
#[derive(Clone)]
pub struct Rtnl {
    handle: rtnetlink::Handle,
}

impl std::fmt::Debug for Rtnl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rtnl").finish_non_exhaustive()
    }
}

/// Maps an rtnetlink error of operation `op` to a [`HostError`].
pub(crate) fn map_err(op: &'static str, err: rtnetlink::Error) -> HostError {
    match err {
        rtnetlink::Error::NetlinkError(msg) => match msg.code {
            Some(code) => HostError::kernel(Op::Rtnl(op), Errno(code.get().saturating_abs())),
            None => HostError::Protocol {
                op: Op::Rtnl(op),
                reason: "acknowledgement where an answer was expected".into(),
            },
        },
        other => HostError::Protocol {
            op: Op::Rtnl(op),
            reason: other.to_string(),
        },
    }
}

fn not_found(name: &str) -> HostError {
    HostError::NotFound(format!("network interface {name}"))
}

/// Turns ENODEV from a request that named `name` into NotFound; keeps everything else.
fn enodev_is_not_found(err: HostError, name: &str) -> HostError {
    match err {
        HostError::Kernel { errno, .. } if errno == Errno::ENODEV => not_found(name),
        other => other,
    }
}

/// Refuses names the kernel can never accept before they reach a netlink attribute.
fn check_new_name(name: &str) -> Result<(), HostError> {
    if name.is_empty() || name.len() > IFNAME_MAX {
        return Err(HostError::Invalid(format!(
            "interface name {name:?} must be 1 to {IFNAME_MAX} bytes long"
        )));
    }
    if name == "." || name == ".." {
        return Err(HostError::Invalid(format!(
            "interface name {name:?} is reserved"
        )));
    }
    if name
        .bytes()
        .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace())
    {
        return Err(HostError::Invalid(format!(
            "interface name {name:?} contains '/', ':', whitespace or NUL"
        )));
    }
    Ok(())
}

/// Whether `name` could name an existing netdev at all (else a lookup cannot find it).
fn plausible_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= IFNAME_MAX && !name.contains('\0')
}

fn nl_mode(mode: IpoibMode) -> NlIpoibMode {
    match mode {
        IpoibMode::Datagram => NlIpoibMode::Datagram,
        IpoibMode::Connected => NlIpoibMode::Connected,
    }
}

/// The RTM_NEWLINK body that creates an IPoIB child, attributes in iproute2's order.
pub(crate) fn ipoib_child_message(parent_ifindex: u32, c: &NewIpoibChild) -> LinkMessage {
    let mut data = vec![InfoIpoib::Pkey(c.pkey)];
    if let Some(mode) = c.mode {
        data.push(InfoIpoib::Mode(nl_mode(mode)));
    }
    if let Some(umcast) = c.umcast {
        data.push(InfoIpoib::UmCast(u16::from(umcast)));
    }
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::Link(parent_ifindex));
    msg.attributes.push(LinkAttribute::IfName(c.name.clone()));
    msg.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Ipoib),
        LinkInfo::Data(InfoData::Ipoib(data)),
    ]));
    msg
}

/// The RTM_NEWLINK (changelink) body for `ip link set NAME ...`.
pub(crate) fn change_message(name: &str, ch: &NetdevChange) -> LinkMessage {
    let mut msg = LinkMessage::default();
    if let Some(up) = ch.up {
        msg.header.change_mask |= LinkFlags::Up;
        if up {
            msg.header.flags |= LinkFlags::Up;
        }
    }
    msg.attributes.push(LinkAttribute::IfName(name.to_string()));
    if let Some(mtu) = ch.mtu {
        msg.attributes.push(LinkAttribute::Mtu(mtu));
    }
    let mut data = Vec::new();
    if let Some(mode) = ch.ipoib_mode {
        data.push(InfoIpoib::Mode(nl_mode(mode)));
    }
    if let Some(umcast) = ch.ipoib_umcast {
        data.push(InfoIpoib::UmCast(u16::from(umcast)));
    }
    if !data.is_empty() {
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Ipoib),
            LinkInfo::Data(InfoData::Ipoib(data)),
        ]));
    }
    msg
}

/// Wraps a link message into a netlink request with the given flags, ready to emit.
pub(crate) fn request(
    body: RouteNetlinkMessage,
    flags: u16,
) -> NetlinkMessage<RouteNetlinkMessage> {
    let mut req = NetlinkMessage::from(body);
    req.header.flags = flags;
    req.finalize();
    req
}

/// Flags of `ip link add`.
pub(crate) const CREATE_FLAGS: u16 = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
/// Flags of `ip link set` / `ip link del`.
pub(crate) const CHANGE_FLAGS: u16 = NLM_F_REQUEST | NLM_F_ACK;

/// The IPoIB attributes in a link message, or `None` when the link is not IPoIB.
pub fn ipoib_from_message(msg: &LinkMessage) -> Option<RtnlIpoib> {
    let mut is_ipoib = msg.header.link_layer_type == LinkLayerType::Infiniband;
    let mut out = RtnlIpoib {
        ifindex: msg.header.index,
        parent_ifindex: None,
        pkey: None,
        mode: None,
        umcast: None,
    };
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::Link(parent) => out.parent_ifindex = Some(*parent),
            LinkAttribute::LinkInfo(infos) => {
                for info in infos {
                    match info {
                        LinkInfo::Kind(InfoKind::Ipoib) => is_ipoib = true,
                        LinkInfo::Data(InfoData::Ipoib(data)) => {
                            is_ipoib = true;
                            for d in data {
                                match d {
                                    InfoIpoib::Pkey(p) => out.pkey = Some(*p),
                                    InfoIpoib::Mode(m) => {
                                        out.mode = IpoibMode::from_netlink(u16::from(*m))
                                    }
                                    InfoIpoib::UmCast(u) => out.umcast = Some(*u != 0),
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    // The kernel reports IFLA_LINK only when it differs from the device's own index.
    if out.parent_ifindex == Some(out.ifindex) {
        out.parent_ifindex = None;
    }
    is_ipoib.then_some(out)
}

/// The name in a link message (IFLA_IFNAME).
pub fn name_from_message(msg: &LinkMessage) -> Option<&str> {
    msg.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.as_str()),
        _ => None,
    })
}

/// The address an RTM_NEWADDR carries: IFA_LOCAL where present (IPv4; on a point-to-point
/// link IFA_ADDRESS is the peer's), else IFA_ADDRESS (IPv6 sends only that).
pub fn address_from_message(
    msg: &netlink_packet_route::address::AddressMessage,
) -> Option<crate::model::NetdevAddress> {
    use netlink_packet_route::address::AddressAttribute;
    let local = msg.attributes.iter().find_map(|a| match a {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });
    let address = msg.attributes.iter().find_map(|a| match a {
        AddressAttribute::Address(ip) => Some(*ip),
        _ => None,
    });
    local.or(address).map(|ip| crate::model::NetdevAddress {
        ip,
        prefix: msg.header.prefix_len,
    })
}

impl Rtnl {
    /// Opens an rtnetlink socket and spawns its connection task on the current tokio runtime.
    /// The socket lives in the network namespace of the calling thread.
    pub async fn open() -> Result<Rtnl, HostError> {
        let (conn, handle, _messages) =
            rtnetlink::new_connection().map_err(|e| HostError::from_io(Op::Rtnl("socket"), &e))?;
        tokio::spawn(conn);
        Ok(Rtnl { handle })
    }

    /// Sends a request that is answered with an acknowledgement only.
    async fn ack(
        &self,
        op: &'static str,
        req: NetlinkMessage<RouteNetlinkMessage>,
    ) -> Result<(), HostError> {
        let mut handle = self.handle.clone();
        let mut responses = handle.request(req).map_err(|e| map_err(op, e))?;
        while let Some(msg) = responses.next().await {
            if let NetlinkPayload::Error(err) = msg.payload {
                if err.code.is_some() {
                    return Err(map_err(op, rtnetlink::Error::NetlinkError(err)));
                }
            }
        }
        Ok(())
    }

    /// RTM_GETLINK for one name; `Ok(None)` when there is no such netdev.
    async fn get_link(&self, name: &str) -> Result<Option<LinkMessage>, HostError> {
        if !plausible_name(name) {
            return Ok(None);
        }
        let mut stream = self
            .handle
            .link()
            .get()
            .match_name(name.to_string())
            .execute();
        let mut found = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(msg) => {
                    if found.is_none() {
                        found = Some(msg);
                    }
                }
                Err(e) => {
                    let err = map_err("getlink", e);
                    return match err.errno() {
                        Some(Errno::ENODEV) => Ok(None),
                        _ => Err(err),
                    };
                }
            }
        }
        Ok(found)
    }

    /// All links (RTM_GETLINK dump).
    pub async fn links(&self) -> Result<Vec<LinkMessage>, HostError> {
        let mut stream = self.handle.link().get().execute();
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            out.push(item.map_err(|e| map_err("getlink", e))?);
        }
        Ok(out)
    }

    /// The IPv4 and IPv6 addresses of every netdev, or of `only` (RTM_GETADDR dump, as
    /// `ip address show` asks), by ifindex, each netdev's in the kernel's order.
    pub async fn addresses(
        &self,
        only: Option<u32>,
    ) -> Result<std::collections::BTreeMap<u32, Vec<crate::model::NetdevAddress>>, HostError> {
        let mut req = self.handle.address().get();
        if let Some(index) = only {
            req = req.set_link_index_filter(index);
        }
        let mut stream = req.execute();
        let mut out: std::collections::BTreeMap<u32, Vec<_>> = std::collections::BTreeMap::new();
        while let Some(item) = stream.next().await {
            let msg = item.map_err(|e| map_err("getaddr", e))?;
            if let Some(a) = address_from_message(&msg) {
                out.entry(msg.header.index).or_default().push(a);
            }
        }
        Ok(out)
    }

    /// The ifindex of a netdev, `None` when it does not exist.
    pub async fn link_index(&self, name: &str) -> Result<Option<u32>, HostError> {
        Ok(self.get_link(name).await?.map(|m| m.header.index))
    }

    async fn require_index(&self, name: &str) -> Result<u32, HostError> {
        self.link_index(name).await?.ok_or_else(|| not_found(name))
    }

    /// `ip link add link PARENT name NAME type ipoib pkey PKEY [mode MODE] [umcast 0|1]`.
    ///
    /// The kernel answers ENODEV when the parent is not an InfiniBand netdev, EINVAL for pkey
    /// 0 or 0x8000 or a parent that is itself a child, EOPNOTSUPP when the ipoib module is not
    /// available, EEXIST when the name is taken.
    pub async fn create_ipoib_child(&self, c: &NewIpoibChild) -> Result<(), HostError> {
        check_new_name(&c.name)?;
        let parent = self.require_index(&c.parent).await?;
        let body = ipoib_child_message(parent, c);
        self.ack(
            "newlink",
            request(RouteNetlinkMessage::NewLink(body), CREATE_FLAGS),
        )
        .await
    }

    /// `ip link set NAME [mtu M] [up|down] [type ipoib [mode MODE] [umcast 0|1]]` in one
    /// request. The kernel applies the IPoIB data (changelink) before MTU and flags.
    pub async fn change(&self, name: &str, ch: &NetdevChange) -> Result<(), HostError> {
        if !plausible_name(name) {
            return Err(not_found(name));
        }
        if *ch == NetdevChange::default() {
            // Nothing to change; still say whether the netdev exists.
            return self.require_index(name).await.map(|_| ());
        }
        let body = change_message(name, ch);
        self.ack(
            "newlink",
            request(RouteNetlinkMessage::NewLink(body), CHANGE_FLAGS),
        )
        .await
        .map_err(|e| enodev_is_not_found(e, name))
    }

    /// `ip link set OLD name NEW`. Kernels before 6.2 refuse with EBUSY while the link is up;
    /// that errno is passed on as it is.
    pub async fn rename(&self, old: &str, new: &str) -> Result<(), HostError> {
        check_new_name(new)?;
        let index = self.require_index(old).await?;
        let mut body = LinkMessage::default();
        body.header.index = index;
        body.attributes.push(LinkAttribute::IfName(new.to_string()));
        self.ack(
            "newlink",
            request(RouteNetlinkMessage::NewLink(body), CHANGE_FLAGS),
        )
        .await
        .map_err(|e| enodev_is_not_found(e, old))
    }

    /// `ip link del NAME`.
    pub async fn delete(&self, name: &str) -> Result<(), HostError> {
        if !plausible_name(name) {
            return Err(not_found(name));
        }
        let mut body = LinkMessage::default();
        body.attributes
            .push(LinkAttribute::IfName(name.to_string()));
        self.ack(
            "dellink",
            request(RouteNetlinkMessage::DelLink(body), CHANGE_FLAGS),
        )
        .await
        .map_err(|e| enodev_is_not_found(e, name))
    }

    /// The IPoIB attributes of a netdev from its rtnetlink link info. `Ok(None)` when the
    /// netdev exists but is not IPoIB; NotFound when it does not exist.
    pub async fn ipoib_info(&self, name: &str) -> Result<Option<RtnlIpoib>, HostError> {
        let msg = self.get_link(name).await?.ok_or_else(|| not_found(name))?;
        Ok(ipoib_from_message(&msg))
    }
}
