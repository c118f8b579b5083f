//! The checks a document gets before anything is looked up on the host: each value against
//! the rules the daemon's one-shot methods apply (names, P_Keys, MTUs per mode, IP addresses,
//! module names, memlock limits, ports) and the contradictions a document can hold by itself
//! (two entries with one identity, `state: absent` with settings, a family both off and on).
//!
//! The first refusal in document order is returned, with its key path; [`super::parse`] adds
//! its line.

use super::doc::*;
use crate::state_error::StateError;

/// Checks everything a document says that needs no host.
pub fn check(state: &State) -> Result<(), StateError> {
    if let Some(links) = &state.soft_links {
        super::soft_links::check(links)?;
    }
    if let Some(roce) = &state.roce {
        super::roce::check(roce)?;
    }
    if let Some(ifs) = &state.interfaces {
        super::interfaces::check(ifs)?;
    }
    if let Some(naming) = &state.naming {
        super::naming::check(naming)?;
    }
    super::host_setup::check(&state.host_setup())?;
    if let Some(ports) = &state.ports {
        super::ports::check(ports)?;
    }
    if let Some(vfs) = &state.sriov_vfs {
        super::sriov_vfs::check(vfs)?;
    }
    if let Some(h) = &state.health {
        crate::health::check(h)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::state::parse::parse;
    use crate::state::part::{is_guid, pkey_value};

    /// The error `text` is refused with, as the user reads it.
    fn refused(text: &str) -> String {
        match parse(text) {
            Ok(s) => panic!("accepted: {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn guids_and_pkeys() {
        assert!(is_guid("0002:c903:0031:7f40"));
        assert!(is_guid("0002:C903:0031:7F40"));
        for bad in [
            "0002:c903:0031",
            "0002:c903:0031:7f4",
            "0002c90300317f40",
            "000g:c903:0031:7f40",
            "0002:c903:0031:7f40:",
        ] {
            assert!(!is_guid(bad), "{bad}");
        }
        assert_eq!(pkey_value("0x8002"), Ok(0x8002));
        assert_eq!(pkey_value("0x2"), Ok(0x0002));
        assert_eq!(pkey_value("0X7FFF"), Ok(0x7fff));
        assert_eq!(
            pkey_value("8002"),
            Err("\"8002\" is not a P_Key: write it in hex as nmstate does, \"0x\" and up to four digits (\"0x8002\"), or as an integer".into())
        );
        assert!(pkey_value("0x18002").is_err());
        assert!(pkey_value("0x").is_err());
        assert!(pkey_value("0x0000").unwrap_err().contains("invalid P_Key"));
        assert!(pkey_value("0x8000")
            .unwrap_err()
            .contains("full-membership bit alone"));
    }

    #[test]
    fn a_full_document_passes() {
        let text = "\
soft-links:
  - {name: rxe0, type: rxe, netdev: eth1}
  - {name: siw0, state: absent}
roce:
  - {device: mlx5_0, port: 1, mode: v2, tos: 106}
  - {device: 0002:c903:0031:7f40, port: 2, mode: v1}
interfaces:
  - name: ib0
    type: infiniband
    mtu: 65520
    infiniband: {mode: connected, umcast: false}
    ipv4:
      enabled: true
      dhcp: false
      address: [{ip: 192.0.2.1, prefix-length: 24}]
      gateway: 192.0.2.254
      dns: [192.0.2.53]
      dns-search: [lab.example]
    ipv6: {enabled: false}
  - name: ib0.8002
    type: infiniband
    infiniband: {base-iface: ib0, pkey: \"0x8002\", mode: datagram}
  - {name: ib0.0003, type: infiniband, state: absent}
naming:
  rdma-policy: NAME_GUID
  rdma-fixed-names:
    - {node-guid: \"0002:c903:0031:7f40\", name: ibp0}
    - {node-guid: \"0002:c903:0031:7f41\", state: absent}
  ipoib-names:
    - {port-guid: \"0002:c903:0031:7f41\", name: ibs1}
modules: {rdma: {ib_ipoib: true, rpcrdma: false}}
memlock: {soft: 1024, hard: unlimited}
nfs-rdma: {enabled: true, port: 20049}
subnet-manager: {enabled: true, running: true}
";
        parse(text).expect("a valid document");
    }

    /// The example of docs/STATE.md is a valid document.
    #[test]
    fn the_reference_example_passes() {
        let doc = include_str!("../../../../docs/STATE.md");
        let example = doc
            .split("## A whole document")
            .nth(1)
            .and_then(|rest| rest.split("```yaml\n").nth(1))
            .and_then(|rest| rest.split("```").next())
            .expect("docs/STATE.md has its example");
        let s = parse(example).expect("the example parses");
        assert_eq!(s.interfaces.map(|i| i.len()), Some(2));
    }

    #[test]
    fn soft_links() {
        assert_eq!(
            refused("soft-links:\n  - {name: rxe0, type: rxe, netdev: eth1}\n  - {name: rxe0, state: absent}\n"),
            "line 3: soft-links[1]: soft link \"rxe0\" is listed twice (also at soft-links[0])"
        );
        assert_eq!(
            refused("soft-links:\n  - name: rxe0\n    state: absent\n    netdev: eth1\n"),
            "line 4: soft-links[0].netdev: state: absent removes the link and takes only its name"
        );
        assert_eq!(
            refused("soft-links:\n  - name: rxe0\n    netdev: eth1\n"),
            "line 2: soft-links[0]: missing field `type` (rxe or siw): a soft link is given with its type and netdev, or with state: absent to remove it"
        );
        assert!(refused("soft-links:\n  - {name: rxe0, type: siw}\n")
            .starts_with("line 2: soft-links[0]: missing field `netdev`"));
        assert_eq!(
            refused("soft-links:\n  - {name: rxe0, type: rxe, netdev: \"eth 1\"}\n"),
            "line 2: soft-links[0].netdev: the character ' ' is not allowed; use ASCII letters, digits, '-', '_' and '.'"
        );
        assert_eq!(
            refused("soft-links:\n  - name: \"rxe%d\"\n    state: absent\n"),
            "line 2: soft-links[0].name: the character '%' is not allowed; use ASCII letters, digits, '-', '_' and '.'"
        );
    }

    #[test]
    fn ports() {
        assert_eq!(
            refused(
                "ports:\n  - {device: mlx4_0, port: 1, type: eth}\n  - {device: mlx4_0, port: 1}\n"
            ),
            "line 3: ports[1]: port mlx4_0/1 is listed twice (also at ports[0])"
        );
        assert!(refused("ports:\n  - {device: mlx4_0, port: 0, type: ib}\n")
            .contains("ports[0].port: port 0 is not an RDMA port: ports count from 1"));
        assert!(
            refused("ports:\n  - {device: mlx4_0, port: 1, type: roce}\n")
                .contains("ports[0].type")
        );
    }

    #[test]
    fn roce() {
        assert_eq!(
            refused(
                "roce:\n  - {device: mlx5_0, port: 1, tos: 1}\n  - device: mlx5_0\n    port: 1\n"
            ),
            "line 3: roce[1]: port mlx5_0/1 is listed twice (also at roce[0])"
        );
        assert_eq!(
            refused("roce:\n  - device: mlx5_0\n    port: 0\n"),
            "line 3: roce[0].port: port 0 is not an RDMA port: ports count from 1"
        );
        assert!(refused("roce:\n  - {device: \"a/b\", port: 1}\n")
            .starts_with("line 2: roce[0].device: the character '/' is not allowed"));
        // The same GUID in two cases is one device.
        assert!(refused("roce:\n  - {device: 0002:c903:0031:7f40, port: 1}\n  - {device: 0002:C903:0031:7F40, port: 1}\n")
            .starts_with("line 3: roce[1]: port 0002:C903:0031:7F40/1 is listed twice"));
    }

    #[test]
    fn interfaces() {
        assert_eq!(
            refused("interfaces:\n  - name: ib0.8002\n    type: infiniband\n    infiniband:\n      base-iface: ib0\n      pkey: \"0x0000\"\n"),
            "line 6: interfaces[0].infiniband.pkey: P_Key 0x0000 is the invalid P_Key and names no partition; give 0x0001 to 0x7fff, with or without the full-membership bit 0x8000"
        );
        assert_eq!(
            refused("interfaces:\n  - name: ib0.8002\n    type: infiniband\n    infiniband:\n      pkey: \"0x8002\"\n"),
            "line 4: interfaces[0].infiniband: missing field `base-iface`: a P_Key child is given with its parent (base-iface) and its pkey"
        );
        assert!(refused(
            "interfaces:\n  - {name: c, type: infiniband, infiniband: {base-iface: ib0}}\n"
        )
        .starts_with("line 2: interfaces[0].infiniband: missing field `pkey`"));
        assert_eq!(
            refused("interfaces:\n  - {name: a, type: infiniband, infiniband: {base-iface: ib0, pkey: \"0x0002\"}}\n  - {name: b, type: infiniband, infiniband: {base-iface: ib0, pkey: 0x8002}}\n"),
            "line 3: interfaces[1]: ib0 has one child per partition: P_Key 0x8002 is also at interfaces[0] (the kernel sets the full-membership bit 0x8000 on every child)"
        );
        assert_eq!(
            refused("interfaces:\n  - {name: ib0, type: infiniband}\n  - {name: ib0, type: infiniband, mtu: 2044}\n"),
            "line 3: interfaces[1]: interface \"ib0\" is listed twice (also at interfaces[0])"
        );
        assert_eq!(
            refused("interfaces:\n  - name: ib0.8002\n    type: infiniband\n    state: absent\n    mtu: 2044\n"),
            "line 5: interfaces[0].mtu: state: absent deletes the interface and takes no settings"
        );
        assert_eq!(
            refused("interfaces:\n  - name: ib0\n    type: infiniband\n    mtu: 9000\n    infiniband: {mode: datagram}\n"),
            "line 4: interfaces[0].mtu: MTU 9000 is too large for datagram mode, which carries at most the port's InfiniBand MTU minus the 4-byte IPoIB header (4092 on a 4096-byte link, 2044 on a 2048-byte one); connected mode allows up to 65520"
        );
        assert!(
            refused("interfaces:\n  - {name: ib0, type: infiniband, mtu: 65521}\n")
                .starts_with("line 2: interfaces[0].mtu: MTU 65521 is above 65520")
        );
        assert_eq!(
            refused("interfaces:\n  - {name: ib0, type: infiniband, infiniband: {base-iface: ib0, pkey: \"0x1\"}}\n"),
            "line 2: interfaces[0].infiniband.base-iface: an interface cannot be its own parent"
        );
    }

    #[test]
    fn ip_settings() {
        let with = |family: &str, body: &str| {
            refused(&format!(
                "interfaces:\n  - name: ib0\n    type: infiniband\n    {family}:\n{body}"
            ))
        };
        assert_eq!(
            with("ipv4", "      enabled: false\n      dhcp: true\n"),
            "line 6: interfaces[0].ipv4.dhcp: enabled: false turns IPv4 off, which leaves no dhcp to set"
        );
        assert_eq!(
            with("ipv4", "      autoconf: true\n"),
            "line 5: interfaces[0].ipv4.autoconf: autoconf is IPv6's stateless autoconfiguration; IPv4 has dhcp"
        );
        assert_eq!(
            with("ipv4", "      address:\n        - ip: 2001:db8::1\n          prefix-length: 64\n"),
            "line 6: interfaces[0].ipv4.address[0].ip: address 2001:db8::1 is not an IPv4 address, in the IPv4 settings"
        );
        assert_eq!(
            with("ipv6", "      address:\n        - ip: 2001:db8::1\n          prefix-length: 129\n"),
            "line 7: interfaces[0].ipv6.address[0].prefix-length: prefix length 129 is outside 1 to 128 (NetworkManager would drop the address)"
        );
        assert_eq!(
            with("ipv4", "      gateway: 192.0.2.300\n"),
            "line 5: interfaces[0].ipv4.gateway: \"192.0.2.300\" is not an IPv4 address"
        );
        assert_eq!(
            with("ipv4", "      address: []\n      gateway: 192.0.2.1\n"),
            "line 6: interfaces[0].ipv4.gateway: an IPv4 gateway needs an IPv4 address, and address is empty"
        );
        assert_eq!(
            with("ipv4", "      dns: [192.0.2.53, \"2001:db8::53\"]\n"),
            "line 5: interfaces[0].ipv4.dns[1]: DNS server 2001:db8::53 is not an IPv4 address, in the IPv4 settings"
        );
        assert_eq!(
            with("ipv6", "      dns-search: [\"a..b\"]\n"),
            "line 5: interfaces[0].ipv6.dns-search[0]: \"a..b\" is not a DNS search domain"
        );
        // DHCP with static addresses is nmcli's method auto with addresses.
        parse("interfaces:\n  - name: ib0\n    type: infiniband\n    ipv4: {dhcp: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}\n").expect("auto with addresses");
    }

    #[test]
    fn naming() {
        assert_eq!(
            refused("naming:\n  rdma-policy: NAME_FIXED\n"),
            "line 2: naming.rdma-policy: \"NAME_FIXED\" is not a naming policy: use one of NAME_KERNEL, NAME_ONBOARD, NAME_PCI, NAME_GUID, NAME_FALLBACK"
        );
        assert_eq!(
            refused("naming:\n  rdma-fixed-names:\n    - {node-guid: \"0002:c903:0031:7f40\", name: a}\n    - {node-guid: \"0002:c903:0031:7f40\", name: b}\n"),
            "line 4: naming.rdma-fixed-names[1]: GUID 0002:c903:0031:7f40 is listed twice (also at naming.rdma-fixed-names[0])"
        );
        assert_eq!(
            refused("naming:\n  rdma-fixed-names:\n    - {node-guid: \"0002:c903:0031:7f40\", name: a}\n    - {node-guid: \"0002:c903:0031:7f41\", name: a}\n"),
            "line 4: naming.rdma-fixed-names[1]: the name \"a\" is given to two GUIDs (also at naming.rdma-fixed-names[0])"
        );
        assert_eq!(
            refused("naming:\n  ipoib-names:\n    - port-guid: \"0002:c903:0031\"\n      name: ibs1\n"),
            "line 3: naming.ipoib-names[0].port-guid: \"0002:c903:0031\" is not a GUID as sysfs prints it: four groups of four hex digits, 0002:c903:0031:7f40"
        );
        assert_eq!(
            refused("naming:\n  ipoib-names:\n    - port-guid: \"0002:c903:0031:7f40\"\n      state: absent\n      name: ibs1\n"),
            "line 5: naming.ipoib-names[0].name: state: absent removes the fixed name and takes only the GUID"
        );
        assert_eq!(
            refused("naming:\n  ipoib-names:\n    - port-guid: \"0002:c903:0031:7f40\"\n"),
            "line 3: naming.ipoib-names[0]: missing field `name`: give the name, or state: absent to remove it"
        );
        assert!(refused("naming:\n  ipoib-names:\n    - {port-guid: \"0002:c903:0031:7f40\", name: ibs1234567890123}\n")
            .starts_with("line 3: naming.ipoib-names[0].name: the name is 16 bytes long"));
    }

    #[test]
    fn host_settings() {
        assert!(refused("modules:\n  Rdma: {ib_ipoib: true}\n")
            .starts_with("line 2: modules.Rdma: \"Rdma\" is not a module list name"));
        assert!(refused("modules:\n  rdma:\n    -x: true\n")
            .starts_with("line 3: modules.rdma.-x: a module name starts with a letter or a digit"));
        assert_eq!(
            refused("modules:\n  rdma:\n    ib-ipoib: true\n    ib_ipoib: false\n"),
            "line 4: modules.rdma.ib_ipoib: ib_ipoib is the same module as modules.rdma.ib-ipoib (kmod reads '-' as '_')"
        );
        assert_eq!(
            refused("memlock:\n  soft: lots\n"),
            "line 2: memlock.soft: \"lots\" is not a memlock value: give a whole number of KiB (at least 1) or \"unlimited\""
        );
        assert_eq!(
            refused("memlock:\n  soft: unlimited\n  hard: 1024\n"),
            "line 2: memlock.soft: the soft memlock limit (unlimited) is above the hard limit (1024 KiB); pam_limits would lower it to the hard limit"
        );
        assert_eq!(
            refused("nfs-rdma:\n  enabled: true\n  port: 0\n"),
            "line 3: nfs-rdma.port: 0 is not a port for NFS over RDMA: give 1 to 65535 (the standard port is 20049)"
        );
    }
}
