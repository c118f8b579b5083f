//! The subnet manager section: what each InfiniBand port sees, and opensm's unit.

use super::sheet::{unit_style, unit_text, Sheet};
use super::*;

pub(super) fn verdict_text(sm: &SubnetManager) -> String {
    match sm.verdict.as_str() {
        "seen" => format!("seen: the subnet manager at LID {} answers", sm.sm_lid),
        "stuck-init" => format!("stuck-init: {STUCK_INIT}"),
        "none" => format!("none: no subnet manager LID while {}", sm.state),
        other => other.to_string(),
    }
}

pub(super) fn verdict_style(verdict: &str, t: Theme) -> Style {
    match verdict {
        "seen" => t.good(),
        "stuck-init" => t.bad(),
        _ => t.dim(),
    }
}

pub(super) fn sm_section(s: &mut Sheet, host: &HostSetup, wide: bool) {
    let t = s.theme;
    let title = s.title(
        "Subnet manager (InfiniBand)",
        "s start  x stop  e enable/disable",
    );
    if host.subnet_managers.is_empty() {
        s.para("No InfiniBand port.", t.dim(), 2);
    } else {
        let name_w = host
            .subnet_managers
            .iter()
            .map(|p| p.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(4);
        s.lines.push(Line::styled(
            format!(
                "  {:<name_w$}  {:<7}  {:>6}  Verdict",
                "Port", "State", "SM LID"
            ),
            t.dim(),
        ));
        let header = s.lines.len() - 1;
        let verdict_w = s.width.saturating_sub(2 + name_w + 2 + 7 + 2 + 6 + 2);
        for (i, p) in host.subnet_managers.iter().enumerate() {
            let verdict = verdict_text(p);
            let mut body = vec![vec![
                Span::raw(format!("{:<name_w$}  ", p.name)),
                Span::styled(format!("{:<7}", p.state), t.port_state(&p.state)),
                Span::raw(format!("  {:>6}  ", p.sm_lid)),
                Span::styled(
                    if wide || verdict.chars().count() <= verdict_w {
                        verdict.clone()
                    } else {
                        p.verdict.clone()
                    },
                    verdict_style(&p.verdict, t),
                ),
            ]];
            if p.verdict == "stuck-init" && !wide && verdict.chars().count() > verdict_w {
                // Narrow: the explanation on its own line under the port.
                for l in wrap(&format!("! {STUCK_INIT}"), s.width.saturating_sub(4)) {
                    body.push(vec![Span::raw("  "), Span::styled(l, t.bad())]);
                }
            }
            let context = if i == 0 { title.min(header) } else { header };
            s.row(Row::Port(i), context, body);
        }
    }
    let o = &host.opensm;
    let label_w = host
        .subnet_managers
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut spans = Sheet::field(
        "opensm",
        label_w,
        vec![Span::styled(unit_text(o), unit_style(o, t))],
    );
    if o.installed() {
        spans.push(Span::styled(
            if o.active() {
                "  (x stops it)"
            } else {
                "  (s starts it)"
            },
            t.dim(),
        ));
    }
    s.row(Row::Opensm, s.lines.len(), vec![spans]);
    if !o.unknown() && !o.installed() {
        s.para(
            "opensm is not installed: install it (dnf install opensm) or run the subnet \
             manager on a switch; s, x and e need it.",
            t.dim(),
            2,
        );
    } else if host
        .subnet_managers
        .iter()
        .any(|p| p.verdict == "stuck-init")
        && !o.active()
    {
        s.para(
            "A port is stuck in INIT: every InfiniBand fabric needs one subnet manager.",
            t.warn(),
            2,
        );
    }
}
