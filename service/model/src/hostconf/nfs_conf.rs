//! NFS over RDMA on the server: the effective `[nfsd]` `rdma` and `rdma-port` of
//! `/etc/nfs.conf` and its drop-ins, read as nfs-utils reads them, and the daemon's drop-in
//! `/etc/nfs.conf.d/zz-rdma-manager.conf` (the guide's `rdma=y`, `rdma-port=20049`).
//!
//! Sources: linux-nfs/nfs-utils at commit 7acc8b94 (after nfs-utils-2.9.2-rc6):
//! `support/nfs/conffile.c` (`conf_init_file()`, `conf_load_file()`, `conf_init_dir()`,
//! `conf_parse()`, `conf_parse_line()`, `conf_set()`, `conf_get_section()`,
//! `conf_get_bool()`), `utils/nfsd/nfsd.c` and `utils/nfsd/nfssvc.c` (rpc.nfsd),
//! `utils/nfsdctl/nfsdctl.c` (`configure_listeners()`), `systemd/nfs.conf.man`.
//!
//! Files, in order: `/usr/etc/nfs.conf` and `/usr/etc/nfs.conf.d/*.conf` (nfs-utils 2.7.1 and
//! later), then `/etc/nfs.conf`, then `/etc/nfs.conf.d/*.conf` (2.5.3 and later). Reading
//! `/etc/nfs.conf`, when it exists, first discards everything read from `/usr/etc`, its
//! drop-ins included (`conf_load_file()` frees all bindings), which nfs.conf(5)'s "later
//! settings override earlier settings" does not say. Drop-ins: regular files or links whose
//! name does not start with `.` and ends in `.conf` (and is longer than that), in
//! `versionsort` order (glibc `strverscmp`: `9-a.conf` before `10-a.conf`). The last
//! assignment read wins (since 2.5.3; before, the first one did and there were no drop-ins:
//! RHEL 8's 2.3.3 reads `/etc/nfs.conf` only, so the daemon's drop-in does nothing there).
//!
//! A line (`conf_parse_line()`): leading white space skipped; blank, `#` and `;` lines are
//! comments; `[ section ]` with blanks allowed inside the brackets, anything after `]`
//! ignored, `[section "arg"]` a subsection (not seen by nfsd); `tag = value`, blanks around
//! `=` ignored, a value in `"..."` or `'...'` taken literally, otherwise cut at the first `#`
//! and then the first `;` and trailing white space removed (so a CRLF file works). An empty
//! value is ignored: it does not unset an earlier one. `include = file` reads another file in
//! place (relative to the including file; `-file` optional). A backslash before the newline
//! continues a line; a last line without a newline is ignored. Section and tag names compare
//! case-insensitively. A value starting with `$` names a variable of nfsd's environment or
//! of `[environment]`.
//!
//! How nfsd uses the keys (rpc.nfsd since 2.4.2, commit 0240df0e; nfsdctl, which
//! nfs-server.service tries first since 2.8.1): `rdma` is a boolean (`1 t true y yes on` /
//! `0 f false n no off`, any case; anything else counts as false). When true, the RDMA
//! listener uses `rdma-port`, by default the service `nfsrdma`, port 20049 in
//! /etc/services. For compatibility with the older form (`rdma=nfsrdma`, `rdma=20049`),
//! rpc.nfsd reads a non-true `rdma` as the port itself; nfsdctl does not, so that form only
//! works with rpc.nfsd, and rpc.nfsd logs "unable to interpret port name n" for `rdma=n`.
//! Command-line options of rpc.nfsd (`--rdma[=port]`) override the files.

use std::cmp::Ordering;

use serde::Serialize;

pub use super::conf_lines::Origin;

pub const NFS_CONF: &str = "/etc/nfs.conf";
pub const NFS_CONF_D: &str = "/etc/nfs.conf.d";
pub const USR_NFS_CONF: &str = "/usr/etc/nfs.conf";
pub const USR_NFS_CONF_D: &str = "/usr/etc/nfs.conf.d";
/// The daemon's drop-in. Drop-ins are read after `/etc/nfs.conf`, in `versionsort` order,
/// and the last assignment wins; "zz-" sorts after names starting with a digit (the usual
/// `10-*`), an upper-case letter or a lower-case letter before "z" (Debian's `local.conf`,
/// written from `/etc/default/nfs-*` on upgrade), so the daemon's setting overrides theirs
/// and RHEL 9's `rdma=y` in `/etc/nfs.conf`. A later name (`zzz.conf`) still wins: the
/// resolution says so ([`KeyOutcome::Overridden`]).
pub const DAEMON_DROPIN_NAME: &str = "zz-rdma-manager.conf";
/// `NFS_CONF_D/DAEMON_DROPIN_NAME`.
pub const DAEMON_DROPIN: &str = "/etc/nfs.conf.d/zz-rdma-manager.conf";
/// `nfsrdma` in /etc/services (IANA), rpc.nfsd's and nfsdctl's default RDMA port.
pub const NFSRDMA_PORT: u16 = 20049;
/// Includes deeper than this are not followed (nfs-utils has no limit and recurses forever
/// on a loop).
const MAX_INCLUDE_DEPTH: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum NfsConfError {
    #[error("{0} is not a port for NFS over RDMA: give 1 to 65535 (the standard port is 20049)")]
    BadPort(u32),
}

/// What the daemon is asked to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NfsRdmaRequest {
    Enable { port: u16 },
    Disable,
}

/// The daemon's drop-in. Disabling writes `rdma=n`, which overrides an `rdma=y` elsewhere
/// (RHEL 9's nfs.conf has one); when nothing else enables RDMA
/// ([`NfsRdmaResolution::without_daemon_dropin`]), removing the file is the quieter choice,
/// since rpc.nfsd logs an error for `rdma=n` (see the module documentation).
pub fn render_dropin(request: NfsRdmaRequest) -> Result<String, NfsConfError> {
    let body = match request {
        NfsRdmaRequest::Enable { port: 0 } => return Err(NfsConfError::BadPort(0)),
        NfsRdmaRequest::Enable { port } => format!("rdma=y\nrdma-port={port}\n"),
        NfsRdmaRequest::Disable => "rdma=n\n".to_string(),
    };
    Ok(format!(
        "# Managed by rdma-managerd: NFS over RDMA on this NFS server (rpc.nfsd, nfsdctl).
# Applies when nfs-server.service next starts. This file is rewritten: change it with
# rdma-tui or over D-Bus, not by hand.
# Named zz-... so that it is read after /etc/nfs.conf and the other files here: the last
# assignment read wins.
[nfsd]
{body}"
    ))
}

/// Checks a port the daemon is asked to write.
pub fn validate_port(port: u32) -> Result<u16, NfsConfError> {
    match u16::try_from(port) {
        Ok(p) if p >= 1 => Ok(p),
        _ => Err(NfsConfError::BadPort(port)),
    }
}

/// glibc's `strverscmp()`, the order of `scandir(..., versionsort)`: digit runs compare as
/// numbers, runs with leading zeros as fractions.
pub fn versionsort_cmp(a: &str, b: &str) -> Ordering {
    // Classes: 0 other, 1 digit 1-9, 2 '0'. States (multiples of 3): normal, integral,
    // fractional, leading zeros.
    const S_N: usize = 0;
    const S_I: usize = 3;
    const S_F: usize = 6;
    const S_Z: usize = 9;
    const NEXT: [usize; 12] = [S_N, S_I, S_Z, S_N, S_I, S_I, S_N, S_F, S_F, S_N, S_F, S_Z];
    // CMP = 2, LEN = 3, else the result.
    const RESULT: [i8; 36] = [
        2, 2, 2, 2, 3, 2, 2, 2, 2, //
        2, -1, -1, 1, 3, 3, 1, 3, 3, //
        2, 2, 2, 2, 2, 2, 2, 2, 2, //
        2, 1, 1, -1, 2, 2, -1, 2, 2,
    ];
    let class = |c: u8| usize::from(c == b'0') + usize::from(c.is_ascii_digit());
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = 0;
    let (mut c1, mut c2) = (at(a, 0), at(b, 0));
    let mut state = S_N + class(c1);
    while c1 == c2 {
        if c1 == 0 {
            return Ordering::Equal;
        }
        state = NEXT[state];
        i += 1;
        c1 = at(a, i);
        c2 = at(b, i);
        state += class(c1);
    }
    let diff = i32::from(c1) - i32::from(c2);
    match RESULT[state * 3 + class(c2)] {
        2 => diff.cmp(&0),
        3 => {
            // The longer run of digits is the larger number.
            let mut j = i + 1;
            loop {
                let (d1, d2) = (at(a, j).is_ascii_digit(), at(b, j).is_ascii_digit());
                match (d1, d2) {
                    (true, true) => j += 1,
                    (true, false) => return Ordering::Greater,
                    (false, true) => return Ordering::Less,
                    (false, false) => return diff.cmp(&0),
                }
            }
        }
        r => r.cmp(&0),
    }
}

/// The names of a `nfs.conf.d` that nfs-utils reads, in its order.
pub fn dropin_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = names
        .iter()
        .filter(|n| !n.starts_with('.') && n.len() > ".conf".len() && n.ends_with(".conf"))
        .cloned()
        .collect();
    out.sort_by(|a, b| versionsort_cmp(a, b));
    out
}

/// A file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// What nfs-utils reads; `None` and absent entries are missing files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NfsConfSources {
    pub usr_etc_conf: Option<Vec<u8>>,
    /// Files of `/usr/etc/nfs.conf.d`, any order.
    pub usr_etc_dropins: Vec<ConfFile>,
    pub etc_conf: Option<Vec<u8>>,
    /// Files of `/etc/nfs.conf.d`, any order.
    pub etc_dropins: Vec<ConfFile>,
    /// Files named by `include` lines, by the path nfs-utils opens ([`include_paths`]).
    pub includes: Vec<ConfFile>,
}

/// The effective value of a key and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment {
    /// As written (after quotes and comments are removed).
    pub value: String,
    pub origin: Origin,
    /// For a `$name` value: what `[environment]` gives, unless nfsd's own environment has
    /// `name`.
    pub expanded: Option<String>,
    /// Earlier assignments it overrides, first read first.
    pub overrides: Vec<Origin>,
}

impl Assignment {
    /// The value nfsd uses.
    pub fn effective(&self) -> &str {
        self.expanded.as_deref().unwrap_or(&self.value)
    }
}

/// An RDMA port as rpc.nfsd reads it (`nfssvc_set_rdmaport()`): a service name from
/// /etc/services, else a decimal number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum RdmaPort {
    Number(u16),
    /// Looked up in /etc/services; `port` is known for `nfsrdma` only.
    Service {
        name: String,
        port: Option<u16>,
    },
    /// Neither: rpc.nfsd logs "unable to interpret port name" and starts no RDMA listener.
    Invalid {
        text: String,
        reason: String,
    },
}

impl RdmaPort {
    fn read(text: &str) -> RdmaPort {
        if text == "nfsrdma" {
            return RdmaPort::Service {
                name: text.into(),
                port: Some(NFSRDMA_PORT),
            };
        }
        let digits = text.strip_prefix('+').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return match digits
                .parse::<u32>()
                .ok()
                .and_then(|p| u16::try_from(p).ok())
            {
                Some(p) if p > 0 => RdmaPort::Number(p),
                _ => RdmaPort::Invalid {
                    text: text.into(),
                    reason: "a port number must be from 1 to 65535".into(),
                },
            };
        }
        let service_like = !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && text.bytes().any(|b| b.is_ascii_alphabetic());
        if service_like {
            RdmaPort::Service {
                name: text.into(),
                port: None,
            }
        } else {
            RdmaPort::Invalid {
                text: text.into(),
                reason: "neither a number nor a service name".into(),
            }
        }
    }

    /// The port number when it is known without /etc/services.
    pub fn number(&self) -> Option<u16> {
        match self {
            RdmaPort::Number(p) => Some(*p),
            RdmaPort::Service { port, .. } => *port,
            RdmaPort::Invalid { .. } => None,
        }
    }
}

/// Whether the NFS server listens for RDMA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum NfsRdmaState {
    /// `rdma` is true: rpc.nfsd and nfsdctl listen on `port`.
    Enabled { port: RdmaPort },
    /// `rdma` unset, false or not a boolean nor a usable port.
    Disabled,
    /// `rdma` holds a port (the form before nfs-utils 2.4.2): rpc.nfsd listens on it,
    /// nfsdctl (tried first by nfs-server.service since nfs-utils 2.8.1) does not.
    LegacyPort { port: RdmaPort },
}

/// Where the daemon's value of a key stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum KeyOutcome {
    /// The daemon's drop-in sets it and its value is the one used.
    Effective,
    /// The daemon's drop-in does not set it.
    NotSet,
    /// A file read after the daemon's sets it.
    Overridden { by: Origin },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DaemonDropinReport {
    pub rdma: KeyOutcome,
    pub rdma_port: KeyOutcome,
}

/// What nfs-utils warns about, or what else is worth knowing about a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NfsNote {
    pub origin: Origin,
    pub text: String,
}

/// The NFS server's RDMA settings, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NfsRdmaResolution {
    pub state: NfsRdmaState,
    /// `[nfsd] rdma`.
    pub rdma: Option<Assignment>,
    /// `[nfsd] rdma-port`.
    pub rdma_port: Option<Assignment>,
    /// The state without the daemon's drop-in: whether something else enables RDMA.
    pub without_daemon_dropin: NfsRdmaState,
    /// `None` when there is no daemon drop-in.
    pub daemon_dropin: Option<DaemonDropinReport>,
    pub notes: Vec<NfsNote>,
    /// Every file read, in order (includes where they are read).
    pub files_read: Vec<String>,
}

/// One `tag = value` that nfs-utils keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Binding {
    /// Lower-cased (conf_set).
    section: String,
    arg: Option<String>,
    tag: String,
    value: String,
    origin: Origin,
}

/// A logical line of `conf_parse()`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Parsed {
    Nothing,
    Section {
        name: String,
        arg: Option<String>,
    },
    /// `[` without `]`: no section until the next header.
    NoSection,
    Assign {
        tag: String,
        value: String,
    },
    Include {
        path: String,
        optional: bool,
    },
    Warn(String),
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn trim_end_by(mut b: &[u8], f: impl Fn(u8) -> bool) -> &[u8] {
    while let [rest @ .., last] = b {
        if f(*last) {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn parse_line(line: &[u8], in_section: bool) -> Parsed {
    let skip = line.iter().take_while(|b| is_space(**b)).count();
    let line = &line[skip..];
    match line.first() {
        None | Some(b'#') | Some(b';') => return Parsed::Nothing,
        Some(b'[') => {
            let inner = &line[1..];
            let inner = &inner[inner.iter().take_while(|b| is_blank(**b)).count()..];
            let Some(close) = inner.iter().position(|b| *b == b']') else {
                return Parsed::NoSection;
            };
            let inner = trim_end_by(&inner[..close], is_blank);
            return match inner.iter().position(|b| *b == b'"') {
                None => Parsed::Section {
                    name: text(inner),
                    arg: None,
                },
                Some(q) => {
                    let name = trim_end_by(&inner[..q], is_blank);
                    // `[name "arg` without the closing quote: nfs-utils warns but keeps the
                    // section, without a subsection.
                    let val = &inner[q + 1..];
                    let arg = val.iter().position(|b| *b == b'"').map(|e| text(&val[..e]));
                    Parsed::Section {
                        name: text(name),
                        arg,
                    }
                }
            };
        }
        Some(_) => {}
    }
    let Some(eq) = line.iter().position(|b| *b == b'=') else {
        return Parsed::Warn("line not empty and not an assignment: ignored".into());
    };
    if !in_section {
        return Parsed::Warn("assignment outside any section: ignored".into());
    }
    let tag = trim_end_by(&line[..eq], is_blank);
    let val = &line[eq + 1..];
    let val = &val[val.iter().take_while(|b| is_blank(**b)).count()..];
    let value = match val.first() {
        Some(q @ (b'"' | b'\'')) => match val[1..].iter().position(|b| b == q) {
            Some(e) => &val[1..1 + e],
            None => return Parsed::Warn("unmatched quotes: ignored".into()),
        },
        _ => {
            let mut v = val;
            if let Some(h) = v.iter().position(|b| *b == b'#') {
                v = &v[..h];
            }
            if let Some(s) = v.iter().position(|b| *b == b';') {
                v = &v[..s];
            }
            // Trailing white space, but never the first byte (`ptr > val`).
            let kept = trim_end_by(v, is_space).len().max(v.len().min(1));
            &v[..kept]
        }
    };
    if tag.is_empty() {
        return Parsed::Warn("missing tag in assignment: ignored".into());
    }
    let tag = text(tag);
    if tag.eq_ignore_ascii_case("include") {
        let (optional, path) = match value.strip_prefix(b"-") {
            Some(p) => (true, p),
            None => (false, value),
        };
        return Parsed::Include {
            path: text(path),
            optional,
        };
    }
    Parsed::Assign {
        tag,
        value: text(value),
    }
}

/// Logical lines: a backslash right before `\n` joins the next line; the last line is
/// dropped when it has no `\n`. Yields (first physical line, content).
fn logical_lines(bytes: &[u8]) -> (Vec<(u32, Vec<u8>)>, Option<u32>) {
    // conf_readfile() reads the whole file, conf_parse() stops at the first NUL.
    let bytes = &bytes[..bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len())];
    let mut out = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut start = 1u32;
    let mut physical = 1u32;
    for &b in bytes {
        if b == b'\n' {
            if cur.last() == Some(&b'\\') {
                cur.pop();
                cur.extend_from_slice(b"  ");
                physical += 1;
                continue;
            }
            out.push((start, std::mem::take(&mut cur)));
            physical += 1;
            start = physical;
        } else {
            cur.push(b);
        }
    }
    let unterminated = (!cur.is_empty()).then_some(start);
    (out, unterminated)
}

fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

/// The path nfs-utils opens for `include = path` in `file` (`relative_path()`).
fn include_target(file: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", dirname(file))
    }
}

struct Reader<'a> {
    sources: &'a NfsConfSources,
    bindings: Vec<Binding>,
    notes: Vec<NfsNote>,
    files_read: Vec<String>,
    /// Include targets that were not in the sources.
    missing_includes: Vec<String>,
}

impl Reader<'_> {
    fn note(&mut self, file: &str, line: u32, text: impl Into<String>) {
        self.notes.push(NfsNote {
            origin: Origin {
                file: file.to_string(),
                line,
            },
            text: text.into(),
        });
    }

    /// `conf_parse()` of one file with the section it inherits.
    fn file(
        &mut self,
        path: &str,
        bytes: &[u8],
        mut section: Option<(String, Option<String>)>,
        depth: usize,
    ) {
        self.files_read.push(path.to_string());
        let (lines, unterminated) = logical_lines(bytes);
        for (line, content) in lines {
            match parse_line(&content, section.is_some()) {
                Parsed::Nothing => {}
                Parsed::Section { name, arg } => section = Some((name, arg)),
                Parsed::NoSection => {
                    section = None;
                    self.note(
                        path,
                        line,
                        "non-matched ']': lines are ignored until the next section",
                    );
                }
                Parsed::Warn(w) => self.note(path, line, w),
                Parsed::Include {
                    path: target,
                    optional,
                } => {
                    let target = include_target(path, &target);
                    let found = self.sources.includes.iter().find(|f| f.path == target);
                    match found {
                        Some(_) if depth >= MAX_INCLUDE_DEPTH => {
                            let why = format!(
                                "include {target}: too deep, not followed (an include loop \
                                 makes nfs-utils recurse forever)"
                            );
                            self.note(path, line, why);
                        }
                        Some(f) => {
                            let f = f.clone();
                            self.file(&f.path, &f.bytes, section.clone(), depth + 1);
                        }
                        None => {
                            self.missing_includes.push(target.clone());
                            if !optional {
                                let why = format!(
                                    "include {target}: cannot be read (nfs-utils warns and goes on)"
                                );
                                self.note(path, line, why);
                            }
                        }
                    }
                }
                Parsed::Assign { tag, value } => {
                    let Some((name, arg)) = &section else {
                        continue;
                    };
                    // conf_set(): an empty value is dropped, it unsets nothing.
                    if value.is_empty() {
                        self.note(
                            path,
                            line,
                            format!("{tag} has an empty value: ignored, an earlier value stays"),
                        );
                        continue;
                    }
                    self.bindings.push(Binding {
                        section: name.to_ascii_lowercase(),
                        arg: arg.clone(),
                        tag,
                        value,
                        origin: Origin {
                            file: path.to_string(),
                            line,
                        },
                    });
                }
            }
        }
        if let Some(line) = unterminated {
            self.note(path, line, "last line has no newline: nfs-utils ignores it");
        }
    }

    /// The assignments of `section`/`tag` without a subsection, first read first.
    fn plain(&self, section: &str, tag: &str) -> Vec<&Binding> {
        self.bindings
            .iter()
            .filter(|b| {
                b.arg.is_none()
                    && b.section.eq_ignore_ascii_case(section)
                    && b.tag.eq_ignore_ascii_case(tag)
            })
            .collect()
    }

    fn get(&self, section: &str, tag: &str) -> Option<Assignment> {
        let all = self.plain(section, tag);
        let (last, earlier) = all.split_last()?;
        let expanded = last.value.strip_prefix('$').and_then(|name| {
            self.plain("environment", name)
                .last()
                .map(|b| b.value.clone())
        });
        Some(Assignment {
            value: last.value.clone(),
            origin: last.origin.clone(),
            expanded,
            overrides: earlier.iter().map(|b| b.origin.clone()).collect(),
        })
    }
}

/// `conf_get_bool()`: `None` for a value that is neither (the caller's default applies).
pub fn conf_bool(value: &str) -> Option<bool> {
    let v = value.to_ascii_lowercase();
    match v.as_str() {
        "1" | "t" | "true" | "y" | "yes" | "on" => Some(true),
        "0" | "f" | "false" | "n" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn state_of(rdma: Option<&Assignment>, port: Option<&Assignment>) -> NfsRdmaState {
    let Some(rdma) = rdma else {
        return NfsRdmaState::Disabled;
    };
    match conf_bool(rdma.effective()) {
        Some(true) => NfsRdmaState::Enabled {
            port: port.map_or(
                RdmaPort::Service {
                    name: "nfsrdma".into(),
                    port: Some(NFSRDMA_PORT),
                },
                |p| RdmaPort::read(p.effective()),
            ),
        },
        Some(false) => NfsRdmaState::Disabled,
        None => match RdmaPort::read(rdma.effective()) {
            RdmaPort::Invalid { .. } => NfsRdmaState::Disabled,
            port => NfsRdmaState::LegacyPort { port },
        },
    }
}

/// The files in nfs-utils' order: each `(path, bytes)`; `/usr/etc` is dropped when
/// `/etc/nfs.conf` exists, as `conf_load_file()` discards it.
fn files_in_order(s: &NfsConfSources) -> Vec<(String, Vec<u8>)> {
    let sorted = |files: &[ConfFile], dir: &str| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<&ConfFile> = files
            .iter()
            .filter(|f| {
                let name = f.path.rsplit('/').next().unwrap_or(&f.path);
                dirname(&f.path) == dir
                    && !name.starts_with('.')
                    && name.len() > ".conf".len()
                    && name.ends_with(".conf")
            })
            .collect();
        v.sort_by(|a, b| {
            versionsort_cmp(
                a.path.rsplit('/').next().unwrap_or(&a.path),
                b.path.rsplit('/').next().unwrap_or(&b.path),
            )
        });
        v.into_iter()
            .map(|f| (f.path.clone(), f.bytes.clone()))
            .collect()
    };
    let mut out = Vec::new();
    match &s.etc_conf {
        Some(b) => out.push((NFS_CONF.to_string(), b.clone())),
        None => {
            if let Some(b) = &s.usr_etc_conf {
                out.push((USR_NFS_CONF.to_string(), b.clone()));
            }
            out.extend(sorted(&s.usr_etc_dropins, USR_NFS_CONF_D));
        }
    }
    out.extend(sorted(&s.etc_dropins, NFS_CONF_D));
    out
}

fn read_all(sources: &NfsConfSources, skip_daemon: bool) -> Reader<'_> {
    let mut r = Reader {
        sources,
        bindings: Vec::new(),
        notes: Vec::new(),
        files_read: Vec::new(),
        missing_includes: Vec::new(),
    };
    for (path, bytes) in files_in_order(sources) {
        if skip_daemon && path == DAEMON_DROPIN {
            continue;
        }
        r.file(&path, &bytes, None, 0);
    }
    r
}

/// The paths of included files the sources do not hold yet. Read them (a missing one is
/// simply left out) into [`NfsConfSources::includes`] and ask again until this is empty.
pub fn include_paths(sources: &NfsConfSources) -> Vec<String> {
    let mut v = read_all(sources, false).missing_includes;
    v.sort();
    v.dedup();
    v.retain(|p| !sources.includes.iter().any(|f| &f.path == p));
    v
}

/// The NFS server's RDMA settings as nfs-utils reads `sources`.
pub fn resolve(sources: &NfsConfSources) -> NfsRdmaResolution {
    let r = read_all(sources, false);
    let rdma = r.get("nfsd", "rdma");
    let rdma_port = r.get("nfsd", "rdma-port");
    let state = state_of(rdma.as_ref(), rdma_port.as_ref());
    let mut notes = r.notes.clone();
    if sources.etc_conf.is_some()
        && (sources.usr_etc_conf.is_some() || !sources.usr_etc_dropins.is_empty())
    {
        notes.push(NfsNote {
            origin: Origin {
                file: USR_NFS_CONF.into(),
                line: 0,
            },
            text: format!(
                "{USR_NFS_CONF} and {USR_NFS_CONF_D} are read, then discarded: reading \
                {NFS_CONF} drops every setting read before it"
            ),
        });
    }
    if let (
        NfsRdmaState::Enabled {
            port: RdmaPort::Invalid { text, reason },
        },
        Some(p),
    ) = (&state, &rdma_port)
    {
        notes.push(NfsNote {
            origin: p.origin.clone(),
            text: format!("rdma-port={text}: {reason}; nfsd starts no RDMA listener"),
        });
    }
    for b in &r.bindings {
        let key = b.tag.to_ascii_lowercase();
        if b.section == "nfsd" && b.arg.is_some() && (key == "rdma" || key == "rdma-port") {
            notes.push(NfsNote {
                origin: b.origin.clone(),
                text: format!(
                    "{} is in a subsection [nfsd \"{}\"]: nfsd does not read it",
                    b.tag,
                    b.arg.as_deref().unwrap_or_default()
                ),
            });
        }
    }
    if let Some(a) = &rdma {
        if let Some(name) = a.value.strip_prefix('$') {
            notes.push(NfsNote {
                origin: a.origin.clone(),
                text: format!(
                    "rdma={}: a variable {name} in nfsd's environment would replace what \
                    [environment] says",
                    a.value
                ),
            });
        }
        if conf_bool(a.effective()) == Some(false) {
            notes.push(NfsNote {
                origin: a.origin.clone(),
                text: format!(
                    "rpc.nfsd also reads a false rdma as a port (the old form) and logs \
                    \"unable to interpret port name {}\"; nfsdctl does not",
                    a.effective()
                ),
            });
        }
        if conf_bool(a.effective()).is_none() {
            let text = match RdmaPort::read(a.effective()) {
                RdmaPort::Invalid { reason, .. } => format!(
                    "rdma={} is neither a boolean nor a port ({reason}): no RDMA listener",
                    a.effective()
                ),
                _ => format!(
                    "rdma={} is the form before nfs-utils 2.4.2 (a port): rpc.nfsd listens \
                    on it, nfsdctl does not; write rdma=y and rdma-port",
                    a.effective()
                ),
            };
            notes.push(NfsNote {
                origin: a.origin.clone(),
                text,
            });
        }
    }
    let daemon_dropin = sources
        .etc_dropins
        .iter()
        .any(|f| f.path == DAEMON_DROPIN)
        .then(|| {
            let outcome = |key: &str, eff: &Option<Assignment>| {
                let in_daemon = r
                    .plain("nfsd", key)
                    .iter()
                    .any(|b| b.origin.file == DAEMON_DROPIN);
                match eff {
                    _ if !in_daemon => KeyOutcome::NotSet,
                    Some(a) if a.origin.file == DAEMON_DROPIN => KeyOutcome::Effective,
                    Some(a) => KeyOutcome::Overridden {
                        by: a.origin.clone(),
                    },
                    None => KeyOutcome::NotSet,
                }
            };
            DaemonDropinReport {
                rdma: outcome("rdma", &rdma),
                rdma_port: outcome("rdma-port", &rdma_port),
            }
        });
    let without = read_all(sources, true);
    let without_daemon_dropin = state_of(
        without.get("nfsd", "rdma").as_ref(),
        without.get("nfsd", "rdma-port").as_ref(),
    );
    NfsRdmaResolution {
        state,
        rdma,
        rdma_port,
        without_daemon_dropin,
        daemon_dropin,
        notes,
        files_read: r.files_read,
    }
}

/// What the daemon's drop-in asks for, read back from its bytes; `None` when it sets no
/// `[nfsd] rdma`.
pub fn read_daemon_dropin(bytes: &[u8]) -> Option<NfsRdmaRequest> {
    let sources = NfsConfSources {
        etc_dropins: vec![ConfFile {
            path: DAEMON_DROPIN.into(),
            bytes: bytes.to_vec(),
        }],
        ..Default::default()
    };
    let r = read_all(&sources, false);
    let rdma = r.get("nfsd", "rdma")?;
    match state_of(Some(&rdma), r.get("nfsd", "rdma-port").as_ref()) {
        NfsRdmaState::Enabled { port } | NfsRdmaState::LegacyPort { port } => {
            port.number().map(|port| NfsRdmaRequest::Enable { port })
        }
        NfsRdmaState::Disabled => Some(NfsRdmaRequest::Disable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_NFS_CONF: &str = include_str!("testdata/host_setup/debian12-nfs.conf");
    const RHEL9_NFS_CONF: &str = include_str!("testdata/host_setup/rhel9-nfs.conf");
    const RHEL8_NFS_CONF: &str = include_str!("testdata/host_setup/rhel8-nfs-utils-2.3.3-nfs.conf");

    fn etc(main: &str, dropins: &[(&str, &str)]) -> NfsConfSources {
        NfsConfSources {
            etc_conf: Some(main.as_bytes().to_vec()),
            etc_dropins: dropins
                .iter()
                .map(|(n, t)| ConfFile {
                    path: format!("{NFS_CONF_D}/{n}"),
                    bytes: t.as_bytes().to_vec(),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn daemon(req: NfsRdmaRequest) -> String {
        render_dropin(req).unwrap()
    }

    fn at(a: &Option<Assignment>) -> (String, String) {
        let a = a.as_ref().expect("assignment");
        (a.value.clone(), a.origin.to_string())
    }

    const ON_20049: NfsRdmaState = NfsRdmaState::Enabled {
        port: RdmaPort::Number(20049),
    };

    #[test]
    fn debian_default_leaves_rdma_off() {
        let r = resolve(&etc(DEBIAN_NFS_CONF, &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert_eq!((r.rdma, r.rdma_port), (None, None));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(r.files_read, [NFS_CONF]);
        assert_eq!(r.daemon_dropin, None);
    }

    #[test]
    fn rhel9_default_turns_rdma_on() {
        let r = resolve(&etc(RHEL9_NFS_CONF, &[]));
        assert_eq!(r.state, ON_20049);
        assert_eq!(at(&r.rdma), ("y".into(), format!("{NFS_CONF}:77")));
        assert_eq!(at(&r.rdma_port), ("20049".into(), format!("{NFS_CONF}:78")));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn rhel8_file_is_all_comments() {
        let r = resolve(&etc(RHEL8_NFS_CONF, &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn the_daemon_dropin_enables_over_debian_and_its_local_conf() {
        let dropin = daemon(NfsRdmaRequest::Enable { port: 20049 });
        let s = etc(
            DEBIAN_NFS_CONF,
            &[
                (DAEMON_DROPIN_NAME, &dropin),
                ("local.conf", "[nfsd]\nthreads=16\nrdma=n\n"),
            ],
        );
        let r = resolve(&s);
        assert_eq!(r.state, ON_20049);
        assert_eq!(at(&r.rdma), ("y".into(), format!("{DAEMON_DROPIN}:7")));
        assert_eq!(
            r.rdma.as_ref().unwrap().overrides[0].to_string(),
            format!("{NFS_CONF_D}/local.conf:3")
        );
        assert_eq!(
            r.daemon_dropin,
            Some(DaemonDropinReport {
                rdma: KeyOutcome::Effective,
                rdma_port: KeyOutcome::Effective
            })
        );
        assert_eq!(r.without_daemon_dropin, NfsRdmaState::Disabled);
        assert_eq!(
            r.files_read,
            [NFS_CONF, "/etc/nfs.conf.d/local.conf", DAEMON_DROPIN]
        );
    }

    #[test]
    fn the_daemon_dropin_disables_over_rhel9() {
        let s = etc(
            RHEL9_NFS_CONF,
            &[(DAEMON_DROPIN_NAME, &daemon(NfsRdmaRequest::Disable))],
        );
        let r = resolve(&s);
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert_eq!(r.without_daemon_dropin, ON_20049);
        let d = r.daemon_dropin.unwrap();
        assert_eq!(d.rdma, KeyOutcome::Effective);
        assert_eq!(d.rdma_port, KeyOutcome::NotSet);
        // rdma-port stays what nfs.conf says; it does not matter while rdma is false.
        assert_eq!(at(&r.rdma_port).1, format!("{NFS_CONF}:78"));
        assert!(r
            .notes
            .iter()
            .any(|n| n.text.contains("unable to interpret port name n")));
    }

    #[test]
    fn a_later_dropin_overrides_the_daemons() {
        let s = etc(
            "",
            &[
                ("zzz-site.conf", "[nfsd]\nrdma = off\n"),
                (
                    DAEMON_DROPIN_NAME,
                    &daemon(NfsRdmaRequest::Enable { port: 20050 }),
                ),
            ],
        );
        let r = resolve(&s);
        assert_eq!(r.state, NfsRdmaState::Disabled);
        let d = r.daemon_dropin.unwrap();
        assert_eq!(
            d.rdma,
            KeyOutcome::Overridden {
                by: Origin {
                    file: format!("{NFS_CONF_D}/zzz-site.conf"),
                    line: 2
                }
            }
        );
        assert_eq!(d.rdma_port, KeyOutcome::Effective);
        assert_eq!(at(&r.rdma_port).0, "20050");
    }

    #[test]
    fn odd_but_valid_files() {
        let main = "\
; comment\r\n\
[ NFSD ]  # trailing text after the bracket is ignored\r\n\
\tRDMA  =   Yes   # on\r\n\
rdma-port = 20050 ; alternate\r\n\
[mountd]\r\n\
rdma = n\r\n\
[nfsd]\r\n\
Rdma-Port=\"20051\"\r\n";
        let r = resolve(&etc(main, &[]));
        assert_eq!(
            r.state,
            NfsRdmaState::Enabled {
                port: RdmaPort::Number(20051)
            }
        );
        assert_eq!(at(&r.rdma), ("Yes".into(), format!("{NFS_CONF}:3")));
        let port = r.rdma_port.unwrap();
        assert_eq!(port.origin.line, 8);
        assert_eq!(port.overrides.len(), 1);
        assert_eq!(port.overrides[0].line, 4);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        // A key repeated in one file: the last wins.
        let r = resolve(&etc("[nfsd]\nrdma=y\nrdma=n\n", &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert_eq!(at(&r.rdma).1, format!("{NFS_CONF}:3"));
        // Quotes keep what comment characters would cut; the single-quoted port is read.
        let r = resolve(&etc("[nfsd]\nrdma='y'\nrdma-port='20052#x'\n", &[]));
        assert_eq!(at(&r.rdma_port).0, "20052#x");
        assert!(matches!(
            r.state,
            NfsRdmaState::Enabled {
                port: RdmaPort::Invalid { .. }
            }
        ));
        assert!(r.notes.iter().any(|n| n.text.contains("no RDMA listener")));
    }

    #[test]
    fn old_forms_and_odd_values() {
        let state = |v: &str| resolve(&etc(&format!("[nfsd]\nrdma={v}\n"), &[])).state;
        assert_eq!(
            state("nfsrdma"),
            NfsRdmaState::LegacyPort {
                port: RdmaPort::Service {
                    name: "nfsrdma".into(),
                    port: Some(20049)
                }
            }
        );
        assert_eq!(
            state("20049"),
            NfsRdmaState::LegacyPort {
                port: RdmaPort::Number(20049)
            }
        );
        assert_eq!(state("70000"), NfsRdmaState::Disabled);
        assert_eq!(state("ON"), on_nfsrdma());
        for off in ["0", "f", "False", "N", "no", "OFF"] {
            assert_eq!(state(off), NfsRdmaState::Disabled, "{off}");
        }
        let r = resolve(&etc("[nfsd]\nrdma=20049\n", &[]));
        assert!(r.notes[0].text.contains("nfsdctl does not"));
        // An empty value does not unset an earlier one.
        let r = resolve(&etc("[nfsd]\nrdma=y\n", &[("x.conf", "[nfsd]\nrdma=\n")]));
        assert_eq!(r.state, on_nfsrdma());
        assert!(r.notes[0].text.contains("empty value"));
        // $name from [environment].
        let r = resolve(&etc("[environment]\nRDMA=yes\n[nfsd]\nrdma=$RDMA\n", &[]));
        assert_eq!(r.state, on_nfsrdma());
        assert_eq!(r.rdma.as_ref().unwrap().effective(), "yes");
        assert!(r.notes.iter().any(|n| n.text.contains("environment")));
    }

    /// rdma=y without rdma-port: the service nfsrdma.
    fn on_nfsrdma() -> NfsRdmaState {
        NfsRdmaState::Enabled {
            port: RdmaPort::Service {
                name: "nfsrdma".into(),
                port: Some(NFSRDMA_PORT),
            },
        }
    }

    #[test]
    fn headers_subsections_and_lines_nfs_utils_ignores() {
        let r = resolve(&etc("[nfsd \"eth0\"]\nrdma=y\n", &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert!(r.notes[0].text.contains("subsection"));
        let r = resolve(&etc("[nfsd\nrdma=y\n", &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        // A subsection without its closing quote: nfs-utils keeps the section alone.
        let r = resolve(&etc("[nfsd \"eth0]\nrdma=y\n", &[]));
        assert_eq!(r.state, on_nfsrdma());
        // Outside any section, no '=', no tag.
        let r = resolve(&etc("rdma=y\n[nfsd]\nrdma\n=y\n", &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert_eq!(
            r.notes.iter().map(|n| n.origin.line).collect::<Vec<_>>(),
            [1, 3, 4]
        );
    }

    #[test]
    fn last_line_continuations_and_nul() {
        let r = resolve(&etc("[nfsd]\nrdma=y", &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert!(r.notes[0].text.contains("no newline"));
        assert_eq!(r.notes[0].origin.line, 2);
        let r = resolve(&etc("[nfsd]\nrdma=\\\ny\nrdma-port=20050\n", &[]));
        assert_eq!(at(&r.rdma), ("y".into(), format!("{NFS_CONF}:2")));
        assert_eq!(at(&r.rdma_port).1, format!("{NFS_CONF}:4"));
        let r = resolve(&etc("[nfsd]\nrdma=n\n\0rdma=y\n", &[]));
        assert_eq!(r.state, NfsRdmaState::Disabled);
    }

    #[test]
    fn includes_are_read_in_place() {
        let mut s = etc(
            "[nfsd]\ninclude = nfs-rdma.conf\ninclude=-/etc/absent.conf\n",
            &[],
        );
        assert_eq!(
            include_paths(&s),
            ["/etc/absent.conf", "/etc/nfs-rdma.conf"]
        );
        s.includes.push(ConfFile {
            path: "/etc/nfs-rdma.conf".into(),
            bytes: b"rdma=y\ninclude=/etc/nfs-rdma.conf\n".to_vec(),
        });
        // The absent optional one stays absent; nothing else is asked for.
        assert_eq!(include_paths(&s), ["/etc/absent.conf"]);
        let r = resolve(&s);
        assert_eq!(r.state, on_nfsrdma());
        assert_eq!(at(&r.rdma).1, "/etc/nfs-rdma.conf:1");
        // The include loop is cut, with a note; the optional absent include is silent.
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].text.contains("too deep"));
        let missing = resolve(&etc("[nfsd]\ninclude=gone.conf\n", &[]));
        assert!(missing.notes[0].text.contains("/etc/gone.conf"));
    }

    #[test]
    fn usr_etc_is_dropped_when_etc_nfs_conf_exists() {
        let usr = |etc_conf: Option<&str>| NfsConfSources {
            usr_etc_conf: Some(b"[nfsd]\nrdma=y\n".to_vec()),
            usr_etc_dropins: vec![ConfFile {
                path: format!("{USR_NFS_CONF_D}/x.conf"),
                bytes: b"[nfsd]\nrdma-port=20050\n".to_vec(),
            }],
            etc_conf: etc_conf.map(|t| t.as_bytes().to_vec()),
            ..Default::default()
        };
        let r = resolve(&usr(None));
        assert_eq!(
            r.state,
            NfsRdmaState::Enabled {
                port: RdmaPort::Number(20050)
            }
        );
        assert_eq!(r.files_read, [USR_NFS_CONF, "/usr/etc/nfs.conf.d/x.conf"]);
        let r = resolve(&usr(Some("")));
        assert_eq!(r.state, NfsRdmaState::Disabled);
        assert!(r.notes[0].text.contains("discarded"));
    }

    #[test]
    fn dropins_are_read_in_versionsort_order() {
        let names: Vec<String> = [
            "zzz.conf",
            "zz-rdma-manager.conf",
            "local.conf",
            "10-a.conf",
            "9-a.conf",
            ".hidden.conf",
            ".conf",
            "x.conf~",
            "README",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            dropin_names(&names),
            [
                "9-a.conf",
                "10-a.conf",
                "local.conf",
                "zz-rdma-manager.conf",
                "zzz.conf"
            ]
        );
        // strverscmp(3)'s own example order.
        let sorted = ["000", "00", "01", "010", "09", "0", "1", "9", "10"];
        for w in sorted.windows(2) {
            assert_eq!(versionsort_cmp(w[0], w[1]), Ordering::Less, "{w:?}");
            assert_eq!(versionsort_cmp(w[1], w[0]), Ordering::Greater, "{w:?}");
        }
        assert_eq!(versionsort_cmp("a.conf", "a.conf"), Ordering::Equal);
        // resolve() sorts by itself: 10 after 9.
        let r = resolve(&etc(
            "",
            &[
                ("10-b.conf", "[nfsd]\nrdma=y\n"),
                ("9-a.conf", "[nfsd]\nrdma=n\n"),
            ],
        ));
        assert_eq!(r.state, on_nfsrdma());
    }

    #[test]
    fn rendering_round_trips_and_ports_are_checked() {
        let text = daemon(NfsRdmaRequest::Enable { port: 20049 });
        assert!(text.starts_with("# Managed by rdma-managerd"));
        assert!(text.ends_with("[nfsd]\nrdma=y\nrdma-port=20049\n"));
        for req in [
            NfsRdmaRequest::Enable { port: 20049 },
            NfsRdmaRequest::Enable { port: 1 },
            NfsRdmaRequest::Enable { port: 65535 },
            NfsRdmaRequest::Disable,
        ] {
            assert_eq!(read_daemon_dropin(daemon(req).as_bytes()), Some(req));
        }
        assert_eq!(read_daemon_dropin(b"# nothing\n"), None);
        assert_eq!(
            render_dropin(NfsRdmaRequest::Enable { port: 0 }),
            Err(NfsConfError::BadPort(0))
        );
        assert_eq!(validate_port(20049), Ok(20049));
        assert_eq!(validate_port(0), Err(NfsConfError::BadPort(0)));
        assert_eq!(validate_port(65536), Err(NfsConfError::BadPort(65536)));
        assert!(NfsConfError::BadPort(0).to_string().contains("20049"));
    }
}
