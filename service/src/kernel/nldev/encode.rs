//! Pure encoders of the requests this client sends, byte for byte what iproute2's `rdma`
//! sends for the same command (header flags, attribute order, NUL-terminated strings), so
//! that the kernel sees nothing it has not seen from the reference tool.
//!
//! The one request iproute2 does not make is the per-device PORT_GET dump: `rdma link show`
//! asks port by port (doit), while the kernel's `nldev_port_get_dumpit` lists all ports of the
//! device named by DEV_INDEX (which it requires) in one dump.

use super::consts::nl::{NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use super::consts::{attr, cmd, nldev_type, IB_DEVICE_NAME_MAX, IFNAMSIZ};
use super::msg::Request;
use crate::kernel::{HostError, NewLink};

/// Flags of a dump, as iproute2's `rd_init` sends the device dump (the kernel sends no extra
/// ACK after NLMSG_DONE; NLM_F_ACK only matters if the dump fails to start).
pub const DUMP_FLAGS: u16 = NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP;
/// Flags of every other request: the kernel answers with an ACK (NLMSG_ERROR 0) or an errno.
pub const DOIT_FLAGS: u16 = NLM_F_REQUEST | NLM_F_ACK;

/// RDMA_NLDEV_CMD_GET dump: every device (`rdma dev show`).
pub fn encode_get_dump(seq: u32) -> Vec<u8> {
    Request::new(nldev_type(cmd::GET), DUMP_FLAGS, seq).finish()
}

/// RDMA_NLDEV_CMD_PORT_GET dump of one device's ports.
pub fn encode_port_dump(seq: u32, dev_index: u32) -> Vec<u8> {
    Request::new(nldev_type(cmd::PORT_GET), DUMP_FLAGS, seq)
        .u32(attr::DEV_INDEX, dev_index)
        .finish()
}

/// RDMA_NLDEV_CMD_SYS_GET (`rdma sys show`): no attributes.
pub fn encode_sys_get(seq: u32) -> Vec<u8> {
    Request::new(nldev_type(cmd::SYS_GET), DOIT_FLAGS, seq).finish()
}

/// RDMA_NLDEV_CMD_STAT_GET of a port's default hw counters (`rdma statistic show link
/// DEV/PORT`): a doit with DEV_INDEX and PORT_INDEX and no STAT_RES, which makes the kernel
/// answer with the port's STAT_HWCOUNTERS table.
pub fn encode_stat_get(seq: u32, dev_index: u32, port: u32) -> Vec<u8> {
    stat_get(seq, dev_index, port, DOIT_FLAGS)
}

/// [`encode_stat_get`] without the ACK flag, for a batch ([`super::msg::BatchAnswers`]): the
/// answer is the data or the error, one message either way.
pub fn encode_stat_get_unacked(seq: u32, dev_index: u32, port: u32) -> Vec<u8> {
    stat_get(seq, dev_index, port, NLM_F_REQUEST)
}

fn stat_get(seq: u32, dev_index: u32, port: u32, flags: u16) -> Vec<u8> {
    Request::new(nldev_type(cmd::STAT_GET), flags, seq)
        .u32(attr::DEV_INDEX, dev_index)
        .u32(attr::PORT_INDEX, port)
        .finish()
}

/// RDMA_NLDEV_CMD_NEWLINK (`rdma link add NAME type TYPE netdev NETDEV`).
pub fn encode_new_link(seq: u32, link: &NewLink) -> Vec<u8> {
    Request::new(nldev_type(cmd::NEWLINK), DOIT_FLAGS, seq)
        .strz(attr::DEV_NAME, &link.name)
        .strz(attr::LINK_TYPE, link.kind.as_str())
        .strz(attr::NDEV_NAME, &link.netdev)
        .finish()
}

/// RDMA_NLDEV_CMD_DELLINK (`rdma link delete NAME`, after resolving NAME to its index).
pub fn encode_del_link(seq: u32, dev_index: u32) -> Vec<u8> {
    Request::new(nldev_type(cmd::DELLINK), DOIT_FLAGS, seq)
        .u32(attr::DEV_INDEX, dev_index)
        .finish()
}

/// RDMA_NLDEV_CMD_SET with a new DEV_NAME (`rdma dev set OLD name NEW`).
pub fn encode_rename(seq: u32, dev_index: u32, new_name: &str) -> Vec<u8> {
    Request::new(nldev_type(cmd::SET), DOIT_FLAGS, seq)
        .u32(attr::DEV_INDEX, dev_index)
        .strz(attr::DEV_NAME, new_name)
        .finish()
}

/// Refuses names the kernel's NLA_NUL_STRING policy would reject or silently cut, so the
/// caller gets a clear [`HostError::Invalid`] rather than a bare EINVAL, and so that a NUL
/// inside a name can never smuggle a different name to the kernel.
pub fn validate_name(what: &str, name: &str, max: usize) -> Result<(), HostError> {
    if name.is_empty() {
        return Err(HostError::Invalid(format!("{what} name is empty")));
    }
    if name.contains('\0') {
        return Err(HostError::Invalid(format!(
            "{what} name {name:?} contains a NUL byte"
        )));
    }
    if name.len() >= max {
        return Err(HostError::Invalid(format!(
            "{what} name {name:?} is longer than {} bytes",
            max - 1
        )));
    }
    Ok(())
}

/// An RDMA device name: at most 63 bytes (`IB_DEVICE_NAME_MAX - 1`).
pub fn validate_dev_name(name: &str) -> Result<(), HostError> {
    validate_name("RDMA device", name, IB_DEVICE_NAME_MAX)
}

pub fn validate_new_link(link: &NewLink) -> Result<(), HostError> {
    validate_dev_name(&link.name)?;
    validate_name("network interface", &link.netdev, IFNAMSIZ)
}

/// Expected bytes are written out by hand from iproute2's code (`rd_prepare_msg` puts the
/// header with pid 0, `mnl_attr_put_u32` / `mnl_attr_put_strz` the attributes), for a
/// little-endian host, which is what the build machines and the lab are.
#[cfg(all(test, target_endian = "little"))]
mod tests {

    use super::*;
    use crate::model::SoftLinkType;

    const SEQ: u32 = 0x6543_2110;
    /// The sequence number bytes.
    const S: [u8; 4] = [0x10, 0x21, 0x43, 0x65];

    fn hdr(len: u8, ty: [u8; 2], flags: [u8; 2]) -> Vec<u8> {
        let mut v = vec![len, 0, 0, 0, ty[0], ty[1], flags[0], flags[1]];
        v.extend_from_slice(&S);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v
    }

    #[test]
    fn new_link_matches_rdma_link_add() {
        // rdma link add rxe0 type rxe netdev veth0
        let link = NewLink {
            name: "rxe0".into(),
            kind: SoftLinkType::Rxe,
            netdev: "veth0".into(),
        };
        let mut want = hdr(48, [0x03, 0x14], [0x05, 0x00]);
        // DEV_NAME (2): len 4+5 = 9, "rxe0\0", 3 bytes of padding.
        want.extend_from_slice(&[9, 0, 2, 0, b'r', b'x', b'e', b'0', 0, 0, 0, 0]);
        // LINK_TYPE (65): len 4+4 = 8, "rxe\0".
        want.extend_from_slice(&[8, 0, 65, 0, b'r', b'x', b'e', 0]);
        // NDEV_NAME (51): len 4+6 = 10, "veth0\0", 2 bytes of padding.
        want.extend_from_slice(&[10, 0, 51, 0, b'v', b'e', b't', b'h', b'0', 0, 0, 0]);
        assert_eq!(encode_new_link(SEQ, &link), want);
    }

    #[test]
    fn del_link_matches_rdma_link_delete() {
        let mut want = hdr(24, [0x04, 0x14], [0x05, 0x00]);
        want.extend_from_slice(&[8, 0, 1, 0, 7, 0, 0, 0]);
        assert_eq!(encode_del_link(SEQ, 7), want);
    }

    #[test]
    fn rename_matches_rdma_dev_set_name() {
        // rdma dev set rxe0 name roce_lab (rxe0 has index 3)
        let mut want = hdr(40, [0x02, 0x14], [0x05, 0x00]);
        want.extend_from_slice(&[8, 0, 1, 0, 3, 0, 0, 0]);
        // DEV_NAME: len 4+9 = 13, "roce_lab\0", 3 bytes of padding.
        want.extend_from_slice(&[13, 0, 2, 0]);
        want.extend_from_slice(b"roce_lab\0\0\0\0");
        assert_eq!(encode_rename(SEQ, 3, "roce_lab"), want);
    }

    #[test]
    fn get_dump_matches_rd_init() {
        // REQUEST | ACK | DUMP (ROOT | MATCH) = 0x305.
        assert_eq!(encode_get_dump(SEQ), hdr(16, [0x01, 0x14], [0x05, 0x03]));
    }

    #[test]
    fn port_dump_carries_the_device_index() {
        let mut want = hdr(24, [0x05, 0x14], [0x05, 0x03]);
        want.extend_from_slice(&[8, 0, 1, 0, 2, 0, 0, 0]);
        assert_eq!(encode_port_dump(SEQ, 2), want);
    }

    #[test]
    fn sys_get_matches_rdma_sys_show() {
        assert_eq!(encode_sys_get(SEQ), hdr(16, [0x06, 0x14], [0x05, 0x00]));
    }

    #[test]
    fn stat_get_matches_rdma_statistic_show_link() {
        // rdma statistic show link rxe0/1 (rxe0 has index 1): type 5<<10 | 17 = 0x1411.
        let mut want = hdr(32, [0x11, 0x14], [0x05, 0x00]);
        want.extend_from_slice(&[8, 0, 1, 0, 1, 0, 0, 0]);
        want.extend_from_slice(&[8, 0, 3, 0, 1, 0, 0, 0]);
        assert_eq!(encode_stat_get(SEQ, 1, 1), want);
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_dev_name("rxe0").is_ok());
        assert!(validate_dev_name(&"x".repeat(63)).is_ok());
        assert!(validate_dev_name(&"x".repeat(64)).is_err());
        assert!(validate_dev_name("").is_err());
        assert!(validate_dev_name("a\0b").is_err());
        let mut link = NewLink {
            name: "rxe0".into(),
            kind: SoftLinkType::Siw,
            netdev: "a-very-long-ifname".into(),
        };
        assert!(matches!(
            validate_new_link(&link),
            Err(HostError::Invalid(_))
        ));
        link.netdev = "eth0".into();
        assert!(validate_new_link(&link).is_ok());
    }
}
