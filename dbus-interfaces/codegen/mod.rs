//! The generators `build.rs` runs, compiled with the crate's tests.

pub mod proxies;
pub mod records;

/// The committed XML files (name, contents), sorted as `build.rs` reads them.
pub fn committed() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("xml");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("xml/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "xml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read_to_string(p).expect("read"))
        })
        .collect()
}
