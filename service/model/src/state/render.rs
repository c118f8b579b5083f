//! A state as text: the YAML document `GetState` prints and the same as JSON, with list
//! entries sorted by their identity so that two reads of one host print the same text.

use super::doc::State;

impl State {
    /// The same state with every list sorted by its entries' identity (soft links and
    /// interfaces by name, RoCE ports by device and port, fixed names by GUID). Addresses,
    /// DNS servers and search domains keep their order, which NetworkManager keeps.
    pub fn sorted(&self) -> State {
        let mut s = self.clone();
        if let Some(l) = &mut s.soft_links {
            l.sort_by(|a, b| a.name.cmp(&b.name));
        }
        if let Some(l) = &mut s.roce {
            l.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
        }
        if let Some(l) = &mut s.interfaces {
            l.sort_by(|a, b| a.name.cmp(&b.name));
        }
        if let Some(n) = &mut s.naming {
            if let Some(l) = &mut n.rdma_fixed_names {
                l.sort_by(|a, b| a.node_guid.cmp(&b.node_guid));
            }
            if let Some(l) = &mut n.ipoib_names {
                l.sort_by(|a, b| a.port_guid.cmp(&b.port_guid));
            }
        }
        s
    }
}

/// The state as a YAML document, entries sorted ([`State::sorted`]).
pub fn to_yaml(state: &State) -> String {
    // The types hold only strings, numbers, booleans, lists and maps with string keys, all
    // of which YAML writes: serializing cannot fail.
    serde_yaml_ng::to_string(&state.sorted()).expect("a state always serializes to YAML")
}

/// The state as pretty-printed JSON, entries sorted ([`State::sorted`]).
pub fn to_json(state: &State) -> String {
    serde_json::to_string_pretty(&state.sorted()).expect("a state always serializes to JSON")
}
