//! Generates the client proxies from the committed introspection XML (`xml/`): see
//! `codegen/proxies.rs`.

use std::path::Path;

#[path = "codegen/proxies.rs"]
mod proxies;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("xml");
    println!("cargo::rerun-if-changed={}", dir.display());
    println!("cargo::rerun-if-changed=codegen/proxies.rs");
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
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("proxies.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
