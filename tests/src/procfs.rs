//! What `/proc` says of a process's memory, for the benchmarks and the scale lab.

use anyhow::Result;

/// Resident KiB by mapping (file name, `[heap]`, `[stack]`, or `anon` for the unnamed ones:
/// malloc's mmapped blocks, thread stacks), largest first, from `/proc/PID/smaps`.
pub fn rss_by_mapping(pid: u32) -> Result<Vec<(String, u64)>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/smaps"))?;
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    let mut name = String::new();
    for l in s.lines() {
        if let Some(kib) = l.strip_prefix("Rss:") {
            let kib: u64 = kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            *by.entry(name.clone()).or_default() += kib;
        } else if l.split_whitespace().next().is_some_and(|f| f.contains('-')) {
            // A mapping's header: "start-end perms offset dev inode [name]".
            name = l.split_whitespace().nth(5).unwrap_or("anon").to_string();
        }
    }
    let mut v: Vec<(String, u64)> = by.into_iter().filter(|(_, k)| *k > 0).collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    Ok(v)
}

/// [`rss_by_mapping`] as one line: `name KiB, ...`, the largest `n`.
pub fn rss_by_mapping_line(pid: u32, n: usize) -> String {
    match rss_by_mapping(pid) {
        Ok(v) => v
            .iter()
            .take(n)
            .map(|(name, kib)| format!("{name} {kib}"))
            .collect::<Vec<_>>()
            .join(", "),
        Err(e) => format!("? ({e})"),
    }
}
