//! rtnetlink requests for IPoIB netdevs.
