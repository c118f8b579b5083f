//! Generates the client proxies and records from the committed introspection XML (`xml/`):
//! see `codegen/proxies.rs` and `codegen/records.rs`.

use std::path::Path;

#[path = "codegen/proxies.rs"]
mod proxies;
#[path = "codegen/records.rs"]
mod records;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("xml");
    println!("cargo::rerun-if-changed={}", dir.display());
    println!("cargo::rerun-if-changed=codegen/proxies.rs");
    println!("cargo::rerun-if-changed=codegen/records.rs");
    let mut files = Vec::new();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if path.extension().is_some_and(|x| x == "xml") {
            println!("cargo::rerun-if-changed={}", path.display());
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            files.push((name, text));
        }
    }
    // Sorted, so that the output does not depend on the directory's order.
    files.sort();
    let code = proxies::generate(&files).unwrap_or_else(|e| panic!("generating the proxies: {e}"));
    let records =
        records::generate(&files).unwrap_or_else(|e| panic!("generating the records: {e}"));
    let dir = Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR")).to_path_buf();
    for (name, text) in [("proxies.rs", code), ("records.rs", records)] {
        let out = dir.join(name);
        std::fs::write(&out, text).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    }
}
