//! The uapi numbers of RDMA netlink (`include/uapi/rdma/rdma_netlink.h`) and of the netlink
//! framing (`include/uapi/linux/netlink.h`) this client uses.
//!
//! The attribute enum is ABI ("don't change the order or add anything between"), so the
//! numbers are written out rather than derived; they were checked against the header shipped
//! in iproute2's `rdma/include/uapi/rdma/rdma_netlink.h`.

/// The netlink protocol number of the RDMA subsystem (`NETLINK_RDMA`).
pub const NETLINK_RDMA: isize = 20;

/// The nldev client (`RDMA_NL_NLDEV`); a message type is `(client << 10) + op`.
pub const RDMA_NL_NLDEV: u16 = 5;

/// The notification multicast group (`RDMA_NL_GROUP_NOTIFY`); bound as bit `group - 1`.
pub const RDMA_NL_GROUP_NOTIFY: u32 = 4;

/// `enum rdma_nldev_command`.
pub mod cmd {
    pub const GET: u16 = 1;
    pub const SET: u16 = 2;
    pub const NEWLINK: u16 = 3;
    pub const DELLINK: u16 = 4;
    pub const PORT_GET: u16 = 5;
    pub const SYS_GET: u16 = 6;
    pub const STAT_GET: u16 = 17;
    pub const MONITOR: u16 = 28;
}

/// `enum rdma_nldev_attr` (the subset this client reads or writes).
pub mod attr {
    /// `RDMA_NLDEV_ATTR_PAD`: padding the kernel inserts before 64-bit values.
    pub const PAD: u16 = 0;
    pub const DEV_INDEX: u16 = 1;
    pub const DEV_NAME: u16 = 2;
    /// The port number, or in GET replies the number of ports (`rdma_end_port`).
    pub const PORT_INDEX: u16 = 3;
    pub const CAP_FLAGS: u16 = 4;
    pub const FW_VERSION: u16 = 5;
    /// The GUID as a host-order number (`be64_to_cpu(node_guid)`).
    pub const NODE_GUID: u16 = 6;
    pub const SYS_IMAGE_GUID: u16 = 7;
    pub const SUBNET_PREFIX: u16 = 8;
    pub const LID: u16 = 9;
    pub const SM_LID: u16 = 10;
    pub const LMC: u16 = 11;
    pub const PORT_STATE: u16 = 12;
    pub const PORT_PHYS_STATE: u16 = 13;
    pub const DEV_NODE_TYPE: u16 = 14;
    pub const NDEV_INDEX: u16 = 50;
    pub const NDEV_NAME: u16 = 51;
    pub const LINK_TYPE: u16 = 65;
    pub const SYS_NETNS_MODE: u16 = 66;
    pub const DEV_PROTOCOL: u16 = 67;
    pub const STAT_HWCOUNTERS: u16 = 80;
    pub const STAT_HWCOUNTER_ENTRY: u16 = 81;
    pub const STAT_HWCOUNTER_ENTRY_NAME: u16 = 82;
    pub const STAT_HWCOUNTER_ENTRY_VALUE: u16 = 83;
    pub const SYS_COPY_ON_FORK: u16 = 93;
    pub const NAME_ASSIGN_TYPE: u16 = 101;
    pub const EVENT_TYPE: u16 = 102;
    pub const SYS_MONITOR_MODE: u16 = 103;
}

/// `enum rdma_nl_notify_event_type` (the `EVENT_TYPE` attribute of MONITOR messages).
pub mod event {
    pub const REGISTER: u8 = 0;
    pub const UNREGISTER: u8 = 1;
    pub const NETDEV_ATTACH: u8 = 2;
    pub const NETDEV_DETACH: u8 = 3;
    pub const RENAME: u8 = 4;
    pub const NETDEV_RENAME: u8 = 5;
}

/// Netlink framing (`linux/netlink.h`).
pub mod nl {
    pub const NLMSG_HDRLEN: usize = 16;
    pub const NLA_HDRLEN: usize = 4;

    pub const NLMSG_NOOP: u16 = 1;
    pub const NLMSG_ERROR: u16 = 2;
    pub const NLMSG_DONE: u16 = 3;
    pub const NLMSG_OVERRUN: u16 = 4;
    /// Types below this are control messages, not data of any family.
    pub const NLMSG_MIN_TYPE: u16 = 0x10;

    pub const NLM_F_REQUEST: u16 = 0x01;
    pub const NLM_F_MULTI: u16 = 0x02;
    pub const NLM_F_ACK: u16 = 0x04;
    pub const NLM_F_DUMP: u16 = 0x300;
    /// On NLMSG_ERROR: the echoed request was capped to its header (NETLINK_CAP_ACK).
    pub const NLM_F_CAPPED: u16 = 0x100;
    /// On NLMSG_ERROR: extended-ack TLVs follow the echoed request.
    pub const NLM_F_ACK_TLVS: u16 = 0x200;

    /// `nla_type` carries these flags above the 14-bit type number.
    pub const NLA_TYPE_MASK: u16 = 0x3fff;

    /// `NLMSGERR_ATTR_MSG`: the extended-ack message string.
    pub const NLMSGERR_ATTR_MSG: u16 = 1;

    /// Socket options (SOL_NETLINK).
    pub const NETLINK_CAP_ACK: libc::c_int = 10;
    pub const NETLINK_EXT_ACK: libc::c_int = 11;
}

/// The nlmsghdr type of an nldev command.
pub const fn nldev_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

/// `IB_DEVICE_NAME_MAX`: RDMA device names are at most 63 bytes plus the NUL.
pub const IB_DEVICE_NAME_MAX: usize = 64;
/// `IFNAMSIZ`: netdev names are at most 15 bytes plus the NUL.
pub const IFNAMSIZ: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_match_the_header_macro() {
        assert_eq!(nldev_type(cmd::GET), 0x1401);
        assert_eq!(nldev_type(cmd::NEWLINK), 0x1403);
        assert_eq!(nldev_type(cmd::STAT_GET), 0x1411);
        assert_eq!(nldev_type(cmd::MONITOR), 0x141c);
        assert_eq!(NETLINK_RDMA, netlink_sys::protocols::NETLINK_RDMA);
    }
}
