//! node_exporter's textfile collector mode: the scrape written to a `.prom` file, atomically
//! (a temporary file in the same directory, then renamed over it), so that node_exporter
//! never reads half a file.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Why the file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TextfileError {
    #[error("{0}: the textfile collector reads only files whose names end in .prom")]
    NotProm(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Checks the target's name before anything is collected.
pub fn check_path(path: &Path) -> Result<(), TextfileError> {
    if path.extension().and_then(|e| e.to_str()) != Some("prom") {
        return Err(TextfileError::NotProm(path.to_path_buf()));
    }
    Ok(())
}

/// Writes `text` to `path` atomically, mode 0644. The temporary file is `.NAME.tmp` beside
/// it: not a `.prom` name, so node_exporter never reads it.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), TextfileError> {
    check_path(path)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| TextfileError::Io { path: p, source }
    };
    let result = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(&tmp)
            .map_err(io(&tmp))?;
        f.write_all(text.as_bytes()).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io(path))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_file_stays() {
        let dir = std::env::temp_dir().join(format!("rdma-exporter-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rdma.prom");
        write_atomic(&path, "a 1\n").unwrap();
        write_atomic(&path, "a 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a 2\n");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("rdma.prom")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_name_node_exporter_would_not_read_is_refused() {
        let err = write_atomic(Path::new("/nonexistent/rdma.txt"), "").unwrap_err();
        assert!(matches!(err, TextfileError::NotProm(_)), "{err}");
        let err = write_atomic(Path::new("/nonexistent/dir/rdma.prom"), "").unwrap_err();
        assert!(matches!(err, TextfileError::Io { .. }), "{err}");
    }
}
