//! Which libibverbs providers the host's devices need, loaded before libibverbs lists them.
//!
//! libibverbs matches every RDMA device against the providers registered so far; when a
//! device stays unmatched it loads every provider its configuration names
//! (`/etc/libibverbs.d/*.driver`: 17 in Debian 12's ibverbs-providers), and a provider, once
//! loaded, stays mapped for the life of the process: rxe devices that need one provider kept
//! all the others and their libraries resident. A provider registers itself with
//! libibverbs when it is loaded (its constructor), so loading the ones the devices need before
//! the first list leaves no device unmatched, and libibverbs loads no other.
//!
//! This only ever loads less than libibverbs would: a device whose provider cannot be named
//! here (a driver missing from [`PROVIDER_BY_DRIVER`]) or whose provider file is not found
//! makes libibverbs load them all, as it always did; a provider loaded here that does not
//! match (a wrong guess) is one that libibverbs would have loaded anyway.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::model::device::DeviceKind;

use super::sysfs::SysRoot;

/// The provider (rdma-core's `providers/<name>`, file `lib<name>-rdmav<ABI>.so`) for the kernel
/// driver bound to a hardware device's parent (`/sys/class/infiniband/X/device/driver`): the
/// PCI driver for most HCAs, the auxiliary driver where the RDMA part is one.
pub const PROVIDER_BY_DRIVER: &[(&str, &str)] = &[
    ("mlx5_core", "mlx5"),
    // A sub-function's device hangs from its auxiliary device, driven by `mlx5_core.sf`.
    ("mlx5_core.sf", "mlx5"),
    ("mlx4_core", "mlx4"),
    ("ib_mthca", "mthca"),
    ("bnxt_en", "bnxt_re"),
    ("bnxt_re", "bnxt_re"),
    ("cxgb4", "cxgb4"),
    ("efa", "efa"),
    ("erdma", "erdma"),
    ("hns3", "hns"),
    ("hns_roce_hw_v2", "hns"),
    ("irdma", "irdma"),
    ("ice", "irdma"),
    ("i40e", "irdma"),
    ("mana", "mana"),
    ("mana_ib", "mana"),
    ("qede", "qedr"),
    ("qedr", "qedr"),
    ("vmw_pvrdma", "vmw_pvrdma"),
    ("be2net", "ocrdma"),
    ("ocrdma", "ocrdma"),
    ("hfi1", "hfi1verbs"),
    ("ib_qib", "ipathverbs"),
];

/// The provider a device needs, or `None` when it cannot be told.
pub fn provider_for(kind: DeviceKind, driver: Option<&str>) -> Option<&'static str> {
    match kind {
        DeviceKind::Rxe => Some("rxe"),
        DeviceKind::Siw => Some("siw"),
        DeviceKind::Hardware => {
            let driver = driver?;
            PROVIDER_BY_DRIVER
                .iter()
                .find(|(d, _)| *d == driver)
                .map(|(_, p)| *p)
        }
        DeviceKind::OtherVirtual => None,
    }
}

/// The providers every RDMA device of the host needs; `None` when one device's cannot be told
/// (then loading some would not stop libibverbs from loading all).
pub fn needed(sys: &SysRoot) -> Option<BTreeSet<&'static str>> {
    needed_but(sys, |_| false)
}

/// [`needed`] for the devices `listed` says no libibverbs list has had yet. libibverbs keeps
/// the devices it matched from one list to the next and matches only the new ones, so those
/// are all a new list needs; reading the others' drivers would cost a file per device on a
/// host of a thousand, for each device added.
pub fn needed_but(sys: &SysRoot, listed: impl Fn(&str) -> bool) -> Option<BTreeSet<&'static str>> {
    let names = sys.rdma_device_names().ok()?;
    names
        .iter()
        .filter(|name| !listed(name))
        .map(|name| {
            let (kind, driver) = sys.device_origin(name);
            let provider = provider_for(kind, driver.as_deref());
            if provider.is_none() {
                tracing::debug!(
                    device = %name,
                    driver = driver.as_deref().unwrap_or("-"),
                    "no known libibverbs provider: libibverbs loads all of them"
                );
            }
            provider
        })
        .collect()
}

/// Where the providers of a libibverbs loaded from `libibverbs_dir` are: `libibverbs/` beside
/// it (rdma-core's `VERBS_PROVIDER_DIR`), under `/usr` or not (Debian's libibverbs is in
/// `/lib/<triplet>` or `/usr/lib/<triplet>` and its providers in `/usr/lib/<triplet>/libibverbs`).
pub fn provider_dirs(libibverbs_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![libibverbs_dir.join("libibverbs")];
    if let Ok(rest) = libibverbs_dir.strip_prefix("/usr") {
        dirs.push(Path::new("/").join(rest).join("libibverbs"));
    } else if libibverbs_dir.starts_with("/lib") {
        dirs.push(
            Path::new("/usr")
                .join(libibverbs_dir.strip_prefix("/").unwrap_or(libibverbs_dir))
                .join("libibverbs"),
        );
    }
    dirs
}

/// The directory of the libibverbs this process has mapped (from `/proc/self/maps`).
pub fn mapped_libibverbs_dir() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|path| {
            Path::new(path)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("libibverbs.so.1"))
        })
        .and_then(|path| Path::new(path).parent().map(Path::to_path_buf))
}

/// The file of provider `name` in `dirs`: `lib<name>-rdmav<ABI>.so`, whatever the ABI number
/// (34 in rdma-core 34 to today), the first directory that has one.
pub fn provider_file(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    let prefix = format!("lib{name}-rdmav");
    dirs.iter().find_map(|dir| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name().to_str().is_some_and(|f| {
                    f.strip_prefix(&prefix)
                        .and_then(|rest| rest.strip_suffix(".so"))
                        .is_some_and(|abi| {
                            !abi.is_empty() && abi.bytes().all(|b| b.is_ascii_digit())
                        })
                })
            })
            .map(|e| e.path())
            .collect();
        found.sort();
        found.pop()
    })
}

/// Providers loaded (or tried) by this process, kept loaded for its life: libibverbs holds
/// pointers into a registered provider.
pub struct Providers {
    dirs: Vec<PathBuf>,
    tried: Mutex<BTreeMap<&'static str, Option<libloading::os::unix::Library>>>,
}

impl Providers {
    pub fn new(dirs: Vec<PathBuf>) -> Providers {
        Providers {
            dirs,
            tried: Mutex::new(BTreeMap::new()),
        }
    }

    /// Beside the libibverbs this process has loaded.
    pub fn beside_mapped_libibverbs() -> Providers {
        Providers::new(
            mapped_libibverbs_dir()
                .map(|d| provider_dirs(&d))
                .unwrap_or_default(),
        )
    }

    /// Loads each of `names` not tried before. Call it with libibverbs loaded, before a device
    /// list; a provider that cannot be loaded is logged and left to libibverbs.
    pub fn load(&self, names: &BTreeSet<&'static str>) {
        let mut tried = self.tried.lock().unwrap_or_else(|p| p.into_inner());
        for &name in names {
            if tried.contains_key(name) {
                continue;
            }
            let lib = match provider_file(&self.dirs, name) {
                None => {
                    tracing::debug!(provider = name, dirs = ?self.dirs, "libibverbs provider not found");
                    None
                }
                // SAFETY: a libibverbs provider's initialiser only registers it with the
                // libibverbs already loaded (`verbs_register_driver`), as when libibverbs loads
                // it itself, with the same flags.
                Some(file) => match unsafe {
                    libloading::os::unix::Library::open(Some(&file), libc::RTLD_NOW)
                } {
                    Ok(lib) => {
                        tracing::debug!(provider = name, file = %file.display(), "libibverbs provider loaded");
                        Some(lib)
                    }
                    Err(e) => {
                        tracing::debug!(provider = name, error = %e, "libibverbs provider not loaded");
                        None
                    }
                },
            };
            tried.insert(name, lib);
        }
    }

    /// The providers loaded so far.
    pub fn loaded(&self) -> Vec<&'static str> {
        let tried = self.tried.lock().unwrap_or_else(|p| p.into_inner());
        tried
            .iter()
            .filter(|(_, lib)| lib.is_some())
            .map(|(n, _)| *n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_device_s_provider_by_kind_and_driver() {
        assert_eq!(provider_for(DeviceKind::Rxe, None), Some("rxe"));
        assert_eq!(provider_for(DeviceKind::Siw, None), Some("siw"));
        assert_eq!(
            provider_for(DeviceKind::Hardware, Some("mlx5_core")),
            Some("mlx5")
        );
        assert_eq!(
            provider_for(DeviceKind::Hardware, Some("ice")),
            Some("irdma")
        );
        assert_eq!(
            provider_for(DeviceKind::Hardware, Some("mlx5_core.sf")),
            Some("mlx5")
        );
        assert_eq!(provider_for(DeviceKind::Hardware, Some("new_hca")), None);
        assert_eq!(provider_for(DeviceKind::Hardware, None), None);
        assert_eq!(provider_for(DeviceKind::OtherVirtual, None), None);
    }

    /// A sysfs tree with the given devices: (name, parent netdev, node type, parent driver).
    fn host(devices: &[(&str, Option<&str>, &str, Option<&str>)]) -> (tempfile::TempDir, SysRoot) {
        let tmp = tempfile::tempdir().unwrap();
        let class = tmp.path().join("sys/class/infiniband");
        fs::create_dir_all(&class).unwrap();
        for (i, (name, parent, node_type, driver)) in devices.iter().enumerate() {
            let dir = class.join(name);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("node_type"), format!("{node_type}\n")).unwrap();
            if let Some(p) = parent {
                fs::write(dir.join("parent"), format!("{p}\n")).unwrap();
            }
            if let Some(d) = driver {
                let pci = tmp
                    .path()
                    .join(format!("sys/devices/pci0000:00/0000:0{i}:00.0"));
                let drv = tmp.path().join(format!("sys/bus/pci/drivers/{d}"));
                fs::create_dir_all(&pci).unwrap();
                fs::create_dir_all(&drv).unwrap();
                std::os::unix::fs::symlink(&drv, pci.join("driver")).unwrap();
                std::os::unix::fs::symlink(&pci, dir.join("device")).unwrap();
            }
        }
        let root = SysRoot::new(tmp.path());
        (tmp, root)
    }

    #[test]
    fn the_host_needs_one_provider_a_kind_of_device() {
        let (_tmp, sys) = host(&[
            ("rxe0", Some("eth0"), "1: CA", None),
            ("rxe1", Some("eth1"), "1: CA", None),
            ("siw0", Some("eth0"), "4: RNIC", None),
            ("mlx5_0", None, "1: CA", Some("mlx5_core")),
        ]);
        let want: BTreeSet<&str> = ["mlx5", "rxe", "siw"].into_iter().collect();
        assert_eq!(needed(&sys), Some(want));
    }

    #[test]
    fn one_device_of_an_unknown_driver_leaves_the_choice_to_libibverbs() {
        let (_tmp, sys) = host(&[
            ("rxe0", Some("eth0"), "1: CA", None),
            ("odd0", None, "1: CA", Some("new_hca")),
        ]);
        assert_eq!(needed(&sys), None);
        let (_tmp, sys) = host(&[]);
        assert_eq!(
            needed(&sys),
            Some(BTreeSet::new()),
            "no device, nothing to load"
        );
    }

    /// A new list needs only the providers of the devices the kept one lacks: the others'
    /// drivers are not read, and one of them being unknown does not make libibverbs load all.
    #[test]
    fn a_new_list_needs_only_the_providers_of_devices_not_listed() {
        let (_tmp, sys) = host(&[
            ("rxe0", Some("eth0"), "1: CA", None),
            ("odd0", None, "1: CA", Some("new_hca")),
            ("mlx5_0", None, "1: CA", Some("mlx5_core")),
        ]);
        let listed = |names: &'static [&'static str]| move |d: &str| names.contains(&d);
        let mlx5: BTreeSet<&str> = ["mlx5"].into_iter().collect();
        assert_eq!(needed_but(&sys, listed(&["rxe0", "odd0"])), Some(mlx5));
        assert_eq!(
            needed_but(&sys, listed(&["rxe0", "odd0", "mlx5_0"])),
            Some(BTreeSet::new())
        );
        assert_eq!(needed_but(&sys, listed(&["rxe0", "mlx5_0"])), None);
        assert_eq!(needed_but(&sys, |_| false), needed(&sys));
    }

    #[test]
    fn provider_directories_beside_libibverbs_with_and_without_usr() {
        assert_eq!(
            provider_dirs(Path::new("/lib/x86_64-linux-gnu")),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libibverbs"),
                PathBuf::from("/usr/lib/x86_64-linux-gnu/libibverbs"),
            ]
        );
        assert_eq!(
            provider_dirs(Path::new("/usr/lib64")),
            vec![
                PathBuf::from("/usr/lib64/libibverbs"),
                PathBuf::from("/lib64/libibverbs"),
            ]
        );
    }

    #[test]
    fn a_provider_s_file_whatever_its_abi_number() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for f in [
            "librxe-rdmav34.so",
            "libmlx5-rdmav34.so",
            "libsiw-rdmav.so",
            "libsiw.so",
        ] {
            fs::write(b.path().join(f), "").unwrap();
        }
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        assert_eq!(
            provider_file(&dirs, "rxe"),
            Some(b.path().join("librxe-rdmav34.so"))
        );
        assert_eq!(
            provider_file(&dirs, "siw"),
            None,
            "no ABI number, not a provider"
        );
        assert_eq!(provider_file(&dirs, "mlx4"), None);
    }

    #[test]
    fn a_provider_that_cannot_be_loaded_is_tried_once_and_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("librxe-rdmav34.so"), "not an ELF file").unwrap();
        let p = Providers::new(vec![dir.path().to_path_buf()]);
        let want: BTreeSet<&str> = ["rxe", "siw"].into_iter().collect();
        p.load(&want);
        assert!(p.loaded().is_empty());
        assert_eq!(p.tried.lock().unwrap().len(), 2, "both tried");
        p.load(&want);
        assert_eq!(p.tried.lock().unwrap().len(), 2);
    }
}
