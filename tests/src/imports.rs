//! The module import graph of a crate's source tree, and its circles.
//!
//! Each file is a module (`src/a.rs` and `src/a/mod.rs` are `a`, `src/a/b.rs` is `a::b`);
//! module A depends on module B when A's code (not its comments, strings or `#[cfg(test)]`
//! modules) names a path into B: `use crate::b::X`, `crate::b::f()`, `super::b::X`, or
//! `b::X` for a child `b`, with `use` groups (`use crate::{a, b::X}`) expanded. A path names
//! the longest module it reaches. A path from a module up to one of its ancestors (a child
//! using what its parent defines, `use super::X`) is not counted: a module and its children
//! are one part at the parent's level, and Rust's privacy is built for that direction. Every
//! other circle is one to remove: two files that import each other cannot be read, tested or
//! moved one without the other.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Modules (by path, `""` for the crate root) and who depends on whom, with the first path
/// that showed it.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    pub files: BTreeMap<String, PathBuf>,
    pub edges: BTreeMap<String, BTreeMap<String, String>>,
}

/// Reads the crate whose `src` directory is `src` (binaries under `src/bin` are crates of
/// their own and left out).
pub fn crate_graph(src: &Path) -> io::Result<ModuleGraph> {
    let mut files = BTreeMap::new();
    collect(src, src, &mut files)?;
    let mut sources = BTreeMap::new();
    for (module, path) in &files {
        sources.insert(module.clone(), code_only(&fs::read_to_string(path)?));
    }
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (module, code) in &sources {
        let code = without_test_modules(code);
        for path in paths(&code) {
            let Some(target) = resolve(module, &path, &modules) else {
                continue;
            };
            if target == *module || is_ancestor(&target, module) {
                continue;
            }
            edges
                .entry(module.clone())
                .or_default()
                .entry(target)
                .or_insert_with(|| path.join("::"));
        }
    }
    Ok(ModuleGraph { files, edges })
}

fn collect(src: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> io::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        let rel = p.strip_prefix(src).unwrap_or(&p);
        if p.is_dir() {
            if rel != Path::new("bin") {
                collect(src, &p, out)?;
            }
            continue;
        }
        if p.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let mut segs: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            segs.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            segs.pop();
        }
        out.insert(segs.join("::"), p);
    }
    Ok(())
}

fn is_ancestor(a: &str, b: &str) -> bool {
    a.is_empty() || b.starts_with(&format!("{a}::"))
}

fn parent(m: &str) -> Option<String> {
    if m.is_empty() {
        return None;
    }
    Some(
        m.rsplit_once("::")
            .map(|(p, _)| p.to_string())
            .unwrap_or_default(),
    )
}

fn join(base: &str, seg: &str) -> String {
    if base.is_empty() {
        seg.to_string()
    } else {
        format!("{base}::{seg}")
    }
}

/// The module a path written in `from` reaches, if it is one of `modules`.
fn resolve(from: &str, path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    let mut base = match path.first()?.as_str() {
        "crate" => String::new(),
        "self" => from.to_string(),
        "super" => parent(from)?,
        first if modules.contains(&join(from, first)) => from.to_string(),
        _ => return None,
    };
    let mut rest = &path[usize::from(matches!(path[0].as_str(), "crate" | "self" | "super"))..];
    while rest.first().map(String::as_str) == Some("super") {
        base = parent(&base)?;
        rest = &rest[1..];
    }
    for seg in rest {
        let next = join(&base, seg);
        if !modules.contains(&next) {
            break;
        }
        base = next;
    }
    Some(base)
}

/// The source with comments, strings and character literals blanked out (lines kept).
fn code_only(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_ident(&b, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                out.push(blank(b[j]));
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = b.get(i) {
                    out.push(blank(ch));
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), else a lifetime.
            let close = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(k) => {
                    out.push_str("' '");
                    i = k + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The code without `#[cfg(test)]` modules (`#[cfg(test)] mod x { ... }`).
fn without_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    // `#[cfg(test)]`, or `#[cfg(all(test, ...))]` (tests that need a feature).
    let next_attribute = |s: &str| {
        let plain = s.find("#[cfg(test)]").map(|at| (at, "#[cfg(test)]".len()));
        let all = s
            .find("#[cfg(all(test,")
            .and_then(|at| Some((at, s[at..].find(']')? + 1)));
        match (plain, all) {
            (Some(p), Some(a)) => Some(if p.0 < a.0 { p } else { a }),
            (p, a) => p.or(a),
        }
    };
    while let Some((at, len)) = next_attribute(rest) {
        out.push_str(&rest[..at]);
        let after = &rest[at + len..];
        let trimmed = after.trim_start();
        let Some(open) = trimmed
            .strip_prefix("mod ")
            .and_then(|m| m.find(['{', ';']).map(|k| (m, k)))
            .filter(|(m, k)| m.as_bytes()[*k] == b'{')
            .map(|(m, k)| after.len() - m.len() + k)
        else {
            rest = after;
            continue;
        };
        let mut depth = 0;
        let mut end = after.len();
        for (k, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every path of two or more segments in `code`, with `use` groups expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident_start(b[i]) && !prev_ident(&b, i) && (i == 0 || b[i - 1] != ':') {
            let (segs, j) = path_at(&b, i);
            if b.get(j) == Some(&'{') && !segs.is_empty() {
                let (group, k) = group_at(&b, j);
                for tail in group {
                    let mut p = segs.clone();
                    p.extend(tail);
                    out.push(p);
                }
                i = k;
                continue;
            }
            if segs.len() >= 2 {
                out.push(segs);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn skip_ws(b: &[char], mut i: usize) -> usize {
    while i < b.len() && b[i].is_whitespace() {
        i += 1;
    }
    i
}

/// The path starting at `i`: its segments, and where it ends (on a `{` when a group follows
/// `::`).
fn path_at(b: &[char], mut i: usize) -> (Vec<String>, usize) {
    let mut segs = Vec::new();
    loop {
        let start = i;
        while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
            i += 1;
        }
        segs.push(b[start..i].iter().collect::<String>());
        let j = skip_ws(b, i);
        if b.get(j) == Some(&':') && b.get(j + 1) == Some(&':') {
            let k = skip_ws(b, j + 2);
            if b.get(k) == Some(&'{') {
                return (segs, k);
            }
            if b.get(k).copied().is_some_and(is_ident_start) {
                i = k;
                continue;
            }
        }
        return (segs, i);
    }
}

/// A `use` group starting at the `{` at `i`: each member's segments, and where it ends.
fn group_at(b: &[char], i: usize) -> (Vec<Vec<String>>, usize) {
    let mut out = Vec::new();
    let mut k = i + 1;
    loop {
        k = skip_ws(b, k);
        match b.get(k) {
            None => return (out, k),
            Some('}') => return (out, k + 1),
            Some(',') => k += 1,
            Some(&c) if is_ident_start(c) => {
                let (segs, j) = path_at(b, k);
                if b.get(j) == Some(&'{') {
                    let (inner, e) = group_at(b, j);
                    for tail in inner {
                        let mut p = segs.clone();
                        p.extend(tail);
                        out.push(p);
                    }
                    k = e;
                } else {
                    // `self` in a group names the prefix itself.
                    if segs != ["self"] {
                        out.push(segs);
                    }
                    k = j;
                    // `as name` and anything else up to the next member.
                    while k < b.len() && b[k] != ',' && b[k] != '}' {
                        k += 1;
                    }
                }
            }
            Some(_) => k += 1,
        }
    }
}

/// The circles of the graph (strongly connected modules, two or more), each as its modules
/// and the edges among them, in words.
pub fn circles(g: &ModuleGraph) -> Vec<String> {
    // Tarjan's algorithm, iterative enough for a few hundred modules.
    struct T<'a> {
        g: &'a ModuleGraph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        let g = t.g;
        for w in g.edges.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(lw));
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w);
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.files.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
        .iter()
        .map(|scc| {
            let members: BTreeSet<&str> = scc.iter().copied().collect();
            let mut lines = vec![format!("circle of {}:", scc.join(", "))];
            for v in scc {
                for (w, via) in g.edges.get(*v).into_iter().flatten() {
                    if members.contains(w.as_str()) {
                        lines.push(format!("  {v} -> {w} (`{via}`)"));
                    }
                }
            }
            lines.join("\n")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate made of `files` (path under src, text).
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (p, text) in files {
            let path = dir.path().join(p);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, text).expect("write");
        }
        dir
    }

    fn circles_of(files: &[(&str, &str)]) -> Vec<String> {
        let dir = tree(files);
        circles(&crate_graph(dir.path()).expect("read"))
    }

    #[test]
    fn two_files_that_import_each_other_are_a_circle() {
        let c = circles_of(&[
            ("lib.rs", "pub mod a;\npub mod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n",
            ),
        ]);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].contains("a -> b") && c[0].contains("b -> a"), "{c:?}");
    }

    #[test]
    fn groups_super_paths_and_children_are_followed() {
        // a -> m::x through a nested group; m::x -> a through super::super; m (mod.rs) ->
        // m::x as a child's path: one circle of a and m::x.
        let c = circles_of(&[
            ("lib.rs", "pub mod a;\npub mod m;\n"),
            ("a.rs", "use crate::{m::{x::X as Y}};\n"),
            ("m/mod.rs", "pub mod x;\npub fn f() { x::g() }\n"),
            (
                "m/x.rs",
                "use super::super::a;\npub struct X;\npub fn g() {}\n",
            ),
        ]);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].starts_with("circle of a, m::x:"), "{c:?}");
    }

    #[test]
    fn a_child_using_its_parent_comments_strings_and_tests_are_not_imports() {
        let c = circles_of(&[
            ("lib.rs", "pub mod a;\npub mod b;\n"),
            ("a/mod.rs", "pub mod c;\npub struct P;\npub fn f() -> c::C { c::C }\n"),
            // The parent's items, through super: the tree's own direction.
            ("a/c.rs", "use super::P;\npub struct C;\n"),
            ("b.rs", "use crate::a::P;\n"),
            // a names b only in a comment, a string, a raw string and a test module.
            (
                "a/d.rs",
                "// crate::b::X\nconst S: &str = \"crate::b::X\";\nconst R: &str = r#\"crate::b\"#;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { let _ = '{'; }\n}\n",
            ),
            // ... and in a test module that needs a feature.
            (
                "a/e.rs",
                "#[cfg(all(test, feature = \"sim\"))]\nmod tests {\n    use crate::b;\n}\n",
            ),
        ]);
        assert!(c.is_empty(), "{c:?}");
    }

    /// The workspace's crates have no circle between their modules.
    #[test]
    fn the_workspace_has_no_import_circles() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = Vec::new();
        for krate in [
            "service",
            "service/model",
            "tui",
            "cli",
            "exporter",
            "dbus-interfaces",
            "tests",
        ] {
            let g = crate_graph(&root.join(krate).join("src")).expect("read the crate");
            assert!(g.files.len() > 3, "{krate}: no modules read");
            found.extend(circles(&g).into_iter().map(|c| format!("{krate}: {c}")));
        }
        assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
    }
}
