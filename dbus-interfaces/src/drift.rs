//! The client proxies (`proxies.rs`) checked against the committed introspection XML
//! (`xml/`), which `tests/tests/dbus/xml.rs` checks against the live service: every method,
//! property and signal of each interface must be in both, with the same signature, so the
//! proxies cannot drift from the service unnoticed. The proxies' Rust types are read from
//! their source and turned into D-Bus signatures; the structs of [`crate::types`] and the
//! aliases of `proxies.rs` by their own `Type::SIGNATURE`.

use std::collections::BTreeMap;

use zbus::zvariant::Type;

const PROXIES: &str = include_str!("proxies.rs");
/// Every committed XML file, read when the test runs, so a new interface's file is compared
/// without a change here.
fn xml_files() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("xml");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "xml"));
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect()
}

/// Members of one interface by kind and D-Bus name: "method Name" -> "in -> out",
/// "property Name" -> type, "signal Name" -> args.
type Members = BTreeMap<String, String>;

/// The text between `start` and the next `end` after it, and what follows.
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<(&'a str, &'a str)> {
    let i = s.find(start)? + start.len();
    let j = s[i..].find(end)? + i;
    Some((&s[i..j], &s[j + end.len()..]))
}

/// `name="v"` (XML) or `name = "v"` (Rust attributes).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    between(tag, &format!(" {name}=\""), "\"")
        .or_else(|| between(tag, &format!("{name} = \""), "\""))
        .map(|(v, _)| v)
}

fn xml_interfaces() -> BTreeMap<String, Members> {
    let mut out = BTreeMap::new();
    for doc in xml_files() {
        let mut rest = doc.as_str();
        while let Some((block, after)) = between(rest, "<interface ", "</interface>") {
            rest = after;
            let name = between(block, "name=\"", "\"")
                .map(|(n, _)| n.to_string())
                .unwrap_or_default();
            let mut m = Members::new();
            let mut kind = "";
            let (mut ins, mut outs, mut member) = (String::new(), String::new(), String::new());
            let flush = |m: &mut Members, kind: &str, member: &str, ins: &str, outs: &str| {
                match kind {
                    "method" => m.insert(format!("method {member}"), format!("{ins} -> {outs}")),
                    "signal" => m.insert(format!("signal {member}"), ins.to_string()),
                    _ => None,
                };
            };
            for tag in block.split('<').skip(1) {
                let tag = tag.split('>').next().unwrap_or_default();
                if tag.starts_with("method ") || tag.starts_with("signal ") {
                    flush(&mut m, kind, &member, &ins, &outs);
                    kind = if tag.starts_with("method") {
                        "method"
                    } else {
                        "signal"
                    };
                    member = attr(tag, "name").unwrap_or_default().to_string();
                    ins.clear();
                    outs.clear();
                } else if tag.starts_with("arg ") {
                    let ty = attr(tag, "type").unwrap_or_default();
                    if attr(tag, "direction") == Some("out") {
                        outs.push_str(ty);
                    } else {
                        ins.push_str(ty);
                    }
                } else if tag.starts_with("property ") {
                    let n = attr(tag, "name").unwrap_or_default();
                    m.insert(
                        format!("property {n}"),
                        attr(tag, "type").unwrap_or_default().to_string(),
                    );
                }
            }
            flush(&mut m, kind, &member, &ins, &outs);
            out.insert(name, m);
        }
    }
    out
}

fn pascal(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// Splits on commas outside brackets.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The D-Bus signature of a Rust type as the proxies write it.
fn signature(ty: &str) -> String {
    let ty = ty.trim();
    let ty = ty
        .strip_prefix("std::collections::")
        .unwrap_or(ty)
        .trim_start_matches('&');
    let ty = ty.strip_prefix("zbus::zvariant::").unwrap_or(ty);
    if let Some(inner) = ty.strip_prefix("Vec<").and_then(|t| t.strip_suffix('>')) {
        return format!("a{}", signature(inner));
    }
    if let Some(inner) = ty
        .strip_prefix("HashMap<")
        .and_then(|t| t.strip_suffix('>'))
    {
        let kv = split_top(inner);
        return format!(
            "a{{{}}}",
            kv.iter().map(|t| signature(t)).collect::<String>()
        );
    }
    if let Some(inner) = ty.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        let parts = split_top(inner);
        if parts.is_empty() {
            return String::new();
        }
        return format!(
            "({})",
            parts.iter().map(|t| signature(t)).collect::<String>()
        );
    }
    use crate::proxies::{HistorySample, PortSample};
    use crate::types::*;
    match ty {
        "str" | "String" => "s".into(),
        "bool" => "b".into(),
        "u8" => "y".into(),
        "u16" => "q".into(),
        "u32" => "u".into(),
        "u64" => "t".into(),
        "i32" => "i".into(),
        "i64" => "x".into(),
        "f64" => "d".into(),
        "OwnedObjectPath" => "o".into(),
        "Value<'_>" | "Value" | "OwnedValue" => "v".into(),
        "PortSample" => PortSample::SIGNATURE.to_string(),
        "HistorySample" => HistorySample::SIGNATURE.to_string(),
        "RdmaModule" => RdmaModule::SIGNATURE.to_string(),
        "UnitState" => UnitState::SIGNATURE.to_string(),
        "ManagedLimits" => ManagedLimits::SIGNATURE.to_string(),
        "SubnetManager" => SubnetManager::SIGNATURE.to_string(),
        "HostStep" => HostStep::SIGNATURE.to_string(),
        "Owner" => Owner::SIGNATURE.to_string(),
        "SoftLink" => SoftLink::SIGNATURE.to_string(),
        "NameRule" => NameRule::SIGNATURE.to_string(),
        "StateStale" => StateStale::SIGNATURE.to_string(),
        "NamePreview" => NamePreview::SIGNATURE.to_string(),
        "Gid" => Gid::SIGNATURE.to_string(),
        "Pkey" => Pkey::SIGNATURE.to_string(),
        "PersistedChild" => PersistedChild::SIGNATURE.to_string(),
        "MovedChild" => MovedChild::SIGNATURE.to_string(),
        "LeftChild" => LeftChild::SIGNATURE.to_string(),
        other => format!("<unknown type {other}: add it to drift.rs>"),
    }
}

fn proxy_interfaces() -> BTreeMap<String, Members> {
    let mut out = BTreeMap::new();
    let mut rest = PROXIES;
    while let Some((head, after)) = between(rest, "#[proxy(", ")]") {
        let name = attr(head, "interface").unwrap_or_default().to_string();
        let Some((body, after)) = between(after, "{\n", "\n}\n") else {
            break;
        };
        rest = after;
        let mut m = Members::new();
        let mut zbus_attr = String::new();
        let mut lines = body.lines().map(str::trim).peekable();
        while let Some(line) = lines.next() {
            if line.starts_with("#[zbus(") {
                zbus_attr = line.to_string();
                continue;
            }
            if !line.starts_with("fn ") {
                continue;
            }
            let mut decl = line.to_string();
            while !decl.ends_with(';') {
                let Some(next) = lines.next() else { break };
                decl.push(' ');
                decl.push_str(next);
            }
            let fname = decl[3..].split('(').next().unwrap_or_default().to_string();
            let args_start = decl.find('(').unwrap_or(0) + 1;
            let args_end = decl.rfind(") ->").unwrap_or(decl.len());
            let args: String = split_top(&decl[args_start..args_end])
                .into_iter()
                .filter(|a| *a != "&self")
                .map(|a| signature(a.split_once(':').map_or(a, |(_, t)| t)))
                .collect();
            let ret = decl
                .rsplit_once("-> zbus::Result<")
                .and_then(|(_, r)| r.strip_suffix(">;"))
                .unwrap_or("()");
            let dbus_name = attr(&zbus_attr, "name").map_or_else(|| pascal(&fname), String::from);
            if zbus_attr.contains("property") {
                m.insert(format!("property {dbus_name}"), signature(ret));
            } else if zbus_attr.contains("signal") {
                m.insert(format!("signal {dbus_name}"), args);
            } else {
                // Several out arguments come back as one tuple.
                let outs = signature(ret);
                let outs = match ret.trim().starts_with('(') {
                    true => outs
                        .strip_prefix('(')
                        .and_then(|o| o.strip_suffix(')'))
                        .unwrap_or(&outs)
                        .to_string(),
                    false => outs,
                };
                m.insert(format!("method {dbus_name}"), format!("{args} -> {outs}"));
            }
            zbus_attr.clear();
        }
        out.insert(name, m);
    }
    out
}

#[test]
fn the_proxies_match_the_committed_xml() {
    let xml = xml_interfaces();
    let proxies = proxy_interfaces();
    assert_eq!(
        xml.len(),
        7,
        "every interface's XML is read: {:?}",
        xml.keys()
    );
    assert_eq!(
        proxies.keys().collect::<Vec<_>>(),
        xml.keys().collect::<Vec<_>>(),
        "one proxy per interface"
    );
    let mut drift = Vec::new();
    for (iface, members) in &xml {
        let p = &proxies[iface];
        for (k, sig) in members {
            match p.get(k) {
                None => drift.push(format!("{iface}: {k} ({sig}) has no proxy")),
                Some(ps) if ps != sig => drift.push(format!("{iface}: {k}: XML {sig}, proxy {ps}")),
                Some(_) => {}
            }
        }
        for k in p.keys().filter(|k| !members.contains_key(*k)) {
            drift.push(format!("{iface}: the proxy's {k} is not in the XML"));
        }
    }
    assert!(drift.is_empty(), "{}", drift.join("\n"));
}

/// The check itself sees a drift: a property typed otherwise, a member missing.
#[test]
fn the_check_sees_a_changed_type() {
    assert_eq!(
        signature("Vec<(OwnedObjectPath, String, String, u32, String)>"),
        "a(ossus)"
    );
    assert_eq!(signature("Vec<SubnetManager>"), "a(ossus)");
    assert_eq!(signature("HashMap<String, u64>"), "a{st}");
    assert_eq!(
        signature("(String, bool, HashMap<String, u64>)"),
        "(sba{st})"
    );
    let p = proxy_interfaces();
    let host = &p["org.rdmamanager.RdmaManager1.Host"];
    assert_eq!(host["property NfsServer"], "(sss)");
    assert_eq!(host["method SetNfsRdma"], "bq -> a(sss)");
    assert_ne!(signature("UnitState"), signature("ManagedLimits"));
}
