//! The "VF GUIDs" form of an SR-IOV PF (the port page, `v`): which VF, and its node and port
//! GUID, pre-filled with what the driver holds (else what is remembered), each checked as it
//! is typed with the daemon's own parser (`rdma_manager_model::vf_guid`: the forms admins
//! write, not zero, not all-ones). The daemon checks the rest (a GUID another function holds,
//! a VF not enabled) and its refusal shows on the form.

use rdma_manager_model::vf_guid::{ip_form, parse_vf_guid, GuidKind};

use crate::client::Call;
use crate::form::{ChoiceOption, Field, Form};
use crate::model::{Device, VfGuid};

/// The form of `d`'s VFs, `None` when it lists none.
pub fn form(d: &Device) -> Option<Form> {
    let first = d.vf_guids.iter().find(|v| !v.pci_address.is_empty())?;
    let options = d
        .vf_guids
        .iter()
        .map(|v| {
            let o = ChoiceOption::new(v.vf.to_string(), format!("VF {}", v.vf));
            if v.pci_address.is_empty() {
                o.disabled("not enabled: the PF's sriov_numvfs does not reach it")
            } else {
                o
            }
        })
        .collect();
    let (node, port) = shown(first);
    let mut form = Form::new(format!("VF GUIDs of {}", d.name), "Apply")
        .field(Field::info("pf", "PF", d.name.clone()))
        .field(Field::choice("vf", "VF", options, &first.vf.to_string()))
        .field(
            Field::text("node", "Node GUID", node, 23)
                .with_note("00:11:22:33:44:55:66:77, 0011:2233:4455:6677 or 0x0011223344556677"),
        )
        .field(
            Field::text("port", "Port GUID", port, 23)
                .with_note("may equal the node GUID; the VF is rebound to take them"),
        );
    check(&mut form, d, None);
    Some(form)
}

/// The GUIDs a VF's fields start with: the driver's, else the remembered ones.
fn shown(v: &VfGuid) -> (&str, &str) {
    if v.node_guid.is_empty() {
        (&v.remembered_node_guid, &v.remembered_port_guid)
    } else {
        (&v.node_guid, &v.port_guid)
    }
}

fn chosen<'a>(form: &Form, d: &'a Device) -> Option<&'a VfGuid> {
    let vf = form.choice("vf")?;
    d.vf_guids.iter().find(|v| v.vf.to_string() == vf)
}

/// Checks both GUIDs; another VF chosen (`changed` "vf") fills them with that VF's.
pub fn check(form: &mut Form, d: &Device, changed: Option<&str>) {
    if changed == Some("vf") {
        if let Some((node, port)) = chosen(form, d).map(shown) {
            form.set_text("node", node);
            form.set_text("port", port);
        }
    }
    for (id, kind) in [("node", GuidKind::Node), ("port", GuidKind::Port)] {
        let err = if form.text(id).is_empty() {
            // Shorter than the parser's words: the note under the field shows the forms.
            Some(format!(
                "the VF needs a {}: without one it cannot be used for RDMA",
                kind.as_str()
            ))
        } else {
            parse_vf_guid(kind, form.text(id))
                .err()
                .map(|e| e.to_string())
        };
        form.set_error(id, err);
    }
}

/// The call the form makes for `d`: none when the VF's driver already holds both GUIDs.
pub fn calls(form: &Form, d: &Device) -> Vec<Call> {
    let (Some(v), Ok(node), Ok(port)) = (
        chosen(form, d),
        parse_vf_guid(GuidKind::Node, form.text("node")),
        parse_vf_guid(GuidKind::Port, form.text("port")),
    ) else {
        return Vec::new();
    };
    let holds = |now: &str, want: u64| parse_vf_guid(GuidKind::Node, now) == Ok(want);
    if holds(&v.node_guid, node) && holds(&v.port_guid, port) {
        return Vec::new();
    }
    vec![Call::SetVfGuids {
        device: d.path.clone(),
        vf: v.vf,
        node_guid: ip_form(node),
        port_guid: ip_form(port),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::FieldKind;

    const G: &str = "00:11:22:33:44:55:66:77";

    fn pf() -> Device {
        let vf = |vf: u32, pci: &str, now: &str, kept: &str| VfGuid {
            vf,
            pci_address: pci.into(),
            node_guid: now.into(),
            port_guid: now.into(),
            remembered_node_guid: kept.into(),
            remembered_port_guid: kept.into(),
        };
        Device {
            path: "/dev1".into(),
            name: "mlx5_1".into(),
            vf_guids: vec![
                vf(0, "", "", "00:11:22:33:44:55:66:70"),
                vf(1, "0000:3b:00.3", G, G),
                vf(2, "0000:3b:00.4", "", ""),
            ],
            ..Device::default()
        }
    }

    fn choose(form: &mut Form, d: &Device, vf: &str) {
        if let Some(FieldKind::Choice(c)) = form.get_mut("vf").map(|f| &mut f.kind) {
            c.selected = c.options.iter().position(|o| o.value == vf).unwrap_or(0);
        }
        check(form, d, Some("vf"));
    }

    #[test]
    fn a_device_without_vfs_has_no_form() {
        assert!(form(&Device::default()).is_none());
    }

    #[test]
    fn the_form_starts_on_the_first_enabled_vf_and_sends_only_a_change() {
        let d = pf();
        let Some(mut f) = form(&d) else {
            panic!("no form");
        };
        assert_eq!(f.choice("vf"), Some("1"));
        assert_eq!((f.text("node"), f.text("port")), (G, G));
        assert!(calls(&f, &d).is_empty(), "unchanged");
        // The same GUID as sysfs writes it is no change either.
        f.set_text("node", "0011:2233:4455:6677");
        check(&mut f, &d, Some("node"));
        assert!(calls(&f, &d).is_empty());
        f.set_text("port", "0x0011223344556678");
        check(&mut f, &d, Some("port"));
        assert_eq!(
            calls(&f, &d),
            vec![Call::SetVfGuids {
                device: "/dev1".into(),
                vf: 1,
                node_guid: G.into(),
                port_guid: "00:11:22:33:44:55:66:78".into(),
            }]
        );
    }

    #[test]
    fn another_vf_fills_its_guids_and_bad_ones_are_refused() {
        let d = pf();
        let Some(mut f) = form(&d) else {
            panic!("no form");
        };
        choose(&mut f, &d, "2");
        assert_eq!((f.text("node"), f.text("port")), ("", ""));
        assert!(f.has_errors(), "a VF without GUIDs needs them");
        for (bad, says) in [
            ("00:00:00:00:00:00:00:00", "must not be zero"),
            ("ff:ff:ff:ff:ff:ff:ff:ff", "which is no GUID"),
            ("00:11", "is not a node GUID"),
        ] {
            f.set_text("node", bad);
            check(&mut f, &d, Some("node"));
            let err = f
                .get("node")
                .and_then(|n| n.error.clone())
                .unwrap_or_default();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(calls(&f, &d).is_empty(), "{bad}");
        }
    }
}
