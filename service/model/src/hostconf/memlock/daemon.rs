//! The daemon's own file in `limits.d`: what it writes and what it reads back (what became of
//! its lines in a resolution is `resolve.rs`'s `daemon_report`).

use serde::Serialize;

use super::lex::{interpret_value, parse_line, Fields};
use super::*;

/// The daemon's file: a header, then `@group soft memlock S` and `@group hard memlock H`.
pub fn render_daemon_file(
    group: &str,
    soft: MemlockValue,
    hard: MemlockValue,
) -> Result<String, MemlockError> {
    validate_group(group)?;
    validate(soft, hard)?;
    Ok(format!(
        "# Managed by rdma-managerd: the locked-memory limit (KiB) of login sessions of members
# of group {group}. RDMA pins the memory it registers, and pinned memory counts against this
# limit. Changes apply to sessions opened afterwards (check with \"ulimit -l\").
# This file is rewritten: change it with rdma-tui or over D-Bus, not by hand.
# Named zz-... so that pam_limits reads it after the other files here: a later group
# entry replaces an earlier one, but an entry for a particular user always wins.
@{group} soft memlock {}
@{group} hard memlock {}
",
        soft.conf_text(),
        hard.conf_text()
    ))
}

/// The daemon's own settings in its file: the last `@group soft|hard memlock` line of each
/// type, read as pam_limits reads it; `None` where the file sets none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DaemonSettings {
    pub soft: Option<MemlockValue>,
    pub hard: Option<MemlockValue>,
}

pub fn read_daemon_file(bytes: &[u8], group: &str) -> DaemonSettings {
    let mut out = DaemonSettings {
        soft: None,
        hard: None,
    };
    let domain = format!("@{group}");
    for l in conf_lines::lines(bytes) {
        let Fields::Entry {
            domain: d,
            ltype,
            item,
            value,
            ..
        } = parse_line(l.body)
        else {
            continue;
        };
        if d != domain || item != "memlock" {
            continue;
        }
        let Ok(v) = interpret_value(&value) else {
            continue;
        };
        if matches!(ltype.as_str(), "soft" | "-") {
            out.soft = Some(v);
        }
        if matches!(ltype.as_str(), "hard" | "-") {
            out.hard = Some(v);
        }
    }
    out
}
