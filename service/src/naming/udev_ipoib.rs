//! `/etc/udev/rules.d/70-persistent-ipoib.rules`: persistent IPoIB interface names, one udev
//! rule per port (the guide's chapter "Renaming IPoIB devices"; rdma-core ships the template
//! as documentation):
//!
//! ```text
//! ACTION=="add", SUBSYSTEM=="net", DRIVERS=="?*", ATTR{type}=="32", ATTR{address}=="?*00:02:c9:03:00:31:78:f2", NAME="mlx4_ib0"
//! ```
//!
//! The rule matches the last 8 bytes of the 20-byte hardware address (the port GUID), lower
//! case as udev compares case-sensitively, after a `?*` that absorbs the flags, QPN and subnet
//! prefix, which change. The daemon writes only inside its marked block; rules users wrote
//! elsewhere are read (to refuse conflicts) but never rewritten.

use serde::Serialize;

use super::udev_rules::{parse_rule, BlockError, BlockFile, RuleOp, RuleToken};
use crate::model::guid::{Guid, GuidFormatError};
use crate::model::names::{validate_netdev_name, NameError};
use rdma_manager_dbus::text::quote_capped;

/// Where the rules live.
pub const IPOIB_RULES_PATH: &str = "/etc/udev/rules.d/70-persistent-ipoib.rules";

/// The comment at the top of the daemon's block.
pub const IPOIB_BLOCK_HEADER: [&str; 3] = [
    "# Managed by rdma-managerd: persistent IPoIB interface names, one rule per port GUID.",
    "# Do not edit this block; it is rewritten. Use rdma-tui, or busctl: SetIpoibName and",
    "# RemoveIpoibName on org.rdmamanager.RdmaManager1. Rules outside the block are yours.",
];

/// A rule that names the IPoIB interface of one port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpoibNameRule {
    pub port_guid: Guid,
    pub name: String,
    /// Inside the daemon's block.
    pub managed: bool,
    /// 1-based line of the rule in the file.
    pub line: u32,
}

/// Why a change to the IPoIB rules was refused; each says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum IpoibRuleError {
    #[error(transparent)]
    BadGuid(#[from] GuidFormatError),
    #[error("{source} (IPoIB interface name {name_q})", name_q = quote_capped(.name))]
    BadName { name: String, source: NameError },
    #[error("the name {name} is already given to port GUID {} {}", .other.colon_form(),
        match .user_line {
            None => "by rdma-managerd; remove that name first (RemoveIpoibName) or choose another".to_string(),
            Some(l) => format!("by line {l} of {IPOIB_RULES_PATH}, a rule rdma-managerd does not manage: choose another name, or edit that line by hand"),
        })]
    NameTaken {
        name: String,
        other: Guid,
        /// The line of the user's rule; `None` when the daemon gave the name.
        user_line: Option<u32>,
    },
    #[error("line {line} of {IPOIB_RULES_PATH} already names port GUID {} {name_q}, in a rule rdma-managerd does not manage and never rewrites; edit or delete that line by hand, then try again",
        .guid.colon_form(), name_q = quote_capped(.name))]
    UserRule { guid: Guid, name: String, line: u32 },
    #[error("no rule in {IPOIB_RULES_PATH} names port GUID {}", .0.colon_form())]
    NotNamed(Guid),
    #[error("port GUID {} is named {name_q} by line {line} of {IPOIB_RULES_PATH}, a rule rdma-managerd does not manage; edit or delete that line by hand",
        .guid.colon_form(), name_q = quote_capped(.name))]
    UnmanagedRemoval { guid: Guid, name: String, line: u32 },
    #[error("{IPOIB_RULES_PATH} cannot be changed safely: {0}; fix the markers by hand")]
    Block(#[from] BlockError),
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum IpoibRuleChange {
    /// The rule was already there.
    Unchanged,
    Added,
    /// The port had another name in the daemon's block.
    Renamed {
        old: String,
    },
}

/// The port GUID an `ATTR{address}` pattern matches: the last 8 bytes, lower case, after
/// `?*` or `*` (any flags, QPN and subnet prefix) or after 12 literal bytes.
fn address_guid(pattern: &str) -> Option<Guid> {
    const GUID_LEN: usize = 23;
    let split = pattern.len().checked_sub(GUID_LEN)?;
    let (prefix, guid) = pattern.split_at_checked(split)?;
    let lower_hex_pairs = |s: &str| {
        s.split(':')
            .all(|p| p.len() == 2 && p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    };
    if guid.split(':').count() != 8 || !lower_hex_pairs(guid) {
        return None;
    }
    let prefix_ok = match prefix {
        "?*" | "*" => true,
        p => {
            p.len() == 36
                && p.ends_with(':')
                && p[..35].split(':').count() == 12
                && lower_hex_pairs(&p[..35])
        }
    };
    if !prefix_ok {
        return None;
    }
    Guid::parse_user(guid).ok()
}

/// The port GUID and name of an IPoIB naming rule: an `ATTR{address}==` on a port GUID and a
/// `NAME=` (or `:=`), in the `net` subsystem if a subsystem is given.
fn naming_rule(tokens: &[RuleToken]) -> Option<(Guid, String)> {
    if tokens
        .iter()
        .any(|t| t.is("SUBSYSTEM", None) && !(t.op == RuleOp::Match && t.value == "net"))
    {
        return None;
    }
    let guid = tokens
        .iter()
        .find(|t| t.is("ATTR", Some("address")) && t.op == RuleOp::Match)
        .and_then(|t| address_guid(&t.value))?;
    let name = tokens
        .iter()
        .rev()
        .find(|t| t.is("NAME", None) && matches!(t.op, RuleOp::Assign | RuleOp::AssignFinal))?;
    Some((guid, name.value.clone()))
}

/// The rule the daemon writes for a port.
pub fn render_rule(guid: Guid, name: &str) -> String {
    format!(
        "ACTION==\"add\", SUBSYSTEM==\"net\", DRIVERS==\"?*\", ATTR{{type}}==\"32\", ATTR{{address}}==\"?*{}\", NAME=\"{name}\"",
        guid.address_form()
    )
}

/// The rules file as read, and the daemon's rules in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpoibRulesFile {
    file: BlockFile,
    /// Every naming rule in file order.
    rules: Vec<IpoibNameRule>,
    /// The daemon's rules, in the order they will be written.
    managed: Vec<(Guid, String)>,
}

impl IpoibRulesFile {
    /// Reads the file's bytes; `None` (no file) is an empty file.
    pub fn parse(bytes: Option<&[u8]>) -> IpoibRulesFile {
        let file = BlockFile::parse(bytes.unwrap_or_default());
        let mut rules = Vec::new();
        let mut managed = Vec::new();
        for (i, line) in file.lines.iter().enumerate() {
            let Some((guid, name)) = line
                .text
                .as_deref()
                .and_then(parse_rule)
                .and_then(|t| naming_rule(&t))
            else {
                continue;
            };
            // With broken markers nothing is the daemon's.
            let is_managed = file.in_block(i);
            if is_managed {
                managed.push((guid, name.clone()));
            }
            rules.push(IpoibNameRule {
                port_guid: guid,
                name,
                managed: is_managed,
                line: line.number,
            });
        }
        IpoibRulesFile {
            file,
            rules,
            managed,
        }
    }

    /// Every naming rule in file order, the daemon's and the users', as read (changes show
    /// in the file [`render`](Self::render) gives).
    pub fn rules(&self) -> &[IpoibNameRule] {
        &self.rules
    }

    /// The name the file gives a port: the last matching rule wins in udev (a later `NAME=`
    /// overrides an earlier one).
    pub fn name_of(&self, guid: Guid) -> Option<&IpoibNameRule> {
        self.rules.iter().rev().find(|r| r.port_guid == guid)
    }

    /// Gives a port's IPoIB interface a persistent name.
    pub fn set(&mut self, guid: Guid, name: &str) -> Result<IpoibRuleChange, IpoibRuleError> {
        validate_netdev_name(name).map_err(|source| IpoibRuleError::BadName {
            name: name.to_string(),
            source,
        })?;
        self.file.block.clone()?;
        if let Some(user) = self
            .rules
            .iter()
            .find(|r| r.port_guid == guid && !r.managed)
        {
            return Err(IpoibRuleError::UserRule {
                guid,
                name: user.name.clone(),
                line: user.line,
            });
        }
        let taken = self
            .rules
            .iter()
            .filter(|r| !r.managed)
            .map(|r| (r.port_guid, r.name.as_str(), Some(r.line)))
            .chain(self.managed.iter().map(|(g, n)| (*g, n.as_str(), None)))
            .find(|(g, n, _)| *n == name && *g != guid);
        if let Some((other, _, user_line)) = taken {
            return Err(IpoibRuleError::NameTaken {
                name: name.to_string(),
                other,
                user_line,
            });
        }
        let change = match self.managed.iter_mut().find(|(g, _)| *g == guid) {
            Some((_, n)) if n == name => IpoibRuleChange::Unchanged,
            Some((_, n)) => IpoibRuleChange::Renamed {
                old: std::mem::replace(n, name.to_string()),
            },
            None => {
                self.managed.push((guid, name.to_string()));
                IpoibRuleChange::Added
            }
        };
        // A duplicate made by hand inside the block collapses into the first.
        let mut seen = false;
        self.managed.retain(|(g, _)| {
            let dup = *g == guid && seen;
            seen |= *g == guid;
            !dup
        });
        Ok(change)
    }

    /// Removes the daemon's name for a port; returns the name it had.
    pub fn remove(&mut self, guid: Guid) -> Result<String, IpoibRuleError> {
        self.file.block.clone()?;
        if let Some(pos) = self.managed.iter().position(|(g, _)| *g == guid) {
            let (_, name) = self.managed.remove(pos);
            self.managed.retain(|(g, _)| *g != guid);
            return Ok(name);
        }
        match self
            .rules
            .iter()
            .find(|r| r.port_guid == guid && !r.managed)
        {
            Some(r) => Err(IpoibRuleError::UnmanagedRemoval {
                guid,
                name: r.name.clone(),
                line: r.line,
            }),
            None => Err(IpoibRuleError::NotNamed(guid)),
        }
    }

    /// The file with the daemon's block as it stands now. With no managed rule left, the block
    /// and its markers go away and the rest of the file is as it was read.
    pub fn render(&self) -> Result<Vec<u8>, IpoibRuleError> {
        let content: Vec<String> = if self.managed.is_empty() {
            Vec::new()
        } else {
            IPOIB_BLOCK_HEADER
                .iter()
                .map(|s| s.to_string())
                .chain(self.managed.iter().map(|(g, n)| render_rule(*g, n)))
                .collect()
        };
        Ok(self.file.render(&content)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G1: Guid = Guid(0x0002_c903_0031_78f2);
    const G2: Guid = Guid(0xb859_9f03_00d4_e62a);

    /// rdma-core's kernel-boot/persistent-ipoib.rules.in as installed (documentation only:
    /// its one example rule is commented out).
    const RDMA_CORE_TEMPLATE: &str = "\
# This is a sample udev rules file that demonstrates how to get udev to
# set the name of IPoIB interfaces to whatever you wish.  Copy this file
# into /etc/udev/rules.d before editing it!  There is a 16 character limit
# on network device names.
#
# Important items to note: ATTR{type}==\"32\" is IPoIB interfaces, and the
# ATTR{address} match must start with ?* and only reference the last 8
# bytes of the address or else the address might not match the variable QPN
# portion.
#
# Modern udev is case sensitive and all addresses need to be in lower case.
#
# ACTION==\"add\", SUBSYSTEM==\"net\", DRIVERS==\"?*\", ATTR{type}==\"32\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"mlx4_ib3\"
";

    fn parse(s: &[u8]) -> IpoibRulesFile {
        IpoibRulesFile::parse(Some(s))
    }

    #[test]
    fn the_guides_rule_is_recognised() {
        let f = parse(
            b"ACTION==\"add\", SUBSYSTEM==\"net\", DRIVERS==\"?*\", ATTR{type}==\"32\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"mlx4_ib0\"\n",
        );
        assert_eq!(
            f.rules(),
            &[IpoibNameRule {
                port_guid: G1,
                name: "mlx4_ib0".into(),
                managed: false,
                line: 1
            }]
        );
        assert_eq!(
            render_rule(G1, "mlx4_ib0").as_bytes(),
            &f.file.lines[0].raw[..f.file.lines[0].raw.len() - 1]
        );
    }

    #[test]
    fn variants_users_write() {
        for rule in [
            // Field order, spacing, tabs, := and a single * prefix.
            "NAME=\"ib-a\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", SUBSYSTEM==\"net\"",
            "  SUBSYSTEM == \"net\",ATTR{address}== \"*00:02:c9:03:00:31:78:f2\",\tNAME:=\"ib-a\"",
            "ACTION==\"add\", SUBSYSTEM==\"net\", ATTR{type}==\"32\", \\\n    ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"ib-a\"",
            // The whole 20-byte address (breaks when the QPN changes, but names the port now).
            "ATTR{address}==\"80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:31:78:f2\", NAME=\"ib-a\"",
        ] {
            let f = parse(rule.as_bytes());
            assert_eq!(f.rules().len(), 1, "{rule}");
            assert_eq!(f.rules()[0].port_guid, G1, "{rule}");
            assert_eq!(f.rules()[0].name, "ib-a", "{rule}");
        }
        for not_naming in [
            // udev compares case-sensitively: an upper-case address never matches.
            "SUBSYSTEM==\"net\", ATTR{address}==\"?*00:02:C9:03:00:31:78:F2\", NAME=\"x\"",
            // Another subsystem, no NAME, a negated address, a partial GUID.
            "SUBSYSTEM==\"infiniband\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"x\"",
            "SUBSYSTEM==\"net\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", RUN+=\"/bin/true\"",
            "ATTR{address}!=\"?*00:02:c9:03:00:31:78:f2\", NAME=\"x\"",
            "ATTR{address}==\"?*03:00:31:78:f2\", NAME=\"x\"",
            "ATTR{address}==\"?00:02:c9:03:00:31:78:f2\", NAME=\"x\"",
            "# ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"x\"",
        ] {
            assert_eq!(parse(not_naming.as_bytes()).rules(), &[], "{not_naming}");
        }
    }

    #[test]
    fn rdma_cores_template_is_only_comments_and_survives() {
        let mut f = parse(RDMA_CORE_TEMPLATE.as_bytes());
        assert_eq!(f.rules(), &[]);
        assert_eq!(f.set(G1, "mlx4_ib3"), Ok(IpoibRuleChange::Added));
        let out = f.render().unwrap();
        assert!(out.starts_with(RDMA_CORE_TEMPLATE.as_bytes()));
        let again = IpoibRulesFile::parse(Some(&out));
        assert_eq!(again.rules().len(), 1);
        assert!(again.rules()[0].managed);
        assert_eq!(again.rules()[0].line, 18);
        let mut again = again;
        assert_eq!(again.remove(G1), Ok("mlx4_ib3".into()));
        assert_eq!(again.render().unwrap(), RDMA_CORE_TEMPLATE.as_bytes());
    }

    #[test]
    fn odd_files_keep_every_byte_outside_the_block() {
        let user_rule =
            "SUBSYSTEM==\"net\", ATTR{address}==\"?*b8:59:9f:03:00:d4:e6:2a\", NAME=\"hpc0\"";
        let files: Vec<Vec<u8>> = vec![
            // CRLF and no trailing newline.
            format!("# mine\r\n{user_rule}\r\n# last line").into_bytes(),
            // Tabs, blank lines, a comment ending in a backslash, bytes that are not UTF-8.
            format!("\t# tabbed\n\n# odd \\\n\n{user_rule}\n\u{00e9}\n").into_bytes(),
            [b"\xff\xfe junk\n".to_vec(), user_rule.as_bytes().to_vec()].concat(),
            Vec::new(),
        ];
        for original in files {
            let mut f = parse(&original);
            f.set(G1, "mlx4_ib0").unwrap();
            let written = f.render().unwrap();
            let mut back = IpoibRulesFile::parse(Some(&written));
            let managed: Vec<_> = back.rules().iter().filter(|r| r.managed).collect();
            assert_eq!(managed.len(), 1);
            assert_eq!(managed[0].name, "mlx4_ib0");
            // Everything the user had is still there, in front of the block.
            let mut prefix = original.clone();
            if !prefix.is_empty() && !prefix.ends_with(b"\n") {
                prefix.extend_from_slice(if original.contains(&b'\r') {
                    b"\r\n"
                } else {
                    b"\n"
                });
            }
            assert!(
                written.starts_with(&prefix),
                "{:?}",
                String::from_utf8_lossy(&written)
            );
            if original.contains(&b'\r') {
                assert!(String::from_utf8_lossy(&written[prefix.len()..])
                    .split_inclusive('\n')
                    .all(|l| l.ends_with("\r\n")));
            }
            // Removing the last managed name leaves the user's bytes (plus the newline that had
            // to end their last line).
            back.remove(G1).unwrap();
            assert_eq!(back.render().unwrap(), prefix);
        }
    }

    #[test]
    fn set_replaces_in_place_and_is_idempotent() {
        let mut f = IpoibRulesFile::parse(None);
        assert_eq!(f.set(G1, "ib-a"), Ok(IpoibRuleChange::Added));
        assert_eq!(f.set(G2, "ib-b"), Ok(IpoibRuleChange::Added));
        let mut f = IpoibRulesFile::parse(Some(&f.render().unwrap()));
        assert_eq!(f.set(G1, "ib-a"), Ok(IpoibRuleChange::Unchanged));
        assert_eq!(
            f.set(G1, "ib-c"),
            Ok(IpoibRuleChange::Renamed { old: "ib-a".into() })
        );
        let text = String::from_utf8(f.render().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# BEGIN rdma-manager");
        assert!(lines[1].contains("rdma-managerd"));
        assert!(lines[4].ends_with("NAME=\"ib-c\""), "{text}");
        assert!(lines[5].ends_with("NAME=\"ib-b\""), "{text}");
        assert_eq!(lines[6], "# END rdma-manager");
        let back = IpoibRulesFile::parse(Some(text.as_bytes()));
        assert_eq!(
            back.name_of(G1).map(|r| (r.name.as_str(), r.line)),
            Some(("ib-c", 5))
        );
    }

    #[test]
    fn refusals_say_what_to_do() {
        let user =
            "SUBSYSTEM==\"net\", ATTR{address}==\"?*b8:59:9f:03:00:d4:e6:2a\", NAME=\"hpc0\"\n";
        let mut f = parse(user.as_bytes());
        // A GUID a user rule names is never taken over.
        let e = f.set(G2, "ib9").unwrap_err();
        assert_eq!(
            e,
            IpoibRuleError::UserRule {
                guid: G2,
                name: "hpc0".into(),
                line: 1
            }
        );
        assert!(e.to_string().contains("line 1"));
        // A name a user rule gives another port.
        let e = f.set(G1, "hpc0").unwrap_err();
        assert!(
            matches!(
                e,
                IpoibRuleError::NameTaken {
                    user_line: Some(1),
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("edit that line by hand"));
        // A name the daemon gives another port.
        f.set(G1, "ib-a").unwrap();
        let mut f = IpoibRulesFile::parse(Some(&f.render().unwrap()));
        let e = f.set(Guid(1), "ib-a").unwrap_err();
        assert!(matches!(
            e,
            IpoibRuleError::NameTaken {
                user_line: None,
                ..
            }
        ));
        assert!(e.to_string().contains("RemoveIpoibName"));
        // Checks see this session's changes, not only the file as read.
        assert_eq!(
            f.set(G1, "ib-b"),
            Ok(IpoibRuleChange::Renamed { old: "ib-a".into() })
        );
        assert_eq!(f.set(Guid(1), "ib-a"), Ok(IpoibRuleChange::Added));
        assert_eq!(f.remove(Guid(1)), Ok("ib-a".into()));
        assert_eq!(f.remove(Guid(1)), Err(IpoibRuleError::NotNamed(Guid(1))));
        assert_eq!(
            f.set(G1, "ib-a"),
            Ok(IpoibRuleChange::Renamed { old: "ib-b".into() })
        );
        // Removing a user's rule, or a name nobody gave.
        assert!(matches!(
            f.remove(G2),
            Err(IpoibRuleError::UnmanagedRemoval { line: 1, .. })
        ));
        assert_eq!(f.remove(Guid(7)), Err(IpoibRuleError::NotNamed(Guid(7))));
        // Names that could inject rule syntax never get in.
        for bad in [
            "",
            "ib0\"",
            "ib0\n",
            "a\", RUN+=\"x",
            "ib*",
            "ib%d",
            "../x",
            "x/y",
            "sixteen-chars-xx",
        ] {
            assert!(
                matches!(f.set(G1, bad), Err(IpoibRuleError::BadName { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(f.name_of(G1).map(|r| r.name.as_str()), Some("ib-a"));
    }

    #[test]
    fn broken_markers_refuse_changes() {
        let mut f = parse(b"# BEGIN rdma-manager\nSUBSYSTEM==\"net\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"x\"\n");
        // Nothing is the daemon's when its block is not closed.
        assert!(!f.rules()[0].managed);
        assert!(matches!(f.set(G2, "y"), Err(IpoibRuleError::Block(_))));
        assert!(matches!(f.remove(G1), Err(IpoibRuleError::Block(_))));
        let e = f.render().unwrap_err();
        assert!(e.to_string().contains("fix the markers by hand"), "{e}");
    }

    #[test]
    fn last_rule_wins() {
        let f = parse(b"ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"a\"\nATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"b\"\n");
        assert_eq!(f.name_of(G1).map(|r| r.name.as_str()), Some("b"));
    }
}
