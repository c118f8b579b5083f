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

/// utime + stime of a process, in clock ticks (`/proc/PID/stat`).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis (the command may hold spaces and
    // parentheses): the state is the 3rd field overall, utime the 14th, stime the 15th.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// utime and stime of a process (or, with `/task/TID` in `pid_path`, of one of its threads),
/// in clock ticks, from `/proc/PID_PATH/stat`.
fn user_sys_at(pid_path: &str) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid_path}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

/// utime and stime of a process apart, in clock ticks (`/proc/PID/stat`).
pub fn cpu_user_sys(pid: u32) -> Option<(u64, u64)> {
    user_sys_at(&pid.to_string())
}

/// Every thread of a process: (name, utime + stime in clock ticks), from
/// `/proc/PID/task/*/`. Threads of the same name are kept apart (one entry each).
pub fn thread_cpu(pid: u32) -> Vec<(u32, String, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let tid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
        let (u, s) = user_sys_at(&format!("{pid}/task/{tid}"))?;
        Some((tid, name.trim_end().to_string(), u + s))
    })
    .collect()
}

/// The parent's PID of a process (`/proc/PID/stat`, the 4th field).
pub fn parent_pid(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A process's command name (`/proc/PID/comm`).
pub fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// A process's arguments (`/proc/PID/cmdline`), its program first.
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Every process's PID, from the numeric entries of `/proc`.
pub fn pids() -> Result<Vec<u32>> {
    Ok(std::fs::read_dir("/proc")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect())
}

/// The libibverbs providers a process has mapped (`pid`, or `"self"`): the file names of its
/// mappings under a `libibverbs/` directory, sorted.
pub fn libibverbs_providers_mapped(pid: &str) -> Vec<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut files: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("/libibverbs/"))
        .filter_map(|p| p.rsplit('/').next().map(str::to_string))
        .collect();
    files.sort();
    files.dedup();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_from_proc_as_the_kernel_says() {
        let me = std::process::id();
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() } as u32;
        assert_eq!(parent_pid(me), Some(parent));
        assert!(cpu_ticks(me).is_some());
        assert!(pids().expect("/proc").contains(&me));
        // The test binary's name, cut to the kernel's 15 bytes of comm.
        let exe = std::env::current_exe().expect("current_exe");
        let name = exe.file_name().and_then(|n| n.to_str()).expect("name");
        assert_eq!(comm(me).as_deref(), Some(&name[..name.len().min(15)]));
        assert_eq!(cmdline(me).len(), std::env::args().count());
    }

    #[test]
    fn a_process_that_is_gone_gives_nothing() {
        // PIDs above pid_max (at most 2^22) never exist.
        let gone = 1 << 23;
        assert_eq!(cpu_ticks(gone), None);
        assert_eq!(parent_pid(gone), None);
        assert_eq!(comm(gone), None);
        assert!(cmdline(gone).is_empty());
    }
}
