//! RDMA netlink (NETLINK_RDMA, nldev) client.
