//! What the daemon's own atomic writes leave behind when it is killed between creating the
//! temporary file and renaming it (SIGKILL, a power loss): removed at start, in the directories
//! the daemon writes, and only files whose name is exactly one [`files::write_atomic`] makes.
//! Nothing else is touched, whatever its name looks like.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use crate::config::{self, ConfigFile, IpoibConfig, RoceSettings, SoftLinks};
use crate::hostconf::{memlock, nfs_conf, rdma_modules};
use crate::kernel::{files, Host};
use crate::naming::{udev_ipoib, udev_rdma_naming};

/// Every file the daemon writes with `Host::write_file_atomic`, or the directory of the ones
/// named by the caller (the module lists).
const WRITTEN: &[&str] = &[
    IpoibConfig::PATH,
    SoftLinks::PATH,
    RoceSettings::PATH,
    udev_ipoib::IPOIB_RULES_PATH,
    udev_rdma_naming::NAMING_OVERRIDE_PATH,
    memlock::DAEMON_FILE,
    nfs_conf::DAEMON_DROPIN,
    super::ops_port_type::MLX4_CONF,
];

/// The directories the daemon writes files into.
pub(crate) fn written_dirs() -> BTreeSet<PathBuf> {
    let mut dirs: BTreeSet<PathBuf> = WRITTEN
        .iter()
        .filter_map(|p| Path::new(p).parent().map(Path::to_path_buf))
        .collect();
    dirs.insert(PathBuf::from(rdma_modules::MODULES_DIR));
    dirs.insert(PathBuf::from(config::CONFIG_DIR));
    dirs
}

/// Removes the daemon's leftover temporary files; returns how many. A directory that cannot
/// be read or a file that cannot be removed is logged and skipped: leftovers cost nothing but
/// a little space, and must not stop the daemon from starting.
pub(crate) async fn remove_leftovers(host: &dyn Host) -> usize {
    let mut removed = 0;
    for dir in written_dirs() {
        let names = match host.list_dir(&dir).await {
            Ok(Some(n)) => n,
            Ok(None) => continue,
            Err(e) => {
                warn!(dir = %dir.display(), error = %e, "cannot look for leftover temporary files");
                continue;
            }
        };
        for name in names.iter().filter(|n| files::is_own_temp_name(n)) {
            let path = dir.join(name);
            match host.remove_file(&path).await {
                Ok(()) => {
                    removed += 1;
                    info!(file = %path.display(), "removed a temporary file an interrupted write left behind");
                }
                Err(e) => warn!(file = %path.display(), error = %e,
                    "cannot remove a leftover temporary file"),
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_directory_written_is_cleaned() {
        let dirs: Vec<String> = written_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        assert_eq!(
            dirs,
            [
                "/etc/nfs.conf.d",
                "/etc/rdma",
                "/etc/rdma/modules",
                "/etc/rdma-manager",
                "/etc/security/limits.d",
                "/etc/udev/rules.d",
            ]
        );
    }
}
