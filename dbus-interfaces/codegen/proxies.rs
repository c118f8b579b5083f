//! Writes the client proxies (`#[zbus::proxy]` traits) from the committed introspection XML.
//!
//! The XML in `xml/` is the reviewed contract of the service: every method, property and
//! signal of a proxy, with its D-Bus name and signature, comes from it, and the service is
//! compared with it (`service/src/dbus/contract.rs`), so a proxy cannot drift from either.
//! What XML cannot say is kept here, in two small tables: per interface the trait's name, its
//! default path and a sentence of documentation ([`INTERFACES`]); per argument or property
//! the named Rust type of a D-Bus struct ([`NAMED`], e.g. `Port.Gids` is `Vec<Gid>`, not
//! `Vec<(u32, String, String, String)>`). The generated code asserts, in a test, that each
//! named type's signature is the XML's, and generation fails on a table entry that names
//! nothing. Every other type follows from the signature ([`rust_type`]).
//!
//! Used by `build.rs` (no `cfg(test)` there) and compiled with the crate's tests.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use zbus_xml::{ArgDirection, Node, PropertyAccess};
use zvariant::Signature;

/// Per interface: the D-Bus name, the Rust trait (`<trait>Proxy` is what clients use), the
/// default object path if the object is unique, and the trait's documentation.
pub const INTERFACES: &[(&str, &str, Option<&str>, &str)] = &[
    (
        "org.rdmamanager.RdmaManager1",
        "Manager",
        Some("/org/rdmamanager/RdmaManager1"),
        "The root object: devices, IPoIB interfaces, soft links, naming and throughput.",
    ),
    (
        "org.rdmamanager.RdmaManager1.Device",
        "Device",
        None,
        "An RDMA device, at `Device/<index>`.",
    ),
    (
        "org.rdmamanager.RdmaManager1.Port",
        "Port",
        None,
        "A port of a device, at `Device/<index>/Port/<n>`.",
    ),
    (
        "org.rdmamanager.RdmaManager1.Ipoib",
        "Ipoib",
        None,
        "An IPoIB interface (a port's own or a P_Key child), at `Ipoib/<ifindex>`.",
    ),
    (
        "org.rdmamanager.RdmaManager1.Host",
        "HostSetup",
        Some("/org/rdmamanager/RdmaManager1/Host"),
        "The host's setup: the kernel modules rdma-core loads, the pinned-memory limits of \
         group rdma, NFS over RDMA, and the subnet manager. Every method needs the polkit \
         action `org.rdmamanager.rdmamanager1.manage-host`.",
    ),
    (
        "org.rdmamanager.RdmaManager1.Network",
        "Network",
        Some("/org/rdmamanager/RdmaManager1"),
        "At the root: IP settings of RDMA netdevs through NetworkManager, and the changes \
         waiting for confirmation.",
    ),
    (
        "org.rdmamanager.RdmaManager1.PendingChange",
        "PendingChange",
        None,
        "A change made through NetworkManager that waits for confirmation, at `Change/<n>`.",
    ),
];

/// Named Rust types of D-Bus structs: `Interface.Member` for a property or a method's single
/// out argument, `Interface.Member.arg` for a named argument, `Interface.Member.<n>` for the
/// n-th (from 0) out argument of several. The interface is the last part of its name
/// (`RdmaManager1` for the root). The types are those in scope of `src/proxies.rs`.
pub const NAMED: &[(&str, &str)] = &[
    ("RdmaManager1.PreviewRdmaNames", "Vec<NamePreview>"),
    ("RdmaManager1.GetAllCounters.1", "Vec<PortCounters>"),
    ("RdmaManager1.ThroughputSampled.samples", "Vec<PortSample>"),
    ("RdmaManager1.SoftLinks", "Vec<SoftLink>"),
    ("RdmaManager1.IpoibNames", "Vec<NameRule>"),
    ("RdmaManager1.RdmaFixedNames", "Vec<NameRule>"),
    ("RdmaManager1.StateStale", "StateStale"),
    ("RdmaManager1.StateDirectory", "Vec<StateFile>"),
    ("RdmaManager1.DiffState", "Vec<StateChange>"),
    ("RdmaManager1.ApplyState.0", "Vec<StateChange>"),
    ("RdmaManager1.CheckHealth", "Vec<HealthCheck>"),
    ("Port.GetThroughputHistory", "Vec<HistorySample>"),
    ("Port.GetQosProfile.0", "QosProfile"),
    ("Port.GetThroughputHistoryCoarse", "Vec<HistorySample>"),
    ("Port.Gids", "Vec<Gid>"),
    ("Port.TestLink", "LinkTestResult"),
    ("Port.LinkTestProgress.result", "LinkTestResult"),
    ("RdmaManager1.RecentLinkTests", "Vec<LinkTestResult>"),
    ("RdmaManager1.GetLinkResponder", "LinkResponder"),
    ("Port.Pkeys", "Vec<Pkey>"),
    ("Port.NetdevOwner", "Owner"),
    ("Ipoib.Owner", "Owner"),
    ("Ipoib.PersistedChildren", "Vec<PersistedChild>"),
    ("Host.ApplyModules", "Vec<HostStep>"),
    ("Host.SetNfsRdma", "Vec<HostStep>"),
    ("Host.Modules", "Vec<RdmaModule>"),
    ("Host.MemlockManaged", "ManagedLimits"),
    ("Host.NfsServer", "UnitState"),
    ("Host.Opensm", "UnitState"),
    ("Host.SubnetManagers", "Vec<SubnetManager>"),
    ("Network.MoveToNetworkManager.1", "Vec<MovedChild>"),
    ("Network.MoveToNetworkManager.2", "Vec<LeftChild>"),
    ("Device.VfGuids", "Vec<VfGuid>"),
];

/// Where a type is used: a method's input is borrowed where zbus allows it, everything the
/// service sends is owned.
#[derive(Clone, Copy, PartialEq)]
enum Use {
    In,
    Out,
}

/// The Rust type of a D-Bus signature as the proxies take (`In`) or return (`Out`) it.
pub fn rust_type(sig: &Signature, top_in: bool) -> Result<String, String> {
    rust_type_of(sig, if top_in { Use::In } else { Use::Out })
}

fn rust_type_of(sig: &Signature, u: Use) -> Result<String, String> {
    Ok(match sig {
        Signature::U8 => "u8".into(),
        Signature::Bool => "bool".into(),
        Signature::I16 => "i16".into(),
        Signature::U16 => "u16".into(),
        Signature::I32 => "i32".into(),
        Signature::U32 => "u32".into(),
        Signature::I64 => "i64".into(),
        Signature::U64 => "u64".into(),
        Signature::F64 => "f64".into(),
        Signature::Str if u == Use::In => "&str".into(),
        Signature::Str => "String".into(),
        Signature::ObjectPath if u == Use::In => "&zbus::zvariant::ObjectPath<'_>".into(),
        Signature::ObjectPath => "zbus::zvariant::OwnedObjectPath".into(),
        Signature::Variant if u == Use::In => "zbus::zvariant::Value<'_>".into(),
        Signature::Variant => "zbus::zvariant::OwnedValue".into(),
        Signature::Array(child) => format!("Vec<{}>", rust_type_of(child, Use::Out)?),
        Signature::Dict { key, value } => {
            // A map given to the service borrows its keys (`a{sv}` settings).
            let key = match (u, &**key) {
                (Use::In, Signature::Str) => "&str".to_string(),
                _ => rust_type_of(key, Use::Out)?,
            };
            format!(
                "std::collections::HashMap<{key}, {}>",
                rust_type_of(value, u)?
            )
        }
        Signature::Structure(fields) => {
            let parts = fields
                .iter()
                .map(|f| rust_type_of(f, Use::Out))
                .collect::<Result<Vec<_>, _>>()?;
            format!("({},)", parts.join(", "))
        }
        other => return Err(format!("no Rust type for the D-Bus type {other}")),
    })
}

/// `SampleIntervalUs` -> `sample_interval_us`.
pub fn snake(pascal: &str) -> String {
    let mut out = String::new();
    for (i, c) in pascal.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// An argument name as a Rust identifier (`type` -> `r#type`).
pub fn ident(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "box", "break", "const", "continue", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
        "mut", "pub", "ref", "return", "static", "struct", "trait", "true", "type", "unsafe",
        "use", "where", "while", "yield",
    ];
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// The XML comment before each member (`<!-- ... -->` then `<method name="X"`), by
/// `method X`, `signal X` or `property X`: the service's documentation, which zbus writes
/// as comments and the XML parser skips.
pub fn comments_of(xml: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<!--") {
        let after = &rest[start + 4..];
        let Some(end) = after.find("-->") else { break };
        let text = &after[..end];
        rest = &after[end + 3..];
        let next = rest.trim_start();
        for kind in ["method", "signal", "property"] {
            let open = format!("<{kind} name=\"");
            if let Some(name) = next.strip_prefix(open.as_str()) {
                if let Some(name) = name.split('"').next() {
                    out.push((format!("{kind} {name}"), text.to_string()));
                }
            }
        }
    }
    out
}

/// Writes `text` as `#[doc]` lines.
pub fn doc(out: &mut String, indent: &str, text: &str) {
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let _ = writeln!(out, "{indent}#[doc = {:?}]", format!(" {line}"));
    }
}

/// The proxies of every interface in `files` (file name, contents), and a test that each
/// named type has the XML's signature.
pub fn generate(files: &[(String, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut used = BTreeSet::new();
    let mut checks = Vec::new();
    let mut seen = BTreeSet::new();
    for (file, xml) in files {
        let node = Node::try_from(xml.as_str()).map_err(|e| format!("{file}: {e}"))?;
        let docs = comments_of(xml);
        let doc_of = |key: String| {
            docs.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, t)| t.as_str())
        };
        for iface in node.interfaces() {
            let name = iface.name().to_string();
            let (_, trait_name, path, about) = INTERFACES
                .iter()
                .find(|(n, ..)| *n == name)
                .ok_or_else(|| format!("{file}: interface {name} is not in INTERFACES"))?;
            seen.insert(name.clone());
            let short = name.rsplit('.').next().unwrap_or(&name).to_string();
            let mut named = |key: String, sig: &Signature, fallback: String| -> String {
                match NAMED.iter().find(|(k, _)| *k == key) {
                    Some((k, ty)) => {
                        used.insert(*k);
                        checks.push((ty.to_string(), sig.to_string(), key));
                        ty.to_string()
                    }
                    None => fallback,
                }
            };
            doc(&mut out, "", about);
            let _ = writeln!(out, "///\n/// Generated from `dbus-interfaces/xml/{file}`.");
            let _ = writeln!(out, "#[zbus::proxy(");
            let _ = writeln!(out, "    interface = {name:?},");
            let _ = writeln!(
                out,
                "    default_service = \"org.rdmamanager.RdmaManager1\","
            );
            if let Some(p) = path {
                let _ = writeln!(out, "    default_path = {p:?},");
            }
            let _ = writeln!(out, "    gen_blocking = false\n)]");
            let _ = writeln!(out, "pub trait {trait_name} {{");
            for m in iface.methods() {
                let mname = m.name().to_string();
                if let Some(t) = doc_of(format!("method {mname}")) {
                    doc(&mut out, "    ", t);
                }
                let mut ins = Vec::new();
                let mut outs = Vec::new();
                for a in m.args() {
                    match a.direction() {
                        Some(ArgDirection::Out) => outs.push(a),
                        _ => ins.push(a),
                    }
                }
                let mut params = String::new();
                for (i, a) in ins.iter().enumerate() {
                    let aname = a.name().map(str::to_string).unwrap_or(format!("arg{i}"));
                    let ty = named(
                        format!("{short}.{mname}.{aname}"),
                        a.ty(),
                        rust_type(a.ty(), true)?,
                    );
                    let _ = write!(params, ", {}: {ty}", ident(&aname));
                }
                let ret = match outs.as_slice() {
                    [] => "()".to_string(),
                    [one] => {
                        let key = match one.name() {
                            Some(n) => format!("{short}.{mname}.{n}"),
                            None => format!("{short}.{mname}"),
                        };
                        named(key, one.ty(), rust_type(one.ty(), false)?)
                    }
                    several => {
                        let mut parts = Vec::new();
                        for (i, a) in several.iter().enumerate() {
                            let key = format!("{short}.{mname}.{i}");
                            parts.push(named(key, a.ty(), rust_type(a.ty(), false)?));
                        }
                        format!("({})", parts.join(", "))
                    }
                };
                let _ = writeln!(out, "    #[zbus(name = {mname:?})]");
                let _ = writeln!(
                    out,
                    "    fn {}(&self{params}) -> zbus::Result<{ret}>;",
                    snake(&mname)
                );
            }
            for s in iface.signals() {
                let sname = s.name().to_string();
                if let Some(t) = doc_of(format!("signal {sname}")) {
                    doc(&mut out, "    ", t);
                }
                let mut params = String::new();
                for (i, a) in s.args().iter().enumerate() {
                    let aname = a.name().map(str::to_string).unwrap_or(format!("arg{i}"));
                    let ty = named(
                        format!("{short}.{sname}.{aname}"),
                        a.ty(),
                        rust_type(a.ty(), false)?,
                    );
                    let _ = write!(params, ", {}: {ty}", ident(&aname));
                }
                let _ = writeln!(out, "    #[zbus(signal, name = {sname:?})]");
                let _ = writeln!(
                    out,
                    "    fn {}(&self{params}) -> zbus::Result<()>;",
                    snake(&sname)
                );
            }
            for p in iface.properties() {
                let pname = p.name().to_string();
                if p.access() != PropertyAccess::Read {
                    return Err(format!(
                        "{file}: {name}.{pname}: only read-only properties are generated"
                    ));
                }
                if let Some(t) = doc_of(format!("property {pname}")) {
                    doc(&mut out, "    ", t);
                }
                let ty = named(
                    format!("{short}.{pname}"),
                    p.ty(),
                    rust_type(p.ty(), false)?,
                );
                let _ = writeln!(out, "    #[zbus(property, name = {pname:?})]");
                let _ = writeln!(
                    out,
                    "    fn {}(&self) -> zbus::Result<{ty}>;",
                    snake(&pname)
                );
            }
            let _ = writeln!(out, "}}\n");
        }
    }
    if let Some(k) = NAMED.iter().map(|(k, _)| *k).find(|k| !used.contains(k)) {
        return Err(format!("NAMED entry {k} names no member of the XML"));
    }
    if let Some((n, ..)) = INTERFACES.iter().find(|(n, ..)| !seen.contains(*n)) {
        return Err(format!("INTERFACES entry {n} has no XML file"));
    }
    let _ = writeln!(
        out,
        "/// Each named type of a generated proxy has its XML signature."
    );
    let _ = writeln!(
        out,
        "#[cfg(test)]\n#[test]\nfn named_types_have_the_xml_signatures() {{"
    );
    for (ty, sig, key) in checks {
        let _ = writeln!(
            out,
            "    assert_eq!(<{ty} as zbus::zvariant::Type>::SIGNATURE.to_string(), {sig:?}, {key:?});"
        );
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(s: &str) -> Signature {
        Signature::try_from(s).expect("signature")
    }

    #[test]
    fn types_follow_the_signature() {
        assert_eq!(rust_type(&sig("s"), true).unwrap(), "&str");
        assert_eq!(rust_type(&sig("s"), false).unwrap(), "String");
        assert_eq!(
            rust_type(&sig("a{sv}"), true).unwrap(),
            "std::collections::HashMap<&str, zbus::zvariant::Value<'_>>"
        );
        assert_eq!(
            rust_type(&sig("a{sv}"), false).unwrap(),
            "std::collections::HashMap<String, zbus::zvariant::OwnedValue>"
        );
        assert_eq!(
            rust_type(&sig("a(oddddy)"), false).unwrap(),
            "Vec<(zbus::zvariant::OwnedObjectPath, f64, f64, f64, f64, u8,)>"
        );
        assert_eq!(
            rust_type(&sig("ao"), false).unwrap(),
            "Vec<zbus::zvariant::OwnedObjectPath>"
        );
        assert!(rust_type(&sig("h"), false).is_err());
    }

    #[test]
    fn names() {
        assert_eq!(snake("SampleIntervalUs"), "sample_interval_us");
        assert_eq!(snake("Ifindex"), "ifindex");
        assert_eq!(ident("type"), "r#type");
        assert_eq!(ident("name"), "name");
    }

    #[test]
    fn comments_document_the_member_after_them() {
        let xml = "<node><interface name=\"a.B\">\n<!--\n Does it.\n -->\n<method name=\"Do\"/>\n<!--\n A value.\n -->\n<property name=\"V\" type=\"u\" access=\"read\"/></interface></node>";
        let c = comments_of(xml);
        assert_eq!(c[0].0, "method Do");
        assert!(c[0].1.contains("Does it."));
        assert_eq!(c[1].0, "property V");
    }

    #[test]
    fn every_committed_interface_and_named_type_is_generated() {
        let code = generate(&super::super::committed()).expect("generates");
        assert_eq!(code.matches("pub trait ").count(), INTERFACES.len());
        assert!(
            code.contains("fn gids(&self) -> zbus::Result<Vec<Gid>>;"),
            "{code}"
        );
        assert!(code.contains(
            "fn add_soft_link(&self, name: &str, r#type: &str, netdev: &str) -> zbus::Result<zbus::zvariant::OwnedObjectPath>;"
        ));
    }

    /// A table entry that names no member (a renamed property, say) stops generation.
    #[test]
    fn a_stale_named_entry_is_refused() {
        let mut files = super::super::committed();
        for (_, xml) in &mut files {
            *xml = xml.replace("name=\"Gids\"", "name=\"GidTable\"");
        }
        let err = generate(&files).expect_err("Port.Gids names nothing");
        assert!(err.contains("Port.Gids"), "{err}");
    }
}
