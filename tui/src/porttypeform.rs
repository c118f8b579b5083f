//! The "Port type" form of a VPI port (the port page, `t`): InfiniBand, Ethernet or auto,
//! for ports whose driver has a type to set (`PortTypeControl`: mlx4 at once, mlx5 in
//! firmware for the next boot). The daemon checks the driver's rules (mlx4: port 1 Ethernet
//! only with port 2 Ethernet) and its refusal shows on the form.

use crate::client::Call;
use crate::form::{ChoiceOption, Field, Form};
use crate::model::Port;

const TYPES: [(&str, &str); 3] = [("ib", "InfiniBand"), ("eth", "Ethernet"), ("auto", "auto")];

/// The type the port will run once the driver or firmware applies what it holds: the
/// firmware's next-boot value where it has one, else the current type.
fn held(p: &Port) -> &str {
    if p.port_type_control == "firmware" && !p.port_type_next.is_empty() {
        &p.port_type_next
    } else {
        &p.port_type
    }
}

/// The form of `p`, `None` when its driver has no type to set.
pub fn form(p: &Port) -> Option<Form> {
    let (now, note) = match p.port_type_control.as_str() {
        "runtime" => (
            format!("{} (the driver switches at once)", p.port_type),
            "auto: the driver senses the link; the device re-registers with the new type",
        ),
        "firmware" => (
            if p.port_type_reboot_needed {
                format!("{}, {} at the next boot", p.port_type, p.port_type_next)
            } else {
                format!("{} (in firmware)", p.port_type)
            },
            "staged in the adapter's firmware: a reboot applies it; auto: VPI",
        ),
        _ => return None,
    };
    let options = TYPES
        .iter()
        .map(|(v, label)| ChoiceOption::new(*v, *label))
        .collect();
    let label = format!("{}/{}", p.device_name, p.number);
    Some(
        Form::new(format!("Port type of {label}"), "Apply")
            .field(Field::info("port", "Port", label))
            .field(Field::info("now", "Now", now))
            .field(Field::choice("type", "Type", options, held(p)).with_note(note)),
    )
}

/// The call the form makes for `p`: none when the port already holds the type chosen.
pub fn calls(form: &Form, p: &Port) -> Vec<Call> {
    match form.choice("type") {
        Some(t) if t != held(p) => vec![Call::SetPortType {
            port: p.path.clone(),
            port_type: t.to_string(),
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;
    use crate::form::FieldKind;

    fn port(control: &str) -> Port {
        demo_model()
            .ports_in_order()
            .into_iter()
            .find(|p| p.port_type_control == control)
            .cloned()
            .unwrap_or_else(|| panic!("a {control:?} port on the demo host"))
    }

    fn choose(form: &mut Form, value: &str) {
        if let Some(FieldKind::Choice(c)) = form.get_mut("type").map(|f| &mut f.kind) {
            c.selected = c.options.iter().position(|o| o.value == value).unwrap_or(0);
        }
    }

    #[test]
    fn a_port_without_a_type_to_set_has_no_form() {
        assert!(form(&port("")).is_none());
    }

    #[test]
    fn the_form_starts_on_what_the_port_holds_and_sends_a_change() {
        for control in ["runtime", "firmware"] {
            let p = port(control);
            let Some(mut f) = form(&p) else {
                panic!("{control}: no form");
            };
            assert_eq!(f.choice("type"), Some(held(&p)), "{control}");
            assert!(calls(&f, &p).is_empty(), "{control}: unchanged");
            let other = if held(&p) == "eth" { "ib" } else { "eth" };
            choose(&mut f, other);
            assert_eq!(
                calls(&f, &p),
                vec![Call::SetPortType {
                    port: p.path.clone(),
                    port_type: other.into()
                }]
            );
        }
    }

    /// Firmware that holds another type for the next boot: the form starts on that one,
    /// and says both.
    #[test]
    fn a_staged_firmware_type_is_what_the_form_starts_on() {
        let mut p = port("firmware");
        p.port_type = "ib".into();
        p.port_type_next = "eth".into();
        p.port_type_reboot_needed = true;
        let Some(f) = form(&p) else {
            panic!("no form");
        };
        assert_eq!(f.choice("type"), Some("eth"));
        match f.get("now").map(|n| &n.kind) {
            Some(FieldKind::Info(now)) => assert_eq!(now, "ib, eth at the next boot"),
            other => panic!("{other:?}"),
        }
    }
}
