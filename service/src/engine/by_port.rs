//! A device's values by port number, in port order.
//!
//! A device has one or two ports, rarely more, and the daemon keeps two such maps for every
//! device for as long as it exists. A `BTreeMap` allocates a node with room for eleven
//! entries for the first one; a vector of pairs sized to what it holds is several times
//! smaller, and a lookup among two entries is no slower.

use serde::ser::{Serialize, SerializeMap, Serializer};

#[derive(Debug, Clone, PartialEq)]
pub struct ByPort<T>(Vec<(u32, T)>);

impl<T> Default for ByPort<T> {
    fn default() -> Self {
        ByPort(Vec::new())
    }
}

impl<T> ByPort<T> {
    pub fn get(&self, port: &u32) -> Option<&T> {
        self.0.iter().find(|(p, _)| p == port).map(|(_, v)| v)
    }

    pub fn contains_key(&self, port: &u32) -> bool {
        self.get(port).is_some()
    }

    pub fn keys(&self) -> impl Iterator<Item = &u32> {
        self.0.iter().map(|(p, _)| p)
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&u32, &T)> {
        self.0.iter().map(|(p, v)| (p, v))
    }
}

/// As a map's `collect`: in port order, and of two values for one port the later one.
impl<T> FromIterator<(u32, T)> for ByPort<T> {
    fn from_iter<I: IntoIterator<Item = (u32, T)>>(iter: I) -> Self {
        let mut v: Vec<(u32, T)> = iter.into_iter().collect();
        // Stable: equal ports keep their order, so the last of them is the later value.
        v.sort_by_key(|(p, _)| *p);
        let mut out: Vec<(u32, T)> = Vec::with_capacity(v.len());
        for (port, value) in v {
            match out.last_mut() {
                Some(last) if last.0 == port => last.1 = value,
                _ => out.push((port, value)),
            }
        }
        out.shrink_to_fit();
        ByPort(out)
    }
}

impl<'a, T> IntoIterator for &'a ByPort<T> {
    type Item = (&'a u32, &'a T);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (u32, T)>, fn(&'a (u32, T)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(p, v)| (p, v))
    }
}

/// A map from port number to value, as the `BTreeMap` it replaces was serialized.
impl<T: Serialize> Serialize for ByPort<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (p, v) in &self.0 {
            map.serialize_entry(p, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_in_port_order_and_the_later_value_wins() {
        let m: ByPort<&str> = [(2, "b"), (1, "a"), (2, "c")].into_iter().collect();
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(&1, &"a"), (&2, &"c")]);
        assert_eq!(m.get(&2), Some(&"c"));
        assert_eq!(m.get(&3), None);
        assert!(m.contains_key(&1));
        assert_eq!(m.iter().count(), 2);
        assert_eq!((&m).into_iter().count(), 2);
    }

    #[test]
    fn holds_no_more_room_than_entries() {
        let m: ByPort<u64> = (0..3).map(|p| (p, 0)).chain([(9, 1)]).collect();
        assert_eq!(m.0.capacity(), m.0.len());
    }

    #[test]
    fn serializes_as_the_map_it_replaces() {
        let m: ByPort<u8> = [(2, 20), (1, 10)].into_iter().collect();
        let b: std::collections::BTreeMap<u32, u8> = [(2, 20), (1, 10)].into_iter().collect();
        assert_eq!(
            serde_json::to_string(&m).expect("json"),
            serde_json::to_string(&b).expect("json")
        );
    }
}
