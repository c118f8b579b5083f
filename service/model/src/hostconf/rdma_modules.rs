//! `/etc/rdma/modules/<set>.conf`: the kernel modules rdma-core loads when RDMA hardware
//! appears (the guide's "Loading the kernel modules" step), read and edited in place.
//!
//! How the files are used (linux-rdma/rdma-core, `kernel-boot/`, commit 691953d8d, v64.0-61;
//! the module lists themselves unchanged since 2017):
//!
//! - `rdma-load-modules@.service.in` runs `systemd-modules-load /etc/rdma/modules/%I.conf`,
//!   one instance per file; nothing else reads them.
//! - Instances are started by name: `rdma-hw.target.in` wants `@rdma` (and udev's
//!   `rdma-ulp-modules.rules` wants `rdma-hw.target` for every device in the `infiniband`
//!   subsystem); the same rules want `@infiniband`, `@iwarp`, `@opa` and `@roce` when
//!   `rdma-description.rules` has set `ID_RDMA_INFINIBAND` etc. from the *driver* (mlx5_core
//!   sets both INFINIBAND and ROCE, so `infiniband.conf` is loaded on an Ethernet-only mlx5
//!   too); `iwpmd.service.in` wants `@iwpmd`. A file with any other name is loaded by nothing
//!   unless the administrator enables `rdma-load-modules@<name>.service`: see [`load_trigger`].
//!
//! How a line is read (systemd, `src/modules-load/modules-load.c`, `apply_file()`, as in
//! v219 and in current releases; modules-load.d(5)): each line is stripped of `" \t\n\r"` at
//! both ends; an empty line and a line whose first remaining character is `#` or `;` is
//! skipped; every other line is handed *whole* to `kmod_module_new_from_lookup()` as one
//! module name or alias. So there are no end-of-line comments and no module options: a line
//! `ib_ipoib foo=1` or `ib_ipoib # note` looks up a module literally called that, which is
//! not found and is skipped with an error in the journal (options belong in
//! `/etc/modprobe.d`). kmod compares names with `-` and `_` as the same character
//! (`alias_normalize()` in kmod's `shared/util.c`), and loads with
//! `KMOD_PROBE_APPLY_BLACKLIST`, so a module blacklisted in modprobe.d is not loaded from
//! here either.
//!
//! A module *listed but disabled* is a comment that holds only a module name, the way
//! rdma-core ships `# ib_srpt` and `# rds_rdma`. The rule that tells it from a comment
//! sentence: after the comment marks and blanks, the text is a single word that is a valid
//! module name ([`validate_module_name`]) with no upper-case letter and starting with a
//! letter. A one-word lower-case remark (`# todo`) is therefore read as a disabled module
//! `todo`; it is never changed unless that module is asked for by name.
//!
//! The comment lines right above an entry (no blank line between) are its description, as in
//! rdma-core's files (`# NFS over RDMA server support` above `svcrdma`). When that block is
//! the file's own header (it starts at line 1), only its last line is the description.
//!
//! What "enabled" does and does not mean: the module is loaded when the file's service
//! instance next runs (at boot, or when a matching device appears); disabling a module only
//! stops this file from loading it, it does not unload it, and the kernel or another file may
//! still load it. When dracut's `50rdma` module is in the initramfs it holds its own copy of
//! the files, which only `dracut -f` refreshes.

use std::path::PathBuf;

use serde::Serialize;

use super::conf_lines::{self, file_eol, terminate_last_line};
use rdma_manager_dbus::text::quote_capped;

/// Where rdma-core keeps the module lists.
pub const MODULES_DIR: &str = "/etc/rdma/modules";

/// The longest module name: `MODULE_NAME_LEN` (64 - sizeof(unsigned long), linux
/// `include/linux/module.h`) minus its NUL, on a 64-bit kernel.
pub const MODULE_NAME_MAX: usize = 55;

/// The comment above a module the daemon appends when it knows no better description.
pub const APPENDED_COMMENT: &str = "Added by rdma-managerd";

/// The files rdma-core ships and the description of every module they name, so that a
/// module removed by hand and enabled again gets its usual comment back.
const KNOWN_DESCRIPTIONS: &[(&str, &str)] = &[
    ("ib_ipoib", "InfiniBand over IP netdevice"),
    (
        "ib_umad",
        "Access to fabric management SMPs and GMPs from userspace.",
    ),
    ("ib_srpt", "SCSI Remote Protocol target support"),
    ("opa_vnic", "Omnipath Ethernet Virtual NIC netdevice"),
    ("ib_iser", "iSCSI over RDMA client support"),
    ("ib_isert", "iSCSI over RDMA target support"),
    (
        "ib_uverbs",
        "User access to RDMA verbs (supports libibverbs)",
    ),
    (
        "rdma_ucm",
        "User access to RDMA connection management (supports librdmacm)",
    ),
    ("rds_rdma", "RDS over RDMA support"),
    ("xprtrdma", "NFS over RDMA client support"),
    ("svcrdma", "NFS over RDMA server support"),
];

/// Why a module or file name was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum RdmaModulesError {
    #[error("the module name is empty")]
    EmptyModule,
    #[error("the module name is {len} bytes long; the kernel allows at most {MODULE_NAME_MAX}")]
    ModuleTooLong { len: usize },
    #[error("{0:?} cannot be part of a module name: use letters, digits, '_' and '-' (the list holds one name a line; module options belong in /etc/modprobe.d)")]
    ModuleBadChar(char),
    #[error("a module name starts with a letter or a digit, not {0:?}: a leading '-' is read as an option by modprobe, and kmod takes '_' and '-' as the same character")]
    ModuleLeading(char),
    #[error("{q0} is not a module list name: use lower-case letters, digits, '_' and '-' (the file is {MODULES_DIR}/<name>.conf)", q0 = quote_capped(.0))]
    BadSetName(String),
}

/// A kernel module name as the module loader accepts it: 1 to [`MODULE_NAME_MAX`] bytes of
/// ASCII letters, digits, `_` and `-` (module file names; kmod reads `-` as `_`), starting
/// with a letter or a digit (`8021q`): a name starting with `-` is an option on modprobe's
/// command line, and `_x` is the same name to kmod. Stricter than kmod, which also looks up
/// aliases such as `pci:v*`: such a line is kept as it is but never written by the daemon.
pub fn validate_module_name(name: &str) -> Result<(), RdmaModulesError> {
    let Some(first) = name.chars().next() else {
        return Err(RdmaModulesError::EmptyModule);
    };
    if name.len() > MODULE_NAME_MAX {
        return Err(RdmaModulesError::ModuleTooLong { len: name.len() });
    }
    if first == '-' || first == '_' {
        return Err(RdmaModulesError::ModuleLeading(first));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        Some(c) => Err(RdmaModulesError::ModuleBadChar(c)),
        None => Ok(()),
    }
}

/// Modules that are names (aliases) of another module: loading one loads the other, and only
/// the other appears under `/sys/module`. Since Linux 4.2 the NFS over RDMA client and server
/// are one module, `rpcrdma.ko` (`net/sunrpc/xprtrdma/module.c`: `MODULE_ALIAS("svcrdma")`,
/// `MODULE_ALIAS("xprtrdma")`), and rdma-core's `rdma.conf` still lists the old names.
const MERGED_INTO: &[(&str, &str)] = &[("svcrdma", "rpcrdma"), ("xprtrdma", "rpcrdma")];

/// The directories under `/sys/module` whose presence means `module` is loaded: its name with
/// `-` read as `_` (the kernel's own spelling), and the module it is an alias of.
pub fn sysfs_module_names(module: &str) -> Vec<String> {
    let own = module.replace('-', "_");
    let mut names = vec![own.clone()];
    if let Some((_, into)) = MERGED_INTO.iter().find(|(alias, _)| *alias == own) {
        names.push((*into).to_string());
    }
    names
}

/// Whether two names load the same module: kmod normalises `-` to `_`.
pub fn same_module(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .all(|(x, y)| x == y || (matches!(x, b'-' | b'_') && matches!(y, b'-' | b'_')))
}

/// What starts the loading of a module list (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LoadTrigger {
    /// `rdma.conf`: any RDMA device (rdma-hw.target), and ibacm.service.
    AnyRdmaDevice,
    /// `infiniband.conf`, `iwarp.conf`, `opa.conf`, `roce.conf`: a device whose driver udev's
    /// rdma-description.rules tags with `ID_RDMA_<KIND>`.
    DeviceOfKind { udev_property: String },
    /// `iwpmd.conf`: when iwpmd.service starts.
    IwpmdService,
    /// Any other name: only if `rdma-load-modules@<name>.service` is enabled by hand.
    OnlyIfEnabledByHand { unit: String },
}

/// What starts the loading of `/etc/rdma/modules/<set>.conf`.
pub fn load_trigger(set: &str) -> LoadTrigger {
    match set {
        "rdma" => LoadTrigger::AnyRdmaDevice,
        "infiniband" | "iwarp" | "opa" | "roce" => LoadTrigger::DeviceOfKind {
            udev_property: format!("ID_RDMA_{}", set.to_ascii_uppercase()),
        },
        "iwpmd" => LoadTrigger::IwpmdService,
        other => LoadTrigger::OnlyIfEnabledByHand {
            unit: format!("rdma-load-modules@{other}.service"),
        },
    }
}

/// The path of a module list, for a set name such as `rdma` or `infiniband`. Names are kept
/// to what can be a systemd instance name without escaping and can never leave the directory.
pub fn modules_file_path(set: &str) -> Result<PathBuf, RdmaModulesError> {
    let ok = !set.is_empty()
        && set.len() <= 64
        && set
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && !set.starts_with('-');
    if !ok {
        return Err(RdmaModulesError::BadSetName(set.to_string()));
    }
    Ok(PathBuf::from(format!("{MODULES_DIR}/{set}.conf")))
}

/// systemd's `strstrip()` (WHITESPACE is `" \t\n\r"`), as the range it keeps: a vertical
/// tab or form feed is not stripped, so a line holding one is looked up with it and not found.
fn strip(b: &[u8]) -> std::ops::Range<usize> {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    start..end
}

/// What a line is to the loader and to the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Blank,
    /// A comment that is not a disabled module; its text without marks, `None` if not UTF-8.
    Comment(Option<String>),
    /// A module the loader loads. `at`: offset of the name in the line.
    Module {
        name: String,
        at: usize,
    },
    /// `# name`: listed but not loaded. `marks..at` is the comment prefix to remove.
    Disabled {
        name: String,
        marks: usize,
        at: usize,
    },
    /// A line the loader looks up whole but that is not a module name.
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    number: u32,
    raw: Vec<u8>,
    kind: Kind,
}

/// Reads a line (without its `\n`) as the loader does; offsets are into the line, which
/// starts the raw bytes.
fn classify(body: &[u8]) -> Kind {
    let kept = strip(body);
    let s = &body[kept.clone()];
    let Some(first) = s.first() else {
        return Kind::Blank;
    };
    if matches!(first, b'#' | b';') {
        let after_marks = s
            .iter()
            .position(|c| !matches!(c, b'#' | b';'))
            .unwrap_or(s.len());
        let text_start = s[after_marks..]
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .map_or(s.len(), |p| after_marks + p);
        let text = std::str::from_utf8(&s[text_start..]).ok();
        if let Some(word) = text.filter(|t| looks_like_disabled_module(t)) {
            return Kind::Disabled {
                name: word.to_string(),
                marks: kept.start,
                at: kept.start + text_start,
            };
        }
        return Kind::Comment(text.map(str::to_string));
    }
    match std::str::from_utf8(s) {
        Ok(name) if validate_module_name(name).is_ok() => Kind::Module {
            name: name.to_string(),
            at: kept.start,
        },
        _ => Kind::Other(String::from_utf8_lossy(s).into_owned()),
    }
}

fn looks_like_disabled_module(text: &str) -> bool {
    validate_module_name(text).is_ok()
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && !text.bytes().any(|b| b.is_ascii_uppercase())
}

/// A module the file names, enabled or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleEntry {
    /// As written on [`ModuleEntry::line`].
    pub module: String,
    /// The loader loads it from this file: some line names it outside a comment.
    pub enabled: bool,
    /// The comment above it, if any.
    pub description: Option<String>,
    /// The line that decides: the first enabled one, else the first disabled one.
    pub line: u32,
    /// Other lines naming the same module (duplicates), enabled or not.
    pub other_lines: Vec<u32>,
}

/// A line the loader reads but that names no module: it loads nothing and logs an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnusableLine {
    pub line: u32,
    pub text: String,
    pub reason: String,
}

/// What a module list says, for publishing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModulesReport {
    /// In the order of their deciding lines.
    pub modules: Vec<ModuleEntry>,
    pub unusable: Vec<UnusableLine>,
}

/// What [`ModulesFile::set_enabled`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ModuleChange {
    /// The file already said so; the bytes are the file's own.
    Unchanged,
    /// A `# name` line was made a module line again.
    Uncommented { line: u32 },
    /// The module was not listed: it was added at the end, under a comment.
    Appended { line: u32 },
    /// Every line that loaded it is now a comment `# name`.
    CommentedOut { lines: Vec<u32> },
}

/// A new file content and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulesEdit {
    pub bytes: Vec<u8>,
    pub change: ModuleChange,
}

/// A module list as read, every byte kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulesFile {
    lines: Vec<Line>,
    eol: &'static str,
}

impl ModulesFile {
    pub fn parse(bytes: &[u8]) -> ModulesFile {
        let lines = conf_lines::lines(bytes)
            .map(|l| Line {
                number: l.number,
                raw: l.raw.to_vec(),
                kind: classify(l.body),
            })
            .collect();
        ModulesFile {
            lines,
            eol: file_eol(bytes),
        }
    }

    /// The file's bytes (unchanged from what was parsed).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.lines.iter().flat_map(|l| l.raw.clone()).collect()
    }

    /// Whether the loader loads `module` from this file.
    pub fn loads(&self, module: &str) -> bool {
        self.lines
            .iter()
            .any(|l| matches!(&l.kind, Kind::Module { name, .. } if same_module(name, module)))
    }

    /// The modules the file names, enabled or disabled, one entry a module.
    pub fn modules(&self) -> Vec<ModuleEntry> {
        let mut out: Vec<(ModuleEntry, bool)> = Vec::new();
        for (i, l) in self.lines.iter().enumerate() {
            let (name, enabled) = match &l.kind {
                Kind::Module { name, .. } => (name, true),
                Kind::Disabled { name, .. } => (name, false),
                _ => continue,
            };
            match out.iter_mut().find(|(e, _)| same_module(&e.module, name)) {
                // A first enabled line after disabled ones decides instead.
                Some((e, decided_by_enabled)) if enabled && !*decided_by_enabled => {
                    e.other_lines.push(e.line);
                    e.other_lines.sort_unstable();
                    e.module = name.clone();
                    e.enabled = true;
                    e.line = l.number;
                    e.description = self.description(i);
                    *decided_by_enabled = true;
                }
                Some((e, _)) => e.other_lines.push(l.number),
                None => out.push((
                    ModuleEntry {
                        module: name.clone(),
                        enabled,
                        description: self.description(i),
                        line: l.number,
                        other_lines: Vec::new(),
                    },
                    enabled,
                )),
            }
        }
        let mut entries: Vec<ModuleEntry> = out.into_iter().map(|(e, _)| e).collect();
        entries.sort_by_key(|e| e.line);
        entries
    }

    /// Lines the loader reads but cannot use.
    pub fn unusable(&self) -> Vec<UnusableLine> {
        self.lines
            .iter()
            .filter_map(|l| match &l.kind {
                Kind::Other(text) => Some(UnusableLine {
                    line: l.number,
                    text: text.clone(),
                    reason: unusable_reason(text),
                }),
                _ => None,
            })
            .collect()
    }

    pub fn report(&self) -> ModulesReport {
        ModulesReport {
            modules: self.modules(),
            unusable: self.unusable(),
        }
    }

    /// The comment block right above line `index` (see the module documentation).
    fn description(&self, index: usize) -> Option<String> {
        let mut first = index;
        while first > 0 {
            match &self.lines[first - 1].kind {
                Kind::Comment(Some(t)) if !t.trim().is_empty() => first -= 1,
                _ => break,
            }
        }
        if first == index {
            return None;
        }
        let texts: Vec<&str> = self.lines[first..index]
            .iter()
            .filter_map(|l| match &l.kind {
                Kind::Comment(Some(t)) => Some(t.trim()),
                _ => None,
            })
            .collect();
        let texts = if first == 0 && texts.len() > 1 {
            &texts[texts.len() - 1..]
        } else {
            &texts[..]
        };
        Some(texts.join(" "))
    }

    /// Enables or disables `module`, changing as few bytes as possible: enabling uncomments
    /// the first `# module` line or appends the module under a comment; disabling comments
    /// out every line that loads it. Asking for what the file already says changes nothing.
    pub fn set_enabled(
        &self,
        module: &str,
        enabled: bool,
    ) -> Result<ModulesEdit, RdmaModulesError> {
        validate_module_name(module)?;
        let mut lines = self.lines.clone();
        let change = if enabled {
            self.enable(module, &mut lines)
        } else {
            Self::disable(module, &mut lines)
        };
        let bytes = match change {
            ModuleChange::Unchanged => self.to_bytes(),
            ModuleChange::Appended { line } => {
                let mut out: Vec<u8> = lines.iter().flat_map(|l| l.raw.clone()).collect();
                terminate_last_line(&mut out, self.eol);
                let needs_blank = lines.last().is_some_and(|l| l.kind != Kind::Blank);
                if needs_blank {
                    out.extend_from_slice(self.eol.as_bytes());
                }
                let comment = KNOWN_DESCRIPTIONS
                    .iter()
                    .find(|(m, _)| same_module(m, module))
                    .map_or(APPENDED_COMMENT, |(_, d)| d);
                for l in [format!("# {comment}"), module.to_string()] {
                    out.extend_from_slice(l.as_bytes());
                    out.extend_from_slice(self.eol.as_bytes());
                }
                let line = line + u32::from(needs_blank);
                return Ok(ModulesEdit {
                    bytes: out,
                    change: ModuleChange::Appended { line },
                });
            }
            _ => lines.iter().flat_map(|l| l.raw.clone()).collect(),
        };
        Ok(ModulesEdit { bytes, change })
    }

    fn enable(&self, module: &str, lines: &mut [Line]) -> ModuleChange {
        if self.loads(module) {
            return ModuleChange::Unchanged;
        }
        let disabled = lines
            .iter_mut()
            .find(|l| matches!(&l.kind, Kind::Disabled { name, .. } if same_module(name, module)));
        if let Some(l) = disabled {
            if let Kind::Disabled { marks, at, .. } = l.kind {
                l.raw.drain(marks..at);
            }
            return ModuleChange::Uncommented { line: l.number };
        }
        // Appended after a blank line (if needed) and a comment line.
        let last = lines.last().map_or(0, |l| l.number);
        ModuleChange::Appended { line: last + 2 }
    }

    fn disable(module: &str, lines: &mut [Line]) -> ModuleChange {
        let mut changed = Vec::new();
        for l in lines.iter_mut() {
            if let Kind::Module { name, at } = &l.kind {
                if same_module(name, module) {
                    let at = *at;
                    l.raw.splice(at..at, b"# ".iter().copied());
                    changed.push(l.number);
                }
            }
        }
        if changed.is_empty() {
            ModuleChange::Unchanged
        } else {
            ModuleChange::CommentedOut { lines: changed }
        }
    }
}

fn unusable_reason(text: &str) -> String {
    if text.contains([' ', '\t']) {
        "the loader looks the whole line up as one module name, so words after \
            the name (options, comments) make it fail; module options belong in \
            /etc/modprobe.d"
            .into()
    } else {
        "not a module name; the loader looks it up as a module alias and \
            rdma-managerd does not interpret it"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rdma-core's files, kernel-boot/modules/*.conf (v64.0; Debian 12's rdma-core 44.0 ships
    // the same bytes, plus iwpmd.conf).
    const RDMA_CONF: &str =
        "# These modules are loaded by the system if any RDMA devices is installed
# iSCSI over RDMA client support
ib_iser

# iSCSI over RDMA target support
# ib_isert

# User access to RDMA verbs (supports libibverbs)
ib_uverbs

# User access to RDMA connection management (supports librdmacm)
rdma_ucm

# RDS over RDMA support
# rds_rdma

# NFS over RDMA client support
xprtrdma

# NFS over RDMA server support
svcrdma
";
    const INFINIBAND_CONF: &str =
        "# These modules are loaded by the system if any InfiniBand device is installed
# InfiniBand over IP netdevice
ib_ipoib

# Access to fabric management SMPs and GMPs from userspace.
ib_umad

# SCSI Remote Protocol target support
# ib_srpt

# ib_ucm provides the obsolete /dev/infiniband/ucm0
# ib_ucm
";
    const OPA_CONF: &str =
        "# These modules are loaded by the system if any OmniPath Architecture device
# is installed
# Infiniband over IP netdevice
ib_ipoib

# Access to fabric management SMPs and GMPs from userspace.
ib_umad

# Omnipath Ethernet Virtual NIC netdevice
opa_vnic
";
    const ROCE_CONF: &str =
        "# These modules are loaded by the system if any RDMA over Converged Ethernet
# device is installed
";
    const IWPMD_CONF: &str = "# These modules are loaded by the system if iwpmd is to be run
iw_cm
";

    fn summary(f: &ModulesFile) -> Vec<(String, bool, Option<String>, u32)> {
        f.modules()
            .into_iter()
            .map(|e| (e.module, e.enabled, e.description, e.line))
            .collect()
    }

    fn e(m: &str, on: bool, d: Option<&str>, line: u32) -> (String, bool, Option<String>, u32) {
        (m.into(), on, d.map(String::from), line)
    }

    #[test]
    fn rdma_core_rdma_conf() {
        let f = ModulesFile::parse(RDMA_CONF.as_bytes());
        assert_eq!(
            summary(&f),
            [
                e("ib_iser", true, Some("iSCSI over RDMA client support"), 3),
                e("ib_isert", false, Some("iSCSI over RDMA target support"), 6),
                e(
                    "ib_uverbs",
                    true,
                    Some("User access to RDMA verbs (supports libibverbs)"),
                    9
                ),
                e(
                    "rdma_ucm",
                    true,
                    Some("User access to RDMA connection management (supports librdmacm)"),
                    12
                ),
                e("rds_rdma", false, Some("RDS over RDMA support"), 15),
                e("xprtrdma", true, Some("NFS over RDMA client support"), 18),
                e("svcrdma", true, Some("NFS over RDMA server support"), 21),
            ]
        );
        assert!(f.unusable().is_empty());
        assert!(f.loads("svcrdma") && !f.loads("rds_rdma") && !f.loads("ib_srpt"));
        assert_eq!(f.to_bytes(), RDMA_CONF.as_bytes());
    }

    #[test]
    fn rdma_core_other_files() {
        let ib = ModulesFile::parse(INFINIBAND_CONF.as_bytes());
        assert_eq!(
            summary(&ib),
            [
                e("ib_ipoib", true, Some("InfiniBand over IP netdevice"), 3),
                e(
                    "ib_umad",
                    true,
                    Some("Access to fabric management SMPs and GMPs from userspace."),
                    6
                ),
                e(
                    "ib_srpt",
                    false,
                    Some("SCSI Remote Protocol target support"),
                    9
                ),
                e(
                    "ib_ucm",
                    false,
                    Some("ib_ucm provides the obsolete /dev/infiniband/ucm0"),
                    12
                ),
            ]
        );
        // A three-line header block glued to the first module: only its last line describes.
        let opa = ModulesFile::parse(OPA_CONF.as_bytes());
        assert_eq!(
            summary(&opa)[0],
            e("ib_ipoib", true, Some("Infiniband over IP netdevice"), 4)
        );
        assert_eq!(summary(&opa).len(), 3);
        // Header only: sentences, not modules ("device is installed" has spaces).
        assert!(ModulesFile::parse(ROCE_CONF.as_bytes())
            .modules()
            .is_empty());
        // A one-line header over the module is its description.
        assert_eq!(
            summary(&ModulesFile::parse(IWPMD_CONF.as_bytes())),
            [e(
                "iw_cm",
                true,
                Some("These modules are loaded by the system if iwpmd is to be run"),
                2
            )]
        );
    }

    #[test]
    fn enabling_a_commented_module_uncomments_its_line_only() {
        let f = ModulesFile::parse(RDMA_CONF.as_bytes());
        let edit = f.set_enabled("rds_rdma", true).unwrap();
        assert_eq!(edit.change, ModuleChange::Uncommented { line: 15 });
        assert_eq!(
            String::from_utf8(edit.bytes.clone()).unwrap(),
            RDMA_CONF.replace("# rds_rdma\n", "rds_rdma\n")
        );
        // Idempotent, and disabling gives the original bytes back.
        let again = ModulesFile::parse(&edit.bytes);
        assert_eq!(
            again.set_enabled("rds_rdma", true).unwrap().change,
            ModuleChange::Unchanged
        );
        let back = again.set_enabled("rds_rdma", false).unwrap();
        assert_eq!(back.change, ModuleChange::CommentedOut { lines: vec![15] });
        assert_eq!(back.bytes, RDMA_CONF.as_bytes());
    }

    #[test]
    fn disabling_comments_out_and_is_idempotent() {
        let f = ModulesFile::parse(RDMA_CONF.as_bytes());
        let edit = f.set_enabled("svcrdma", false).unwrap();
        assert_eq!(edit.change, ModuleChange::CommentedOut { lines: vec![21] });
        assert_eq!(
            String::from_utf8(edit.bytes.clone()).unwrap(),
            RDMA_CONF.replace("\nsvcrdma\n", "\n# svcrdma\n")
        );
        let g = ModulesFile::parse(&edit.bytes);
        assert!(!g.loads("svcrdma"));
        assert_eq!(
            g.modules().iter().find(|e| e.module == "svcrdma"),
            Some(&ModuleEntry {
                module: "svcrdma".into(),
                enabled: false,
                description: Some("NFS over RDMA server support".into()),
                line: 21,
                other_lines: vec![],
            })
        );
        let twice = g.set_enabled("svcrdma", false).unwrap();
        assert_eq!(twice.change, ModuleChange::Unchanged);
        assert_eq!(twice.bytes, edit.bytes);
        // Disabling a module the file does not name changes nothing either.
        assert_eq!(
            f.set_enabled("nvme_rdma", false).unwrap().change,
            ModuleChange::Unchanged
        );
    }

    #[test]
    fn enabling_an_absent_module_appends_it_under_a_comment() {
        let f = ModulesFile::parse(ROCE_CONF.as_bytes());
        let edit = f.set_enabled("svcrdma", true).unwrap();
        assert_eq!(edit.change, ModuleChange::Appended { line: 5 });
        assert_eq!(
            String::from_utf8(edit.bytes.clone()).unwrap(),
            format!("{ROCE_CONF}\n# NFS over RDMA server support\nsvcrdma\n")
        );
        let g = ModulesFile::parse(&edit.bytes);
        assert_eq!(
            summary(&g),
            [e("svcrdma", true, Some("NFS over RDMA server support"), 5)]
        );
        // An unknown module gets the daemon's own comment; an empty file has no blank line.
        let empty = ModulesFile::parse(b"");
        let edit = empty.set_enabled("nvme_rdma", true).unwrap();
        assert_eq!(edit.change, ModuleChange::Appended { line: 2 });
        assert_eq!(edit.bytes, b"# Added by rdma-managerd\nnvme_rdma\n");
        // A file already ending in a blank line gets no second one.
        let edit = ModulesFile::parse(b"a\n\n").set_enabled("b", true).unwrap();
        assert_eq!(edit.bytes, b"a\n\n# Added by rdma-managerd\nb\n");
        assert_eq!(edit.change, ModuleChange::Appended { line: 4 });
    }

    #[test]
    fn odd_but_valid_files() {
        // CRLF, tabs, trailing blanks, no final newline, ';' comments, marks without a blank.
        let file = b"# RDMA\r\n\tib_uverbs  \r\n;rds_rdma\r\n##\t svcrdma \r\n\r\nrdma_ucm";
        let f = ModulesFile::parse(file);
        assert_eq!(
            summary(&f),
            [
                e("ib_uverbs", true, Some("RDMA"), 2),
                e("rds_rdma", false, None, 3),
                e("svcrdma", false, None, 4),
                e("rdma_ucm", true, None, 6),
            ]
        );
        assert_eq!(f.to_bytes(), file);
        let on = f.set_enabled("svcrdma", true).unwrap();
        assert_eq!(
            on.bytes,
            b"# RDMA\r\n\tib_uverbs  \r\n;rds_rdma\r\nsvcrdma \r\n\r\nrdma_ucm"
        );
        let off = f.set_enabled("ib_uverbs", false).unwrap();
        assert_eq!(
            off.bytes,
            b"# RDMA\r\n\t# ib_uverbs  \r\n;rds_rdma\r\n##\t svcrdma \r\n\r\nrdma_ucm"
        );
        // Appending to a CRLF file without a final newline terminates its last line first.
        let add = f.set_enabled("xprtrdma", true).unwrap();
        assert_eq!(
            add.bytes,
            [
                &file[..],
                b"\r\n\r\n# NFS over RDMA client support\r\nxprtrdma\r\n"
            ]
            .concat()
        );
        assert_eq!(add.change, ModuleChange::Appended { line: 9 });
    }

    #[test]
    fn duplicates_and_dash_underscore() {
        let f = ModulesFile::parse(b"# rds_rdma\nib-uverbs\nib_uverbs\nrds-rdma\n");
        let m = f.modules();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].module.as_str(), m[0].line), ("ib-uverbs", 2));
        assert_eq!(m[0].other_lines, [3]);
        // The enabled line decides over the commented one above it.
        assert_eq!(
            (m[1].module.as_str(), m[1].enabled, m[1].line),
            ("rds-rdma", true, 4)
        );
        assert_eq!(m[1].other_lines, [1]);
        assert!(f.loads("ib_uverbs") && f.loads("rds_rdma"));
        // Disabling comments out every line that loads it, whichever spelling.
        let off = f.set_enabled("ib_uverbs", false).unwrap();
        assert_eq!(off.change, ModuleChange::CommentedOut { lines: vec![2, 3] });
        assert_eq!(
            off.bytes,
            b"# rds_rdma\n# ib-uverbs\n# ib_uverbs\nrds-rdma\n"
        );
        // Already loaded by line 4: the commented line 1 is left alone.
        assert_eq!(
            f.set_enabled("rds_rdma", true).unwrap().change,
            ModuleChange::Unchanged
        );
    }

    #[test]
    fn lines_that_load_nothing_are_reported_and_kept() {
        let file = b"ib_ipoib ipoib_enhanced=0\nsvcrdma # NFS server\npci:v000015B3d*\nib\xffx\nsvcrdma\x0b\n";
        let f = ModulesFile::parse(file);
        assert!(f.modules().is_empty());
        assert!(!f.loads("ib_ipoib") && !f.loads("svcrdma"));
        let u = f.unusable();
        assert_eq!(
            u.iter().map(|l| l.line).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert!(u[0].reason.contains("/etc/modprobe.d"));
        assert!(u[2].reason.contains("alias"));
        // Enabling appends a clean line and keeps the others byte for byte.
        let edit = f.set_enabled("svcrdma", true).unwrap();
        assert!(edit.bytes.starts_with(file));
        assert!(ModulesFile::parse(&edit.bytes).loads("svcrdma"));
    }

    #[test]
    fn comment_sentences_are_not_modules() {
        let f = ModulesFile::parse(
            b"# NFS\n# Options\n# see modprobe.d(5)\n# is installed\n#\n# todo\nib_umad\n",
        );
        let m = f.modules();
        // "# todo" is one lower-case word: read as a disabled module (documented rule).
        assert_eq!(
            m.iter()
                .map(|e| (e.module.as_str(), e.enabled))
                .collect::<Vec<_>>(),
            [("todo", false), ("ib_umad", true)]
        );
        // The disabled "todo" line ends ib_umad's description block.
        assert_eq!(m[1].description, None);
    }

    #[test]
    fn module_names_are_checked() {
        let f = ModulesFile::parse(RDMA_CONF.as_bytes());
        for (bad, err) in [
            ("", RdmaModulesError::EmptyModule),
            ("ib_ipoib foo=1", RdmaModulesError::ModuleBadChar(' ')),
            ("svcrdma\n", RdmaModulesError::ModuleBadChar('\n')),
            ("../x", RdmaModulesError::ModuleBadChar('.')),
            ("# x", RdmaModulesError::ModuleBadChar('#')),
            (&"m".repeat(56), RdmaModulesError::ModuleTooLong { len: 56 }),
        ] {
            assert_eq!(f.set_enabled(bad, true), Err(err.clone()), "{bad:?}");
            assert_eq!(f.set_enabled(bad, false), Err(err), "{bad:?}");
        }
        assert!(validate_module_name(&"m".repeat(55)).is_ok());
        assert!(validate_module_name("BusLogic").is_ok());
        assert!(validate_module_name("8021q").is_ok());
        assert!(validate_module_name("ib-iser").is_ok());
        // A leading '-' is an option to modprobe, and kmod reads '_' as '-'.
        for bad in ["-x", "_x", "-", "_", "--help", "-ib_iser"] {
            let first = bad.chars().next().unwrap_or('-');
            assert_eq!(
                validate_module_name(bad),
                Err(RdmaModulesError::ModuleLeading(first)),
                "{bad:?}"
            );
            assert_eq!(
                f.set_enabled(bad, true),
                Err(RdmaModulesError::ModuleLeading(first)),
                "{bad:?}"
            );
        }
        let msg = RdmaModulesError::ModuleLeading('-').to_string();
        assert!(msg.contains("letter or a digit"), "{msg}");
        let msg = RdmaModulesError::ModuleBadChar(' ').to_string();
        assert!(msg.contains("modprobe.d"), "{msg}");
    }

    #[test]
    fn loaded_modules_are_found_under_their_sysfs_names() {
        assert_eq!(sysfs_module_names("ib_iser"), ["ib_iser"]);
        assert_eq!(sysfs_module_names("ib-iser"), ["ib_iser"]);
        assert_eq!(sysfs_module_names("svcrdma"), ["svcrdma", "rpcrdma"]);
        assert_eq!(sysfs_module_names("xprtrdma"), ["xprtrdma", "rpcrdma"]);
        assert_eq!(sysfs_module_names("rpcrdma"), ["rpcrdma"]);
    }

    #[test]
    fn set_names_and_triggers() {
        assert_eq!(
            modules_file_path("rdma").unwrap(),
            PathBuf::from("/etc/rdma/modules/rdma.conf")
        );
        for bad in ["", "../x", "a/b", "Rdma", "-x", "x.conf", "a b"] {
            assert!(modules_file_path(bad).is_err(), "{bad:?}");
        }
        assert_eq!(load_trigger("rdma"), LoadTrigger::AnyRdmaDevice);
        assert_eq!(
            load_trigger("infiniband"),
            LoadTrigger::DeviceOfKind {
                udev_property: "ID_RDMA_INFINIBAND".into()
            }
        );
        assert_eq!(load_trigger("iwpmd"), LoadTrigger::IwpmdService);
        assert_eq!(
            load_trigger("site"),
            LoadTrigger::OnlyIfEnabledByHand {
                unit: "rdma-load-modules@site.service".into()
            }
        );
    }

    #[test]
    fn same_module_treats_dash_and_underscore_alike() {
        assert!(same_module("rdma_ucm", "rdma-ucm"));
        assert!(!same_module("rdma_ucm", "rdma_uc"));
        assert!(!same_module("rdma_ucm", "Rdma_ucm"));
    }
}
