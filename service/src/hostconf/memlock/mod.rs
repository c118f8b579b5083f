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
//! Debian patches pam_limits so that group and `*` entries do not apply to root (the comment in
//! Debian's limits.conf); that is reported as a caveat for root, not modelled.

use serde::Serialize;

use super::conf_lines;
pub use super::conf_lines::Origin;
use rdma_manager_dbus::text::quote_capped;

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
        let kib: u64 = text
            .parse()
            .map_err(|_| MemlockError::TooLarge { kib: u64::MAX })?;
        let v = MemlockValue::Kib(kib);
        v.check()?;
        Ok(v)
    }

    fn check(self) -> Result<(), MemlockError> {
        match self {
            MemlockValue::Kib(0) => Err(MemlockError::BadValue("0".into())),
            MemlockValue::Kib(kib) if kib >= KIB_LIMIT => Err(MemlockError::TooLarge { kib }),
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
    #[error(
        "{kib} KiB is more than pam_limits can set (it would become unlimited); give \"unlimited\""
    )]
    TooLarge { kib: u64 },
    #[error("the soft memlock limit ({soft}) is above the hard limit ({hard}); pam_limits would lower it to the hard limit")]
    SoftAboveHard {
        soft: MemlockValue,
        hard: MemlockValue,
    },
    #[error("{q0} is not a group name the daemon writes: use letters, digits, '_', '.' and '-', not starting with '-', at most 32 bytes", q0 = quote_capped(.0))]
    BadGroup(String),
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
    /// `/etc/security/limits.conf`, `None` when missing.
    pub limits_conf: Option<Vec<u8>>,
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

/// C's isspace in the C locale.
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C's `strtoul`/`strtoull` in base 10: `None` when no digit is read; the value wraps for a
/// minus sign and saturates on overflow (with `overflow` set, errno ERANGE). Returns the
/// value, whether it overflowed and how many bytes were used.
fn strtoull(s: &[u8]) -> Option<(u64, bool, usize)> {
    let mut i = s.iter().take_while(|b| c_space(**b)).count();
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for d in &s[i..i + digits] {
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(d - b'0')))
        {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        return Some((u64::MAX, true, i + digits));
    }
    Some((
        if negative { v.wrapping_neg() } else { v },
        false,
        i + digits,
    ))
}

/// A memlock value as `process_limit()` reads it (already lower-cased).
fn interpret_value(value: &str) -> Result<MemlockValue, ()> {
    if matches!(value, "-1" | "-" | "unlimited" | "infinity") {
        return Ok(MemlockValue::Unlimited);
    }
    let (v, _, _) = strtoull(value.as_bytes()).ok_or(())?;
    if v >= KIB_LIMIT {
        return Ok(MemlockValue::Unlimited);
    }
    Ok(MemlockValue::Kib(v))
}

/// `parse_uid_range()`: `Err` for a malformed range (the line is skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    None,
    /// `:id` (max only; min = max).
    One(u32),
    /// `min:`
    Min(u32),
    /// `min:max`
    MinMax(u32, u32),
}

fn parse_range(domain: &str) -> Result<Range, ()> {
    let Some(colon) = domain.find(':') else {
        return Ok(Range::None);
    };
    let max_text = &domain.as_bytes()[colon + 1..];
    let range = domain
        .strip_prefix('@')
        .or_else(|| domain.strip_prefix('%'))
        .unwrap_or(domain)
        .as_bytes();
    // uid_t/gid_t are 32 bits: strtoul's value is truncated when stored.
    let min = if range.first() == Some(&b':') {
        None
    } else {
        match strtoull(range) {
            Some((v, false, used)) if range.get(used) == Some(&b':') => Some(v as u32),
            _ => return Err(()),
        }
    };
    if max_text.is_empty() {
        return min.map(Range::Min).ok_or(());
    }
    let max = match strtoull(max_text) {
        Some((v, false, used)) if used == max_text.len() => v as u32,
        _ => return Err(()),
    };
    Ok(match min {
        None => Range::One(max),
        Some(min) => Range::MinMax(min, max),
    })
}

/// A line split as `parse_config_file()` and `split()` do.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fields {
    /// Blank or comment.
    Nothing,
    /// Neither four fields nor `<domain> -`.
    Invalid,
    /// A domain whose range cannot be read.
    BadRange(String),
    Entry {
        domain: String,
        ltype: String,
        item: String,
        value: String,
        /// The value as Linux-PAM before 1.6 read it: the fourth white-space separated word.
        old_value: Option<String>,
    },
    /// `<domain> -`
    NoLimits { domain: String },
}

fn parse_line(body: &[u8]) -> Fields {
    let start = body.iter().take_while(|b| c_space(**b)).count();
    let mut line = &body[start..];
    if let Some(hash) = line.iter().position(|b| *b == b'#') {
        line = &line[..hash];
    }
    if line.is_empty() {
        return Fields::Nothing;
    }
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    // strtok_r(" \t") three times: each token ends at a delimiter, which is consumed.
    let mut rest = line;
    let mut tokens: Vec<&[u8]> = Vec::new();
    for _ in 0..3 {
        let skip = rest.iter().take_while(|b| blank(b)).count();
        rest = &rest[skip..];
        if rest.is_empty() {
            break;
        }
        let len = rest.iter().take_while(|b| !blank(b)).count();
        tokens.push(&rest[..len]);
        rest = rest.get(len + 1..).unwrap_or(&[]);
    }
    // strtok_r(NULL, "") takes the rest, then trim() strips blanks and tabs.
    let value = if tokens.len() == 3 {
        let lead = rest.iter().take_while(|b| blank(b)).count();
        let t = &rest[lead..];
        let t = &t[..t.len() - t.iter().rev().take_while(|b| blank(b)).count()];
        (!t.is_empty()).then_some(t)
    } else {
        None
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let Some(first) = tokens.first() else {
        return Fields::Nothing;
    };
    let domain = text(first);
    let ltype = tokens.get(1).map(|t| text(t).to_ascii_lowercase());
    if parse_range(&domain).is_err() {
        return Fields::BadRange(domain);
    }
    match (ltype, tokens.get(2), value) {
        (Some(ltype), Some(item), Some(value)) => {
            let old_value = line
                .split(|b| c_space(*b))
                .filter(|w| !w.is_empty())
                .nth(3)
                .map(|w| text(w).to_ascii_lowercase());
            Fields::Entry {
                domain,
                ltype,
                item: text(item).to_ascii_lowercase(),
                value: text(value).to_ascii_lowercase(),
                old_value,
            }
        }
        (Some(ltype), None, None) if ltype.starts_with('-') => Fields::NoLimits { domain },
        _ => Fields::Invalid,
    }
}

/// Whether a line's domain applies.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Match {
    Yes(DomainClass),
    No,
    Depends(String),
    /// `%` and `%group`: maxlogins only.
    Percent,
}

impl Subject {
    fn in_group(&self, name: &str) -> bool {
        self.groups.iter().any(|g| g.name == name)
    }

    fn in_gid(&self, gid: u32) -> Match {
        if self.groups.iter().any(|g| g.gid == Some(gid)) {
            Match::Yes(DomainClass::Group)
        } else if self.groups.iter().any(|g| g.gid.is_none()) {
            Match::Depends(format!(
                "applies if one of the user's groups has gid {gid}, which is not known here"
            ))
        } else {
            Match::No
        }
    }

    fn primary_in(&self, min: u32, max: Option<u32>, class: DomainClass) -> Match {
        match self.primary_gid {
            Some(g) => in_range(g, min, max, class),
            None => Match::Depends(format!(
                "applies to members whose primary group's gid is {}",
                range_text(min, max)
            )),
        }
    }

    fn uid_in(&self, min: u32, max: Option<u32>) -> Match {
        match self.uid {
            Some(u) => in_range(u, min, max, DomainClass::User),
            None => Match::Depends(format!(
                "applies to members whose uid is {}",
                range_text(min, max)
            )),
        }
    }
}

fn in_range(v: u32, min: u32, max: Option<u32>, class: DomainClass) -> Match {
    if v >= min && max.is_none_or(|m| v <= m) {
        Match::Yes(class)
    } else {
        Match::No
    }
}

fn range_text(min: u32, max: Option<u32>) -> String {
    match max {
        Some(m) if m == min => format!("{m}"),
        Some(m) => format!("from {min} to {m}"),
        None => format!("{min} or more"),
    }
}

/// `@group` and gid ranges, alike in both kinds of line.
fn match_group(group: &str, range: Range, subject: &Subject) -> Match {
    match range {
        Range::None if subject.in_group(group) => Match::Yes(DomainClass::Group),
        Range::None => Match::No,
        Range::One(gid) => subject.in_gid(gid),
        Range::MinMax(min, max) => subject.primary_in(min, Some(max), DomainClass::Group),
        Range::Min(min) => subject.primary_in(min, None, DomainClass::Group),
    }
}

/// A uid range (a user entry); `None` for a domain without one.
fn match_uid_range(range: Range, subject: &Subject) -> Option<Match> {
    match range {
        Range::None => None,
        Range::One(uid) => Some(subject.uid_in(uid, Some(uid))),
        Range::MinMax(min, max) => Some(subject.uid_in(min, Some(max))),
        Range::Min(min) => Some(subject.uid_in(min, None)),
    }
}

/// The domain of a four-field line (`parse_config_file()`'s `i == 4` branch).
fn match_entry(domain: &str, subject: &Subject) -> Match {
    // Already checked by parse_line.
    let range = parse_range(domain).unwrap_or(Range::None);
    if subject.user.as_deref() == Some(domain) {
        return Match::Yes(DomainClass::User);
    }
    if let Some(group) = domain.strip_prefix('@') {
        return match_group(group, range, subject);
    }
    if domain.starts_with('%') {
        return Match::Percent;
    }
    match_uid_range(range, subject).unwrap_or(if domain == "*" {
        Match::Yes(DomainClass::Default)
    } else {
        Match::No
    })
}

/// The domain of a `<domain> -` line: the user, a group of theirs, or a uid range; never `*`.
fn match_no_limits(domain: &str, subject: &Subject) -> Match {
    let range = parse_range(domain).unwrap_or(Range::None);
    if subject.user.as_deref() == Some(domain) {
        return Match::Yes(DomainClass::User);
    }
    if let Some(group) = domain.strip_prefix('@') {
        return match_group(group, range, subject);
    }
    // Here '%' is not special: "%:5 -" is read as a uid range.
    match_uid_range(range, subject).unwrap_or(Match::No)
}

#[derive(Debug, Clone)]
struct Slot {
    class: DomainClass,
    value: MemlockValue,
    origin: Origin,
    domain: String,
}

/// A daemon-file entry that matched, for the outcome.
#[derive(Debug, Clone)]
struct DaemonHit {
    soft: bool,
    hard: bool,
}

#[derive(Default)]
struct State {
    soft: Option<Slot>,
    hard: Option<Slot>,
    no_limits: Option<NoLimitsLine>,
    conditional: Vec<ConditionalEntry>,
    notes: Vec<LineNote>,
    files_read: Vec<String>,
    daemon_hits: Vec<DaemonHit>,
}

impl State {
    fn note(&mut self, origin: &Origin, text: &str, kind: NoteKind, reason: impl Into<String>) {
        self.notes.push(LineNote {
            origin: origin.clone(),
            text: text.to_string(),
            kind,
            reason: reason.into(),
        });
    }

    /// `process_limit()`'s last step for memlock.
    fn apply(&mut self, ltype: &str, slot: Slot, text: &str) {
        let outranks = |held: &Option<Slot>| {
            held.as_ref()
                .is_some_and(|h| h.class.rank() < slot.class.rank())
        };
        let soft = matches!(ltype, "soft" | "-");
        let hard = matches!(ltype, "hard" | "-");
        if soft {
            if outranks(&self.soft) {
                if hard {
                    let origin = slot.origin.clone();
                    self.note(
                        &origin,
                        text,
                        NoteKind::Ignored,
                        "a '-' line whose soft part is outranked by an earlier, more specific \
                        entry stops there: pam_limits does not set its hard part either",
                    );
                }
                return;
            }
            self.soft = Some(slot.clone());
        }
        if hard && !outranks(&self.hard) {
            self.hard = Some(slot);
        }
    }

    /// One line; `false` when pam_limits stops reading.
    fn line(&mut self, origin: Origin, body: &[u8], subject: &Subject, daemon: bool) -> bool {
        let fields = parse_line(body);
        let text = String::from_utf8_lossy(body).trim_end().to_string();
        match fields {
            Fields::Nothing => true,
            Fields::Invalid => {
                self.note(
                    &origin,
                    &text,
                    NoteKind::Skipped,
                    "not a limit line: pam_limits wants <domain> <type> <item> <value>, or \
                    <domain> - (no limits)",
                );
                true
            }
            Fields::BadRange(domain) => {
                self.note(
                    &origin,
                    &text,
                    NoteKind::Skipped,
                    format!(
                        "{domain_q} is not a valid uid or gid range",
                        domain_q = quote_capped(&domain)
                    ),
                );
                true
            }
            Fields::NoLimits { domain } => match match_no_limits(&domain, subject) {
                Match::Yes(_) => {
                    self.no_limits = Some(NoLimitsLine { origin, domain });
                    false
                }
                Match::Depends(reason) => {
                    self.conditional.push(ConditionalEntry {
                        origin,
                        text,
                        reason: format!("{reason}; for them pam_limits sets no limit at all"),
                    });
                    true
                }
                _ => true,
            },
            Fields::Entry {
                domain,
                ltype,
                item,
                value,
                old_value,
            } => {
                if item != "memlock" {
                    return true;
                }
                let m = match_entry(&domain, subject);
                if m == Match::No {
                    return true;
                }
                if !matches!(ltype.as_str(), "soft" | "hard" | "-") {
                    self.note(
                        &origin,
                        &text,
                        NoteKind::Skipped,
                        format!(
                            "unknown limit type {ltype_q}: use soft, hard or -",
                            ltype_q = quote_capped(&ltype)
                        ),
                    );
                    return true;
                }
                let read = interpret_value(&value);
                let old = old_value.as_deref().map(interpret_value);
                if old.is_some_and(|o| o != read) {
                    let show = |r: Result<MemlockValue, ()>| {
                        r.map_or("the line skipped".to_string(), |v| v.to_string())
                    };
                    self.note(
                        &origin,
                        &text,
                        NoteKind::VersionDependent,
                        format!(
                            "Linux-PAM 1.6.0 and later read the value {value_q} as {}, older \
                            versions (RHEL 9's 1.5.1, Debian 12's 1.5.2) read only its first word: \
                            {}",
                            show(read),
                            show(old.unwrap_or(Err(()))),
                            value_q = quote_capped(&value)
                        ),
                    );
                }
                let Ok(v) = read else {
                    let why = format!(
                        "{value_q} is not a limit value: pam_limits logs \"wrong limit value\" \
                         and skips the line",
                        value_q = quote_capped(&value)
                    );
                    self.note(&origin, &text, NoteKind::Skipped, why);
                    return true;
                };
                let class = match m {
                    Match::Yes(c) => c,
                    Match::Depends(reason) => {
                        self.conditional.push(ConditionalEntry {
                            origin,
                            text,
                            reason,
                        });
                        return true;
                    }
                    Match::Percent => {
                        self.note(
                            &origin,
                            &text,
                            NoteKind::Ignored,
                            "'%' domains only set maxlogins",
                        );
                        return true;
                    }
                    Match::No => return true,
                };
                if daemon {
                    self.daemon_hits.push(DaemonHit {
                        soft: matches!(ltype.as_str(), "soft" | "-"),
                        hard: matches!(ltype.as_str(), "hard" | "-"),
                    });
                }
                self.apply(
                    &ltype,
                    Slot {
                        class,
                        value: v,
                        origin,
                        domain,
                    },
                    &text,
                );
                true
            }
        }
    }
}

/// The memlock limits `subject` gets from `sources`, as pam_limits computes them.
pub fn resolve(sources: &LimitsSources, subject: &Subject) -> MemlockResolution {
    let mut st = State::default();
    let mut caveats = Vec::new();
    let mut files: Vec<(&str, &[u8])> = Vec::new();
    match &sources.limits_conf {
        Some(b) => files.push((LIMITS_CONF, b)),
        None => caveats.push(format!(
            "{LIMITS_CONF} is missing: Linux-PAM 1.5.3 and later skip it, older \
            versions (RHEL 9's 1.5.1, Debian 12's 1.5.2) fail the session instead"
        )),
    }
    let mut dropins: Vec<&LimitsFile> = sources
        .dropins
        .iter()
        .filter(|f| {
            let n = base_name(&f.path);
            n.ends_with(".conf") && !n.starts_with('.')
        })
        .collect();
    dropins.sort_by(|a, b| base_name(&a.path).cmp(base_name(&b.path)));
    files.extend(
        dropins
            .iter()
            .map(|f| (f.path.as_str(), f.bytes.as_slice())),
    );
    'files: for (path, bytes) in &files {
        st.files_read.push(path.to_string());
        let daemon = *path == DAEMON_FILE;
        for l in conf_lines::lines(bytes) {
            let origin = Origin {
                file: path.to_string(),
                line: l.number,
            };
            if !st.line(origin, l.body, subject, daemon) {
                break 'files;
            }
        }
    }
    if subject.uid == Some(0) || subject.user.as_deref() == Some("root") {
        caveats.push(
            "Debian's pam_limits does not apply group and '*' entries to root: only \
            entries naming root count there"
                .into(),
        );
    }
    let daemon_file = sources
        .dropins
        .iter()
        .find(|f| f.path == DAEMON_FILE)
        .map(|f| daemon_report(&st, f));
    let setting = |s: &Option<Slot>| match (&st.no_limits, s) {
        (Some(n), _) => LimitSetting::NotSet {
            why: format!(
                "{} (\"{} -\") tells pam_limits to set no limits for this user; the \
                    limit is {NOT_SET}",
                n.origin, n.domain
            ),
        },
        (None, Some(s)) => LimitSetting::Set {
            value: s.value,
            origin: s.origin.clone(),
            domain: s.domain.clone(),
            class: s.class,
        },
        (None, None) => LimitSetting::NotSet {
            why: NOT_SET.to_string(),
        },
    };
    let soft = setting(&st.soft);
    let hard = setting(&st.hard);
    let soft_lowered_to_hard = matches!((soft.value(), hard.value()), (Some(s), Some(h)) if s > h);
    MemlockResolution {
        soft,
        hard,
        soft_lowered_to_hard,
        no_limits: st.no_limits.clone(),
        conditional: st.conditional,
        notes: st.notes,
        files_read: st.files_read,
        daemon_file,
        caveats,
    }
}

/// The memlock limits of a member of `group` who matches no user entry.
pub fn resolve_group_member(
    sources: &LimitsSources,
    group: &str,
    gid: Option<u32>,
) -> MemlockResolution {
    resolve(sources, &Subject::member_of(group, gid))
}

fn daemon_report(st: &State, file: &LimitsFile) -> DaemonFileReport {
    let group_of_file = read_daemon_group(&file.bytes);
    let settings = group_of_file.as_deref().map_or(
        DaemonSettings {
            soft: None,
            hard: None,
        },
        |g| read_daemon_file(&file.bytes, g),
    );
    let outcome = |has: bool, hit: bool, slot: &Option<Slot>| -> DaemonOutcome {
        if !has {
            return DaemonOutcome::NoEntry;
        }
        if let Some(n) = &st.no_limits {
            return DaemonOutcome::NoLimitsLine {
                by: n.origin.clone(),
                domain: n.domain.clone(),
            };
        }
        if !hit {
            return DaemonOutcome::NotForThisUser;
        }
        match slot {
            Some(s) if s.origin.file == DAEMON_FILE => DaemonOutcome::Effective,
            Some(s) => {
                let reason = if s.class == DomainClass::User {
                    format!(
                        "the user entry {} outranks group entries wherever it is",
                        s.domain
                    )
                } else {
                    format!(
                        "{} is read after {DAEMON_FILE_NAME} (C-locale order of the names), and \
                            the last entry of the same kind wins",
                        base_name(&s.origin.file)
                    )
                };
                DaemonOutcome::Overridden {
                    by: s.origin.clone(),
                    domain: s.domain.clone(),
                    reason,
                }
            }
            // The daemon's line matched but set nothing: a '-' line cut short cannot happen in
            // the daemon's own file; be explicit rather than claim it is effective.
            None => DaemonOutcome::NotForThisUser,
        }
    };
    let soft_hit = st.daemon_hits.iter().any(|h| h.soft);
    let hard_hit = st.daemon_hits.iter().any(|h| h.hard);
    DaemonFileReport {
        path: file.path.clone(),
        settings,
        soft: outcome(settings.soft.is_some(), soft_hit, &st.soft),
        hard: outcome(settings.hard.is_some(), hard_hit, &st.hard),
    }
}

/// The group the daemon's file is about: the first `@group` domain of a memlock line.
fn read_daemon_group(bytes: &[u8]) -> Option<String> {
    conf_lines::lines(bytes).find_map(|l| match parse_line(l.body) {
        Fields::Entry { domain, item, .. } if item == "memlock" => {
            domain.strip_prefix('@').map(str::to_string)
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_LIMITS_CONF: &str = include_str!("../testdata/host_setup/debian12-limits.conf");
    const RHEL_LIMITS_CONF: &str =
        include_str!("../testdata/host_setup/linux-pam-1.5.1-limits.conf");
    const RHEL_NPROC: &str = include_str!("../testdata/host_setup/rhel-20-nproc.conf");

    fn dropin(name: &str, text: &str) -> LimitsFile {
        LimitsFile {
            path: format!("{LIMITS_D}/{name}"),
            bytes: text.as_bytes().to_vec(),
        }
    }

    fn daemon(soft: MemlockValue, hard: MemlockValue) -> LimitsFile {
        LimitsFile {
            path: DAEMON_FILE.into(),
            bytes: render_daemon_file(RDMA_GROUP, soft, hard)
                .unwrap()
                .into_bytes(),
        }
    }

    fn sources(main: Option<&str>, dropins: Vec<LimitsFile>) -> LimitsSources {
        LimitsSources {
            limits_conf: main.map(|m| m.as_bytes().to_vec()),
            dropins,
        }
    }

    fn member(s: &LimitsSources) -> MemlockResolution {
        resolve_group_member(s, RDMA_GROUP, None)
    }

    fn set(r: &LimitSetting) -> (MemlockValue, String) {
        match r {
            LimitSetting::Set { value, origin, .. } => (*value, origin.to_string()),
            LimitSetting::NotSet { why } => panic!("not set: {why}"),
        }
    }

    use MemlockValue::{Kib, Unlimited};

    const MAIN: &str = "/etc/security/limits.conf";

    #[test]
    fn distribution_defaults_set_no_memlock() {
        for s in [
            sources(Some(DEBIAN_LIMITS_CONF), vec![]),
            sources(
                Some(RHEL_LIMITS_CONF),
                vec![dropin("20-nproc.conf", RHEL_NPROC)],
            ),
        ] {
            let r = member(&s);
            assert_eq!(
                r.soft,
                LimitSetting::NotSet {
                    why: NOT_SET.into()
                }
            );
            assert_eq!(
                r.hard,
                LimitSetting::NotSet {
                    why: NOT_SET.into()
                }
            );
            assert!(r.notes.is_empty(), "{:?}", r.notes);
            assert!(r.conditional.is_empty() && r.caveats.is_empty());
            assert_eq!(r.daemon_file, None);
        }
        assert!(NOT_SET.contains("kernel"));
        let r = member(&sources(
            Some(RHEL_LIMITS_CONF),
            vec![dropin("20-nproc.conf", RHEL_NPROC)],
        ));
        assert_eq!(r.files_read, [MAIN, "/etc/security/limits.d/20-nproc.conf"]);
    }

    #[test]
    fn the_guides_lines_in_limits_conf() {
        let main = format!(
            "{RHEL_LIMITS_CONF}@rdma soft memlock unlimited\n@rdma hard memlock unlimited\n"
        );
        let r = member(&sources(
            Some(&main),
            vec![dropin("20-nproc.conf", RHEL_NPROC)],
        ));
        assert_eq!(set(&r.soft), (Unlimited, format!("{MAIN}:62")));
        assert_eq!(set(&r.hard), (Unlimited, format!("{MAIN}:63")));
        assert!(matches!(
            &r.soft,
            LimitSetting::Set { class: DomainClass::Group, domain, .. } if domain == "@rdma"
        ));
        // Someone not in rdma gets nothing from them.
        let other = resolve(
            &sources(Some(&main), vec![]),
            &Subject::member_of("users", None),
        );
        assert_eq!(other.soft.value(), None);
    }

    #[test]
    fn the_daemon_file_wins_over_other_group_and_default_entries() {
        let s = sources(
            Some("*\thard\tmemlock\t64\n@rdma hard memlock 1024\n"),
            vec![
                dropin("90-hpc.conf", "@rdma soft memlock 2048\n* soft memlock 8\n"),
                daemon(Kib(1_048_576), Unlimited),
                dropin("20-nproc.conf", RHEL_NPROC),
            ],
        );
        let r = member(&s);
        assert_eq!(set(&r.soft), (Kib(1_048_576), format!("{DAEMON_FILE}:7")));
        assert_eq!(set(&r.hard), (Unlimited, format!("{DAEMON_FILE}:8")));
        let d = r.daemon_file.unwrap();
        assert_eq!(
            (d.soft, d.hard),
            (DaemonOutcome::Effective, DaemonOutcome::Effective)
        );
        assert_eq!(
            d.settings,
            DaemonSettings {
                soft: Some(Kib(1_048_576)),
                hard: Some(Unlimited)
            }
        );
        assert_eq!(
            r.files_read,
            [
                MAIN,
                "/etc/security/limits.d/20-nproc.conf",
                "/etc/security/limits.d/90-hpc.conf",
                DAEMON_FILE
            ]
        );
    }

    /// pam_limits: a user entry outranks a group entry wherever it is, so an entry in
    /// limits.conf beats the daemon's file for that user, and the resolution says so.
    #[test]
    fn a_user_entry_in_another_file_beats_the_daemon_file() {
        let s = sources(
            Some("alice hard memlock 4096\n"),
            vec![daemon(Unlimited, Unlimited)],
        );
        let alice = Subject {
            user: Some("alice".into()),
            uid: Some(1001),
            primary_gid: Some(1001),
            groups: vec![
                GroupRef {
                    name: "alice".into(),
                    gid: Some(1001),
                },
                GroupRef {
                    name: "rdma".into(),
                    gid: Some(990),
                },
            ],
        };
        let r = resolve(&s, &alice);
        assert_eq!(set(&r.hard), (Kib(4096), format!("{MAIN}:1")));
        assert_eq!(set(&r.soft), (Unlimited, format!("{DAEMON_FILE}:7")));
        assert!(r.soft_lowered_to_hard);
        let d = r.daemon_file.unwrap();
        assert_eq!(d.soft, DaemonOutcome::Effective);
        match d.hard {
            DaemonOutcome::Overridden { by, domain, reason } => {
                assert_eq!(by.to_string(), format!("{MAIN}:1"));
                assert_eq!(domain, "alice");
                assert!(reason.contains("outranks group entries"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // A member that matches no user entry is not affected.
        let r = member(&s);
        assert_eq!(r.daemon_file.unwrap().hard, DaemonOutcome::Effective);
    }

    #[test]
    fn a_later_file_overrides_the_daemon_file_for_its_kind() {
        let s = sources(
            Some(""),
            vec![
                dropin("zzz-site.conf", "@rdma - memlock 128\n"),
                daemon(Unlimited, Unlimited),
            ],
        );
        let r = member(&s);
        assert_eq!(
            set(&r.soft),
            (Kib(128), format!("{LIMITS_D}/zzz-site.conf:1"))
        );
        assert_eq!(set(&r.hard).0, Kib(128));
        match r.daemon_file.unwrap().soft {
            DaemonOutcome::Overridden { reason, .. } => {
                assert!(
                    reason.contains("zzz-site.conf is read after zz-rdma-manager.conf"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        // An earlier drop-in of the same kind does not.
        let s = sources(
            Some(""),
            vec![
                dropin("99-site.conf", "@rdma - memlock 128\n"),
                daemon(Unlimited, Unlimited),
            ],
        );
        let d = member(&s).daemon_file.unwrap();
        assert_eq!(
            (d.soft, d.hard),
            (DaemonOutcome::Effective, DaemonOutcome::Effective)
        );
    }

    #[test]
    fn a_no_limits_line_stops_pam_limits() {
        let s = sources(Some("* - \n@rdma -\n"), vec![daemon(Unlimited, Unlimited)]);
        let r = member(&s);
        let origin = Origin {
            file: MAIN.into(),
            line: 2,
        };
        assert_eq!(
            r.no_limits,
            Some(NoLimitsLine {
                origin: origin.clone(),
                domain: "@rdma".into()
            })
        );
        assert!(matches!(&r.soft, LimitSetting::NotSet { why } if why.contains("no limits")));
        assert_eq!(r.files_read, [MAIN]);
        let d = r.daemon_file.unwrap();
        assert_eq!(
            d.hard,
            DaemonOutcome::NoLimitsLine {
                by: origin,
                domain: "@rdma".into()
            }
        );
        // "* -" alone never applies; the daemon's file is read and effective.
        let r = member(&sources(Some("* -\n"), vec![daemon(Unlimited, Unlimited)]));
        assert_eq!(r.no_limits, None);
        assert_eq!(set(&r.soft).0, Unlimited);
    }

    #[test]
    fn odd_but_valid_lines() {
        let main = "\
  @rdma\tsoft\tmemlock\t1024   # pinned buffers\n\
@rdma HARD MemLock UNLIMITED\n\
\n\
   # a comment with @rdma soft memlock 1\n";
        let r = member(&sources(Some(main), vec![]));
        assert_eq!(set(&r.soft), (Kib(1024), format!("{MAIN}:1")));
        assert_eq!(set(&r.hard), (Unlimited, format!("{MAIN}:2")));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        for (value, want) in [
            ("64M", Kib(64)),
            ("-1", Unlimited),
            ("-", Unlimited),
            ("Infinity", Unlimited),
            ("-5", Unlimited),
            ("+7", Kib(7)),
            ("0", Kib(0)),
            ("18014398509481983", Unlimited),
            ("18014398509481982", Kib(18_014_398_509_481_982)),
            ("99999999999999999999999", Unlimited),
            ("1024 extra words", Kib(1024)),
        ] {
            let r = member(&sources(
                Some(&format!("@rdma soft memlock {value}\n")),
                vec![],
            ));
            assert_eq!(r.soft.value(), Some(want), "{value}");
        }
    }

    #[test]
    fn dash_type_and_default_entries() {
        // '*' alone applies to everyone, as a default entry.
        let r = member(&sources(Some("*  soft  memlock  64\n"), vec![]));
        assert!(matches!(
            r.soft,
            LimitSetting::Set {
                value: Kib(64),
                class: DomainClass::Default,
                ..
            }
        ));
        assert_eq!(r.hard.value(), None);
        // '-' sets both, and a later group line of one type replaces only that type.
        let r = member(&sources(
            Some("@rdma\t-\tmemlock\tunlimited\n"),
            vec![dropin("50-site.conf", "@rdma hard memlock 4096\n")],
        ));
        assert_eq!(set(&r.soft), (Unlimited, format!("{MAIN}:1")));
        assert_eq!(
            set(&r.hard),
            (Kib(4096), format!("{LIMITS_D}/50-site.conf:1"))
        );
        assert!(r.soft_lowered_to_hard);
    }

    #[test]
    fn lines_pam_limits_skips_or_ignores() {
        let main = "\
@rdma soft memlock abc\n\
@rdma soft\n\
@rdma both memlock 5\n\
%rdma hard memlock 5\n\
1000:abc hard memlock 5\n\
@rdma hard nofile 5\n\
bob hard memlock 5\n";
        let r = member(&sources(Some(main), vec![]));
        assert_eq!(r.soft.value(), None);
        assert_eq!(r.hard.value(), None);
        let kinds: Vec<(u32, NoteKind)> = r.notes.iter().map(|n| (n.origin.line, n.kind)).collect();
        assert_eq!(
            kinds,
            [
                (1, NoteKind::Skipped),
                (2, NoteKind::Skipped),
                (3, NoteKind::Skipped),
                (4, NoteKind::Ignored),
                (5, NoteKind::Skipped),
            ]
        );
        assert!(r.notes[0].reason.contains("wrong limit value"));
        assert!(r.notes[3].reason.contains("maxlogins"));
    }

    /// Linux-PAM 1.6.0+ keeps a CRLF file's `\r` in the value, so `unlimited\r` is a wrong
    /// value there, while older versions (sscanf) read `unlimited`.
    #[test]
    fn crlf_values_depend_on_the_version() {
        let r = member(&sources(
            Some("@rdma soft memlock unlimited\r\n@rdma hard memlock 2048\r\n"),
            vec![],
        ));
        assert_eq!(r.soft.value(), None);
        assert_eq!(r.hard.value(), Some(Kib(2048)));
        let kinds: Vec<(u32, NoteKind)> = r.notes.iter().map(|n| (n.origin.line, n.kind)).collect();
        assert_eq!(
            kinds,
            [(1, NoteKind::VersionDependent), (1, NoteKind::Skipped)]
        );
        assert!(
            r.notes[0].reason.contains("unlimited"),
            "{}",
            r.notes[0].reason
        );
        // Words after the value: the same split.
        let r = member(&sources(
            Some("@rdma soft memlock unlimited please\n"),
            vec![],
        ));
        assert_eq!(r.soft.value(), None);
        assert_eq!(r.notes[0].kind, NoteKind::VersionDependent);
    }

    /// process_limit(): for '-', a soft part outranked by an earlier, more specific entry
    /// returns before the hard part is looked at.
    #[test]
    fn a_dash_line_cut_short_sets_no_hard_limit() {
        let s = sources(
            Some("alice soft memlock 10\n"),
            vec![dropin("x.conf", "@rdma - memlock 20\n")],
        );
        let alice = Subject {
            user: Some("alice".into()),
            uid: None,
            primary_gid: None,
            groups: vec![GroupRef {
                name: "rdma".into(),
                gid: None,
            }],
        };
        let r = resolve(&s, &alice);
        assert_eq!(set(&r.soft).0, Kib(10));
        assert_eq!(r.hard.value(), None);
        assert_eq!(r.notes.len(), 1);
        assert_eq!(r.notes[0].kind, NoteKind::Ignored);
        let r = member(&s);
        assert_eq!(
            (r.soft.value(), r.hard.value()),
            (Some(Kib(20)), Some(Kib(20)))
        );
    }

    #[test]
    fn uid_and_gid_ranges() {
        let main = "\
@:990 hard memlock 64\n\
1000: soft memlock 32\n\
@900:999 soft memlock 16\n";
        // rdma's gid known (990): both gid entries apply, the uid range depends on the member.
        let r = resolve_group_member(&sources(Some(main), vec![]), RDMA_GROUP, Some(990));
        assert_eq!(set(&r.hard), (Kib(64), format!("{MAIN}:1")));
        assert_eq!(set(&r.soft), (Kib(16), format!("{MAIN}:3")));
        assert_eq!(r.conditional.len(), 1);
        assert_eq!(r.conditional[0].origin.line, 2);
        assert!(r.conditional[0].reason.contains("uid is 1000 or more"));
        // Gid unknown: the gid entries are conditional too.
        let r = member(&sources(Some(main), vec![]));
        assert_eq!((r.soft.value(), r.hard.value()), (None, None));
        assert_eq!(r.conditional.len(), 3);
        // A known user: the uid range is a user entry and outranks the group's.
        let u = Subject {
            user: Some("carol".into()),
            uid: Some(1500),
            primary_gid: Some(990),
            groups: vec![GroupRef {
                name: "rdma".into(),
                gid: Some(990),
            }],
        };
        let r = resolve(&sources(Some(main), vec![]), &u);
        assert_eq!(set(&r.soft), (Kib(32), format!("{MAIN}:2")));
        assert!(matches!(
            r.soft,
            LimitSetting::Set {
                class: DomainClass::User,
                ..
            }
        ));
        // A uid-range "no limits" line that may apply is conditional.
        let r = member(&sources(
            Some("1000:2000 -\n@rdma soft memlock 1\n"),
            vec![],
        ));
        assert_eq!(r.no_limits, None);
        assert_eq!(r.conditional.len(), 1);
        assert_eq!(set(&r.soft).0, Kib(1));
    }

    #[test]
    fn drop_in_order_is_pam_limits_order() {
        let names: Vec<String> = [
            "zzz.conf",
            "zz-rdma-manager.conf",
            "a.conf",
            "A.conf",
            "9-b.conf",
            "10-a.conf",
            ".hidden.conf",
            "notes.txt",
            "x.conf.rpmsave",
            "20-nproc.conf",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            dropin_names(&names),
            [
                "10-a.conf",
                "20-nproc.conf",
                "9-b.conf",
                "A.conf",
                "a.conf",
                "zz-rdma-manager.conf",
                "zzz.conf"
            ]
        );
        // resolve() orders and filters by itself.
        let s = sources(
            None,
            vec![
                dropin("b.conf", "@rdma soft memlock 2\n"),
                dropin(".x.conf", "@rdma soft memlock 3\n"),
                dropin("a.conf", "@rdma soft memlock 1\n"),
                dropin("c.conf.bak", "@rdma soft memlock 4\n"),
            ],
        );
        let r = member(&s);
        assert_eq!(set(&r.soft).0, Kib(2));
        assert_eq!(r.files_read.len(), 2);
        assert!(r.caveats[0].contains("missing"));
    }

    #[test]
    fn rendering_and_reading_back() {
        let text = render_daemon_file(RDMA_GROUP, Kib(65536), Unlimited).unwrap();
        assert!(text.starts_with("# Managed by rdma-managerd"));
        assert!(text.ends_with("@rdma soft memlock 65536\n@rdma hard memlock unlimited\n"));
        assert!(text
            .lines()
            .all(|l| l.starts_with('#') || l.starts_with("@rdma ")));
        assert_eq!(
            read_daemon_file(text.as_bytes(), RDMA_GROUP),
            DaemonSettings {
                soft: Some(Kib(65536)),
                hard: Some(Unlimited)
            }
        );
        let r = member(&sources(None, vec![daemon(Kib(65536), Unlimited)]));
        assert_eq!(set(&r.soft), (Kib(65536), format!("{DAEMON_FILE}:7")));
        // A daemon file setting only one type: the other is NoEntry.
        let only_hard = LimitsFile {
            path: DAEMON_FILE.into(),
            bytes: b"@rdma hard memlock unlimited\n".to_vec(),
        };
        let d = member(&sources(None, vec![only_hard])).daemon_file.unwrap();
        assert_eq!(
            (d.soft, d.hard),
            (DaemonOutcome::NoEntry, DaemonOutcome::Effective)
        );
        // Not a member: the daemon's lines do not apply.
        let r = resolve(
            &sources(None, vec![daemon(Unlimited, Unlimited)]),
            &Subject::member_of("users", None),
        );
        assert_eq!(r.daemon_file.unwrap().soft, DaemonOutcome::NotForThisUser);
    }

    #[test]
    fn values_and_groups_are_validated() {
        assert_eq!(MemlockValue::parse_setting("unlimited"), Ok(Unlimited));
        assert_eq!(MemlockValue::parse_setting("1"), Ok(Kib(1)));
        for bad in [
            "",
            "0",
            "-1",
            "+5",
            "64M",
            " 5",
            "infinity",
            "Unlimited",
            "1.5",
        ] {
            assert!(MemlockValue::parse_setting(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            MemlockValue::parse_setting("18014398509481983"),
            Err(MemlockError::TooLarge {
                kib: 18_014_398_509_481_983
            })
        );
        assert!(MemlockValue::parse_setting("99999999999999999999999").is_err());
        assert_eq!(
            render_daemon_file(RDMA_GROUP, Unlimited, Kib(1024)),
            Err(MemlockError::SoftAboveHard {
                soft: Unlimited,
                hard: Kib(1024)
            })
        );
        assert!(render_daemon_file(RDMA_GROUP, Kib(0), Kib(1)).is_err());
        assert!(render_daemon_file(RDMA_GROUP, Kib(1), Kib(1)).is_ok());
        for bad in [
            "",
            "-x",
            "rd ma",
            "rdma#",
            "1000:",
            "@rdma",
            &"g".repeat(33),
        ] {
            assert!(
                render_daemon_file(bad, Unlimited, Unlimited).is_err(),
                "{bad:?}"
            );
        }
        let msg = MemlockError::SoftAboveHard {
            soft: Unlimited,
            hard: Kib(1024),
        }
        .to_string();
        assert!(
            msg.contains("unlimited") && msg.contains("1024 KiB"),
            "{msg}"
        );
    }

    #[test]
    fn root_on_debian_is_a_caveat() {
        let root = Subject {
            user: Some("root".into()),
            uid: Some(0),
            primary_gid: Some(0),
            groups: vec![GroupRef {
                name: "root".into(),
                gid: Some(0),
            }],
        };
        let r = resolve(&sources(Some(DEBIAN_LIMITS_CONF), vec![]), &root);
        assert!(r.caveats.iter().any(|c| c.contains("Debian")));
    }

    #[test]
    fn c_parsers() {
        assert_eq!(strtoull(b"  42x"), Some((42, false, 4)));
        assert_eq!(strtoull(b"-1"), Some((u64::MAX, false, 2)));
        assert_eq!(strtoull(b"x"), None);
        assert_eq!(strtoull(b"-"), None);
        assert_eq!(parse_range("alice"), Ok(Range::None));
        assert_eq!(parse_range(":5"), Ok(Range::One(5)));
        assert_eq!(parse_range("@:5"), Ok(Range::One(5)));
        assert_eq!(parse_range("5:"), Ok(Range::Min(5)));
        assert_eq!(parse_range("@5:9"), Ok(Range::MinMax(5, 9)));
        assert_eq!(parse_range("%:7"), Ok(Range::One(7)));
        for bad in [":", "@:", "a:5", "5:a", "5:6:7", "5x:6"] {
            assert_eq!(parse_range(bad), Err(()), "{bad:?}");
        }
    }
}
