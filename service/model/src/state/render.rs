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
        if let Some(l) = &mut s.ports {
            l.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
        }
        if let Some(l) = &mut s.sriov_vfs {
            l.sort_by(|a, b| (&a.device, a.vf).cmp(&(&b.device, b.vf)));
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::state::doc::*;
    use crate::state::parse::{parse, read};

    /// A small deterministic generator (xorshift), so that a failure names its seed.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn maybe<T>(&mut self, f: impl FnOnce(&mut Gen) -> T) -> Option<T> {
            (self.below(3) != 0).then(|| f(self))
        }
        fn bool(&mut self) -> bool {
            self.below(2) == 0
        }
        /// Strings YAML could read as something else unless quoted.
        fn text(&mut self) -> String {
            const WORDS: [&str; 16] = [
                "ib0",
                "true",
                "null",
                "~",
                "123",
                "0x8002",
                "yes",
                "a: b",
                "-x",
                "#c",
                "0002:0003:0004:0005",
                "",
                " lead",
                "1e3",
                "mlx5_0",
                "é",
            ];
            WORDS[self.below(WORDS.len() as u64) as usize].to_string()
        }
        fn list<T>(&mut self, f: impl Fn(&mut Gen) -> T) -> Vec<T> {
            (0..self.below(4)).map(|_| f(self)).collect()
        }
    }

    /// Any profile serde can carry, checked or not: the round trip does not check.
    fn qos_profile(g: &mut Gen) -> crate::qos::QosProfile {
        use crate::qos::{Ets, QosProfile, Trust};
        let prios = |g: &mut Gen| g.list(|g| g.below(8) as u8);
        QosProfile {
            trust: if g.bool() { Trust::Dscp } else { Trust::Pcp },
            pfc: prios(g),
            ets: g.maybe(|g| Ets {
                bandwidth: (0..8).map(|_| g.below(101) as u8).collect(),
                prio_tc: (0..8).map(|_| g.below(8) as u8).collect(),
            }),
            dscp: g
                .list(|g| (g.below(64) as u8, g.below(8) as u8))
                .into_iter()
                .collect(),
            traffic_class: g.maybe(|g| g.below(256) as u8),
            ecn: g.maybe(prios),
        }
    }

    fn entry_state(g: &mut Gen) -> EntryState {
        if g.bool() {
            EntryState::Up
        } else {
            EntryState::Absent
        }
    }

    fn family(g: &mut Gen) -> IpFamily {
        IpFamily {
            enabled: g.maybe(Gen::bool),
            dhcp: g.maybe(Gen::bool),
            autoconf: g.maybe(Gen::bool),
            address: g.maybe(|g| {
                g.list(|g| IpAddress {
                    ip: g.text(),
                    prefix_length: g.below(129) as u8,
                })
            }),
            gateway: g.maybe(Gen::text),
            dns: g.maybe(|g| g.list(Gen::text)),
            dns_search: g.maybe(|g| g.list(Gen::text)),
        }
    }

    fn state(g: &mut Gen) -> State {
        State {
            soft_links: g.maybe(|g| {
                g.list(|g| SoftLinkEntry {
                    name: g.text(),
                    kind: g.maybe(|g| {
                        if g.bool() {
                            SoftLinkKind::Rxe
                        } else {
                            SoftLinkKind::Siw
                        }
                    }),
                    netdev: g.maybe(Gen::text),
                    state: g.maybe(entry_state),
                })
            }),
            roce: g.maybe(|g| {
                g.list(|g| RoceEntry {
                    device: g.text(),
                    port: g.below(5) as u32,
                    mode: g.maybe(|g| {
                        if g.bool() {
                            RoceVersion::V1
                        } else {
                            RoceVersion::V2
                        }
                    }),
                    tos: g.maybe(|g| g.below(256) as u8),
                    qos: g.maybe(qos_profile),
                })
            }),
            interfaces: g.maybe(|g| {
                g.list(|g| InterfaceEntry {
                    name: g.text(),
                    kind: InterfaceType::Infiniband,
                    state: g.maybe(entry_state),
                    mtu: g.maybe(|g| g.below(70000) as u32),
                    infiniband: g.maybe(|g| Infiniband {
                        mode: g.maybe(|g| {
                            if g.bool() {
                                StateIpoibMode::Datagram
                            } else {
                                StateIpoibMode::Connected
                            }
                        }),
                        umcast: g.maybe(Gen::bool),
                        base_iface: g.maybe(Gen::text),
                        pkey: g.maybe(|g| {
                            if g.bool() {
                                format!("{:#06x}", g.below(0x10000))
                            } else {
                                g.text()
                            }
                        }),
                    }),
                    ipv4: g.maybe(family),
                    ipv6: g.maybe(family),
                })
            }),
            naming: g.maybe(|g| Naming {
                rdma_policy: g.maybe(Gen::text),
                rdma_fixed_names: g.maybe(|g| {
                    g.list(|g| FixedName {
                        node_guid: g.text(),
                        name: g.maybe(Gen::text),
                        state: g.maybe(entry_state),
                    })
                }),
                ipoib_names: g.maybe(|g| {
                    g.list(|g| IpoibName {
                        port_guid: g.text(),
                        name: g.maybe(Gen::text),
                        state: g.maybe(entry_state),
                    })
                }),
            }),
            modules: g.maybe(|g| {
                let mut m = BTreeMap::new();
                for _ in 0..g.below(3) {
                    let set: BTreeMap<String, bool> =
                        (0..g.below(3)).map(|_| (g.text(), g.bool())).collect();
                    m.insert(g.text(), set);
                }
                m
            }),
            memlock: g.maybe(|g| Memlock {
                soft: g.maybe(|g| {
                    if g.bool() {
                        "unlimited".into()
                    } else {
                        g.below(1 << 20).to_string()
                    }
                }),
                hard: g.maybe(Gen::text),
            }),
            nfs_rdma: g.maybe(|g| NfsRdma {
                enabled: g.maybe(Gen::bool),
                port: g.maybe(|g| g.below(65536) as u16),
            }),
            subnet_manager: g.maybe(|g| SubnetManager {
                enabled: g.maybe(Gen::bool),
                running: g.maybe(Gen::bool),
            }),
            responder: g.maybe(|g| Responder {
                enabled: g.maybe(Gen::bool),
            }),
            health: None,
            ports: g.maybe(|g| {
                g.list(|g| PortEntry {
                    device: g.text(),
                    port: g.below(5) as u32,
                    kind: g.maybe(|g| crate::port_type::PortType::ALL[g.below(3) as usize]),
                })
            }),
            sriov_vfs: g.maybe(|g| {
                g.list(|g| VfEntry {
                    device: g.text(),
                    vf: g.below(4) as u32,
                    node_guid: g.maybe(Gen::text),
                    port_guid: g.maybe(Gen::text),
                })
            }),
        }
    }

    #[test]
    fn printed_states_read_back_the_same() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        for round in 0..500 {
            let s = state(&mut g);
            let yaml = to_yaml(&s);
            let back = read(&yaml).unwrap_or_else(|e| panic!("round {round}: {e}\n{yaml}"));
            assert_eq!(back.state, s.sorted(), "round {round}:\n{yaml}");
            let json = to_json(&s);
            let back = read(&json).unwrap_or_else(|e| panic!("round {round}: {e}\n{json}"));
            assert_eq!(back.state, s.sorted(), "round {round}:\n{json}");
        }
    }

    #[test]
    fn output_is_sorted_and_kebab_case() {
        let s = parse(
            "interfaces:\n  - {name: ib1, type: infiniband}\n  - {name: ib0, type: infiniband, infiniband: {mode: connected}}\nsoft-links:\n  - {name: siw0, type: siw, netdev: eth1}\n  - {name: rxe0, type: rxe, netdev: eth1}\nroce:\n  - {device: mlx5_1, port: 1, tos: 3}\n  - {device: mlx5_0, port: 2, mode: v2}\n  - {device: mlx5_0, port: 1}\nnfs-rdma: {enabled: true, port: 20049}\nmemlock: {soft: unlimited, hard: unlimited}\n",
        )
        .expect("doc");
        assert_eq!(
            to_yaml(&s),
            "\
soft-links:
- name: rxe0
  type: rxe
  netdev: eth1
- name: siw0
  type: siw
  netdev: eth1
roce:
- device: mlx5_0
  port: 1
- device: mlx5_0
  port: 2
  mode: v2
- device: mlx5_1
  port: 1
  tos: 3
interfaces:
- name: ib0
  type: infiniband
  infiniband:
    mode: connected
- name: ib1
  type: infiniband
memlock:
  soft: unlimited
  hard: unlimited
nfs-rdma:
  enabled: true
  port: 20049
"
        );
        assert_eq!(
            to_json(&parse("subnet-manager: {enabled: true}\nsoft-links: []\n").expect("doc")),
            "{\n  \"soft-links\": [],\n  \"subnet-manager\": {\n    \"enabled\": true\n  }\n}"
        );
        assert_eq!(to_yaml(&State::default()), "{}\n");
        assert_eq!(parse(&to_yaml(&State::default())), Ok(State::default()));
    }
}
