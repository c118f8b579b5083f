//! D-Bus names shared by rdma-managerd and its clients.
