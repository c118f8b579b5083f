//! Writes the clients' records from the committed introspection XML: per interface with
//! properties, a struct with one field per property (snake case, documented with the XML's
//! comment) and a `set` that takes a property's value as the service sends it.
//!
//! A client keeps its copy of the service's objects in these records (rdma-tui's model), so a
//! property added to the service reaches every client's record when the XML is refreshed, with
//! no hand-written list to update. The types are the proxies' (`NAMED` for D-Bus structs), but
//! shaped to be kept, compared and written as JSON: object paths as strings, string maps
//! ordered.
//!
//! Used by `build.rs` (no `cfg(test)` there) and compiled with the crate's tests.

use std::fmt::Write as _;

use zbus_xml::Node;
use zvariant::Signature;

use super::proxies::{comments_of, doc, rust_type, snake, INTERFACES, NAMED};

/// A record field's type, the wire type its value arrives as, and the conversion from one to
/// the other (`None` when they are the same).
/// A record's value for a property until the service gives one, where it is not the type's
/// default: `Interface.Property` (the interface's last name part) and the Rust expression.
/// An older service's record, or a recorded model without the property, reads these.
pub const DEFAULTS: &[(&str, &str)] = &[
    // Unknown means "not shown as missing from the port's table".
    ("Ipoib.PkeyInPortTable", "true"),
];

type FieldType = (String, String, Option<&'static str>);

fn field_type(sig: &Signature, named: Option<&str>) -> Result<FieldType, String> {
    if let Some(ty) = named {
        return Ok((ty.to_string(), ty.to_string(), None));
    }
    Ok(match sig {
        Signature::ObjectPath => (
            "String".into(),
            "zbus::zvariant::OwnedObjectPath".into(),
            Some("|p| p.as_str().to_string()"),
        ),
        Signature::Array(child) if **child == Signature::ObjectPath => (
            "Vec<String>".into(),
            "Vec<zbus::zvariant::OwnedObjectPath>".into(),
            Some("|v| v.into_iter().map(|p| p.as_str().to_string()).collect()"),
        ),
        Signature::Dict { key, value } => {
            let (k, v) = (rust_type(key, false)?, rust_type(value, false)?);
            (
                format!("std::collections::BTreeMap<{k}, {v}>"),
                format!("std::collections::HashMap<{k}, {v}>"),
                Some("|m| m.into_iter().collect()"),
            )
        }
        other => {
            let ty = rust_type(other, false)?;
            (ty.clone(), ty, None)
        }
    })
}

/// The records of every interface in `files` (file name, contents) that has properties.
pub fn generate(files: &[(String, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut used = std::collections::BTreeSet::new();
    for (file, xml) in files {
        let node = Node::try_from(xml.as_str()).map_err(|e| format!("{file}: {e}"))?;
        let docs = comments_of(xml);
        for iface in node.interfaces() {
            let name = iface.name().to_string();
            if iface.properties().is_empty() {
                continue;
            }
            let (_, record, _, about) = INTERFACES
                .iter()
                .find(|(n, ..)| *n == name)
                .ok_or_else(|| format!("{file}: interface {name} is not in INTERFACES"))?;
            let short = name.rsplit('.').next().unwrap_or(&name);
            let mut fields = String::new();
            let mut arms = String::new();
            let mut defaults = String::new();
            let mut any_default = false;
            for p in iface.properties() {
                let pname = p.name().to_string();
                let key = format!("{short}.{pname}");
                let named = NAMED.iter().find(|(k, _)| *k == key).map(|(_, t)| *t);
                let (ty, wire, conv) = field_type(p.ty(), named)?;
                if let Some(t) = docs.iter().find(|(k, _)| *k == format!("property {pname}")) {
                    doc(&mut fields, "    ", &t.1);
                }
                let field = snake(&pname);
                let _ = writeln!(fields, "    #[doc = \" D-Bus property `{pname}`.\"]");
                let _ = writeln!(fields, "    pub {field}: {ty},");
                let value = match DEFAULTS.iter().find(|(k, _)| *k == key) {
                    Some((k, v)) => {
                        used.insert(*k);
                        any_default = true;
                        v.to_string()
                    }
                    None => "Default::default()".to_string(),
                };
                let _ = writeln!(defaults, "            {field}: {value},");
                let value = match conv {
                    Some(c) => format!("convert_with::<{wire}, {ty}>(name, v, {c})?"),
                    None => format!("convert::<{ty}>(name, v)?"),
                };
                let _ = writeln!(arms, "            {pname:?} => self.{field} = {value},");
            }
            doc(&mut out, "", about);
            let _ = writeln!(
                out,
                "///\n/// A client's copy of its properties, generated from `dbus-interfaces/xml/{file}`."
            );
            let derives = if any_default { "" } else { "Default, " };
            let _ = writeln!(
                out,
                "#[derive(Debug, Clone, {derives}PartialEq, serde::Serialize, serde::Deserialize)]"
            );
            let _ = writeln!(out, "#[serde(default)]\npub struct {record} {{");
            let _ = writeln!(out, "    /// The object path.\n    pub path: String,");
            out.push_str(&fields);
            let _ = writeln!(out, "}}\n");
            if any_default {
                let _ = writeln!(out, "impl Default for {record} {{");
                let _ = writeln!(out, "    fn default() -> Self {{\n        {record} {{");
                let _ = writeln!(out, "            path: String::new(),");
                out.push_str(&defaults);
                let _ = writeln!(out, "        }}\n    }}\n}}\n");
            }
            let _ = writeln!(out, "impl {record} {{");
            let _ = writeln!(
                out,
                "    /// The D-Bus interface this record holds the properties of.\n    pub const INTERFACE: &'static str = {name:?};\n"
            );
            let _ = writeln!(
                out,
                "    /// Sets the property `name` from its value as the service sends it; \
                 `Ok(false)` for a\n    /// property this record does not have (a newer service's)."
            );
            let _ = writeln!(
                out,
                "    pub fn set(&mut self, name: &str, v: &zbus::zvariant::OwnedValue) -> Result<bool, PropertyError> {{"
            );
            let _ = writeln!(out, "        match name {{");
            out.push_str(&arms);
            let _ = writeln!(
                out,
                "            _ => return Ok(false),\n        }}\n        Ok(true)\n    }}\n}}\n"
            );
        }
    }
    if let Some((k, _)) = DEFAULTS.iter().find(|(k, _)| !used.contains(k)) {
        return Err(format!("DEFAULTS entry {k} names no property of the XML"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_property_is_a_field_in_the_records_shape() {
        let code = generate(&super::super::committed()).expect("generates");
        for record in [
            "Manager",
            "Device",
            "Port",
            "Ipoib",
            "HostSetup",
            "PendingChange",
        ] {
            assert!(
                code.contains(&format!("pub struct {record} {{")),
                "{record}"
            );
        }
        assert!(code.contains("pub device: String,"), "{code}");
        assert!(code.contains("pub gids: Vec<Gid>,"));
        assert!(code.contains("pub unreadable: std::collections::BTreeMap<String, String>,"));
        assert!(code.contains("pub ports: Vec<String>,"));
        assert!(code.contains("\"ActiveMtu\" => self.active_mtu = convert::<u32>(name, v)?,"));
    }

    #[test]
    fn a_property_with_its_own_default_has_it() {
        let code = generate(&super::super::committed()).expect("generates");
        assert!(code.contains("impl Default for Ipoib {"), "{code}");
        assert!(code.contains("            pkey_in_port_table: true,"));
        let mut files = super::super::committed();
        for (_, xml) in &mut files {
            *xml = xml.replace("name=\"PkeyInPortTable\"", "name=\"PkeyListed\"");
        }
        let err = generate(&files).expect_err("a stale DEFAULTS entry");
        assert!(err.contains("Ipoib.PkeyInPortTable"), "{err}");
    }

    /// A property added to the XML is a field of the record with nothing else edited.
    #[test]
    fn a_property_added_to_the_xml_reaches_the_record() {
        let mut files = super::super::committed();
        for (name, xml) in &mut files {
            if name.ends_with(".Port.xml") {
                *xml = xml.replacen(
                    "<property name=\"Lid\"",
                    "<property name=\"LinkRoundTripNs\" type=\"t\" access=\"read\"/>\n    <property name=\"Lid\"",
                    1,
                );
            }
        }
        let code = generate(&files).expect("generates");
        assert!(code.contains("pub link_round_trip_ns: u64,"), "{code}");
        assert!(code.contains("\"LinkRoundTripNs\" => self.link_round_trip_ns"));
    }
}
