//! SR-IOV VF GUIDs over rtnetlink, laid out as iproute2's `ip link` lays them out
//! (ip/iplink.c `iplink_parse_vf`), so that the kernel sees from us what it sees from `ip`:
//!
//! - `ip link set PF vf N node_guid G port_guid G`: RTM_NEWLINK, NLM_F_REQUEST|NLM_F_ACK,
//!   ifinfomsg with the PF's ifindex, IFLA_VFINFO_LIST { IFLA_VF_INFO {
//!   IFLA_VF_IB_NODE_GUID, IFLA_VF_IB_PORT_GUID } }, each a `struct ifla_vf_guid { __u32 vf;
//!   __u64 guid; }` (4 bytes of padding after `vf`, the GUID in host byte order). Both GUIDs
//!   travel in one message, node first. See [`set_vf_guids_request`].
//! - Before it, `ip` asks RTM_GETLINK by name with IFLA_EXT_MASK RTEXT_FILTER_VF |
//!   RTEXT_FILTER_SKIP_STATS; the answer carries IFLA_NUM_VF and, per VF, the GUIDs where the
//!   driver reports them (`ndo_get_vf_guid`). See [`get_vf_link_request`].
//!
//! The kernel (net/core/rtnetlink.c `do_setvfinfo`, `handle_vf_guid`,
//! `handle_infiniband_guid`) answers EOPNOTSUPP when the netdev is not ARPHRD_INFINIBAND or
//! its driver has no `ndo_set_vf_guid`, EINVAL for a VF index beyond the PF's VFs. The
//! driver applies the GUIDs to the VF's next probe: the caller rebinds the VF.
//!
//! A blocking socket, like the RDMA netlink client: two short requests, run on a blocking
//! task, each receive bounded by [`RECV_TIMEOUT`](crate::kernel::nldev::socket::RECV_TIMEOUT).

use netlink_packet_core::{NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_REQUEST};
use netlink_packet_route::link::{
    LinkAttribute, LinkExtentMask, LinkMessage, LinkVfInfo, VfInfo, VfInfoGuid,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use serde::Serialize;

use crate::kernel::nldev::msg::{extack_message, parse_messages};
use crate::kernel::nldev::socket::{
    is_timeout, recv_datagram, set_recv_timeout, Received, RECV_BUF, RECV_TIMEOUT,
};
use crate::kernel::{HostError, Op};
use crate::model::Errno;

/// ARPHRD_INFINIBAND: the only netdev type the kernel sets VF GUIDs on.
pub const ARPHRD_INFINIBAND: u16 = 32;

/// One VF's GUIDs as the PF's driver reports them; `None` where it reports none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VfGuids {
    pub vf: u32,
    pub node_guid: Option<u64>,
    pub port_guid: Option<u64>,
}

/// What RTM_GETLINK with RTEXT_FILTER_VF says of a PF netdev.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VfLink {
    pub ifindex: u32,
    /// ARPHRD_*.
    pub arphrd: u16,
    /// IFLA_NUM_VF: present when the device is an SR-IOV PF.
    pub num_vf: Option<u32>,
    pub vfs: Vec<VfGuids>,
}

fn serialize(mut msg: NetlinkMessage<RouteNetlinkMessage>, flags: u16) -> Vec<u8> {
    msg.header.flags = flags;
    msg.finalize();
    let mut buf = vec![0; msg.buffer_len()];
    msg.serialize(&mut buf);
    buf
}

/// `ip link set <pf> vf VF node_guid NODE port_guid PORT` as one complete netlink message,
/// `nlmsg_seq` and `nlmsg_pid` 0: RTM_NEWLINK on the PF's `ifindex` with both GUIDs in one
/// IFLA_VF_INFO, node GUID first.
pub fn set_vf_guids_request(ifindex: u32, vf: u32, node_guid: u64, port_guid: u64) -> Vec<u8> {
    let mut body = LinkMessage::default();
    body.header.index = ifindex;
    body.attributes
        .push(LinkAttribute::VfInfoList(vec![LinkVfInfo(vec![
            VfInfo::IbNodeGuid(VfInfoGuid::new(vf, node_guid)),
            VfInfo::IbPortGuid(VfInfoGuid::new(vf, port_guid)),
        ])]));
    serialize(
        NetlinkMessage::from(RouteNetlinkMessage::NewLink(body)),
        NLM_F_REQUEST | NLM_F_ACK,
    )
}

/// The RTM_GETLINK `ip link set <name> vf ...` sends first, `nlmsg_seq` and `nlmsg_pid` 0:
/// by name, IFLA_EXT_MASK RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS (the VF list, no
/// statistics), then IFLA_IFNAME.
pub fn get_vf_link_request(ifname: &str) -> Vec<u8> {
    let mut body = LinkMessage::default();
    body.attributes.push(LinkAttribute::ExtMask(vec![
        LinkExtentMask::Vf,
        LinkExtentMask::SkipStats,
    ]));
    body.attributes
        .push(LinkAttribute::IfName(ifname.to_string()));
    serialize(
        NetlinkMessage::from(RouteNetlinkMessage::GetLink(body)),
        NLM_F_REQUEST,
    )
}

/// The VF GUIDs in an RTM_NEWLINK answer. A VF whose driver reports no GUIDs is listed
/// with `None`s; its index comes from the GUID records or the VF's MAC record.
pub fn vf_link_from_message(msg: &LinkMessage) -> VfLink {
    let mut out = VfLink {
        ifindex: msg.header.index,
        arphrd: u16::from(msg.header.link_layer_type),
        num_vf: None,
        vfs: Vec::new(),
    };
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::NumVf(n) => out.num_vf = Some(*n),
            LinkAttribute::VfInfoList(list) => {
                for LinkVfInfo(infos) in list {
                    let mut vf = None;
                    let mut g = VfGuids {
                        vf: 0,
                        node_guid: None,
                        port_guid: None,
                    };
                    for info in infos {
                        match info {
                            VfInfo::Mac(m) => vf = vf.or(Some(m.vf_id)),
                            VfInfo::IbNodeGuid(x) => {
                                vf = Some(x.vf_id);
                                g.node_guid = Some(x.guid);
                            }
                            VfInfo::IbPortGuid(x) => {
                                vf = Some(x.vf_id);
                                g.port_guid = Some(x.guid);
                            }
                            _ => {}
                        }
                    }
                    if let Some(vf) = vf {
                        g.vf = vf;
                        out.vfs.push(g);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The kernel's refusal of a request: the errno and the extended-ack message, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub errno: Errno,
    pub extack: Option<String>,
}

impl Refusal {
    /// The kernel's reason in words: "EOPNOTSUPP (Operation not supported): <extack>".
    pub fn reason(&self) -> String {
        let text = self.errno.description();
        // std's text ends in " (os error N)", which the errno's name already says.
        let text = text.split(" (os error").next().unwrap_or_default();
        let mut s = format!("{} ({text})", self.errno.name());
        if let Some(m) = &self.extack {
            s.push_str(": ");
            s.push_str(m);
        }
        s
    }
}

/// What one datagram says of request `seq`: `Ok(Some(body))` for a link message,
/// `Ok(None)` for the ACK, `Err` for a refusal; messages of other requests are skipped
/// (`Ok(None)` with `done` false).
fn answer(datagram: &[u8], seq: u32) -> Result<(Option<Vec<u8>>, bool), AnswerError> {
    let msgs = parse_messages(datagram).map_err(|e| AnswerError::Wire(e.to_string()))?;
    for m in msgs {
        if m.seq != seq {
            continue;
        }
        match m.kind {
            libc_nl::NLMSG_ERROR => {
                let code = m
                    .payload
                    .get(..4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(i32::from_ne_bytes)
                    .ok_or_else(|| AnswerError::Wire("a truncated NLMSG_ERROR".into()))?;
                if code == 0 {
                    return Ok((None, true));
                }
                return Err(AnswerError::Refused(Refusal {
                    errno: Errno(code.saturating_abs()),
                    extack: extack_message(&m),
                }));
            }
            libc_nl::NLMSG_NOOP | libc_nl::NLMSG_DONE => {}
            _ => {
                let mut whole = Vec::with_capacity(16 + m.payload.len());
                let len = u32::try_from(16 + m.payload.len()).unwrap_or(u32::MAX);
                whole.extend_from_slice(&len.to_ne_bytes());
                whole.extend_from_slice(&m.kind.to_ne_bytes());
                whole.extend_from_slice(&m.flags.to_ne_bytes());
                whole.extend_from_slice(&m.seq.to_ne_bytes());
                whole.extend_from_slice(&m.pid.to_ne_bytes());
                whole.extend_from_slice(m.payload);
                return Ok((Some(whole), false));
            }
        }
    }
    Ok((None, false))
}

mod libc_nl {
    pub const NLMSG_NOOP: u16 = 1;
    pub const NLMSG_ERROR: u16 = 2;
    pub const NLMSG_DONE: u16 = 3;
}

#[derive(Debug)]
enum AnswerError {
    Refused(Refusal),
    Wire(String),
}

/// Decodes an RTM_NEWLINK message (header included) into its link message.
pub fn decode_link(msg: &[u8]) -> Result<LinkMessage, String> {
    match NetlinkMessage::<RouteNetlinkMessage>::deserialize(msg) {
        Ok(NetlinkMessage {
            payload: NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)),
            ..
        }) => Ok(l),
        Ok(_) => Err("not a link message".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A blocking rtnetlink socket for the two VF requests.
struct Client {
    sock: Socket,
    buf: Vec<u8>,
}

impl Client {
    fn open(op: &Op) -> Result<Client, HostError> {
        let mut sock =
            Socket::new(NETLINK_ROUTE).map_err(|e| HostError::from_io(op.clone(), &e))?;
        // The kernel's explanation of a refusal; a kernel without it still answers.
        let _ = sock.set_ext_ack(true);
        set_recv_timeout(&sock, RECV_TIMEOUT).map_err(|e| HostError::from_io(op.clone(), &e))?;
        sock.bind(&SocketAddr::new(0, 0))
            .map_err(|e| HostError::from_io(op.clone(), &e))?;
        Ok(Client {
            sock,
            buf: Vec::with_capacity(RECV_BUF),
        })
    }

    /// Sends `req` (built with seq 0) under sequence number `seq` and waits for its answer.
    fn transact(
        &mut self,
        op: &Op,
        mut req: Vec<u8>,
        seq: u32,
    ) -> Result<Option<Vec<u8>>, Result<Refusal, HostError>> {
        req[8..12].copy_from_slice(&seq.to_ne_bytes());
        loop {
            match self.sock.send_to(&req, &SocketAddr::new(0, 0), 0) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Err(HostError::from_io(op.clone(), &e))),
            }
        }
        let mut data = None;
        loop {
            match recv_datagram(&self.sock, &mut self.buf) {
                Ok(Received::FromKernel) => {}
                Ok(Received::NotFromKernel(_)) => continue,
                Err(e) if is_timeout(&e) => {
                    return Err(Err(HostError::kernel(op.clone(), Errno::ETIMEDOUT)))
                }
                Err(e) => return Err(Err(HostError::from_io(op.clone(), &e))),
            }
            match answer(&self.buf, seq) {
                // A doit GETLINK answers with the link message alone, no ACK asked.
                Ok((Some(body), _)) => {
                    data = Some(body);
                    if req_wants_no_ack(&req) {
                        return Ok(data);
                    }
                }
                Ok((None, true)) => return Ok(data),
                Ok((None, false)) => {}
                Err(AnswerError::Refused(r)) => return Err(Ok(r)),
                Err(AnswerError::Wire(reason)) => {
                    return Err(Err(HostError::Protocol {
                        op: op.clone(),
                        reason,
                    }))
                }
            }
        }
    }
}

fn req_wants_no_ack(req: &[u8]) -> bool {
    let flags = u16::from_ne_bytes([req[6], req[7]]);
    flags & NLM_F_ACK == 0
}

fn seq_base() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1)
}

fn not_found(ifname: &str) -> HostError {
    HostError::NotFound(format!("network interface {ifname}"))
}

fn query(client: &mut Client, ifname: &str, seq: u32) -> Result<VfLink, HostError> {
    let op = Op::Rtnl("getlink");
    match client.transact(&op, get_vf_link_request(ifname), seq) {
        Ok(Some(msg)) => decode_link(&msg)
            .map(|l| vf_link_from_message(&l))
            .map_err(|reason| HostError::Protocol { op, reason }),
        Ok(None) => Err(HostError::Protocol {
            op,
            reason: "no link message in the answer".into(),
        }),
        Err(Ok(r)) if r.errno == Errno::ENODEV => Err(not_found(ifname)),
        Err(Ok(r)) => Err(HostError::kernel(op, r.errno)),
        Err(Err(e)) => Err(e),
    }
}

/// The VF GUIDs of PF netdev `ifname` (`ip -d link show <pf>`'s `vf N ... node guid`).
pub fn read_vf_link(ifname: &str) -> Result<VfLink, HostError> {
    if ifname.is_empty() || ifname.len() > super::IFNAME_MAX {
        return Err(not_found(ifname));
    }
    let mut client = Client::open(&Op::Rtnl("getlink"))?;
    query(&mut client, ifname, seq_base())
}

/// What `ip link set <pf> vf VF node_guid NODE port_guid PORT` does: the PF's ifindex by
/// name, then the change. EOPNOTSUPP (not InfiniBand, or a driver without VF GUIDs) is
/// [`HostError::Unsupported`] naming the netdev and the kernel's reason.
pub fn set_vf_guids(
    ifname: &str,
    vf: u32,
    node_guid: u64,
    port_guid: u64,
) -> Result<(), HostError> {
    if ifname.is_empty() || ifname.len() > super::IFNAME_MAX {
        return Err(not_found(ifname));
    }
    let op = Op::Rtnl("newlink");
    let mut client = Client::open(&op)?;
    let seq = seq_base();
    let link = query(&mut client, ifname, seq)?;
    let req = set_vf_guids_request(link.ifindex, vf, node_guid, port_guid);
    match client.transact(&op, req, seq.wrapping_add(1)) {
        Ok(_) => Ok(()),
        Err(Ok(r)) => Err(refusal_error(ifname, op, r)),
        Err(Err(e)) => Err(e),
    }
}

/// The kernel's refusal of a VF GUID change as the daemon reports it.
pub fn refusal_error(ifname: &str, op: Op, r: Refusal) -> HostError {
    match r.errno {
        Errno::EOPNOTSUPP => HostError::Unsupported {
            what: format!("setting SR-IOV VF GUIDs on {ifname}"),
            why: format!(
                "the kernel answered {}; the netdev is not InfiniBand or its driver cannot set VF GUIDs",
                r.reason()
            ),
        },
        Errno::ENODEV => not_found(ifname),
        errno => {
            if let Some(m) = &r.extack {
                tracing::debug!(%ifname, extack = %m, "rtnetlink extended ack");
            }
            HostError::kernel(op, errno)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `strace -f -e trace=sendmsg -e write=3 ip link set v0 vf 0 node_guid
    /// 00:11:22:33:44:55:66:77 port_guid 88:99:aa:bb:cc:dd:ee:ff` (iproute2 6.1, v0 a veth
    /// of ifindex 10), the sequence number zeroed.
    const IP_SET_VF0: [u8; 80] = [
        0x50, 0x00, 0x00, 0x00, 0x10, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x30, 0x00, 0x16, 0x00, 0x2c, 0x00, 0x01, 0x00, 0x14, 0x00, 0x0a, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00,
        0x14, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xee, 0xdd,
        0xcc, 0xbb, 0xaa, 0x99, 0x88,
    ];

    /// `ip link set v0 vf 3 node_guid 02:c9:03:00:00:0a:0b:0c port_guid
    /// 02:c9:03:00:00:0a:0b:0d`, as above.
    const IP_SET_VF3: [u8; 80] = [
        0x50, 0x00, 0x00, 0x00, 0x10, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x30, 0x00, 0x16, 0x00, 0x2c, 0x00, 0x01, 0x00, 0x14, 0x00, 0x0a, 0x00, 0x03,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0b, 0x0a, 0x00, 0x00, 0x03, 0xc9, 0x02,
        0x14, 0x00, 0x0b, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0d, 0x0b, 0x0a,
        0x00, 0x00, 0x03, 0xc9, 0x02,
    ];

    /// The RTM_GETLINK `ip link set v0 vf 3 ...` sends first, as above.
    const IP_GET_V0: [u8; 48] = [
        0x30, 0x00, 0x00, 0x00, 0x12, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x08, 0x00, 0x1d, 0x00, 0x09, 0x00, 0x00, 0x00, 0x07, 0x00, 0x03, 0x00, 0x76,
        0x30, 0x00, 0x00,
    ];

    #[test]
    fn set_request_equals_iproute2() {
        assert_eq!(
            set_vf_guids_request(10, 0, 0x0011_2233_4455_6677, 0x8899_aabb_ccdd_eeff),
            IP_SET_VF0
        );
        assert_eq!(
            set_vf_guids_request(10, 3, 0x02c9_0300_000a_0b0c, 0x02c9_0300_000a_0b0d),
            IP_SET_VF3
        );
    }

    #[test]
    fn get_request_equals_iproute2() {
        assert_eq!(get_vf_link_request("v0"), IP_GET_V0);
    }

    #[test]
    fn reads_the_vf_guids_of_an_answer() {
        let mut body = LinkMessage::default();
        body.header.index = 7;
        body.header.link_layer_type = netlink_packet_route::link::LinkLayerType::Infiniband;
        body.attributes.push(LinkAttribute::NumVf(2));
        body.attributes.push(LinkAttribute::VfInfoList(vec![
            LinkVfInfo(vec![VfInfo::Mac(
                netlink_packet_route::link::VfInfoMac::new(0, &[0; 32]),
            )]),
            LinkVfInfo(vec![
                VfInfo::IbNodeGuid(VfInfoGuid::new(1, 5)),
                VfInfo::IbPortGuid(VfInfoGuid::new(1, 6)),
            ]),
        ]));
        let wire = serialize(NetlinkMessage::from(RouteNetlinkMessage::NewLink(body)), 0);
        let link = vf_link_from_message(&decode_link(&wire).expect("decodes"));
        assert_eq!(link.ifindex, 7);
        assert_eq!(link.arphrd, ARPHRD_INFINIBAND);
        assert_eq!(link.num_vf, Some(2));
        assert_eq!(
            link.vfs,
            vec![
                VfGuids {
                    vf: 0,
                    node_guid: None,
                    port_guid: None
                },
                VfGuids {
                    vf: 1,
                    node_guid: Some(5),
                    port_guid: Some(6)
                }
            ]
        );
    }

    /// The kernel's answer to `IP_SET_VF0` on a veth: NLMSG_ERROR -EOPNOTSUPP echoing the
    /// request, no extended ack (recorded with strace as above).
    #[test]
    fn eopnotsupp_is_unsupported_with_the_kernels_reason() {
        let mut reply = Vec::new();
        reply.extend_from_slice(&100u32.to_ne_bytes());
        reply.extend_from_slice(&2u16.to_ne_bytes());
        reply.extend_from_slice(&0u16.to_ne_bytes());
        reply.extend_from_slice(&9u32.to_ne_bytes());
        reply.extend_from_slice(&24348u32.to_ne_bytes());
        reply.extend_from_slice(&(-libc::EOPNOTSUPP).to_ne_bytes());
        reply.extend_from_slice(&IP_SET_VF0);
        let Err(AnswerError::Refused(r)) = answer(&reply, 9) else {
            panic!("not a refusal");
        };
        assert_eq!(r.extack, None);
        let err = refusal_error("v0", Op::Rtnl("newlink"), r);
        assert_eq!(
            err.to_string(),
            "setting SR-IOV VF GUIDs on v0 is not available: the kernel answered EOPNOTSUPP (Operation not supported); the netdev is not InfiniBand or its driver cannot set VF GUIDs"
        );
        assert!(matches!(answer(&reply, 10), Ok((None, false))));
    }

    /// On this machine's kernel, in a namespace of its own: a veth is answered exactly as
    /// the kernel's `handle_infiniband_guid` answers (EOPNOTSUPP), and reads with no VFs.
    /// Skipped (printed) without the privilege to make a namespace.
    #[test]
    fn a_veth_refuses_with_eopnotsupp() {
        crate::kernel::rtnl::netns::run_or_skip("a_veth_refuses_with_eopnotsupp", || async {
            if let Err(e) = crate::kernel::rtnl::netns::add_veth("vfg0", "vfg1").await {
                eprintln!("SKIP a_veth_refuses_with_eopnotsupp: veth: {e}");
                return;
            }
            let link = read_vf_link("vfg0").expect("the veth reads");
            assert_eq!(link.num_vf, None);
            assert!(link.vfs.is_empty());
            let set = set_vf_guids("vfg0", 0, 1, 2);
            assert!(
                matches!(set, Err(HostError::Unsupported { ref what, ref why })
                    if what.contains("vfg0") && why.contains("EOPNOTSUPP")),
                "{set:?}"
            );
            assert!(matches!(
                set_vf_guids("nosuchvfg", 0, 1, 2),
                Err(HostError::NotFound(_))
            ));
        });
    }
}
