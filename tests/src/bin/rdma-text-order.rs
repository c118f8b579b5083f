//! rdma-text-order: writes the linker script that places the daemon's executed functions
//! together at the front of its code (`service/link/text-order.ld`; docs/PERFORMANCE.md,
//! "Memory, thirteenth pass").
//!
//!     rdma-text-order --map MAP --out service/link/text-order.ld PROFILE...
//!
//! - `MAP` is lld's link map of a release `rdma-managerd` (`-Wl,-Map=MAP`): every function
//!   is an input section of its own (`.text.<symbol>`), and the map lists them all.
//! - Each `PROFILE` is a callgrind output of that binary (`--demangle=no
//!   --compress-strings=no`): its `fn=` and `cfn=` lines name the functions that ran.
//! - Each `--pages TRANSCRIPT` is the scale lab's transcript of that binary with
//!   `rdma_lab_scale_text_pages=1`: the pages of its code the daemon touched on the real
//!   kernel, with fault-around off. The functions on those pages that no profile saw run go
//!   in a section of their own after the hot one (`.text.lab`): a page holds a few functions,
//!   not all of which ran, and the simulated host runs none of what only the kernel's
//!   interfaces need.
//!
//! `tests/text-order/regenerate.sh` makes both and runs this.
//!
//! Why a layout matters: the kernel maps a file's pages into a process 16 at a time around
//! each one touched (fault-around), so code that runs scattered among code that never runs
//! makes most of the executable resident. Grouped, only the part that runs is.
//!
//! Symbol names carry hashes that change when a dependency or the compiler does, or the set of
//! packages built together (`17h<hex>E` at the end of a legacy name, `Cs<base62>_` for a
//! crate in a v0 name). Where every function of a name without its hash ran, the script names
//! it with the hash as a wildcard, so that it keeps matching across such changes; where only
//! some did (one generic function's copies for several types), it names those exactly in the
//! hot section, and the name without its hash in a second section right after it
//! (`.text.warm`): with other hashes, the copies that run are there, among their siblings
//! but still apart from the code that never runs. A name that matches nothing only leaves
//! that function where the linker would put it anyway.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

/// The output sections the script creates before `.text`: the functions that ran in a
/// profile, those on pages the real kernel's run touched, then the other copies of generic
/// functions of which some ran.
const HOT_SECTION: &str = ".text.hot";
const LAB_SECTION: &str = ".text.lab";
const WARM_SECTION: &str = ".text.warm";

/// A function's input section in the map: its full section name, address and size.
struct InputSection {
    name: String,
    /// Its address in the executable.
    vma: u64,
    size: u64,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut map = None;
    let mut out = None;
    let mut pages = Vec::new();
    let mut profiles = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--map" => map = it.next().map(PathBuf::from),
            "--out" => out = it.next().map(PathBuf::from),
            "--pages" => pages.extend(it.next().map(PathBuf::from)),
            "-h" | "--help" => {
                println!("usage: rdma-text-order --map MAP --out SCRIPT PROFILE...");
                return Ok(());
            }
            _ if a.starts_with('-') => bail!("unknown option {a}"),
            _ => profiles.push(PathBuf::from(a)),
        }
    }
    let (Some(map), Some(out)) = (map, out) else {
        bail!("usage: rdma-text-order --map MAP --out SCRIPT PROFILE...");
    };
    if profiles.is_empty() && pages.is_empty() {
        bail!("no callgrind profile or page list given");
    }
    let map_text =
        std::fs::read_to_string(&map).with_context(|| format!("reading {}", map.display()))?;
    let sections = input_sections(&map_text);
    if sections.is_empty() {
        bail!("{} lists no .text.<symbol> input sections", map.display());
    }
    let mut ran = BTreeSet::new();
    for p in &profiles {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        ran.extend(executed(&text));
    }
    let mut touched = BTreeSet::new();
    for p in &pages {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        let pages = touched_pages(&text);
        if pages.is_empty() {
            bail!("{} has no text_pages line", p.display());
        }
        let before = touched.len();
        touched.extend(
            sections
                .iter()
                .filter(|s| pages.iter().any(|(a, b)| s.vma < *b && *a < s.vma + s.size))
                .filter_map(|s| symbol_of(&s.name).map(str::to_string)),
        );
        eprintln!(
            "{}: {} pages touched, {} functions on them",
            p.display(),
            pages.iter().map(|(a, b)| (b - a) / 4096).sum::<u64>(),
            touched.len() - before
        );
    }
    let patterns = patterns(&sections, &ran, &touched);
    let placed = |set: &BTreeSet<String>, taken: &dyn Fn(&InputSection) -> bool| {
        sections
            .iter()
            .filter(|s| !taken(s) && set.iter().any(|p| glob(p, &s.name)))
            .fold((0, 0), |(n, b), s| (n + 1, b + s.size))
    };
    let in_hot = |s: &InputSection| patterns.hot.iter().any(|p| glob(p, &s.name));
    let (hot_n, hot_bytes) = placed(&patterns.hot, &|_| false);
    let (lab_n, lab_bytes) = placed(&patterns.lab, &in_hot);
    let all_bytes: u64 = sections.iter().map(|s| s.size).sum();
    std::fs::write(&out, script(&patterns, hot_n, hot_bytes, all_bytes))
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "{} functions ran; {} patterns place {hot_n} of {} functions, {} of {} KiB of code, in \
         {HOT_SECTION}; {} more, {lab_n} functions and {} KiB, in {LAB_SECTION}",
        ran.len(),
        patterns.hot.len(),
        sections.len(),
        hot_bytes / 1024,
        all_bytes / 1024,
        patterns.lab.len(),
        lab_bytes / 1024
    );
    Ok(())
}

/// The function sections of lld's map: lines `VMA LMA SIZE ALIGN file:(.text.SYMBOL)`.
fn input_sections(map: &str) -> Vec<InputSection> {
    map.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (vma, _lma, size, _align, what) =
                (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let name = what.split_once(":(")?.1.strip_suffix(')')?;
            symbol_of(name)?;
            let size = u64::from_str_radix(size, 16).ok()?;
            let vma = u64::from_str_radix(vma, 16).ok()?;
            Some(InputSection {
                name: name.to_string(),
                vma,
                size,
            })
        })
        .collect()
}

/// The symbol of a function section (`.text.S` or `.text.unlikely.S`), when it is a Rust one.
fn symbol_of(section: &str) -> Option<&str> {
    let s = section.strip_prefix(".text.")?;
    let s = s.strip_prefix("unlikely.").unwrap_or(s);
    (s.starts_with("_ZN") || s.starts_with("_R")).then_some(s)
}

/// The functions a callgrind profile saw run (`fn=` and `cfn=` lines, names not compressed).
fn executed(profile: &str) -> BTreeSet<String> {
    profile
        .lines()
        .filter_map(|l| l.strip_prefix("fn=").or_else(|| l.strip_prefix("cfn=")))
        // A compressed name is "(N) name"; uncompressed, the name alone.
        .map(|n| n.rsplit(' ').next().unwrap_or(n))
        .filter(|n| n.starts_with("_ZN") || n.starts_with("_R"))
        .map(str::to_string)
        .collect()
}

/// The pages of code the lab saw touched (`scale: text_pages 0xA-0xB,...` in the transcript
/// of `rdma_lab_scale_text_pages=1`), as address ranges in the executable.
fn touched_pages(transcript: &str) -> Vec<(u64, u64)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    transcript
        .lines()
        .filter_map(|l| l.split_once("text_pages ").map(|(_, r)| r))
        .flat_map(|r| r.split(','))
        .filter_map(|r| {
            let (a, b) = r.trim().split_once('-')?;
            Some((hex(a)?, hex(b)?))
        })
        .collect()
}

/// A symbol's name with its hashes as wildcards.
fn without_hashes(symbol: &str) -> String {
    let mut s = symbol.to_string();
    // Legacy: `..17h0123456789abcdefE` at the end.
    if let Some(at) = s.rfind("17h") {
        let tail = &s[at + 3..];
        if tail.len() == 17
            && tail.ends_with('E')
            && tail[..16].bytes().all(|b| b.is_ascii_hexdigit())
        {
            s.replace_range(at + 3.., "*");
            return s;
        }
    }
    // v0: each crate is `Cs<base62>_<len><name>`.
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(at) = rest.find("Cs") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let n = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        if n > 0
            && rest[n..].starts_with('_')
            && rest[n + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            out.push('*');
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

/// The section-name patterns of the three sections, in their order.
#[derive(Default)]
struct Patterns {
    /// Functions that ran in a callgrind profile: a name without its hashes where every
    /// function it matches ran, the exact names otherwise.
    hot: BTreeSet<String>,
    /// Functions on the pages the daemon touched on the real kernel (`--pages`) and not in
    /// `hot`, named the same way. A page holds several functions, so this holds some that did
    /// not run; apart from `hot`, they do not dilute it on a host that never runs them (the
    /// simulated host).
    lab: BTreeSet<String>,
    /// The names without their hashes of those named exactly in `hot` or `lab`. While the
    /// hashes are those of the profile, only the copies that did not run are left for it;
    /// once they change (another compiler, another dependency, another set of packages built
    /// together, which changes the features of shared dependencies), it holds the copies that
    /// run among their siblings, still apart from the code that never runs.
    warm: BTreeSet<String>,
}

/// The patterns that name the functions of `set`: a name without its hashes where every
/// function it matches is in `set`, the exact names otherwise; and the names without their
/// hashes of the latter.
fn named(
    sections: &[InputSection],
    set: &BTreeSet<String>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut globs = BTreeSet::new();
    for s in sections {
        if let Some(sym) = symbol_of(&s.name) {
            if set.contains(sym) {
                let prefix = &s.name[..s.name.len() - sym.len()];
                globs.insert(format!("{prefix}{}", without_hashes(sym)));
            }
        }
    }
    let within = |s: &InputSection| symbol_of(&s.name).is_some_and(|sym| set.contains(sym));
    let (mut names, mut ambiguous) = (BTreeSet::new(), BTreeSet::new());
    for pattern in globs {
        let matched: Vec<&InputSection> = sections
            .iter()
            .filter(|s| glob(&pattern, &s.name))
            .collect();
        if matched.iter().all(|s| within(s)) {
            names.insert(pattern);
        } else {
            names.extend(matched.iter().filter(|s| within(s)).map(|s| s.name.clone()));
            ambiguous.insert(pattern);
        }
    }
    (names, ambiguous)
}

fn patterns(
    sections: &[InputSection],
    ran: &BTreeSet<String>,
    touched: &BTreeSet<String>,
) -> Patterns {
    let (hot, mut warm) = named(sections, ran);
    let seen: BTreeSet<String> = ran.union(touched).cloned().collect();
    let (lab, warm_lab) = named(sections, &seen);
    warm.extend(warm_lab);
    let lab = lab.difference(&hot).cloned().collect();
    Patterns { hot, lab, warm }
}

/// Whether `text` matches `pattern`, where `*` is any run of characters (as the linker
/// matches section names; the names have no `?` or `[`).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

fn script(patterns: &Patterns, hot_n: usize, hot_bytes: u64, all_bytes: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/* Generated by rdma-text-order (tests/text-order/regenerate.sh): do not edit.\n   \
         The functions rdma-managerd ran in its profile, placed together before the rest of\n   \
         its code ({hot_n} functions, {} of {} KiB when generated), then the other copies of\n   \
         the generic ones; docs/PERFORMANCE.md, \"Memory, thirteenth pass\".\n   \
         service/build.rs passes it to the linker. */",
        hot_bytes / 1024,
        all_bytes / 1024
    );
    let _ = writeln!(s, "SECTIONS\n{{");
    for (name, set) in [
        (HOT_SECTION, &patterns.hot),
        (LAB_SECTION, &patterns.lab),
        (WARM_SECTION, &patterns.warm),
    ] {
        let _ = writeln!(s, "  {name} : {{");
        for p in set {
            let _ = writeln!(s, "    *({p})");
        }
        let _ = writeln!(s, "  }}");
    }
    let _ = writeln!(s, "}}\nINSERT BEFORE .text;");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function section of 16 bytes named after `symbol`.
    fn section(symbol: &str) -> InputSection {
        InputSection {
            name: format!(".text.{symbol}"),
            vma: 0,
            size: 16,
        }
    }

    #[test]
    fn a_legacy_name_loses_its_hash() {
        assert_eq!(
            without_hashes("_ZN13rdma_managerd6engine3run17h0123456789abcdefE"),
            "_ZN13rdma_managerd6engine3run17h*"
        );
    }

    #[test]
    fn a_v0_name_loses_its_crates_hashes_only() {
        assert_eq!(
            without_hashes("_RNvNtCslNYArtu3iFV_5alloc3fmt6format"),
            "_RNvNtCs*_5alloc3fmt6format"
        );
        // "Cs" inside an identifier is not a crate.
        assert_eq!(without_hashes("_RNvCs1a_4Csvx3run"), "_RNvCs*_4Csvx3run");
    }

    #[test]
    fn what_only_the_real_kernel_touched_comes_after_what_ran() {
        let s = section;
        let sections = vec![
            s("_ZN3run17h0000000000000001E"),
            s("_ZN3real17h0000000000000002E"),
            s("_ZN3gen17h0000000000000003E"),
            s("_ZN3gen17h0000000000000004E"),
            s("_ZN3cold17h0000000000000005E"),
        ];
        let set = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let ran = set(&["_ZN3run17h0000000000000001E"]);
        let touched = set(&[
            "_ZN3run17h0000000000000001E",
            "_ZN3real17h0000000000000002E",
            "_ZN3gen17h0000000000000003E",
        ]);
        let p = patterns(&sections, &ran, &touched);
        assert_eq!(p.hot, set(&[".text._ZN3run17h*"]));
        assert_eq!(
            p.lab,
            set(&[".text._ZN3real17h*", ".text._ZN3gen17h0000000000000003E"])
        );
        assert_eq!(p.warm, set(&[".text._ZN3gen17h*"]));
        assert!(!p
            .hot
            .iter()
            .chain(&p.lab)
            .chain(&p.warm)
            .any(|x| x.contains("cold")));
    }

    #[test]
    fn the_labs_pages_are_read_from_its_transcript() {
        let t = "scale: devices 2\nscale: text_pages 0x108000-0x10a000,0x200000-0x201000\n";
        assert_eq!(
            touched_pages(t),
            [(0x108000, 0x10a000), (0x200000, 0x201000)]
        );
        assert!(touched_pages("scale: text_pages FAILED: no mapping").is_empty());
    }

    #[test]
    fn globs_match_as_the_linker_does() {
        assert!(glob("_ZN3foo17h*", "_ZN3foo17h0123456789abcdefE"));
        assert!(!glob("_ZN3foo17h*", "_ZN3foo3bar17h0123456789abcdefE"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }

    #[test]
    fn a_generic_name_is_exact_where_only_some_copies_ran() {
        let s = section;
        let sections = vec![
            s("_ZN3foo17h0000000000000001E"),
            s("_ZN3foo17h0000000000000002E"),
            s("_ZN3bar17h0000000000000003E"),
        ];
        let ran: BTreeSet<String> = ["_ZN3foo17h0000000000000001E", "_ZN3bar17h0000000000000003E"]
            .into_iter()
            .map(String::from)
            .collect();
        let p = patterns(&sections, &ran, &BTreeSet::new());
        assert!(p.hot.contains(".text._ZN3bar17h*"));
        assert!(p.hot.contains(".text._ZN3foo17h0000000000000001E"));
        assert!(!p.hot.iter().any(|x| x.contains("0000000000000002")));
        assert_eq!(p.hot.len(), 2);
        // The other copy, and this one's hot copy once hashes change, come next.
        assert_eq!(p.warm.iter().collect::<Vec<_>>(), [".text._ZN3foo17h*"]);
    }
}
