//! Host configuration files, as the programs that read them read them: `/etc/rdma/modules`
//! (systemd-modules-load), the memlock limits files (pam_limits) and `nfs.conf` (nfs-utils),
//! with the daemon's own files among them. Pure: bytes in, resolutions and new bytes out; the
//! engine's `ops_host` reads and writes the files.

pub mod conf_lines;
pub mod memlock;
pub mod nfs_conf;
pub mod rdma_modules;
