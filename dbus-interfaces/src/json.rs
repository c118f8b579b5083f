//! The JSON document `rdma-managerd show --json` and `rdma-tui --json` print (docs/JSON.md):
//! the D-Bus model, one shape for both, so that a script reads the same keys whether a daemon
//! runs or not.
//!
//! ```json
//! {"version": 1,
//!  "objects": {"/org/rdmamanager/RdmaManager1": {"org.rdmamanager.RdmaManager1": {...}},
//!              "/org/rdmamanager/RdmaManager1/Device/0":
//!                  {"org.rdmamanager.RdmaManager1.Device": {"Name": "mlx5_0", ...}}, ...}}
//! ```
//!
//! `objects` is what GetManagedObjects returns (object path, then interface, then property)
//! with the root object's own interface added, and every property is its D-Bus value turned
//! into JSON by [`value`], the one conversion both programs use. A new property or object
//! keeps the [`VERSION`]; a property removed or renamed, or a change of the mapping, raises it.

use serde_json::{Map, Number, Value as Json};
use zbus::zvariant::Value;

/// The version of the document's shape, its `version` member.
pub const VERSION: u64 = 1;

/// A D-Bus value as JSON:
///
/// - booleans as booleans; every integer type (`y n q i u x t`) as a number; doubles (`d`) as
///   numbers, except NaN and the infinities, which JSON cannot write, as `null`;
/// - strings, object paths and signatures (`s o g`) as strings;
/// - arrays (`a…`) as arrays, byte arrays (`ay`) as arrays of numbers too;
/// - dictionaries (`a{…}`) as objects; a key that is not a string (a number, a boolean) is
///   written as its JSON text, since an object's keys are strings;
/// - structures (`(…)`) as arrays of their fields, in order;
/// - a variant (`v`) as the value it holds; a file descriptor (`h`, in no property of
///   rdma-managerd) as `null`.
pub fn value(v: &Value<'_>) -> Json {
    match v {
        Value::U8(n) => Json::from(*n),
        Value::Bool(b) => Json::Bool(*b),
        Value::I16(n) => Json::from(*n),
        Value::U16(n) => Json::from(*n),
        Value::I32(n) => Json::from(*n),
        Value::U32(n) => Json::from(*n),
        Value::I64(n) => Json::from(*n),
        Value::U64(n) => Json::from(*n),
        Value::F64(x) => Number::from_f64(*x).map_or(Json::Null, Json::Number),
        Value::Str(s) => Json::String(s.as_str().to_string()),
        Value::Signature(s) => Json::String(s.to_string()),
        Value::ObjectPath(p) => Json::String(p.as_str().to_string()),
        Value::Value(inner) => value(inner),
        Value::Array(a) => Json::Array(a.inner().iter().map(value).collect()),
        Value::Dict(d) => Json::Object(
            d.iter()
                .map(|(k, v)| {
                    let key = match value(k) {
                        Json::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, value(v))
                })
                .collect(),
        ),
        Value::Structure(s) => Json::Array(s.fields().iter().map(value).collect()),
        // File descriptors (unix), and GVariant's maybe type when zvariant is built with it.
        #[allow(unreachable_patterns)]
        _ => Json::Null,
    }
}

/// The document under construction: objects by path, their interfaces, their properties.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Document {
    objects: Map<String, Json>,
    /// Members beside `objects` that a reader asked for (`rdma-tui --json --counters`), by
    /// name: not properties, so not under `objects`.
    sections: Map<String, Json>,
}

impl Document {
    pub fn new() -> Document {
        Document::default()
    }

    /// Adds the properties of `interface` on the object at `path`; an object's interfaces
    /// are added one call each.
    pub fn add<'a, 'b: 'a, K: AsRef<str>>(
        &mut self,
        path: &str,
        interface: &str,
        properties: impl IntoIterator<Item = (K, &'a Value<'b>)>,
    ) {
        let props: Map<String, Json> = properties
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), value(v)))
            .collect();
        let object = self
            .objects
            .entry(path.to_string())
            .or_insert_with(|| Json::Object(Map::new()));
        if let Json::Object(ifaces) = object {
            ifaces.insert(interface.to_string(), Json::Object(props));
        }
    }

    /// The document of what a client reads: the root's own properties (`GetAll` of
    /// [`crate::BUS_NAME`]'s interface at [`crate::ROOT_PATH`]) and GetManagedObjects' reply.
    pub fn of_published(
        root: &std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
        objects: &zbus::fdo::ManagedObjects,
    ) -> Document {
        let mut doc = Document::new();
        doc.add(
            crate::ROOT_PATH,
            crate::BUS_NAME,
            root.iter().map(|(k, v)| (k, &**v)),
        );
        for (path, ifaces) in objects {
            for (iface, props) in ifaces {
                doc.add(
                    path.as_str(),
                    iface.as_str(),
                    props.iter().map(|(k, v)| (k, &**v)),
                );
            }
        }
        doc
    }

    /// The paths of the objects that have `interface`, in order.
    pub fn paths_with(&self, interface: &str) -> Vec<String> {
        self.objects
            .iter()
            .filter(|(_, ifaces)| ifaces.get(interface).is_some())
            .map(|(path, _)| path.clone())
            .collect()
    }

    /// Sets the member `name` beside `objects` (`counters`, `rates`); `version` and
    /// `objects` are the document's own and are not replaced.
    pub fn set_section(&mut self, name: &str, value: Json) {
        if name != "version" && name != "objects" {
            self.sections.insert(name.to_string(), value);
        }
    }

    /// `{"version": VERSION, "objects": {...}}`, and the sections set.
    pub fn into_json(self) -> Json {
        let mut doc = Map::new();
        doc.insert("version".into(), Json::from(VERSION));
        doc.insert("objects".into(), Json::Object(self.objects));
        doc.extend(self.sections);
        Json::Object(doc)
    }

    /// The document as both programs print it: indented, `version` first, then objects,
    /// interfaces and properties in the order of their names, then the sections, so that two documents of the
    /// same state are the same text; a newline at the end.
    pub fn to_pretty_string(&self) -> String {
        #[derive(serde::Serialize)]
        struct Printed<'a> {
            version: u64,
            objects: &'a Map<String, Json>,
            #[serde(flatten)]
            sections: &'a Map<String, Json>,
        }
        let printed = Printed {
            version: VERSION,
            objects: &self.objects,
            sections: &self.sections,
        };
        // Serializing JSON values and plain fields into memory cannot fail.
        let mut text = serde_json::to_string_pretty(&printed).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use zbus::zvariant::serialized::Context;
    use zbus::zvariant::{Endian, ObjectPath, OwnedObjectPath, OwnedValue};

    fn j(v: Value<'_>) -> String {
        value(&v).to_string()
    }

    #[test]
    fn every_kind_of_value_maps_as_documented() {
        assert_eq!(j(Value::from(7u8)), "7");
        assert_eq!(j(Value::from(true)), "true");
        assert_eq!(j(Value::from(-3i16)), "-3");
        assert_eq!(j(Value::from(0xffffu16)), "65535");
        assert_eq!(j(Value::from(-70000i32)), "-70000");
        assert_eq!(j(Value::from(u32::MAX)), "4294967295");
        assert_eq!(j(Value::from(i64::MIN)), "-9223372036854775808");
        assert_eq!(j(Value::from(u64::MAX)), "18446744073709551615");
        assert_eq!(j(Value::from(2.5f64)), "2.5");
        assert_eq!(j(Value::from(f64::NAN)), "null");
        assert_eq!(j(Value::from(f64::INFINITY)), "null");
        assert_eq!(
            j(Value::from("0x0002c903003178f2")),
            "\"0x0002c903003178f2\""
        );
        let path = ObjectPath::try_from("/org/rdmamanager/RdmaManager1/Device/0").unwrap();
        assert_eq!(
            j(Value::from(path)),
            "\"/org/rdmamanager/RdmaManager1/Device/0\""
        );
        let sig = zbus::zvariant::Signature::try_from("a(qs)").unwrap();
        assert_eq!(j(Value::from(sig)), "\"a(qs)\"");
        // A variant holding a variant is the value inside.
        assert_eq!(j(Value::Value(Box::new(Value::from(5u32)))), "5");
        assert_eq!(j(Value::from(vec![1u8, 2, 255])), "[1,2,255]");
        assert_eq!(j(Value::from(Vec::<String>::new())), "[]");
        assert_eq!(
            j(Value::from(vec![(0x8002u16, "ib0.8002".to_string())])),
            "[[32770,\"ib0.8002\"]]"
        );
        assert_eq!(
            j(Value::from((true, "why".to_string(), 12u64))),
            "[true,\"why\",12]"
        );
        let m: HashMap<String, String> = [("Lid".to_string(), "missing".to_string())].into();
        assert_eq!(j(Value::from(m)), "{\"Lid\":\"missing\"}");
        let m: HashMap<u32, bool> = [(3, true)].into();
        assert_eq!(j(Value::from(m)), "{\"3\":true}");
    }

    #[test]
    fn a_document_of_values_and_of_values_read_back_from_the_wire_is_the_same() {
        let props = [
            ("Name", Value::from("mlx5_0")),
            (
                "Ports",
                Value::from(vec![OwnedObjectPath::try_from("/a/Port/1").unwrap()]),
            ),
            ("Unreadable", Value::from(HashMap::<String, String>::new())),
        ];
        let mut built = Document::new();
        built.add(
            "/a",
            "org.example.Device",
            props.iter().map(|(k, v)| (*k, v)),
        );
        built.add("/a", "org.example.Other", [("N", &Value::from(1u32))]);
        // Encoded as an a{sv} and decoded, as a client holds them after GetManagedObjects or
        // GetAll.
        let sent: HashMap<&str, &Value<'_>> = props.iter().map(|(k, v)| (*k, v)).collect();
        let ctx = Context::new_dbus(Endian::Little, 0);
        let bytes = zbus::zvariant::to_bytes(ctx, &sent).unwrap();
        let (owned, _): (HashMap<String, OwnedValue>, usize) = bytes.deserialize().unwrap();
        let mut read = Document::new();
        read.add("/a", "org.example.Other", [("N", &Value::from(1u32))]);
        read.add(
            "/a",
            "org.example.Device",
            owned.iter().map(|(k, v)| (k, &**v)),
        );
        assert_eq!(built, read);
        let doc = built.into_json();
        assert_eq!(doc["version"], VERSION);
        assert_eq!(doc["objects"]["/a"]["org.example.Device"]["Name"], "mlx5_0");
        assert_eq!(
            doc["objects"]["/a"]["org.example.Device"]["Ports"][0],
            "/a/Port/1"
        );
        assert_eq!(doc["objects"]["/a"]["org.example.Other"]["N"], 1);
    }

    #[test]
    fn printed_with_the_version_first_and_names_in_order() {
        let mut doc = Document::new();
        doc.add(
            "/b",
            "org.example.B",
            [("Z", &Value::from(1u8)), ("A", &Value::from(2u8))],
        );
        doc.add("/a", "org.example.A", [("N", &Value::from(3u8))]);
        let text = doc.to_pretty_string();
        assert!(
            text.starts_with("{\n  \"version\": 1,\n  \"objects\": {\n"),
            "{text}"
        );
        assert!(text.ends_with("}\n"), "{text}");
        let order: Vec<usize> = ["\"/a\"", "\"/b\"", "\"A\"", "\"Z\""]
            .iter()
            .map(|k| text.find(k).unwrap_or(usize::MAX))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        let back: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(back, doc.into_json());
    }

    #[test]
    fn sections_follow_the_objects_and_never_replace_them() {
        let mut doc = Document::new();
        doc.add("/a", "org.example.A", [("N", &Value::from(3u8))]);
        doc.set_section("rates", serde_json::json!({"/a": {"tx": 1}}));
        doc.set_section("counters", serde_json::json!({"/a": {"x": 2}}));
        doc.set_section("objects", serde_json::json!("lost"));
        doc.set_section("version", serde_json::json!(7));
        let text = doc.to_pretty_string();
        let at = |k: &str| text.find(k).unwrap_or(usize::MAX);
        assert!(text.starts_with("{\n  \"version\": 1,\n"), "{text}");
        assert!(at("\"objects\"") < at("\"counters\""), "{text}");
        assert!(at("\"counters\"") < at("\"rates\""), "{text}");
        let back: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(back["objects"]["/a"]["org.example.A"]["N"], 3);
        assert_eq!(back, doc.into_json());
    }
}
