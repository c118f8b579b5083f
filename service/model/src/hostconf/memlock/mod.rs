//! The locked-memory limit (RLIMIT_MEMLOCK) that pam_limits gives a user's login sessions,
//! resolved from `/etc/security/limits.conf` and `/etc/security/limits.d/*.conf`, and the
//! daemon's own file there (the guide's `@rdma soft memlock unlimited` /
//! `@rdma hard memlock unlimited`). RDMA pins the memory it registers, and pinned pages count
//! against this limit.
//!
//! The rules are pam_limits' own: linux-pam `modules/pam_limits/pam_limits.c` at commit
//! 70846c3a (v1.7.2-47), `parse_config_file()`, `process_limit()`, `parse_uid_range()`,
//! `split()`, `read_limits_dir()` and `pam_sm_open_session()`; limits.conf(5) and
//! pam_limits(8) of the same tree.
//!
//! - Files: `limits.conf` first, then every `limits.d/*.conf` (a glob, so names starting with
//!   `.` are left out) sorted by `strcmp` of the base name (C-locale byte order). A missing
//!   `limits.conf` is skipped since Linux-PAM 1.5.3 (commit 14ea1011); 1.5.2 and older fail
//!   the session instead.
//! - A line: leading white space is skipped, everything from the first `#` is a comment (also
//!   at the end of a line), then four fields: domain, type and item split on blanks and tabs,
//!   the value the rest of the line with blanks and tabs trimmed (the rest since 1.6.0, trimmed
//!   since 1.6.1; before 1.6.0 each field was one `%s` word, so a `\r` of a CRLF file ended
//!   the value and words after it were dropped: see [`NoteKind::VersionDependent`]). Type,
//!   item and value are compared case-insensitively, the domain exactly.
//! - Domains: a user name, `@group`, `*` (default), `%`/`%group` (maxlogins only: a memlock
//!   line with one does nothing), uid ranges `min:max`, `:uid`, `min:` and gid ranges
//!   `@min:max`, `@:gid`, `@min:`. `@:gid` looks at every group of the user, the other gid
//!   ranges only at the primary group. A uid range counts as a user entry.
//! - Priority: an entry replaces what is set so far for its type when its domain is at least
//!   as specific: user (and uid range) > group (and gid range) > `*`. So the last entry of
//!   the most specific kind wins, whatever the file. `-` sets soft then hard, but when the soft
//!   part is outranked the line stops there and does not set the hard limit either.
//! - Values (KiB for memlock): `unlimited`, `infinity`, `-1` and `-` mean no limit; otherwise
//!   `strtoull()`: leading digits count and anything after them is ignored (`64M` is 64 KiB), a
//!   value without digits makes the line ignored, a negative number wraps and becomes
//!   unlimited, as does anything at or above RLIM_INFINITY/1024. The limit set is value ×
//!   1024 bytes.
//! - `<domain> -` with nothing after it means "no limits": when it applies, pam_limits stops
//!   reading and sets no limit at all, not even those read before it.
//! - Finally a soft limit above the hard one is lowered to it. A limit no line sets is left as
//!   the process that opened the session had it ([`NOT_SET`]).
//!
//! Files: this one holds the types and the values; `lex` splits a line as pam_limits does,
//! `matching` decides whether a domain applies, `resolve` runs the pass over the files (and tells
//! what became of the daemon's lines), and `daemon` is the daemon's own file (written, read
//! back).
//!
//! Debian patches pam_limits so that group and `*` entries do not apply to root (the comment in
//! Debian's limits.conf); that is reported as a caveat for root, not modelled.

use serde::Serialize;

use super::conf_lines;
pub use super::conf_lines::Origin;
use rdma_manager_dbus::text::quote_capped;

mod daemon;
mod lex;
mod matching;
mod resolve;
#[cfg(test)]
mod tests;

pub use daemon::{read_daemon_file, render_daemon_file, DaemonSettings};
pub use resolve::{resolve, resolve_group_member};

/// The main file.
pub const LIMITS_CONF: &str = "/etc/security/limits.conf";
/// The drop-in directory.
pub const LIMITS_D: &str = "/etc/security/limits.d";
/// The daemon's file. pam_limits reads the drop-ins in C-locale order of their names and,
/// between two entries of the same kind (two group entries), the one read last wins; user
/// entries win over group entries wherever they are. "zz-" sorts after every name starting
/// with a digit (RHEL's `20-nproc.conf`, the usual `90-*`/`99-*`), an upper-case letter or a
/// lower-case letter before "z", so the daemon's `@rdma` entries override other group and `*`
/// entries, while an administrator's entry for a particular user still wins, as pam_limits
/// intends. A later name (`zzz.conf`, `~x.conf`) or a user entry can still beat it: the
/// resolution says so ([`DaemonOutcome`]).
pub const DAEMON_FILE_NAME: &str = "zz-rdma-manager.conf";
/// `LIMITS_D/DAEMON_FILE_NAME`.
pub const DAEMON_FILE: &str = "/etc/security/limits.d/zz-rdma-manager.conf";
/// The group the guide gives RDMA users.
pub const RDMA_GROUP: &str = "rdma";
/// pam_limits turns a KiB value at or above RLIM_INFINITY / 1024 (64-bit) into unlimited.
pub const KIB_LIMIT: u64 = u64::MAX / 1024;
/// What applies when no line sets a limit.
pub const NOT_SET: &str = "not set by the limits files: the session keeps the limit of the \
    process that opened it (for sshd or a getty, what systemd gives \
    services: DefaultLimitMEMLOCK= in system.conf, else the kernel's \
    default: 8 MiB on recent kernels, 64 KiB on older ones such as RHEL \
    8's)";

/// A memlock value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum MemlockValue {
    Kib(u64),
    Unlimited,
}

impl MemlockValue {
    /// A value the daemon may write: `unlimited`, or a whole number of KiB from 1 to below
    /// [`KIB_LIMIT`], digits only.
    pub fn parse_setting(text: &str) -> Result<MemlockValue, MemlockError> {
        if text == "unlimited" {
            return Ok(MemlockValue::Unlimited);
        }
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(MemlockError::BadValue(text.to_string()));
        }
        let kib: u64 = text.parse().map_err(|_| MemlockError::TooLarge {
            kib: text.to_string(),
        })?;
        let v = MemlockValue::Kib(kib);
        v.check()?;
        Ok(v)
    }

    fn check(self) -> Result<(), MemlockError> {
        match self {
            MemlockValue::Kib(0) => Err(MemlockError::BadValue("0".into())),
            MemlockValue::Kib(kib) if kib >= KIB_LIMIT => Err(MemlockError::TooLarge {
                kib: kib.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// As written in a limits file.
    pub fn conf_text(self) -> String {
        match self {
            MemlockValue::Kib(k) => k.to_string(),
            MemlockValue::Unlimited => "unlimited".into(),
        }
    }
}

impl std::fmt::Display for MemlockValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemlockValue::Kib(k) => write!(f, "{k} KiB"),
            MemlockValue::Unlimited => f.write_str("unlimited"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum MemlockError {
    #[error(
        "{q0} is not a memlock value: give a whole number of KiB (at least 1) or \"unlimited\""
    , q0 = quote_capped(.0))]
    BadValue(String),
    /// `kib`: the number as given (digits), so that a number too large even for 64 bits is
    /// quoted as the user typed it, not as the largest one.
    #[error(
        "{} KiB is more than pam_limits can set (it would become unlimited); give \"unlimited\"",
        capped_digits(.kib)
    )]
    TooLarge { kib: String },
    #[error("the soft memlock limit ({soft}) is above the hard limit ({hard}); pam_limits would lower it to the hard limit")]
    SoftAboveHard {
        soft: MemlockValue,
        hard: MemlockValue,
    },
    #[error("{q0} is not a group name the daemon writes: use letters, digits, '_', '.' and '-', not starting with '-', at most 32 bytes", q0 = quote_capped(.0))]
    BadGroup(String),
}

/// A number given as digits, cut to a readable length when longer than any limit could be.
fn capped_digits(digits: &str) -> String {
    const MAX: usize = 24;
    if digits.len() <= MAX {
        digits.to_string()
    } else {
        format!("{}… ({} digits)", &digits[..MAX], digits.len())
    }
}

/// Checks a pair the daemon is asked to write.
pub fn validate(soft: MemlockValue, hard: MemlockValue) -> Result<(), MemlockError> {
    soft.check()?;
    hard.check()?;
    if soft > hard {
        return Err(MemlockError::SoftAboveHard { soft, hard });
    }
    Ok(())
}

/// A group name safe in a limits line: pam_limits splits on blanks, cuts at `#` and reads `:`
/// as a range.
pub fn validate_group(group: &str) -> Result<(), MemlockError> {
    let ok = !group.is_empty()
        && group.len() <= 32
        && !group.starts_with('-')
        && group
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(MemlockError::BadGroup(group.to_string()))
    }
}

/// A group of the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRef {
    pub name: String,
    pub gid: Option<u32>,
}

/// Whom the limits are resolved for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// `None`: a member that matches no user entry (the question "what does a member of the
    /// group get").
    pub user: Option<String>,
    pub uid: Option<u32>,
    pub primary_gid: Option<u32>,
    /// Every group the user is in, the primary one included.
    pub groups: Vec<GroupRef>,
}

impl Subject {
    /// A user that is in `group` only (so it is also the primary group) and matches no user
    /// entry; its uid is unknown, so uid ranges are reported as conditional.
    pub fn member_of(group: &str, gid: Option<u32>) -> Subject {
        Subject {
            user: None,
            uid: None,
            primary_gid: gid,
            groups: vec![GroupRef {
                name: group.to_string(),
                gid,
            }],
        }
    }
}

/// pam_limits' kinds of domain, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DomainClass {
    /// A user name or a uid range (LIMITS_DEF_USER).
    User,
    /// `@group` or a gid range (LIMITS_DEF_GROUP).
    Group,
    /// `*` (LIMITS_DEF_DEFAULT).
    Default,
}

impl DomainClass {
    /// pam_limits' LIMITS_DEF_* numbers: lower wins.
    fn rank(self) -> u8 {
        match self {
            DomainClass::User => 0,
            DomainClass::Group => 1,
            DomainClass::Default => 4,
        }
    }
}

/// The soft or hard limit as resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LimitSetting {
    Set {
        value: MemlockValue,
        origin: Origin,
        domain: String,
        class: DomainClass,
    },
    /// No line sets it: see [`NOT_SET`].
    NotSet { why: String },
}

impl LimitSetting {
    pub fn value(&self) -> Option<MemlockValue> {
        match self {
            LimitSetting::Set { value, .. } => Some(*value),
            LimitSetting::NotSet { .. } => None,
        }
    }

    pub fn origin(&self) -> Option<&Origin> {
        match self {
            LimitSetting::Set { origin, .. } => Some(origin),
            LimitSetting::NotSet { .. } => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NoteKind {
    /// pam_limits skips the line (and logs why).
    Skipped,
    /// The line is read but does nothing for memlock.
    Ignored,
    /// Linux-PAM before 1.6.0 reads the value differently (one word, any white space ends it).
    VersionDependent,
}

/// Something about a line worth telling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineNote {
    pub origin: Origin,
    pub text: String,
    pub kind: NoteKind,
    pub reason: String,
}

/// An entry whose match depends on what is not known about the subject (its uid, a gid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConditionalEntry {
    pub origin: Origin,
    pub text: String,
    pub reason: String,
}

/// What became of the daemon's line for one type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum DaemonOutcome {
    /// Its value is the one the session gets.
    Effective,
    /// The daemon's file sets no such limit.
    NoEntry,
    /// Its lines do not match this user (not a member of the group).
    NotForThisUser,
    /// Another entry decides.
    Overridden {
        by: Origin,
        domain: String,
        reason: String,
    },
    /// A `<domain> -` line applies: pam_limits sets no limit at all.
    NoLimitsLine { by: Origin, domain: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DaemonFileReport {
    pub path: String,
    pub settings: DaemonSettings,
    pub soft: DaemonOutcome,
    pub hard: DaemonOutcome,
}

/// A `<domain> -` line that applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoLimitsLine {
    pub origin: Origin,
    pub domain: String,
}

/// The memlock limits a subject's sessions get, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemlockResolution {
    pub soft: LimitSetting,
    pub hard: LimitSetting,
    /// Both set and soft above hard: the session gets the hard value as its soft limit too.
    pub soft_lowered_to_hard: bool,
    /// A `<domain> -` line that applies: no limit is set at all.
    pub no_limits: Option<NoLimitsLine>,
    /// Entries that apply to some members and not others.
    pub conditional: Vec<ConditionalEntry>,
    pub notes: Vec<LineNote>,
    /// The files pam_limits reads, in order, up to where it stops.
    pub files_read: Vec<String>,
    /// `None` when the sources have no daemon file.
    pub daemon_file: Option<DaemonFileReport>,
    /// Things about the whole resolution (a missing limits.conf, root on Debian).
    pub caveats: Vec<String>,
}

/// A drop-in as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// What pam_limits reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LimitsSources {
    /// `/etc/security/limits.conf`, `None` when missing or not read.
    pub limits_conf: Option<Vec<u8>>,
    /// `limits.conf` exists but could not be read (not a regular file, unreadable): it is
    /// left out, and not called missing.
    pub limits_conf_unread: bool,
    /// Files of `limits.d`, in any order: they are filtered and sorted as pam_limits does.
    pub dropins: Vec<LimitsFile>,
}

/// The names in `limits.d` that pam_limits reads (`*.conf`, not hidden), in its order.
pub fn dropin_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = names
        .iter()
        .filter(|n| n.ends_with(".conf") && !n.starts_with('.'))
        .cloned()
        .collect();
    // strcmp order of the base names: byte order, which is String's order.
    out.sort();
    out
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
