//! The declarative state: `show` (GetState), `diff` (DiffState), `apply` (ApplyState). The
//! document is the daemon's to parse and check: it is sent as it was read, so that a refusal
//! names the document's own lines.
//!
//! `show` without `--yaml`/`--json` prints every setting on its own line by key path, the
//! paths `diff` names (`roce[mlx5_0/1].tos: 106`), as `nmcli connection show` prints a
//! profile's settings.

use std::io::Read as _;

use rdma_manager_dbus::types::StateChange;
use serde_json::Value;
use zbus::Connection;

use crate::failure::{code, Failure};
use crate::output::{escape, Format, Table};
use crate::{bus, pending};

/// One change as DiffState and ApplyState report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub op: String,
    pub current: String,
    pub wanted: String,
    pub action: String,
}

/// The document in `file`, or standard input for `-`.
pub fn read_document(file: &str) -> Result<String, Failure> {
    let mut text = String::new();
    if file == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("standard input: {e}")))?;
    } else {
        text = std::fs::read_to_string(file).map_err(|e| {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                crate::failure::code::NOT_FOUND
            } else {
                crate::failure::code::USAGE
            };
            Failure::new(code, format!("{file}: {e}"))
        })?;
    }
    Ok(text)
}

/// The changes as `format` prints them: a line each (`PATH OP CURRENT -> WANTED`), terse
/// fields, or a JSON array of objects.
pub fn render_changes(changes: &[Change], format: Format) -> String {
    match format {
        Format::Json => {
            let v: Vec<Value> = changes
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "path": c.path,
                        "op": c.op,
                        "current": c.current,
                        "wanted": c.wanted,
                        "action": c.action,
                    })
                })
                .collect();
            let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Terse => {
            let mut t = Table::new(&["PATH", "OP", "CURRENT", "WANTED", "ACTION"]);
            for c in changes {
                t.push(vec![
                    c.path.clone(),
                    c.op.clone(),
                    c.current.clone(),
                    c.wanted.clone(),
                    c.action.clone(),
                ]);
            }
            t.render(Format::Terse)
        }
        Format::Table => {
            let shown = |v: &str| {
                if v.is_empty() {
                    "--".to_string()
                } else {
                    v.to_string()
                }
            };
            let width = changes
                .iter()
                .map(|c| c.path.chars().count())
                .max()
                .unwrap_or(0);
            changes
                .iter()
                .map(|c| {
                    format!(
                        "{:width$}  {:6}  {} -> {}\n",
                        c.path,
                        c.op,
                        shown(&c.current),
                        shown(&c.wanted)
                    )
                })
                .collect()
        }
    }
}

/// Every setting of a state document (as JSON) on a line of its own: `path: value`, with
/// list entries named by their identity (`soft-links[rxe0]`, `roce[mlx5_0/1]`).
pub fn settings(doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten(doc, "", &mut out);
    // The sections in the document's order (JSON objects here come sorted by key).
    let section = |path: &str| {
        SECTIONS
            .iter()
            .position(|s| {
                path.strip_prefix(s)
                    .is_some_and(|r| r.starts_with(['.', '[']))
            })
            .unwrap_or(SECTIONS.len())
    };
    out.sort_by_key(|(path, _)| section(path));
    out
}

/// The document's sections, in the order GetState writes them.
const SECTIONS: [&str; 12] = [
    "soft-links",
    "roce",
    "interfaces",
    "naming",
    "modules",
    "memlock",
    "nfs-rdma",
    "subnet-manager",
    "responder",
    "health",
    "ports",
    "sriov-vfs",
];

/// The identity of an entry of the list at `path`, and the keys that make it
/// ([`crate::keypath::ENTRY_LISTS`]).
fn identity(
    path: &str,
    entry: &serde_json::Map<String, Value>,
) -> Option<(String, &'static [&'static str])> {
    let list = crate::keypath::entry_list(path)?;
    let parts: Option<Vec<String>> = list
        .identity
        .iter()
        .map(|k| entry.get(*k).map(scalar))
        .collect();
    Some((parts?.join("/"), list.identity))
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn flatten(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(v, &join(path, k), out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object()) => {
            out.push((
                path.to_string(),
                items.iter().map(scalar).collect::<Vec<_>>().join(", "),
            ));
        }
        Value::Array(items) => {
            // Addresses read as they are written: ip/prefix-length.
            let addresses: Option<Vec<String>> = items
                .iter()
                .map(|i| {
                    let ip = i.get("ip")?.as_str()?;
                    let p = i.get("prefix-length")?;
                    Some(format!("{ip}/{p}"))
                })
                .collect();
            if let Some(a) = addresses {
                out.push((path.to_string(), a.join(", ")));
                return;
            }
            for (n, item) in items.iter().enumerate() {
                let Value::Object(m) = item else {
                    continue;
                };
                let (id, keys) =
                    identity(path, m).unwrap_or_else(|| (n.to_string(), &[] as &'static [&str]));
                let entry = format!("{path}[{id}]");
                let rest: Vec<(&String, &Value)> = m
                    .iter()
                    .filter(|(k, _)| !keys.contains(&k.as_str()))
                    .collect();
                if rest.is_empty() {
                    out.push((entry.clone(), String::new()));
                }
                for (k, v) in rest {
                    flatten(v, &join(&entry, k), out);
                }
            }
        }
        other => out.push((path.to_string(), scalar(other))),
    }
}

/// The settings as `format` prints them: aligned `path: value` lines, or terse
/// `path:value`.
pub fn render_settings(settings: &[(String, String)], format: Format) -> String {
    let width = settings
        .iter()
        .map(|(k, _)| k.chars().count() + 1)
        .max()
        .unwrap_or(0);
    settings
        .iter()
        .map(|(k, v)| match format {
            Format::Terse => format!("{}:{}\n", escape(k), escape(v)),
            _ => {
                let key = format!("{k}:");
                let v = if v.is_empty() { "--" } else { v.as_str() };
                format!("{key:width$}  {v}\n")
            }
        })
        .collect()
}

impl From<StateChange> for Change {
    fn from(c: StateChange) -> Self {
        Change {
            path: c.path,
            op: c.op,
            current: c.current,
            wanted: c.wanted,
            action: c.action,
        }
    }
}

/// `show [--yaml|--json]`: the document as the daemon prints it, or its settings by path;
/// with paths, only the settings at or under them.
pub async fn show(
    conn: &Connection,
    paths: &[String],
    yaml: bool,
    format: Format,
) -> Result<u8, Failure> {
    if yaml && format == Format::Json {
        return Err(Failure::usage("--yaml and --json: choose one"));
    }
    if !paths.is_empty() && (yaml || format == Format::Json) {
        return Err(Failure::usage(
            "show PATH prints settings by path: without --yaml or --json",
        ));
    }
    let m = bus::manager(conn).await?;
    if yaml || format == Format::Json {
        let doc = m.get_state(if yaml { "yaml" } else { "json" }).await?;
        print!("{doc}");
        if !doc.ends_with('\n') {
            println!();
        }
        return Ok(code::SUCCESS);
    }
    let doc = m.get_state("json").await?;
    let value: Value = serde_json::from_str(&doc)
        .map_err(|e| Failure::failed(format!("the daemon's state is not JSON: {e}")))?;
    let all = settings(&value);
    let mut shown = Vec::new();
    for p in paths {
        let under: Vec<_> = all.iter().filter(|(k, _)| is_under(k, p)).collect();
        if under.is_empty() {
            return Err(Failure::new(
                code::NOT_FOUND,
                format!("{p}: no such setting (rdma-cli show lists them)"),
            ));
        }
        shown.extend(under.into_iter().cloned());
    }
    print!(
        "{}",
        render_settings(if paths.is_empty() { &all } else { &shown }, format)
    );
    Ok(code::SUCCESS)
}

/// Whether the setting at `path` is `prefix` or inside it (`roce[mlx5_0/1]` holds
/// `roce[mlx5_0/1].tos`, not `roce[mlx5_0/10].tos`).
fn is_under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// `diff FILE|-`: exit 0 when nothing would change, 10 when something would.
pub async fn diff(conn: &Connection, file: &str, format: Format) -> Result<u8, Failure> {
    diff_document(conn, &read_document(file)?, format).await
}

/// [`diff`] of the document `doc`.
async fn diff_document(conn: &Connection, doc: &str, format: Format) -> Result<u8, Failure> {
    let changes: Vec<Change> = bus::manager(conn)
        .await?
        .diff_state(doc)
        .await?
        .into_iter()
        .map(Change::from)
        .collect();
    print!("{}", render_changes(&changes, format));
    Ok(if changes.is_empty() {
        code::SUCCESS
    } else {
        code::CHANGES
    })
}

/// `apply FILE|- [--timeout N]`: the changes made; with a timeout, the pending change and
/// how to confirm it.
pub async fn apply(
    conn: &Connection,
    file: &str,
    timeout: Option<u32>,
    format: Format,
) -> Result<u8, Failure> {
    check_timeout(timeout)?;
    apply_document(conn, &read_document(file)?, timeout, format).await
}

/// `set PATH VALUE... [--dry-run] [--timeout N]`: the settings as a document of their own,
/// applied (or diffed) as `apply` (`diff`) would a file holding it.
pub async fn set(
    conn: &Connection,
    words: &[String],
    dry_run: bool,
    timeout: Option<u32>,
    format: Format,
) -> Result<u8, Failure> {
    if words.len() % 2 != 0 {
        return Err(Failure::usage(format!(
            "{}: a value is missing (set takes PATH VALUE pairs)",
            words[words.len() - 1]
        )));
    }
    let pairs: Vec<(String, String)> = words
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let doc = crate::keypath::document(&pairs).map_err(Failure::usage)?;
    let done = if dry_run {
        diff_document(conn, &doc.yaml, format).await
    } else {
        check_timeout(timeout)?;
        apply_document(conn, &doc.yaml, timeout, format).await
    };
    done.map_err(|f| Failure::new(f.code, doc.reword(&f.message)))
}

fn check_timeout(timeout: Option<u32>) -> Result<(), Failure> {
    if let Some(t) = timeout {
        if !(10..=3600).contains(&t) {
            return Err(Failure::usage(format!(
                "--timeout {t}: give 10 to 3600 seconds"
            )));
        }
    }
    Ok(())
}

/// [`apply`] of the document `doc`.
async fn apply_document(
    conn: &Connection,
    doc: &str,
    timeout: Option<u32>,
    format: Format,
) -> Result<u8, Failure> {
    let (changes, pending) = bus::manager(conn)
        .await?
        .apply_state(doc, timeout.unwrap_or(0))
        .await?;
    let changes: Vec<Change> = changes.into_iter().map(Change::from).collect();
    let pending = (pending.as_str() != "/").then(|| pending.to_string());
    if format == Format::Json {
        let v = serde_json::json!({
            "changes": serde_json::from_str::<Value>(&render_changes(&changes, Format::Json))
                .unwrap_or(Value::Null),
            "pending": pending,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(code::SUCCESS);
    }
    print!("{}", render_changes(&changes, format));
    if format == Format::Table {
        match (&pending, changes.len()) {
            (_, 0) => println!("Nothing to change: the host is in the state asked."),
            (None, n) => println!("Applied {n} change{}.", if n == 1 { "" } else { "s" }),
            (Some(_), _) => {}
        }
    }
    if let Some(p) = &pending {
        if format == Format::Terse {
            println!("pending:{}", escape(p));
        } else {
            println!("{}", pending::describe(conn, p).await);
        }
    }
    Ok(code::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_named_by_key_path_and_identity() {
        let doc = serde_json::json!({
            "soft-links": [{"name": "rxe0", "type": "rxe", "netdev": "eth0"}],
            "roce": [{"device": "mlx5_0", "port": 1, "mode": "v2", "tos": 106}],
            "interfaces": [{
                "name": "ib0", "type": "infiniband", "mtu": 2044,
                "infiniband": {"mode": "datagram", "umcast": false},
                "ipv4": {"enabled": true, "address": [{"ip": "192.0.2.1", "prefix-length": 24}],
                         "dns": ["192.0.2.53"]}
            }],
            "naming": {"rdma-policy": "NAME_KERNEL",
                       "rdma-fixed-names": [{"node-guid": "0002:c903:0031:7f40", "name": "ibp0"}]},
            "modules": {"rdma": {"ib_ipoib": true}},
            "memlock": {"soft": "unlimited"}
        });
        let s = settings(&doc);
        let get = |k: &str| {
            s.iter()
                .find(|(p, _)| p == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("{k} in {s:?}"))
        };
        assert_eq!(get("soft-links[rxe0].netdev"), "eth0");
        assert_eq!(get("roce[mlx5_0/1].tos"), "106");
        assert_eq!(get("interfaces[ib0].mtu"), "2044");
        assert_eq!(get("interfaces[ib0].infiniband.umcast"), "no");
        assert_eq!(get("interfaces[ib0].ipv4.address"), "192.0.2.1/24");
        assert_eq!(get("interfaces[ib0].ipv4.dns"), "192.0.2.53");
        assert_eq!(
            get("naming.rdma-fixed-names[0002:c903:0031:7f40].name"),
            "ibp0"
        );
        assert_eq!(get("modules.rdma.ib_ipoib"), "yes");
        assert!(!s
            .iter()
            .any(|(p, _)| p.ends_with(".name") && p.starts_with("soft")));
        let terse = render_settings(&s, Format::Terse);
        assert!(terse.contains("naming.rdma-fixed-names[0002\\:c903\\:0031\\:7f40].name:ibp0\n"));
    }

    #[test]
    fn a_vf_is_named_by_its_device_and_index_and_a_prefix_selects_settings() {
        let doc = serde_json::json!({
            "sriov-vfs": [{"device": "mlx5_0", "vf": 1, "node-guid": "11:22:33:44:55:66:77:88"}]
        });
        let s = settings(&doc);
        assert_eq!(
            s,
            vec![(
                "sriov-vfs[mlx5_0/1].node-guid".to_string(),
                "11:22:33:44:55:66:77:88".to_string()
            )]
        );
        assert!(is_under("roce[mlx5_0/1].tos", "roce[mlx5_0/1]"));
        assert!(is_under("roce[mlx5_0/1].tos", "roce"));
        assert!(is_under("roce[mlx5_0/1].tos", "roce[mlx5_0/1].tos"));
        assert!(!is_under("roce[mlx5_0/10].tos", "roce[mlx5_0/1"));
        assert!(!is_under("roce[mlx5_0/10].tos", "roce[mlx5_0/1]"));
        assert!(!is_under("roce-x", "roce"));
    }

    #[test]
    fn changes_print_a_line_each_or_json() {
        let c = vec![Change {
            path: "roce[mlx5_0/1].tos".into(),
            op: "set".into(),
            current: "0".into(),
            wanted: "106".into(),
            action: "org.rdmamanager.rdmamanager1.manage-roce".into(),
        }];
        assert_eq!(
            render_changes(&c, Format::Table),
            "roce[mlx5_0/1].tos  set     0 -> 106\n"
        );
        let j: Value = serde_json::from_str(&render_changes(&c, Format::Json)).expect("json");
        assert_eq!(j[0]["wanted"], "106");
        assert_eq!(j[0]["action"], "org.rdmamanager.rdmamanager1.manage-roce");
        assert_eq!(
            render_changes(&c, Format::Terse),
            "roce[mlx5_0/1].tos:set:0:106:org.rdmamanager.rdmamanager1.manage-roce\n"
        );
    }
}
