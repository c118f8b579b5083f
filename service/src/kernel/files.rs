//! Files the daemon owns: atomic replacement, so that a crash leaves the old file or the new
//! one, never a mix.

use std::io::Write;
use std::path::Path;

use super::{HostError, Op};

/// The name of [`write_atomic`]'s temporary file: this prefix, then [`TEMP_RANDOM_LEN`]
/// random ASCII letters and digits, nothing after. A crash (SIGKILL, power loss) between its
/// creation and the rename leaves it behind; [`is_own_temp_name`] finds it again.
pub const TEMP_PREFIX: &str = ".rdma-manager-";
pub const TEMP_RANDOM_LEN: usize = 6;

/// Whether a file name is exactly one [`write_atomic`] makes: nothing a user would name a
/// file (`.rdma-manager-notes`, `.rdma-manager-abc123.bak`) matches.
pub fn is_own_temp_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX).is_some_and(|rest| {
        rest.len() == TEMP_RANDOM_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// The temporary files' names, pinned (not tempfile's defaults) because the clean-up at
/// start matches them.
fn temp_builder() -> tempfile::Builder<'static, 'static> {
    let mut b = tempfile::Builder::new();
    b.prefix(TEMP_PREFIX).rand_bytes(TEMP_RANDOM_LEN).suffix("");
    b
}

/// Temp file in the same directory, write, fsync, rename over the target, fsync the directory.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // /etc/rdma-manager is made by the package; a hand install may lack it.
    std::fs::create_dir_all(dir)?;
    let mut tmp = temp_builder().tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    // Keep the mode of the regular file being replaced; new files get 0644 (rules files are
    // read by udev). Not the mode of what a link points at: a rules file masked with a link
    // to /dev/null would hand its 0666 to the file that replaces the link.
    let mode = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_file())
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
        .unwrap_or(0o644);
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(mode),
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Removes a file; one that does not exist is fine. The directory is synced so the removal
/// survives a crash like a write does.
pub fn remove_optional(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::File::open(dir)?.sync_all()
}

/// The names of the entries of a directory that are not directories themselves (regular
/// files, links to them, dangling links and other non-directories), sorted by their bytes;
/// `None` when the directory does not exist.
///
/// Directories are left out because every caller reads the names it gets as files; a
/// directory called `x.conf` would only turn into an EISDIR error there. Dangling links are
/// kept: the tools that read these directories skip them as missing files, and so does
/// [`read_optional`]. Names that are not UTF-8 are left out: a `String` cannot carry them, and
/// no file the daemon writes or D-Bus can name has one.
pub fn list_dir_optional(path: &Path) -> std::io::Result<Option<Vec<String>>> {
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        // Follows links, so a link to a directory is left out too; a dangling link fails
        // and is kept.
        let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        if !is_dir {
            names.push(name);
        }
    }
    names.sort();
    Ok(Some(names))
}

/// The largest file the daemon reads: 1 MiB. Every file it reads is a configuration file
/// (its own TOML, udev rules, limits.conf, nfs.conf, module lists) of a few KiB; one larger
/// is damaged or not what its name says, and reading it whole would put megabytes into
/// memory, messages and properties. See "Sizes" in docs/RELIABILITY.md.
pub const MAX_READ_BYTES: u64 = 1 << 20;

/// Why [`read_optional`] did not return a file's bytes.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file has more than the limit; `size` is its length as far as it was seen.
    #[error("the file has {size} bytes, more than the {limit} bytes rdma-managerd reads")]
    TooLarge { size: u64, limit: u64 },
    /// Not a regular file (`kind` says what it is); not read.
    #[error("the file is {kind}, not a regular file")]
    NotRegular { kind: String },
}

/// What a file that is not a regular one is, in words: "a FIFO", "a symlink to a character
/// device (/dev/zero)".
fn kind_of(path: &Path, followed: &std::fs::Metadata) -> String {
    use std::os::unix::fs::FileTypeExt;
    let t = followed.file_type();
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    };
    match std::fs::read_link(path) {
        Ok(target) => format!("a symlink to {what} ({})", target.display()),
        Err(_) => what.to_string(),
    }
}

/// Whether a file is /dev/null, with which a file is masked (udev rules, drop-ins): it reads
/// as empty.
fn is_dev_null(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    meta.file_type().is_char_device() && meta.rdev() == libc::makedev(1, 3)
}

/// Reads a file of at most `limit` bytes; `None` when it does not exist. A longer file is
/// refused without being read: its size is checked first, and the read stops one byte past
/// the limit in case the file grows or does not report its size.
///
/// Only regular files are read (and /dev/null, read as empty): a FIFO without a writer would
/// block the read forever, and a device, a socket or a directory is no configuration file.
/// The file is opened without blocking (a FIFO opens at once) and without becoming a
/// controlling terminal, and what was opened is checked before a byte is read, so that a file
/// replaced between a check and the open cannot slip through. A dangling symlink reads as
/// absent, as pam_limits, udev and nfs-utils read it.
pub fn read_optional(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // A device is refused before it is opened: opening some has effects of its own (a
    // watchdog arms, a tape rewinds). The check after the open still catches a swap.
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() && !is_dev_null(&m) {
            return Err(ReadError::NotRegular {
                kind: kind_of(path, &m),
            });
        }
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            // A socket cannot be opened at all (ENXIO): say what it is rather than the errno.
            return match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => Err(ReadError::NotRegular {
                    kind: kind_of(path, &m),
                }),
                _ => Err(e.into()),
            };
        }
    };
    let meta = file.metadata()?;
    if is_dev_null(&meta) {
        return Ok(Some(Vec::new()));
    }
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            kind: kind_of(path, &meta),
        });
    }
    let size = meta.len();
    if size > limit {
        return Err(ReadError::TooLarge { size, limit });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    let read = bytes.len() as u64;
    if read > limit {
        return Err(ReadError::TooLarge { size: read, limit });
    }
    Ok(Some(bytes))
}

/// [`read_optional`] with the daemon's limit, its errors as [`HostError`]s naming `shown` (the
/// path as the host calls it; the simulated host reads it under its own tree).
pub fn read_for_host(shown: &Path, real: &Path) -> Result<Option<Vec<u8>>, HostError> {
    let op = || Op::File(shown.display().to_string());
    read_optional(real, MAX_READ_BYTES).map_err(|e| match e {
        ReadError::Io(e) => HostError::from_io(op(), &e),
        ReadError::TooLarge { size, limit } => HostError::TooLarge {
            path: shown.display().to_string(),
            size,
            limit,
        },
        ReadError::NotRegular { kind } => HostError::NotRegular {
            path: shown.display().to_string(),
            kind,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_nothing_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.conf");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let zero = dir.path().join("zero.conf");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let sub = dir.path().join("dir.conf");
        std::fs::create_dir(&sub).unwrap();
        let sock = dir.path().join("sock.conf");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        for (p, kind) in [
            (&fifo, "a FIFO".to_string()),
            (
                &zero,
                "a symlink to a character device (/dev/zero)".to_string(),
            ),
            (&sub, "a directory".to_string()),
            (&sock, "a socket".to_string()),
        ] {
            match read_for_host(Path::new("/etc/x.conf"), p) {
                Err(HostError::NotRegular { path, kind: k }) => {
                    assert_eq!((path.as_str(), k), ("/etc/x.conf", kind))
                }
                other => panic!("{}: {other:?}", p.display()),
            }
        }
        let null = dir.path().join("masked.rules");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        assert_eq!(read_optional(&null, 10).unwrap(), Some(Vec::new()));
        let dangling = dir.path().join("dangling.conf");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert_eq!(read_optional(&dangling, 10).unwrap(), None);
    }

    #[test]
    fn own_temp_names_are_told_from_everything_else() {
        for own in [
            ".rdma-manager-AbC123",
            ".rdma-manager-000000",
            ".rdma-manager-zzzzzz",
        ] {
            assert!(is_own_temp_name(own), "{own}");
        }
        for other in [
            ".rdma-manager-",
            ".rdma-manager-abc12",
            ".rdma-manager-abc1234",
            ".rdma-manager-abc123.bak",
            ".rdma-manager-abc-12",
            ".rdma-manager-abc_12",
            ".rdma-manager-abc12\u{e9}",
            "rdma-manager-abc123",
            "..rdma-manager-abc123",
            ".rdma-manager-notes",
            "ipoib.toml",
            ".rdma-managerXabc123",
        ] {
            assert!(!is_own_temp_name(other), "{other}");
        }
    }

    #[test]
    fn the_temp_files_have_the_name_the_clean_up_looks_for() {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..200 {
            let t = temp_builder().tempfile_in(dir.path()).unwrap();
            let name = t.path().file_name().and_then(|n| n.to_str()).unwrap_or("");
            assert!(is_own_temp_name(name), "{name}");
        }
    }

    #[test]
    fn replaces_whole_file_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("70-persistent-ipoib.rules");
        assert_eq!(read_optional(&p, MAX_READ_BYTES).unwrap(), None);
        write_atomic(&p, b"first\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        write_atomic(&p, b"second\n").unwrap();
        assert_eq!(
            read_optional(&p, MAX_READ_BYTES).unwrap().as_deref(),
            Some(&b"second\n"[..])
        );
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&p).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        // No temp files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_link_to_dev_null_is_replaced_by_a_0644_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("60-rdma-persistent-naming.rules");
        std::os::unix::fs::symlink("/dev/null", &p).unwrap();
        write_atomic(&p, b"rule\n").unwrap();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o644
        );
        remove_optional(&p).unwrap();
        remove_optional(&p).unwrap();
        assert_eq!(read_optional(&p, MAX_READ_BYTES).unwrap(), None);
    }

    #[test]
    fn lists_files_sorted_without_directories() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("limits.d");
        assert_eq!(list_dir_optional(&d).unwrap(), None);
        std::fs::create_dir(&d).unwrap();
        assert_eq!(list_dir_optional(&d).unwrap(), Some(vec![]));
        for name in ["b.conf", "a.conf", "A.conf", "10-x.conf", ".hidden.conf"] {
            std::fs::write(d.join(name), b"").unwrap();
        }
        std::fs::create_dir(d.join("subdir.conf")).unwrap();
        std::os::unix::fs::symlink("subdir.conf", d.join("link-to-dir.conf")).unwrap();
        std::os::unix::fs::symlink("a.conf", d.join("link.conf")).unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("dangling.conf")).unwrap();
        assert_eq!(
            list_dir_optional(&d).unwrap().unwrap(),
            [
                ".hidden.conf",
                "10-x.conf",
                "A.conf",
                "a.conf",
                "b.conf",
                "dangling.conf",
                "link.conf"
            ]
        );
        // A file where a directory is expected is an error (ENOTDIR), not "absent".
        assert_eq!(
            list_dir_optional(&d.join("a.conf"))
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOTDIR)
        );
    }

    #[test]
    fn a_name_that_is_not_utf8_is_left_out() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(std::ffi::OsStr::from_bytes(b"x\xff.conf")),
            b"",
        )
        .unwrap();
        std::fs::write(dir.path().join("ok.conf"), b"").unwrap();
        assert_eq!(list_dir_optional(dir.path()).unwrap().unwrap(), ["ok.conf"]);
    }

    #[test]
    fn a_file_over_the_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("limits.conf");
        std::fs::write(&p, vec![b'x'; 101]).unwrap();
        assert!(matches!(
            read_optional(&p, 100),
            Err(ReadError::TooLarge {
                size: 101,
                limit: 100
            })
        ));
        assert_eq!(read_optional(&p, 101).unwrap().map(|b| b.len()), Some(101));
        // The daemon's limit, as the host reports it: a typed error naming the file.
        std::fs::write(&p, vec![b'#'; MAX_READ_BYTES as usize + 1]).unwrap();
        let e = read_for_host(Path::new("/etc/security/limits.conf"), &p).unwrap_err();
        assert_eq!(e.code(), "TooLarge");
        let m = e.to_string();
        assert!(
            m.contains("/etc/security/limits.conf") && m.contains("1048577"),
            "{m}"
        );
        std::fs::write(&p, vec![b'#'; MAX_READ_BYTES as usize]).unwrap();
        assert!(read_for_host(Path::new("/x"), &p).unwrap().is_some());
    }

    #[test]
    fn a_file_without_a_size_is_cut_at_the_limit() {
        // /proc files report a size of 0 and may be of any length: the read stops past the
        // limit.
        let p = Path::new("/proc/self/maps");
        if p.exists() {
            assert!(matches!(
                read_optional(p, 16),
                Err(ReadError::TooLarge {
                    size: 17,
                    limit: 16
                })
            ));
        }
    }

    #[test]
    fn missing_directory_is_made_and_an_impossible_one_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(&dir.path().join("new/file"), b"x").unwrap();
        assert_eq!(std::fs::read(dir.path().join("new/file")).unwrap(), b"x");
        std::fs::write(dir.path().join("plain"), b"").unwrap();
        assert!(write_atomic(&dir.path().join("plain/file"), b"x").is_err());
    }
}
