//! Clients' records of rdma-managerd's objects: one struct per interface with properties
//! (`Port` for `...Port`, `HostSetup` for `...Host`, ...), one field per property, generated
//! when the crate builds from the committed XML (`codegen/records.rs`). A client fills one
//! from GetManagedObjects and keeps it current from PropertiesChanged through `set`.

use crate::types::{
    Gid, ManagedLimits, NameRule, Owner, PersistedChild, Pkey, RdmaModule, SoftLink, StateFile,
    StateStale, SubnetManager, UnitState, VfGuid,
};
use zbus::zvariant::OwnedValue;

/// A property whose value had another type than the API declares (a service of another
/// version): the record keeps the value it had and the caller shows the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("property {name}: {reason}")]
pub struct PropertyError {
    pub name: String,
    pub reason: String,
}

/// Converts one property value into `T`.
fn convert<T>(name: &str, v: &OwnedValue) -> Result<T, PropertyError>
where
    T: TryFrom<OwnedValue>,
    <T as TryFrom<OwnedValue>>::Error: std::fmt::Display,
{
    let failed = |reason: String| PropertyError {
        name: name.to_string(),
        reason,
    };
    let owned = v.try_clone().map_err(|e| failed(e.to_string()))?;
    T::try_from(owned).map_err(|e| failed(e.to_string()))
}

/// Converts one property value into its wire type `W`, then into the record's `T`.
fn convert_with<W, T>(
    name: &str,
    v: &OwnedValue,
    f: impl FnOnce(W) -> T,
) -> Result<T, PropertyError>
where
    W: TryFrom<OwnedValue>,
    <W as TryFrom<OwnedValue>>::Error: std::fmt::Display,
{
    convert::<W>(name, v).map(f)
}

include!(concat!(env!("OUT_DIR"), "/records.rs"));

impl Port {
    /// True for a port whose link is up (ACTIVE).
    pub fn is_active(&self) -> bool {
        self.state == "ACTIVE"
    }

    /// True for an InfiniBand port (as opposed to Ethernet: RoCE, iWARP).
    pub fn is_infiniband(&self) -> bool {
        self.link_layer == "InfiniBand"
    }
}

impl Ipoib {
    /// A P_Key child (as opposed to a port's own interface).
    pub fn is_child(&self) -> bool {
        !self.parent_name.is_empty()
    }

    /// The NetworkManager profile that configures it, if one does (the daemon then leaves
    /// it alone).
    pub fn nm_profile(&self) -> Option<&str> {
        self.owner.nm_profile()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zbus::zvariant::{ObjectPath, Value};

    fn owned(v: Value<'_>) -> OwnedValue {
        v.try_to_owned().expect("owned")
    }

    #[test]
    fn set_takes_the_wire_types_and_keeps_them_as_records_do() {
        let mut p = Port::default();
        assert_eq!(p.set("Lid", &owned(Value::U32(7))), Ok(true));
        assert_eq!(p.lid, 7);
        let dev = ObjectPath::try_from("/org/rdmamanager/RdmaManager1/Device/3").expect("path");
        assert_eq!(p.set("Device", &owned(Value::ObjectPath(dev))), Ok(true));
        assert_eq!(p.device, "/org/rdmamanager/RdmaManager1/Device/3");
        let mut m = std::collections::HashMap::new();
        m.insert("Lid".to_string(), "missing".to_string());
        assert_eq!(p.set("Unreadable", &owned(Value::from(m))), Ok(true));
        assert_eq!(p.unreadable.get("Lid").map(String::as_str), Some("missing"));
    }

    #[test]
    fn an_unknown_property_is_left_and_a_wrong_type_refused_unchanged() {
        let mut p = Port {
            lid: 5,
            ..Port::default()
        };
        assert_eq!(p.set("NoSuchProperty", &owned(Value::U32(1))), Ok(false));
        let err = p
            .set("Lid", &owned(Value::from("five")))
            .expect_err("a string for u32");
        assert_eq!(err.name, "Lid");
        assert_eq!(p.lid, 5);
    }

    /// A record without `PkeyInPortTable` (an older service's, or recorded before it) does
    /// not claim the partition is missing from the port's table.
    #[test]
    fn pkey_in_port_table_is_true_until_told() {
        assert!(Ipoib::default().pkey_in_port_table);
        let i: Ipoib = serde_json::from_str(r#"{"name":"ib0"}"#).expect("json");
        assert!(i.pkey_in_port_table);
    }

    /// A record written by an older client (fewer fields) reads back with defaults.
    #[test]
    fn json_without_newer_fields_reads() {
        let p: Port = serde_json::from_str(r#"{"path":"/p","lid":3}"#).expect("json");
        assert_eq!((p.path.as_str(), p.lid, p.state_changes), ("/p", 3, 0));
    }
}
