//! The "QoS profile" form of a RoCE port (lossless RoCE): trust, PFC, ETS, the DSCP map,
//! mlx5's RoCE traffic class and ECN, pre-filled from `Port.GetQosProfile`, each field checked
//! as it is typed with the parsers and rules the daemon itself applies
//! (`rdma_manager_model::qos`), and applied whole (the port's `roce` entry's `qos` in the
//! state document, the RoCE page's `Call::ApplyState`) only when the port would hold
//! something else afterwards.
//!
//! Trust follows the DSCP map, as on the bus (the daemon derives it from the map): choosing
//! pcp empties the map, and a map typed while pcp is chosen switches to dscp.

use rdma_manager_model::qos::{
    format_dscp_map, format_ets, format_priorities, parse_dscp_map, parse_ets, parse_priorities,
    Ets, QosError, QosProfile, Trust,
};

use crate::form::{ChoiceOption, Field, FieldKind, Form};

/// The form of `port` ("mlx5_1/1 over eth2") holding `now`, the profile the port has.
pub fn form(port: &str, now: &QosProfile, remembered: bool) -> Form {
    let trust = [Trust::Pcp, Trust::Dscp]
        .into_iter()
        .map(|t| ChoiceOption::plain(t.name()))
        .collect();
    let leave = |v: Option<String>| v.unwrap_or_default();
    let mut form = Form::new(format!("QoS profile of {port}"), "Apply")
        .field(Field::info("port", "Port", port))
        .field(Field::info(
            "remembered",
            "Remembered",
            if remembered {
                "yes: written back when the device appears"
            } else {
                "no: applying makes rdma-managerd remember it"
            },
        ))
        .field(
            Field::choice("trust", "Trust", trust, now.trust.name()).with_note(
                "pcp: the VLAN priority; dscp: the IP DSCP through the map (pcp empties the map)",
            ),
        )
        .field(
            Field::text("pfc", "PFC", &format_priorities(&now.pfc), 32)
                .with_note("lossless priorities, paused rather than dropped: 3 or 3,4; none"),
        )
        .field(
            Field::text(
                "ets",
                "ETS",
                &leave(now.ets.as_ref().map(|e| format_ets(Some(e)))),
                64,
            )
            .placeholder("left as it is")
            .with_note("% of TC0..7 / TC of prio 0..7: 50,50,0,0,0,0,0,0/0,0,0,1,0,0,0,0"),
        )
        .field(
            Field::text("dscp", "DSCP map", &format_dscp_map(&now.dscp), 400)
                .with_note("DSCP:PRIORITY, e.g. 26:3 (RoCE v2 with ToS 106); none"),
        )
        .field(
            Field::text(
                "traffic_class",
                "Traffic class",
                &leave(now.traffic_class.map(|t| t.to_string())),
                3,
            )
            .placeholder("left as it is")
            .with_note("mlx5's RoCE traffic class (IP ToS byte), 0 to 255; empty: left as it is"),
        )
        .field(
            Field::text(
                "ecn",
                "ECN",
                &leave(now.ecn.as_deref().map(format_priorities)),
                32,
            )
            .placeholder("left as it is")
            .with_note("priorities with RoCE ECN: 3; none; empty: left as it is"),
        );
    check(&mut form, None);
    form
}

fn trust(form: &Form) -> Trust {
    form.choice("trust")
        .and_then(|t| Trust::parse(t).ok())
        .unwrap_or_default()
}

fn set_trust(form: &mut Form, t: Trust) {
    if let Some(FieldKind::Choice(c)) = form.get_mut("trust").map(|f| &mut f.kind) {
        if let Some(i) = c.options.iter().position(|o| o.value == t.name()) {
            c.selected = i;
        }
    }
}

fn traffic_class(s: &str) -> Result<Option<u8>, QosError> {
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<u8>()
        .map(Some)
        .map_err(|_| QosError(format!("{s:?} is not 0 to 255 (empty: left as it is)")))
}

/// ECN: empty leaves it as it is, `none` turns it off.
fn ecn(s: &str) -> Result<Option<Vec<u8>>, QosError> {
    if s.is_empty() {
        return Ok(None);
    }
    parse_priorities("ECN", s).map(Some)
}

/// ETS parsed and checked by the profile rules on its own.
fn ets(s: &str) -> Result<Option<Ets>, QosError> {
    let ets = parse_ets(s)?;
    QosProfile {
        ets: ets.clone(),
        ..QosProfile::default()
    }
    .check()?;
    Ok(ets)
}

/// Checks every field (`changed`: the field just edited, whose value the trust and the DSCP
/// map follow), putting each error on its field.
pub fn check(form: &mut Form, changed: Option<&str>) {
    let map = parse_dscp_map(form.text("dscp"));
    match (changed, &map) {
        (Some("trust"), _) if trust(form) == Trust::Pcp => form.set_text("dscp", "none"),
        (Some("dscp"), Ok(m)) if !m.is_empty() => set_trust(form, Trust::Dscp),
        _ => {}
    }
    let map = parse_dscp_map(form.text("dscp")).and_then(|dscp| {
        QosProfile {
            trust: trust(form),
            dscp,
            ..QosProfile::default()
        }
        .check()
    });
    form.set_error("dscp", map.err().map(|e| e.0));
    let pfc = parse_priorities("PFC", form.text("pfc")).err();
    form.set_error("pfc", pfc.map(|e| e.0));
    let e = ets(form.text("ets")).err();
    form.set_error("ets", e.map(|e| e.0));
    let tc = traffic_class(form.text("traffic_class")).err();
    form.set_error("traffic_class", tc.map(|e| e.0));
    let e = ecn(form.text("ecn")).err();
    form.set_error("ecn", e.map(|e| e.0));
    // Each part passed on its own; the whole profile is checked too, in case a rule joins
    // them.
    if !form.has_errors() {
        let whole = wanted(form).err();
        form.set_error("trust", whole.map(|e| e.0));
    }
}

/// The profile the form asks for (what it leaves as it is absent), checked by the rules.
pub fn wanted(form: &Form) -> Result<QosProfile, QosError> {
    let p = QosProfile {
        trust: trust(form),
        pfc: parse_priorities("PFC", form.text("pfc"))?,
        ets: ets(form.text("ets"))?,
        dscp: parse_dscp_map(form.text("dscp"))?,
        traffic_class: traffic_class(form.text("traffic_class"))?,
        ecn: ecn(form.text("ecn"))?,
    }
    .normalized();
    p.check()?;
    Ok(p)
}

/// The profile the form applies to a port having `now`: none while a field is wrong, or when
/// the port would hold the same profile afterwards.
pub fn changed(form: &Form, now: &QosProfile) -> Option<QosProfile> {
    let want = wanted(form).ok()?;
    (want.over(now) != now.clone().normalized()).then_some(want)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mlx5's profile after a driver load: PCP trust, no PFC, all bandwidth on TC 0.
    fn mlx5_default() -> QosProfile {
        QosProfile {
            ets: Some(Ets {
                bandwidth: vec![100, 0, 0, 0, 0, 0, 0, 0],
                prio_tc: vec![0; 8],
            }),
            traffic_class: Some(0),
            ecn: Some(vec![]),
            ..QosProfile::default()
        }
    }

    fn edit(form: &mut Form, id: &'static str, value: &str) {
        form.set_text(id, value);
        check(form, Some(id));
    }

    #[test]
    fn the_form_holds_the_profile_and_sends_nothing_unchanged() {
        let now = mlx5_default();
        let f = form("mlx5_1/1", &now, false);
        assert_eq!(f.text("pfc"), "none");
        assert_eq!(f.text("ets"), "100,0,0,0,0,0,0,0/0,0,0,0,0,0,0,0");
        assert_eq!(f.text("dscp"), "none");
        assert_eq!((f.text("traffic_class"), f.text("ecn")), ("0", "none"));
        assert!(!f.has_errors());
        assert_eq!(wanted(&f), Ok(now.clone()));
        assert!(changed(&f, &now).is_none());
        // A driver without a traffic class or ECN: empty fields leave them, nothing sent.
        let bare = QosProfile::default();
        let f = form("rxe0/1", &bare, false);
        assert_eq!(
            (f.text("ets"), f.text("traffic_class"), f.text("ecn")),
            ("", "", "")
        );
        assert!(changed(&f, &bare).is_none());
    }

    #[test]
    fn a_dscp_map_trusts_dscp_and_pcp_drops_the_map() {
        let now = mlx5_default();
        let mut f = form("mlx5_1/1", &now, false);
        edit(&mut f, "dscp", "26:3");
        assert_eq!(f.choice("trust"), Some("dscp"));
        edit(&mut f, "pfc", "3");
        assert!(!f.has_errors(), "{:?}", f.fields);
        let want = QosProfile {
            trust: Trust::Dscp,
            pfc: vec![3],
            dscp: [(26, 3)].into(),
            ..now.clone()
        };
        assert_eq!(changed(&f, &now), Some(want));
        set_trust(&mut f, Trust::Pcp);
        check(&mut f, Some("trust"));
        assert_eq!(f.text("dscp"), "none");
        // Back to dscp without a map: the rule says why, on the map.
        set_trust(&mut f, Trust::Dscp);
        check(&mut f, Some("trust"));
        let err = f
            .get("dscp")
            .and_then(|d| d.error.clone())
            .unwrap_or_default();
        assert!(err.contains("needs a DSCP map"), "{err}");
    }

    #[test]
    fn wrong_values_are_refused_on_their_field() {
        let now = mlx5_default();
        for (id, bad, says) in [
            ("pfc", "9", "priority 9 does not exist"),
            ("pfc", "3,3", "given twice"),
            ("ets", "60,60,0,0,0,0,0,0/0,0,0,0,0,0,0,0", "sum to 120%"),
            ("ets", "50,50/0,1", "8 traffic classes"),
            ("dscp", "64:3", "DSCP 64 does not exist"),
            ("dscp", "26", "not DSCP:PRIORITY"),
            ("traffic_class", "300", "not 0 to 255"),
            ("ecn", "8", "priority 8 does not exist"),
        ] {
            let mut f = form("mlx5_1/1", &now, false);
            edit(&mut f, id, bad);
            let err = f.get(id).and_then(|d| d.error.clone()).unwrap_or_default();
            assert!(err.contains(says), "{id}={bad}: {err:?}");
            assert!(changed(&f, &now).is_none(), "{id}={bad}");
        }
    }

    #[test]
    fn empty_fields_leave_ets_traffic_class_and_ecn() {
        let now = mlx5_default();
        let mut f = form("mlx5_1/1", &now, false);
        for id in ["ets", "traffic_class", "ecn"] {
            edit(&mut f, id, "");
        }
        let want = wanted(&f).unwrap_or_default();
        assert_eq!(
            (&want.ets, want.traffic_class, &want.ecn),
            (&None, None, &None)
        );
        // Left as they are: the port would hold what it holds.
        assert!(changed(&f, &now).is_none());
        edit(&mut f, "ecn", "none");
        assert_eq!(wanted(&f).map(|p| p.ecn), Ok(Some(vec![])));
    }
}
