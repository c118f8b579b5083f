//! Key paths of the state document, both ways: `show` prints every setting by its path
//! (`roce[mlx5_0/1].tos: 106`, [`crate::state::settings`]), and `set` turns paths and values
//! given on the command line back into a document ([`document`]) that the daemon applies as
//! it applies a file. So every key of the document can be set from the command line, the
//! keys added later included, without a command of its own.
//!
//! A list entry is named in brackets by its identity, the keys that say which entry it is
//! ([`ENTRY_LISTS`]); a value is written as `show` prints it: `yes`/`no` for a switch, a
//! list comma-separated, an address as `ip/prefix-length`.

use std::fmt::Write as _;

/// A list of the document whose entries a key path names by identity.
#[derive(Debug)]
pub struct EntryList {
    /// The list's own path: `roce`, `naming.rdma-fixed-names`.
    pub path: &'static str,
    /// The keys of an entry that name it, in the order the brackets take them, `/` between.
    pub identity: &'static [&'static str],
    /// Keys every entry must have that a path cannot name, with the only value they take.
    pub required: &'static [(&'static str, &'static str)],
    /// A key of an entry, for the hint to a path that names an entry but no key.
    pub example: &'static str,
}

/// Every list of the document whose entries have an identity (service/model/src/state/, one module a list).
pub const ENTRY_LISTS: &[EntryList] = &[
    EntryList {
        path: "soft-links",
        identity: &["name"],
        required: &[],
        example: "state",
    },
    EntryList {
        path: "roce",
        identity: &["device", "port"],
        required: &[],
        example: "tos",
    },
    EntryList {
        path: "ports",
        identity: &["device", "port"],
        required: &[],
        example: "type",
    },
    EntryList {
        path: "sriov-vfs",
        identity: &["device", "vf"],
        required: &[],
        example: "node-guid",
    },
    EntryList {
        path: "interfaces",
        identity: &["name"],
        required: &[("type", "infiniband")],
        example: "mtu",
    },
    EntryList {
        path: "naming.rdma-fixed-names",
        identity: &["node-guid"],
        required: &[],
        example: "name",
    },
    EntryList {
        path: "naming.ipoib-names",
        identity: &["port-guid"],
        required: &[],
        example: "name",
    },
];

/// Keys whose value is a list, which `show` prints comma-separated (`--` when empty); the
/// round-trip test below holds each of them.
const LIST_KEYS: [&str; 7] = [
    "address",
    "dns",
    "dns-search",
    "pfc",
    "ecn",
    "bandwidth",
    "prio-tc",
];

/// The list at `path`, if its entries have an identity.
pub fn entry_list(path: &str) -> Option<&'static EntryList> {
    ENTRY_LISTS.iter().find(|l| l.path == path)
}

/// A document node being built from key paths, in the order the paths came.
#[derive(Debug)]
enum Node {
    Map(Vec<(String, Node)>),
    /// Entries of an identity list: the identity as the path wrote it, and the entry.
    List(&'static EntryList, Vec<(String, Node)>),
    /// A value, as YAML text.
    Value(String),
}

/// A document made from key paths, and how to say its paths back as they were given.
#[derive(Debug)]
pub struct SetDocument {
    /// The state document (YAML).
    pub yaml: String,
    /// Each entry's path as the daemon names it in the document (`roce[0]`), and as given
    /// (`roce[mlx5_0/1]`).
    entries: Vec<(String, String)>,
}

impl SetDocument {
    /// The daemon's refusal of the document in the paths as they were given: its entries by
    /// identity rather than by index, and no line of a document the user never saw.
    pub fn reword(&self, refusal: &str) -> String {
        let mut text = refusal.to_string();
        if let Some((line, rest)) = text.split_once(": ") {
            if line
                .strip_prefix("line ")
                .is_some_and(|n| n.parse::<u32>().is_ok())
            {
                text = rest.to_string();
            }
        }
        for (index, given) in &self.entries {
            for after in ['.', ':', ' ', ','] {
                text = text.replace(&format!("{index}{after}"), &format!("{given}{after}"));
            }
            if text.ends_with(index.as_str()) {
                text.truncate(text.len() - index.len());
                text.push_str(given);
            }
        }
        text
    }
}

/// The state document that sets each `(path, value)` of `pairs` and leaves everything else
/// as it is; an error naming the path or value that cannot be one.
pub fn document(pairs: &[(String, String)]) -> Result<SetDocument, String> {
    if pairs.is_empty() {
        return Err("set needs PATH VALUE, e.g. roce[mlx5_0/1].tos 106".into());
    }
    let mut root = Vec::new();
    for (path, value) in pairs {
        insert(&mut root, path, value).map_err(|e| format!("{path}: {e}"))?;
    }
    let mut yaml = String::new();
    write_map(&mut yaml, &root, 0);
    let mut entries = Vec::new();
    entry_paths(&root, "", &mut entries);
    Ok(SetDocument { yaml, entries })
}

/// Every entry of an identity list under `map`, by index and by identity.
fn entry_paths(map: &[(String, Node)], prefix: &str, out: &mut Vec<(String, String)>) {
    for (k, v) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Node::Map(m) => entry_paths(m, &path, out),
            Node::List(_, entries) => {
                for (i, (id, _)) in entries.iter().enumerate() {
                    out.push((format!("{path}[{i}]"), format!("{path}[{id}]")));
                }
            }
            Node::Value(_) => {}
        }
    }
}

fn insert(root: &mut Vec<(String, Node)>, path: &str, value: &str) -> Result<(), String> {
    if path.split(['.', '[']).next() == Some("health") {
        return Err("health is checked, never applied: use rdma-cli health".into());
    }
    let segments = segments(path)?;
    let mut map = root;
    let mut walked = String::new();
    let last = segments.len() - 1;
    for (i, (key, id)) in segments.into_iter().enumerate() {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(key);
        let list = entry_list(&walked);
        match (id, list) {
            (Some(_), None) => return Err(format!("{walked} has no entries named in brackets")),
            (None, Some(l)) => {
                return Err(format!(
                    "name the entry of {walked}: {walked}[{}]",
                    l.identity.join("/").to_uppercase()
                ))
            }
            (None, None) if i == last => {
                if map.iter().any(|(k, _)| k == key) {
                    return Err("given twice, or inside a value given".into());
                }
                map.push((key.to_string(), Node::Value(value_yaml(key, value)?)));
                return Ok(());
            }
            (None, None) => {
                map = match child(map, key, || Node::Map(Vec::new())) {
                    Node::Map(m) => m,
                    _ => return Err(format!("{walked} is a value, not a section")),
                };
            }
            (Some(id), Some(l)) => {
                if i == last {
                    return Err(format!(
                        "name a key of the entry, e.g. {walked}[{id}].{}",
                        l.example
                    ));
                }
                let entries = match child(map, key, || Node::List(l, Vec::new())) {
                    Node::List(_, e) => e,
                    _ => return Err(format!("{walked} is not a list")),
                };
                map = entry(entries, l, id)?;
            }
        }
    }
    Ok(())
}

/// The node at `key` of `map`, made by `new` when absent.
fn child<'m>(
    map: &'m mut Vec<(String, Node)>,
    key: &str,
    new: impl FnOnce() -> Node,
) -> &'m mut Node {
    let at = match map.iter().position(|(k, _)| k == key) {
        Some(at) => at,
        None => {
            map.push((key.to_string(), new()));
            map.len() - 1
        }
    };
    &mut map[at].1
}

/// The entry `id` of an identity list, made with its identity when absent.
fn entry<'e>(
    entries: &'e mut Vec<(String, Node)>,
    list: &EntryList,
    id: &str,
) -> Result<&'e mut Vec<(String, Node)>, String> {
    let at = match entries.iter().position(|(i, _)| i == id) {
        Some(at) => at,
        None => {
            let parts: Vec<&str> = if list.identity.len() == 1 {
                vec![id]
            } else {
                id.split('/').collect()
            };
            if parts.len() != list.identity.len() || parts.iter().any(|p| p.is_empty()) {
                return Err(format!(
                    "{}[{id}]: name the entry as {}[{}]",
                    list.path,
                    list.path,
                    list.identity.join("/").to_uppercase()
                ));
            }
            let mut fields = Vec::new();
            for (k, v) in list.identity.iter().zip(parts) {
                fields.push((k.to_string(), Node::Value(scalar(v))));
            }
            entries.push((id.to_string(), Node::Map(fields)));
            entries.len() - 1
        }
    };
    match &mut entries[at].1 {
        Node::Map(m) => Ok(m),
        _ => Err("not an entry".into()),
    }
}

/// `a.b[id].c` as `[("a", None), ("b", Some("id")), ("c", None)]`.
fn segments(path: &str) -> Result<Vec<(&str, Option<&str>)>, String> {
    let mut out = Vec::new();
    let mut rest = path;
    loop {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let key = &rest[..end];
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        {
            return Err("not a key path (keys as `rdma-cli show` prints them)".into());
        }
        rest = &rest[end..];
        let mut id = None;
        if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']').ok_or("a [ without its ]")?;
            id = Some(&r[..close]);
            rest = &r[close + 1..];
        }
        out.push((key, id));
        match rest.strip_prefix('.') {
            Some(r) => rest = r,
            None if rest.is_empty() => return Ok(out),
            None => return Err("not a key path (keys as `rdma-cli show` prints them)".into()),
        }
    }
}

/// The value of `key` as YAML: a list for the list keys, else a scalar.
fn value_yaml(key: &str, value: &str) -> Result<String, String> {
    let value = value.trim();
    if LIST_KEYS.contains(&key) {
        let none = ["--", "none"].contains(&value);
        let items: Vec<&str> = value
            .split(',')
            .filter(|_| !none)
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .collect();
        let items: Vec<String> = if key == "address" {
            items
                .iter()
                .map(|a| match a.rsplit_once('/') {
                    Some((ip, len)) if len.parse::<u8>().is_ok() => {
                        Ok(format!("{{ip: {}, prefix-length: {len}}}", quoted(ip)))
                    }
                    _ => Err(format!("{a}: an address is IP/PREFIX-LENGTH")),
                })
                .collect::<Result<_, _>>()?
        } else {
            items.iter().map(|i| scalar(i)).collect()
        };
        return Ok(format!("[{}]", items.join(", ")));
    }
    if value.is_empty() {
        return Err("a value is needed (a setting cannot be emptied; leave it out)".into());
    }
    Ok(scalar(value))
}

/// A command-line value as a YAML scalar that the document's types read as they would read
/// it in a file: `yes`/`no` as `show` prints switches, a plain scalar where YAML takes one
/// (a number stays a number), quoted otherwise.
fn scalar(value: &str) -> String {
    match value.to_ascii_lowercase().as_str() {
        "yes" | "true" | "on" => return "true".into(),
        "no" | "false" | "off" => return "false".into(),
        "null" | "~" => return quoted(value),
        _ => {}
    }
    let plain = value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+/-".contains(c));
    if plain {
        value.to_string()
    } else {
        quoted(value)
    }
}

/// A double-quoted YAML string (JSON's escapes are YAML's).
fn quoted(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "\"\"".into())
}

fn write_map(out: &mut String, map: &[(String, Node)], indent: usize) {
    for (k, v) in map {
        let _ = write!(out, "{:indent$}{k}:", "");
        write_node(out, v, indent);
    }
}

fn write_node(out: &mut String, node: &Node, indent: usize) {
    match node {
        Node::Value(v) => {
            let _ = writeln!(out, " {v}");
        }
        Node::Map(m) => {
            out.push('\n');
            write_map(out, m, indent + 2);
        }
        Node::List(list, entries) => {
            out.push('\n');
            for (_, e) in entries {
                let Node::Map(given) = e else { continue };
                // The keys an entry must have and a path cannot name, unless given.
                let required = list
                    .required
                    .iter()
                    .filter(|(k, _)| !given.iter().any(|(g, _)| g == k))
                    .map(|(k, v)| (k.to_string(), Node::Value(scalar(v))));
                let fields: Vec<(String, Node)> = required.collect();
                let _ = write!(out, "{:indent$}  -", "");
                for (n, (k, v)) in given.iter().chain(&fields).enumerate() {
                    if n == 0 {
                        let _ = write!(out, " {k}:");
                    } else {
                        let _ = write!(out, "{:w$}{k}:", "", w = indent + 4);
                    }
                    write_node(out, v, indent + 4);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_manager_model::state::parse::parse;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn paths_and_values_become_a_document_the_daemon_reads() {
        let doc = document(&pairs(&[
            ("roce[mlx5_0/1].tos", "106"),
            ("roce[mlx5_0/1].mode", "v2"),
            ("interfaces[ib0].mtu", "2044"),
            ("interfaces[ib0].infiniband.umcast", "no"),
            ("interfaces[ib0].ipv4.address", "192.0.2.1/24, 192.0.2.9/32"),
            ("interfaces[ib0].ipv4.dns", "192.0.2.53"),
            ("naming.rdma-fixed-names[0002:c903:0031:7f40].name", "ibp0"),
            ("modules.rdma.ib_ipoib", "yes"),
            ("memlock.soft", "unlimited"),
            ("sriov-vfs[mlx5_0/2].node-guid", "11:22:33:44:55:66:77:88"),
            ("sriov-vfs[mlx5_0/2].port-guid", "11:22:33:44:55:66:77:89"),
            ("soft-links[rxe0].state", "absent"),
        ]))
        .expect("a document")
        .yaml;
        let state = parse(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
        let roce = &state.roce.as_ref().expect("roce")[0];
        assert_eq!(
            (roce.device.as_str(), roce.port, roce.tos),
            ("mlx5_0", 1, Some(106))
        );
        let ib0 = &state.interfaces.as_ref().expect("interfaces")[0];
        assert_eq!(ib0.mtu, Some(2044));
        let v4 = ib0.ipv4.as_ref().expect("ipv4");
        assert_eq!(v4.address.as_ref().map(Vec::len), Some(2));
        assert_eq!(v4.dns.as_deref(), Some(&["192.0.2.53".to_string()][..]));
        let vf = &state.sriov_vfs.as_ref().expect("vfs")[0];
        assert_eq!((vf.device.as_str(), vf.vf), ("mlx5_0", 2));
        assert!(state.modules.as_ref().expect("modules")["rdma"]["ib_ipoib"]);
        assert_eq!(
            state
                .naming
                .as_ref()
                .and_then(|n| n.rdma_fixed_names.as_ref())
                .expect("names")[0]
                .name
                .as_deref(),
            Some("ibp0")
        );
    }

    #[test]
    fn what_show_prints_sets_the_same_document_back() {
        let doc = serde_json::json!({
            "soft-links": [{"name": "rxe0", "type": "rxe", "netdev": "eth0"}],
            "roce": [{"device": "mlx5_0", "port": 1, "mode": "v2", "tos": 106}, {
                "device": "mlx5_1", "port": 1,
                "qos": {"trust": "dscp", "pfc": [3], "ecn": [3, 4], "traffic-class": 106,
                        "ets": {"bandwidth": [10, 10, 10, 40, 10, 10, 5, 5],
                                "prio-tc": [0, 1, 2, 3, 4, 5, 6, 7]},
                        "dscp": {"26": 3, "48": 6}}
            }, {
                "device": "mlx5_2", "port": 1, "qos": {"trust": "pcp", "pfc": []}
            }],
            "ports": [{"device": "mlx4_0", "port": 2, "type": "eth"}],
            "sriov-vfs": [{"device": "mlx5_0", "vf": 1,
                           "node-guid": "11:22:33:44:55:66:77:88",
                           "port-guid": "11:22:33:44:55:66:77:89"}],
            "interfaces": [{
                "name": "ib0", "type": "infiniband", "mtu": 2044,
                "infiniband": {"mode": "datagram", "umcast": false},
                "ipv4": {"enabled": true, "address": [{"ip": "192.0.2.1", "prefix-length": 24}],
                         "dns": ["192.0.2.53"]}
            }, {
                "name": "ib0.8002", "type": "infiniband",
                "infiniband": {"base-iface": "ib0", "pkey": "0x8002"}
            }],
            "naming": {"rdma-policy": "NAME_KERNEL",
                       "rdma-fixed-names": [{"node-guid": "0002:c903:0031:7f40", "name": "ibp0"}],
                       "ipoib-names": [{"port-guid": "0002:c903:0031:7f41", "name": "ibp0s1"}]},
            "modules": {"rdma": {"ib_ipoib": true}},
            "memlock": {"soft": "unlimited", "hard": "unlimited"},
            "nfs-rdma": {"enabled": true, "port": 20049},
            "subnet-manager": {"enabled": false},
            "responder": {"enabled": true}
        });
        let wanted: rdma_manager_model::state::doc::State =
            serde_json::from_value(doc.clone()).expect("a state");
        let shown = crate::state::settings(&doc);
        let doc = document(&shown).expect("a document").yaml;
        let back = parse(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
        assert_eq!(back, wanted, "{doc}");
    }

    #[test]
    fn a_path_that_names_no_setting_is_refused_with_what_to_write() {
        let refused = |p: &str, v: &str| document(&pairs(&[(p, v)])).expect_err(p);
        assert!(refused("roce.tos", "1").contains("roce[DEVICE/PORT]"));
        assert!(refused("roce[mlx5_0].tos", "1").contains("roce[DEVICE/PORT]"));
        assert!(refused("roce[mlx5_0/1]", "1").contains("roce[mlx5_0/1].tos"));
        assert!(refused("soft-links[rxe0]", "1").contains("soft-links[rxe0].state"));
        assert!(refused("memlock[x].soft", "1").contains("no entries"));
        assert!(refused("roce[mlx5_0/1.tos", "1").contains("]"));
        assert!(refused("roce..tos", "1").contains("not a key path"));
        assert!(refused("roce[a/1].tos", "").contains("a value is needed"));
        assert!(refused("interfaces[ib0].ipv4.address", "192.0.2.1").contains("IP/PREFIX"));
        assert!(refused("health.min-ports", "2").contains("rdma-cli health"));
        assert!(document(&[]).is_err());
        let twice = document(&pairs(&[("memlock.soft", "1"), ("memlock.soft", "2")]));
        assert!(twice.expect_err("twice").contains("twice"));
        let inside = document(&pairs(&[("memlock", "1"), ("memlock.soft", "2")]));
        assert!(inside.expect_err("inside").contains("a value"));
    }

    /// The key each list's hint offers is a key of its entries.
    #[test]
    fn each_lists_example_key_is_one_of_its_entries() {
        for l in ENTRY_LISTS {
            let id = vec!["1"; l.identity.len()].join("/");
            let path = format!("{}[{id}].{}", l.path, l.example);
            let doc = document(&pairs(&[(path.as_str(), "1")])).expect("a document");
            let read = rdma_manager_model::state::parse::read(&doc.yaml);
            assert!(
                !read.is_err_and(|e| e.to_string().contains("unknown field")),
                "{path}"
            );
        }
    }

    #[test]
    fn a_refusal_names_entries_as_they_were_given() {
        let doc = document(&pairs(&[
            ("roce[mlx5_0/1].tos", "1"),
            ("roce[mlx5_0/10].tos", "300"),
        ]))
        .expect("a document");
        assert_eq!(
            doc.reword("line 7: roce[1].tos: 300 is out of range; roce[0]"),
            "roce[mlx5_0/10].tos: 300 is out of range; roce[mlx5_0/1]"
        );
        assert_eq!(doc.reword("no line here"), "no line here");
    }

    #[test]
    fn values_are_typed_as_a_file_would_type_them() {
        assert_eq!(scalar("106"), "106");
        assert_eq!(scalar("Yes"), "true");
        assert_eq!(scalar("off"), "false");
        assert_eq!(scalar("0002:c903:0031:7f40"), "\"0002:c903:0031:7f40\"");
        assert_eq!(scalar("null"), "\"null\"");
        assert_eq!(scalar("a b: c"), "\"a b: c\"");
        assert_eq!(scalar("-1"), "\"-1\"");
        assert_eq!(
            value_yaml("dns-search", "a.example, b.example").as_deref(),
            Ok("[a.example, b.example]")
        );
        assert_eq!(value_yaml("pfc", "3").as_deref(), Ok("[3]"));
        assert_eq!(value_yaml("pfc", "--").as_deref(), Ok("[]"));
        assert_eq!(value_yaml("dns", "").as_deref(), Ok("[]"));
    }
}
