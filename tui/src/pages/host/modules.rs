//! The modules section: rdma-core's module lists, one row a module, with what is loaded now.

use super::sheet::Sheet;
use super::*;

pub(super) fn modules_section(s: &mut Sheet, host: &HostSetup, wide: bool) {
    let t = s.theme;
    let unit = match host.modules_unit.as_str() {
        "" => "unknown".to_string(),
        u => u.to_string(),
    };
    let title = s.title(
        "Kernel modules (/etc/rdma/modules)",
        "Space enable/disable  a apply",
    );
    let unit_style = match host.modules_unit.as_str() {
        "active" => t.good(),
        "failed" => t.bad(),
        "" => t.dim(),
        _ => t.normal(),
    };
    s.lines.push(Line::from(vec![
        Span::raw("  rdma-load-modules@rdma.service: "),
        Span::styled(unit, unit_style),
    ]));
    if host.modules.is_empty() {
        s.para(
            "No module lines: /etc/rdma/modules is missing or empty (rdma-core provides it).",
            t.warn(),
            2,
        );
        return;
    }
    let set_of = |m: &RdmaModule| {
        if wide {
            format!("{}.conf:{}", m.set, m.line)
        } else {
            m.set.clone()
        }
    };
    let set_w = host
        .modules
        .iter()
        .map(|m| set_of(m).chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mod_w = host
        .modules
        .iter()
        .map(|m| m.module.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let fixed = 2 + set_w + 2 + mod_w + 2 + 8 + 2 + 10 + 2;
    let desc_w = s.width.saturating_sub(fixed);
    let set_head = if wide { "File" } else { "Set" };
    s.lines.push(Line::styled(
        format!(
            "  {set_head:<set_w$}  {:<mod_w$}  {:<8}  {:<10}  {}",
            "Module", "In file", "Now", "Description"
        ),
        t.dim(),
    ));
    for (i, m) in host.modules.iter().enumerate() {
        let (file, file_style) = if m.enabled {
            ("enabled", t.good())
        } else {
            ("disabled", t.dim())
        };
        let (now, now_style) = match (m.enabled, m.loaded) {
            (_, true) => ("loaded", t.good()),
            // In the file but not in the kernel: `a` loads it.
            (true, false) => ("not loaded", t.warn()),
            (false, false) => ("not loaded", t.dim()),
        };
        let spans = vec![
            Span::raw(format!("{:<set_w$}  ", set_of(m))),
            Span::raw(format!("{:<mod_w$}  ", m.module)),
            Span::styled(format!("{file:<8}"), file_style),
            Span::raw("  "),
            Span::styled(format!("{now:<10}"), now_style),
            Span::raw("  "),
            Span::styled(truncate(&m.description, desc_w), t.dim()),
        ];
        let context = if i == 0 { title } else { usize::MAX };
        s.row(Row::Module(i), context, vec![spans]);
    }
}
