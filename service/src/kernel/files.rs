//! Files the daemon owns: atomic replacement, so that a crash leaves the old file or the new
//! one, never a mix.

use std::io::Write;
use std::path::Path;

/// Temp file in the same directory, write, fsync, rename over the target, fsync the directory.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // /etc/rdma-manager is made by the package; a hand install may lack it.
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".rdma-manager-")
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    // Keep the mode of the file being replaced; new files get 0644 (rules files are read by udev).
    let mode = std::fs::metadata(path)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
        .unwrap_or(0o644);
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(mode),
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Reads a file; `None` when it does not exist.
pub fn read_optional(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("70-persistent-ipoib.rules");
        assert_eq!(read_optional(&p).unwrap(), None);
        write_atomic(&p, b"first\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        write_atomic(&p, b"second\n").unwrap();
        assert_eq!(
            read_optional(&p).unwrap().as_deref(),
            Some(&b"second\n"[..])
        );
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&p).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        // No temp files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
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
