//! Pure decoders of the kernel's replies and notifications into the kernel-boundary types.
//!
//! Two levels: `*_from_body` read one message's attributes (what the socket client calls
//! per data message), and `decode_*` take a whole captured reply (datagrams concatenated),
//! follow it to NLMSG_DONE / the ACK, and decode every data message, for tests and tools.
//!
//! Attributes this client does not know are ignored (the kernel adds new ones over time);
//! a known attribute with the wrong width, a missing identifying attribute (index, name,
//! port), or broken framing is a [`HostError::Protocol`].

use super::attr::{Attrs, WireError};
use super::consts::attr as a;
use super::consts::event;
use super::msg::collect_all;
use crate::kernel::{HostError, NlDevice, NlPort, NlSys, Op};
use crate::model::Guid;

pub const OP_DEVICES: Op = Op::NlDump("GET");
pub const OP_PORTS: Op = Op::NlDump("PORT_GET");
pub const OP_SYS: Op = Op::NlDump("SYS_GET");

fn required<T>(
    value: Result<Option<T>, WireError>,
    kind: u16,
    name: &'static str,
) -> Result<T, WireError> {
    value?.ok_or(WireError::Missing { kind, name })
}

fn protocol(op: &Op) -> impl Fn(WireError) -> HostError + '_ {
    move |e| HostError::Protocol {
        op: op.clone(),
        reason: e.to_string(),
    }
}

/// One GET reply message (`fill_dev_info`).
pub fn device_from_body(body: &[u8]) -> Result<NlDevice, WireError> {
    let t = Attrs::parse(body)?;
    Ok(NlDevice {
        index: required(t.u32(a::DEV_INDEX), a::DEV_INDEX, "DEV_INDEX")?,
        name: required(t.string(a::DEV_NAME), a::DEV_NAME, "DEV_NAME")?,
        node_type: t.u8(a::DEV_NODE_TYPE)?,
        // The kernel sends be64_to_cpu(guid): the u64 is the GUID read as a number.
        node_guid: t.u64(a::NODE_GUID)?.map(Guid),
        sys_image_guid: t.u64(a::SYS_IMAGE_GUID)?.map(Guid),
        // The kernel leaves FW_VERSION out for devices without firmware (rxe, siw).
        fw_version: t.string(a::FW_VERSION)?.filter(|s| !s.is_empty()),
        cap_flags: t.u64(a::CAP_FLAGS)?,
        protocol: t.string(a::DEV_PROTOCOL)?,
        // In GET replies PORT_INDEX is the number of ports (rdma_end_port).
        port_count: t.u32(a::PORT_INDEX)?,
        name_assign_type: t.u8(a::NAME_ASSIGN_TYPE)?,
    })
}

/// One PORT_GET reply message (`fill_port_info`).
pub fn port_from_body(body: &[u8]) -> Result<NlPort, WireError> {
    let t = Attrs::parse(body)?;
    Ok(NlPort {
        dev_index: required(t.u32(a::DEV_INDEX), a::DEV_INDEX, "DEV_INDEX")?,
        dev_name: required(t.string(a::DEV_NAME), a::DEV_NAME, "DEV_NAME")?,
        port: required(t.u32(a::PORT_INDEX), a::PORT_INDEX, "PORT_INDEX")?,
        state: t.u8(a::PORT_STATE)?,
        phys_state: t.u8(a::PORT_PHYS_STATE)?,
        // CAP_FLAGS, LID, SM_LID, LMC and SUBNET_PREFIX are only sent for InfiniBand ports
        // (an rxe port on Debian's 6.1 and 6.12 has none of them).
        lid: t.u32(a::LID)?,
        sm_lid: t.u32(a::SM_LID)?,
        lmc: t.u8(a::LMC)?,
        subnet_prefix: t.u64(a::SUBNET_PREFIX)?,
        cap_flags: t.u64(a::CAP_FLAGS)?,
        netdev_index: t.u32(a::NDEV_INDEX)?,
        netdev_name: t.string(a::NDEV_NAME)?,
    })
}

/// The SYS_GET reply message.
pub fn sys_from_body(body: &[u8]) -> Result<NlSys, WireError> {
    let t = Attrs::parse(body)?;
    Ok(NlSys {
        netns_shared: t.u8(a::SYS_NETNS_MODE)?.map(|v| v != 0),
        copy_on_fork: t.u8(a::SYS_COPY_ON_FORK)?.map(|v| v != 0),
        monitor_mode: t.u8(a::SYS_MONITOR_MODE)?.map(|v| v != 0),
    })
}

/// The STAT_GET reply message: the STAT_HWCOUNTERS table, in kernel order. Like iproute2's
/// `res_get_hwcounters`, an entry without a name or a value is an error; other attributes
/// inside an entry (INDEX, DYNAMIC, PAD) are ignored.
pub fn stats_from_body(body: &[u8]) -> Result<Vec<(String, u64)>, WireError> {
    let t = Attrs::parse(body)?;
    let table = required(
        t.nested(a::STAT_HWCOUNTERS),
        a::STAT_HWCOUNTERS,
        "STAT_HWCOUNTERS",
    )?;
    let mut out = Vec::new();
    for entry in table.iter().filter(|e| e.kind == a::STAT_HWCOUNTER_ENTRY) {
        let e = Attrs::parse(entry.payload)?;
        let name = required(
            e.string(a::STAT_HWCOUNTER_ENTRY_NAME),
            a::STAT_HWCOUNTER_ENTRY_NAME,
            "STAT_HWCOUNTER_ENTRY_NAME",
        )?;
        let value = required(
            e.u64(a::STAT_HWCOUNTER_ENTRY_VALUE),
            a::STAT_HWCOUNTER_ENTRY_VALUE,
            "STAT_HWCOUNTER_ENTRY_VALUE",
        )?;
        out.push((name, value));
    }
    Ok(out)
}

/// Decodes every data message of a reply with `one`.
fn decode_each<T>(
    bodies: &[Vec<u8>],
    op: &Op,
    one: fn(&[u8]) -> Result<T, WireError>,
) -> Result<Vec<T>, HostError> {
    bodies
        .iter()
        .map(|b| one(b).map_err(protocol(op)))
        .collect()
}

/// The one data message a doit answers with.
fn single<T>(
    bodies: &[Vec<u8>],
    op: &Op,
    one: fn(&[u8]) -> Result<T, WireError>,
) -> Result<T, HostError> {
    match bodies {
        [b] => one(b).map_err(protocol(op)),
        _ => Err(protocol(op)(WireError::Other(format!(
            "expected one reply message, got {}",
            bodies.len()
        )))),
    }
}

pub fn devices_from_bodies(bodies: &[Vec<u8>]) -> Result<Vec<NlDevice>, HostError> {
    decode_each(bodies, &OP_DEVICES, device_from_body)
}

pub fn ports_from_bodies(bodies: &[Vec<u8>]) -> Result<Vec<NlPort>, HostError> {
    decode_each(bodies, &OP_PORTS, port_from_body)
}

pub fn sys_from_bodies(bodies: &[Vec<u8>]) -> Result<NlSys, HostError> {
    single(bodies, &OP_SYS, sys_from_body)
}

pub fn stats_from_bodies(bodies: &[Vec<u8>]) -> Result<Vec<(String, u64)>, HostError> {
    single(bodies, &Op::NlStatGet, stats_from_body)
}

/// A whole GET dump reply (all parts through NLMSG_DONE).
pub fn decode_devices(buf: &[u8]) -> Result<Vec<NlDevice>, HostError> {
    devices_from_bodies(&collect_all(buf, OP_DEVICES)?)
}

/// A whole PORT_GET dump reply.
pub fn decode_ports(buf: &[u8]) -> Result<Vec<NlPort>, HostError> {
    ports_from_bodies(&collect_all(buf, OP_PORTS)?)
}

/// A whole SYS_GET reply (the message and the ACK).
pub fn decode_sys(buf: &[u8]) -> Result<NlSys, HostError> {
    sys_from_bodies(&collect_all(buf, OP_SYS)?)
}

/// A whole STAT_GET reply (the message and the ACK).
pub fn decode_port_stats(buf: &[u8]) -> Result<Vec<(String, u64)>, HostError> {
    stats_from_bodies(&collect_all(buf, Op::NlStatGet)?)
}

/// A whole reply to NEWLINK / DELLINK / SET: just the ACK, or the kernel's errno.
pub fn decode_ack(buf: &[u8], op: Op) -> Result<(), HostError> {
    collect_all(buf, op).map(|_| ())
}

/// What a RDMA_NLDEV_CMD_MONITOR notification says (`rdma_nl_notify_event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyKind {
    Register,
    Unregister,
    NetdevAttach,
    NetdevDetach,
    Rename,
    NetdevRename,
    /// An event type newer than this client.
    Unknown(u8),
}

impl NotifyKind {
    fn from_u8(v: u8) -> NotifyKind {
        match v {
            event::REGISTER => NotifyKind::Register,
            event::UNREGISTER => NotifyKind::Unregister,
            event::NETDEV_ATTACH => NotifyKind::NetdevAttach,
            event::NETDEV_DETACH => NotifyKind::NetdevDetach,
            event::RENAME => NotifyKind::Rename,
            event::NETDEV_RENAME => NotifyKind::NetdevRename,
            other => NotifyKind::Unknown(other),
        }
    }
}

/// A notification. Which attributes are present depends on the event and on the kernel
/// version: REGISTER / UNREGISTER / RENAME carry DEV_INDEX and DEV_NAME (the new name after
/// a rename), NETDEV_ATTACH / DETACH carry DEV_INDEX, PORT_INDEX and NDEV_INDEX (later kernels
/// also the names), NETDEV_RENAME only NDEV_INDEX and NDEV_NAME.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub kind: NotifyKind,
    pub dev_index: Option<u32>,
    pub dev_name: Option<String>,
    pub port: Option<u32>,
    pub netdev_index: Option<u32>,
    pub netdev_name: Option<String>,
}

/// One MONITOR message's payload.
pub fn notification_from_body(body: &[u8]) -> Result<Notification, WireError> {
    let t = Attrs::parse(body)?;
    let kind = required(t.u8(a::EVENT_TYPE), a::EVENT_TYPE, "EVENT_TYPE")?;
    Ok(Notification {
        kind: NotifyKind::from_u8(kind),
        dev_index: t.u32(a::DEV_INDEX)?,
        dev_name: t.string(a::DEV_NAME)?,
        port: t.u32(a::PORT_INDEX)?,
        netdev_index: t.u32(a::NDEV_INDEX)?,
        netdev_name: t.string(a::NDEV_NAME)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::consts::nl::*;
    use super::super::consts::{cmd, nldev_type};
    use super::super::msg::testutil::*;
    use super::*;
    use crate::model::Errno;

    const GET: u16 = nldev_type(cmd::GET);
    const PORT_GET: u16 = nldev_type(cmd::PORT_GET);

    /// A device as `fill_dev_info` writes it, in the kernel's attribute order.
    fn dev_body(index: u32, name: &str, guid: u64, fw: Option<&str>) -> Vec<u8> {
        let mut b = Vec::new();
        a_u32(&mut b, a::DEV_INDEX, index);
        a_str(&mut b, a::DEV_NAME, name);
        a_u32(&mut b, a::PORT_INDEX, 1);
        a_u64(&mut b, a::CAP_FLAGS, 0x1234_5678_9abc);
        if let Some(fw) = fw {
            a_str(&mut b, a::FW_VERSION, fw);
        }
        a_u64(&mut b, a::NODE_GUID, guid);
        a_u64(&mut b, a::SYS_IMAGE_GUID, guid);
        a_u8(&mut b, a::DEV_NODE_TYPE, 1);
        a_str(&mut b, a::DEV_PROTOCOL, "roce");
        b
    }

    #[test]
    fn devices_dump_in_two_parts() {
        let seq = 77;
        let mut buf = kmsg(
            GET,
            NLM_F_MULTI,
            seq,
            &dev_body(1, "rxe0", 0x04f6_b9ff_fe05_ca57, None),
        );
        buf.extend(kmsg(
            GET,
            NLM_F_MULTI,
            seq,
            &dev_body(2, "mlx5_0", 0x0c42_a103_0065_6e2a, Some("20.31.1014")),
        ));
        buf.extend(done(seq));
        let devs = decode_devices(&buf).unwrap();
        assert_eq!(devs.len(), 2);
        assert_eq!(
            devs[0],
            NlDevice {
                index: 1,
                name: "rxe0".into(),
                node_type: Some(1),
                node_guid: Some(Guid(0x04f6_b9ff_fe05_ca57)),
                sys_image_guid: Some(Guid(0x04f6_b9ff_fe05_ca57)),
                fw_version: None,
                cap_flags: Some(0x1234_5678_9abc),
                protocol: Some("roce".into()),
                port_count: Some(1),
                name_assign_type: None,
            }
        );
        assert_eq!(
            devs[0].node_guid.map(|g| g.colon_form()).as_deref(),
            Some("04f6:b9ff:fe05:ca57")
        );
        assert_eq!(devs[1].name, "mlx5_0");
        assert_eq!(devs[1].fw_version.as_deref(), Some("20.31.1014"));
    }

    #[test]
    fn two_datagrams_through_the_collector() {
        use super::super::msg::ReplyCollector;
        let mut c = ReplyCollector::new(Some(5), OP_DEVICES);
        let first = kmsg(GET, NLM_F_MULTI, 5, &dev_body(1, "rxe0", 1, None));
        let mut second = kmsg(GET, NLM_F_MULTI, 5, &dev_body(2, "rxe1", 2, None));
        second.extend(done(5));
        assert!(!c.feed(&first).unwrap());
        assert!(c.feed(&second).unwrap());
        let devs = devices_from_bodies(&c.finish().unwrap()).unwrap();
        assert_eq!(
            devs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["rxe0", "rxe1"]
        );
    }

    #[test]
    fn missing_optional_attributes_are_none() {
        let mut b = Vec::new();
        a_u32(&mut b, a::DEV_INDEX, 4);
        a_str(&mut b, a::DEV_NAME, "siw0");
        let mut buf = kmsg(GET, NLM_F_MULTI, 1, &b);
        buf.extend(done(1));
        let d = &decode_devices(&buf).unwrap()[0];
        assert_eq!(d.index, 4);
        assert_eq!(
            (d.node_type, d.node_guid, d.cap_flags, d.port_count),
            (None, None, None, None)
        );
        assert!(d.protocol.is_none() && d.fw_version.is_none());
    }

    #[test]
    fn unknown_attributes_are_ignored() {
        let mut b = dev_body(1, "rxe0", 1, None);
        a_str(&mut b, 100, "veth0"); // PARENT_NAME
        a_u8(&mut b, 0x3000, 9); // something from the future
        a_u8(&mut b, a::NAME_ASSIGN_TYPE, 1);
        let mut buf = kmsg(GET, NLM_F_MULTI, 1, &b);
        buf.extend(done(1));
        assert_eq!(decode_devices(&buf).unwrap()[0].name, "rxe0");
        assert_eq!(decode_devices(&buf).unwrap()[0].name_assign_type, Some(1));
    }

    #[test]
    fn missing_name_or_index_is_a_protocol_error() {
        let mut b = Vec::new();
        a_u32(&mut b, a::DEV_INDEX, 4);
        let mut buf = kmsg(GET, NLM_F_MULTI, 1, &b);
        buf.extend(done(1));
        let e = decode_devices(&buf).unwrap_err();
        assert!(matches!(e, HostError::Protocol { .. }), "{e:?}");
        assert!(e.to_string().contains("DEV_NAME"), "{e}");
    }

    #[test]
    fn truncated_or_malformed_attributes_are_protocol_errors() {
        let body = dev_body(1, "rxe0", 1, None);
        // Cut in the middle of an attribute, with the message length adjusted to match.
        for cut in [3, 10, 21, body.len() - 4] {
            let mut buf = kmsg(GET, NLM_F_MULTI, 1, &body[..cut]);
            buf.extend(done(1));
            let r = decode_devices(&buf);
            assert!(
                matches!(r, Err(HostError::Protocol { .. })),
                "cut {cut}: {r:?}"
            );
        }
        // A u64 attribute with a 4-byte payload.
        let mut b = Vec::new();
        a_u32(&mut b, a::DEV_INDEX, 1);
        a_str(&mut b, a::DEV_NAME, "rxe0");
        a_u32(&mut b, a::NODE_GUID, 5);
        let mut buf = kmsg(GET, NLM_F_MULTI, 1, &b);
        buf.extend(done(1));
        assert!(matches!(
            decode_devices(&buf),
            Err(HostError::Protocol { .. })
        ));
        // Every prefix of a whole reply decodes to an error or a value, never a panic.
        let mut whole = kmsg(GET, NLM_F_MULTI, 1, &dev_body(1, "rxe0", 1, None));
        whole.extend(done(1));
        for n in 0..whole.len() {
            let _ = decode_devices(&whole[..n]);
        }
    }

    #[test]
    fn error_reply_is_a_kernel_error() {
        let buf = error(3, libc::EEXIST, nldev_type(cmd::NEWLINK));
        assert_eq!(
            decode_ack(&buf, Op::NlNewLink).unwrap_err(),
            HostError::Kernel {
                op: Op::NlNewLink,
                errno: Errno::EEXIST
            }
        );
        assert_eq!(decode_ack(&error(3, 0, 0x1403), Op::NlNewLink), Ok(()));
    }

    #[test]
    fn ports_of_a_roce_and_an_ib_device() {
        let mut roce = Vec::new();
        a_u32(&mut roce, a::DEV_INDEX, 1);
        a_str(&mut roce, a::DEV_NAME, "rxe0");
        a_u32(&mut roce, a::PORT_INDEX, 1);
        a_u64(&mut roce, a::CAP_FLAGS, 0x0001_0000);
        a_u8(&mut roce, a::PORT_STATE, 4);
        a_u8(&mut roce, a::PORT_PHYS_STATE, 5);
        a_u32(&mut roce, a::NDEV_INDEX, 3);
        a_str(&mut roce, a::NDEV_NAME, "veth0");
        let mut ib = Vec::new();
        a_u32(&mut ib, a::DEV_INDEX, 2);
        a_str(&mut ib, a::DEV_NAME, "mlx5_0");
        a_u32(&mut ib, a::PORT_INDEX, 1);
        a_u64(&mut ib, a::CAP_FLAGS, 0x2651_e848);
        a_u64(&mut ib, a::SUBNET_PREFIX, 0xfe80_0000_0000_0000);
        a_u32(&mut ib, a::LID, 7);
        a_u32(&mut ib, a::SM_LID, 1);
        a_u8(&mut ib, a::LMC, 0);
        a_u8(&mut ib, a::PORT_STATE, 4);
        a_u8(&mut ib, a::PORT_PHYS_STATE, 5);
        let mut buf = kmsg(PORT_GET, NLM_F_MULTI, 1, &roce);
        buf.extend(kmsg(PORT_GET, NLM_F_MULTI, 1, &ib));
        buf.extend(done(1));
        let ports = decode_ports(&buf).unwrap();
        assert_eq!(ports[0].netdev_name.as_deref(), Some("veth0"));
        assert_eq!(ports[0].netdev_index, Some(3));
        assert_eq!(ports[0].lid, None);
        assert_eq!(ports[0].state, Some(4));
        assert_eq!(ports[1].lid, Some(7));
        assert_eq!(ports[1].sm_lid, Some(1));
        assert_eq!(ports[1].lmc, Some(0));
        assert_eq!(ports[1].subnet_prefix, Some(0xfe80_0000_0000_0000));
        assert_eq!(ports[1].netdev_name, None);
    }

    #[test]
    fn sys_reply_with_and_without_monitor_mode() {
        let sys_get = nldev_type(cmd::SYS_GET);
        let mut b = Vec::new();
        a_u8(&mut b, a::SYS_NETNS_MODE, 1);
        a_u8(&mut b, a::SYS_COPY_ON_FORK, 1);
        let mut buf = kmsg(sys_get, 0, 2, &b);
        buf.extend(error(2, 0, sys_get));
        assert_eq!(
            decode_sys(&buf).unwrap(),
            NlSys {
                netns_shared: Some(true),
                copy_on_fork: Some(true),
                monitor_mode: None
            }
        );
        a_u8(&mut b, 96, 0); // PRIVILEGED_QKEY_MODE, not modelled
        a_u8(&mut b, a::SYS_MONITOR_MODE, 1);
        let mut buf = kmsg(sys_get, 0, 2, &b);
        buf.extend(error(2, 0, sys_get));
        assert_eq!(decode_sys(&buf).unwrap().monitor_mode, Some(true));
        // No data message at all.
        assert!(matches!(
            decode_sys(&error(2, 0, sys_get)),
            Err(HostError::Protocol { .. })
        ));
    }

    fn hw_entry(table: &mut Vec<u8>, name: &str, value: u64) {
        let mut e = Vec::new();
        a_str(&mut e, a::STAT_HWCOUNTER_ENTRY_NAME, name);
        // Entries nest two levels deep: the PAD decision depends on the absolute offset,
        // which a_u64 cannot see here, so always include one (the kernel may or may not).
        super::super::attr::put(&mut e, a::PAD, &[]);
        super::super::attr::put(&mut e, a::STAT_HWCOUNTER_ENTRY_VALUE, &value.to_ne_bytes());
        a_u32(&mut e, 94, 0); // HWCOUNTER_INDEX
        super::super::attr::put(table, a::STAT_HWCOUNTER_ENTRY | 0x8000, &e);
    }

    #[test]
    fn stat_reply_in_kernel_order() {
        let stat_get = nldev_type(cmd::STAT_GET);
        let mut table = Vec::new();
        hw_entry(&mut table, "sent_pkts", 12);
        hw_entry(&mut table, "rcvd_pkts", 34);
        hw_entry(&mut table, "lifespan", 10);
        let mut b = Vec::new();
        a_u32(&mut b, a::DEV_INDEX, 1);
        a_str(&mut b, a::DEV_NAME, "rxe0");
        a_u32(&mut b, a::PORT_INDEX, 1);
        super::super::attr::put(&mut b, a::STAT_HWCOUNTERS | 0x8000, &table);
        let mut buf = kmsg(stat_get, 0, 8, &b);
        buf.extend(error(8, 0, stat_get));
        assert_eq!(
            decode_port_stats(&buf).unwrap(),
            vec![
                ("sent_pkts".to_string(), 12),
                ("rcvd_pkts".to_string(), 34),
                ("lifespan".to_string(), 10)
            ]
        );
    }

    #[test]
    fn stat_entry_without_value_is_a_protocol_error() {
        let stat_get = nldev_type(cmd::STAT_GET);
        let mut e = Vec::new();
        a_str(&mut e, a::STAT_HWCOUNTER_ENTRY_NAME, "sent_pkts");
        let mut table = Vec::new();
        super::super::attr::put(&mut table, a::STAT_HWCOUNTER_ENTRY, &e);
        let mut b = Vec::new();
        super::super::attr::put(&mut b, a::STAT_HWCOUNTERS, &table);
        let mut buf = kmsg(stat_get, 0, 8, &b);
        buf.extend(error(8, 0, stat_get));
        assert!(matches!(
            decode_port_stats(&buf),
            Err(HostError::Protocol { .. })
        ));
        // And a reply without the table at all.
        let mut buf = kmsg(stat_get, 0, 8, &[]);
        buf.extend(error(8, 0, stat_get));
        assert!(matches!(
            decode_port_stats(&buf),
            Err(HostError::Protocol { .. })
        ));
    }

    #[test]
    fn stat_get_refused_by_the_kernel() {
        let buf = error(8, libc::EOPNOTSUPP, nldev_type(cmd::STAT_GET));
        assert_eq!(
            decode_port_stats(&buf).unwrap_err().errno(),
            Some(Errno::EOPNOTSUPP)
        );
    }

    #[test]
    fn notifications() {
        let mut b = Vec::new();
        a_u32(&mut b, a::DEV_INDEX, 3);
        a_str(&mut b, a::DEV_NAME, "roce_lab");
        a_u8(&mut b, a::EVENT_TYPE, event::RENAME);
        let n = notification_from_body(&b).unwrap();
        assert_eq!(n.kind, NotifyKind::Rename);
        assert_eq!(n.dev_index, Some(3));
        assert_eq!(n.dev_name.as_deref(), Some("roce_lab"));

        let mut b = Vec::new();
        a_u32(&mut b, a::NDEV_INDEX, 9);
        a_str(&mut b, a::NDEV_NAME, "lab0");
        a_u8(&mut b, a::EVENT_TYPE, 42);
        let n = notification_from_body(&b).unwrap();
        assert_eq!(n.kind, NotifyKind::Unknown(42));
        assert_eq!(n.dev_index, None);

        assert!(notification_from_body(&[]).is_err(), "no EVENT_TYPE");
    }
}
