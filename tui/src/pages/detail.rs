//! Port detail: everything about one port, laid out the way `ibstat` prints a CA and its port
//! (same fields, same order), then what ibstat leaves out: the device's kind, description,
//! PCI address and board, the network interfaces on the port, the GID and P_Key tables, RoCE
//! settings, the counters (read once a second while the page is shown) and the properties the
//! service could not read. Wide screens get two columns; the page scrolls when it is longer
//! than the screen. A VPI port's type is changed here (`t`): the page of the port, whatever
//! link layer it runs now; and an SR-IOV PF's VF GUIDs (`v`), which this page lists.

use std::net::Ipv6Addr;

use crossterm::event::{KeyCode, KeyEvent, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::client::{Call, CallError, CallOutput};
use crate::edit::{self, Session, Submit};
use crate::model::{Counters, Device, Model, Port};
use crate::theme::Theme;
use crate::widgets::{fit, port_name, PortCursor};

/// Width of the labels in the key-value sections ("System image GUID" and a gap).
const LABEL: usize = 19;
/// At this width and wider the sections go in two columns.
const TWO_COLUMNS: u16 = 130;

#[derive(Debug, Default)]
pub struct DetailPage {
    cursor: PortCursor,
    /// First content line shown.
    scroll: usize,
    /// Content lines below the header the last frame had room for (PgUp/PgDn step).
    height: usize,
    /// The open form, and what it is about.
    session: Option<Session<DetailEdit>>,
}

/// What the page's open form changes.
#[derive(Debug)]
enum DetailEdit {
    /// The type of this port (object path).
    PortType(String),
    /// The VF GUIDs of this PF (device object path).
    VfGuids(String),
}

/// `  Label              value`, the label dim so the values stand out.
fn kv(t: Theme, label: &str, value: impl Into<String>, style: Style) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("  {label:<LABEL$}"), t.dim()),
        Span::styled(value.into(), style),
    ])
}

/// A value, or why there is none: the property's entry in `unreadable`, else `-`.
fn value_or_reason(
    t: Theme,
    value: &str,
    property: &str,
    unreadable: &std::collections::BTreeMap<String, String>,
) -> (String, Style) {
    if !value.is_empty() {
        return (value.to_string(), t.normal());
    }
    match unreadable.get(property) {
        Some(reason) => (format!("({reason})"), t.dim()),
        None => ("-".to_string(), t.dim()),
    }
}

fn title(t: Theme, text: impl Into<String>) -> Line<'static> {
    Line::styled(text.into(), t.title())
}

/// The CA part of ibstat, then the device facts ibstat does not print.
fn device_lines(t: Theme, d: &Device) -> Vec<Line<'static>> {
    let u = &d.unreadable;
    let field = |label: &str, value: &str, prop: &str| {
        let (v, s) = value_or_reason(t, value, prop, u);
        kv(t, label, v, s)
    };
    let mut kind = d.kind.clone();
    let extra: Vec<&str> = [d.node_type.as_str(), d.protocol.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if !extra.is_empty() {
        kind = format!("{kind} ({})", extra.join(", "));
    }
    let mut lines = vec![
        title(t, format!("CA '{}'", d.name)),
        field("CA type", &d.hca_type, "HcaType"),
        kv(t, "Number of ports", d.ports.len().to_string(), t.normal()),
        field("Firmware version", &d.fw_version, "FwVersion"),
        field("Hardware version", &d.hw_rev, "HwRev"),
        field("Node GUID", &d.node_guid, "NodeGuid"),
        field("System image GUID", &d.sys_image_guid, "SysImageGuid"),
        kv(t, "Kind", kind, t.normal()),
        field("Node description", &d.node_desc, "NodeDesc"),
        field("PCI address", &d.pci_address, "PciAddress"),
        field("Board ID", &d.board_id, "BoardId"),
    ];
    if !d.parent_netdev.is_empty() {
        // A software device (rxe, siw) runs over this interface.
        lines.push(kv(t, "Over netdev", d.parent_netdev.clone(), t.normal()));
    }
    lines.extend(vf_lines(t, d));
    lines
}

/// An SR-IOV PF's VFs: where each sits and its node/port GUIDs, now and remembered.
fn vf_lines(t: Theme, d: &Device) -> Vec<Line<'static>> {
    let or_dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    d.vf_guids
        .iter()
        .map(|v| {
            let place = if v.pci_address.is_empty() {
                "not enabled".to_string()
            } else {
                v.pci_address.clone()
            };
            let mut text = format!(
                "{place}  node {}  port {}",
                or_dash(&v.node_guid),
                or_dash(&v.port_guid)
            );
            let remembered = !v.remembered_node_guid.is_empty();
            let differs = remembered
                && (v.remembered_node_guid != v.node_guid || v.remembered_port_guid != v.port_guid);
            if remembered {
                text.push_str(if differs {
                    "  (remembered: "
                } else {
                    "  (remembered)"
                });
                if differs {
                    text.push_str(&format!(
                        "node {} port {})",
                        v.remembered_node_guid, v.remembered_port_guid
                    ));
                }
            }
            // A VF without GUIDs cannot be used for RDMA.
            let style = if v.node_guid.is_empty() || differs {
                t.warn()
            } else {
                t.normal()
            };
            kv(t, &format!("VF {}", v.vf), text, style)
        })
        .collect()
}

/// The port part of ibstat, then its interfaces and RoCE settings.
/// An MTU in bytes; empty when the daemon does not know it (0), so that the reason shows.
fn mtu_text(bytes: u32) -> String {
    match bytes {
        0 => String::new(),
        b => b.to_string(),
    }
}

fn port_lines(t: Theme, model: &Model, p: &Port) -> Vec<Line<'static>> {
    let u = &p.unreadable;
    let field = |label: &str, value: &str, prop: &str, style: Style| {
        let (v, s) = value_or_reason(t, value, prop, u);
        kv(t, label, v, if value.is_empty() { s } else { style })
    };
    let phys_style = if p.phys_state == "LinkUp" {
        t.normal()
    } else {
        t.warn()
    };
    let sm = if p.is_infiniband() && p.sm_lid == 0 && matches!(p.state.as_str(), "INIT" | "ARMED") {
        (
            "0 (no subnet manager has configured this port)".to_string(),
            t.warn(),
        )
    } else {
        (p.sm_lid.to_string(), t.normal())
    };
    // ibstat's labels and its words for the state, in its order; what it leaves out after.
    let mut lines = vec![
        title(t, format!("Port {}", p.number)),
        field(
            "State",
            ibstat_state(&p.state),
            "State",
            t.port_state(&p.state),
        ),
        field("Physical state", &p.phys_state, "PhysState", phys_style),
        field("Rate", &p.rate, "Rate", t.normal()),
        field(
            "Active MTU",
            &mtu_text(p.active_mtu),
            "ActiveMtu",
            t.normal(),
        ),
        field("Max MTU", &mtu_text(p.max_mtu), "MaxMtu", t.normal()),
        kv(t, "Base lid", p.lid.to_string(), t.normal()),
        kv(t, "LMC", p.lmc.to_string(), t.normal()),
        kv(t, "SM lid", sm.0, sm.1),
        kv(
            t,
            "Capability mask",
            format!("0x{:08x}", p.capability_mask),
            t.normal(),
        ),
        field("Port GUID", &p.port_guid, "PortGuid", t.normal()),
        field("Link layer", &p.link_layer, "LinkLayer", t.normal()),
        kv(t, "SM SL", p.sm_sl.to_string(), t.normal()),
        kv(
            t,
            "GID table",
            format!("{} used of {}", p.gids.len(), p.gid_table_length),
            t.normal(),
        ),
        kv(
            t,
            "P_Key table",
            format!("{} used of {}", p.pkeys.len(), p.pkey_table_length),
            t.normal(),
        ),
        field("Netdev", &p.netdev, "Netdev", t.normal()),
    ];
    let ipoib = model.ipoib_of_port(&p.path);
    for (i, ip) in ipoib.iter().enumerate() {
        let mut facts = Vec::new();
        if ip.is_child() {
            facts.push(format!("P_Key 0x{:04x}", ip.pkey));
        }
        if !ip.mode.is_empty() {
            facts.push(ip.mode.clone());
        }
        if ip.mtu > 0 {
            facts.push(format!("MTU {}", ip.mtu));
        }
        let state_style = if ip.oper_state == "up" {
            t.good()
        } else {
            t.warn()
        };
        let label = if i == 0 { "IPoIB" } else { "" };
        let mut line = kv(t, label, ip.name.clone(), t.normal());
        if !facts.is_empty() {
            line.spans
                .push(Span::styled(format!(" ({})", facts.join(", ")), t.dim()));
        }
        if !ip.oper_state.is_empty() {
            line.spans
                .push(Span::styled(format!(" {}", ip.oper_state), state_style));
        }
        lines.push(line);
    }
    if !p.is_infiniband() && (!p.roce_mode.is_empty() || !p.roce_modes.is_empty()) {
        lines.push(Line::raw(""));
        lines.push(title(t, "RoCE"));
        let supported = if p.roce_modes.is_empty() {
            String::new()
        } else {
            format!(" (supports {})", p.roce_modes.join(", "))
        };
        let (mode, style) = value_or_reason(t, &p.roce_mode, "RoceMode", u);
        lines.push(kv(t, "Mode", format!("{mode}{supported}"), style));
        lines.push(kv(t, "ToS", p.roce_tos.to_string(), t.normal()));
        lines.push(kv(
            t,
            "Kept on reboot",
            if p.roce_persisted { "yes" } else { "no" },
            t.normal(),
        ));
    }
    if !p.port_type_control.is_empty() {
        lines.push(Line::raw(""));
        lines.push(title(t, "Port type"));
        let how = match p.port_type_control.as_str() {
            "firmware" => "firmware, at the next boot",
            _ => "driver, at once",
        };
        lines.push(kv(
            t,
            "Type",
            format!("{} ({how})", p.port_type),
            t.normal(),
        ));
        if p.port_type_reboot_needed {
            lines.push(kv(
                t,
                "Next boot",
                format!("{} (reboot needed)", p.port_type_next),
                t.warn(),
            ));
        }
    }
    lines
}

/// A port state as ibstat prints it (`port_state_str[]`: `Active`, not sysfs's `ACTIVE`);
/// another word (none, or one ibstat would print as `???`) as the service gave it.
fn ibstat_state(state: &str) -> &str {
    match state {
        "DOWN" => "Down",
        "INIT" => "Initializing",
        "ARMED" => "Armed",
        "ACTIVE" => "Active",
        other => other,
    }
}

/// A GID as the kernel writes it when it fits, else compressed (`fe80::b859:9f03:d4:e62a`).
fn gid_text(gid: &str, width: usize) -> String {
    if gid.chars().count() <= width {
        return gid.to_string();
    }
    match gid.parse::<Ipv6Addr>() {
        Ok(a) => fit(&a.to_string(), width),
        Err(_) => fit(gid, width),
    }
}

fn gid_lines(t: Theme, p: &Port, width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![title(t, format!("GIDs ({})", p.gids.len()))];
    if p.gids.is_empty() {
        lines.push(Line::styled("  none", t.dim()));
        return lines;
    }
    let type_w = p
        .gids
        .iter()
        .map(|g| g.gid_type.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let has_netdev = p.gids.iter().any(|g| !g.netdev.is_empty());
    let netdev_w = if has_netdev {
        p.gids
            .iter()
            .map(|g| g.netdev.chars().count())
            .max()
            .unwrap_or(0)
            .max(6)
            + 2
    } else {
        0
    };
    // "  idx  " + GID + "  " + type + netdev.
    let gid_w = width.saturating_sub(7 + 2 + type_w + netdev_w).clamp(8, 39);
    let mut head = format!("  {:>3}  {:<gid_w$}  {:<type_w$}", "Idx", "GID", "Type");
    if has_netdev {
        head.push_str("  Netdev");
    }
    lines.push(Line::styled(head, t.dim()));
    for g in &p.gids {
        let mut s = format!(
            "  {:>3}  {:<gid_w$}  {:<type_w$}",
            g.index,
            gid_text(&g.gid, gid_w),
            g.gid_type
        );
        if has_netdev {
            s.push_str("  ");
            s.push_str(&g.netdev);
        }
        lines.push(Line::raw(s));
    }
    lines
}

fn pkey_lines(t: Theme, p: &Port) -> Vec<Line<'static>> {
    let mut lines = vec![title(t, format!("P_Keys ({})", p.pkeys.len()))];
    if p.pkeys.is_empty() {
        lines.push(Line::styled("  none", t.dim()));
        return lines;
    }
    lines.push(Line::styled("  Idx  P_Key   Membership", t.dim()));
    for k in &p.pkeys {
        // Bit 15 is the membership; the rest is the partition (0x7fff the default one).
        let member = if k.pkey & 0x8000 != 0 {
            "full"
        } else {
            "limited"
        };
        let note = match k.pkey & 0x7fff {
            0x7fff => "  default partition",
            0 => "  invalid",
            _ => "",
        };
        lines.push(Line::from(vec![
            Span::raw(format!("  {:>3}  0x{:04x}  {member:<7}", k.index, k.pkey)),
            Span::styled(note, t.dim()),
        ]));
    }
    lines
}

/// The data counters first (what people look at, in perfquery's order), then the error
/// counters, then the rest.
fn counter_rank(name: &str) -> u8 {
    match name {
        "tx_bytes" => 0,
        "rx_bytes" => 1,
        "tx_packets" => 2,
        "rx_packets" => 3,
        n if Counters::is_error(n) => 4,
        _ => 5,
    }
}

fn counter_lines(t: Theme, model: &Model, p: &Port) -> Vec<Line<'static>> {
    let Some(c) = model.counters.get(&p.path) else {
        let mut lines = vec![title(t, "Counters")];
        lines.push(Line::styled("  reading...", t.dim()));
        return lines;
    };
    let source = if c.source.is_empty() {
        String::new()
    } else {
        format!(" ({})", c.source)
    };
    let mut lines = vec![title(t, format!("Counters{source}"))];
    if c.saturated {
        lines.push(Line::styled(
            "  32-bit counters saturated: these are lower bounds",
            t.warn(),
        ));
    }
    if c.values.is_empty() {
        lines.push(Line::styled("  none readable", t.dim()));
        return lines;
    }
    let mut names: Vec<(&String, &u64)> = c.values.iter().collect();
    names.sort_by(|a, b| {
        counter_rank(a.0)
            .cmp(&counter_rank(b.0))
            .then_with(|| a.0.to_lowercase().cmp(&b.0.to_lowercase()))
    });
    let name_w = names
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let value_w = names
        .iter()
        .map(|(_, v)| v.to_string().len())
        .max()
        .unwrap_or(1);
    for (name, value) in names {
        let error = Counters::is_error(name);
        let rising = error && c.rising.iter().any(|r| r == name);
        // A mark as well as the colour: without colour the rising ones must still show.
        let (mark, style) = if rising {
            ("▲", t.bad())
        } else if error && *value > 0 {
            ("!", t.warn())
        } else {
            (" ", t.normal())
        };
        let mut spans = vec![
            Span::styled(format!(" {mark} "), style),
            Span::styled(format!("{name:<name_w$}  "), style),
            Span::styled(format!("{value:>value_w$}"), style),
        ];
        if rising {
            spans.push(Span::styled("  rising", style));
        }
        lines.push(Line::from(spans));
    }
    lines
}

fn unreadable_lines(t: Theme, d: Option<&Device>, p: &Port) -> Vec<Line<'static>> {
    let mut entries: Vec<(String, String)> = Vec::new();
    if let Some(d) = d {
        entries.extend(
            d.unreadable
                .iter()
                .map(|(k, v)| (format!("Device {k}"), v.clone())),
        );
    }
    entries.extend(
        p.unreadable
            .iter()
            .map(|(k, v)| (format!("Port {k}"), v.clone())),
    );
    if entries.is_empty() {
        return Vec::new();
    }
    let w = entries
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines = vec![title(t, "Not readable")];
    for (k, v) in entries {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<w$}  "), t.dim()),
            Span::styled(v, t.warn()),
        ]));
    }
    lines
}

/// Appends `more` after a blank line (sections are separated by one).
fn append(lines: &mut Vec<Line<'static>>, more: Vec<Line<'static>>) {
    if more.is_empty() {
        return;
    }
    if !lines.is_empty() {
        lines.push(Line::raw(""));
    }
    lines.extend(more);
}

impl DetailPage {
    /// The header: which port, its state in a word, and where it is in the list.
    fn header(&self, t: Theme, model: &Model, p: &Port, width: usize) -> Line<'static> {
        let mut spans = vec![
            Span::styled(port_name(p), t.title()),
            Span::raw("  "),
            Span::styled(
                if p.state.is_empty() {
                    "?".to_string()
                } else {
                    p.state.clone()
                },
                t.port_state(&p.state),
            ),
            Span::raw("  "),
            Span::raw(format!("{}  {}", p.phys_state, p.rate)),
        ];
        let n = model.ports_in_order().len();
        let right = format!("port {} of {n}", self.cursor.position(model) + 1);
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        if let Some(gap) = width.checked_sub(used + right.chars().count()) {
            spans.push(Span::raw(" ".repeat(gap.max(1))));
            spans.push(Span::styled(right, t.dim()));
        }
        Line::from(spans)
    }

    /// The port's sections, scrolled.
    fn render_port(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let t = ctx.theme;
        let model = ctx.model;
        if area.width == 0 || area.height == 0 {
            return;
        }
        let Some(p) = self.cursor.current(model) else {
            self.height = 0;
            frame.render_widget(
                Paragraph::new(Line::styled("No RDMA ports on this host.", t.dim())),
                area,
            );
            return;
        };
        let device = model.device_of(p);
        let header = self.header(t, model, p, area.width as usize);
        frame.render_widget(header, Rect::new(area.x, area.y, area.width, 1));
        let body = Rect::new(
            area.x,
            area.y.saturating_add(1),
            area.width,
            area.height.saturating_sub(1),
        );
        self.height = body.height as usize;

        // The ibstat part on the left, the tables on the right; one column below the width
        // where a GID row and the ibstat part fit side by side.
        let two = area.width >= TWO_COLUMNS;
        let left_w = if two {
            (area.width as usize * 2 / 5).max(62)
        } else {
            area.width as usize
        };
        let right_w = if two {
            (area.width as usize).saturating_sub(left_w + 2)
        } else {
            area.width as usize
        };
        let mut left = Vec::new();
        if let Some(d) = device {
            append(&mut left, device_lines(t, d));
        }
        append(&mut left, port_lines(t, model, p));
        let mut right = Vec::new();
        append(&mut right, gid_lines(t, p, right_w));
        append(&mut right, pkey_lines(t, p));
        append(&mut right, counter_lines(t, model, p));
        if two {
            append(&mut left, unreadable_lines(t, device, p));
        } else {
            append(&mut right, unreadable_lines(t, device, p));
            append(&mut left, right);
            right = Vec::new();
        }
        // Lines too long for their column end with the cut marker.
        let left = crate::widgets::fit_lines(left, left_w);
        let right = crate::widgets::fit_lines(right, right_w);
        let len = left.len().max(right.len());
        self.scroll = self.scroll.min(len.saturating_sub(self.height));
        let scroll = u16::try_from(self.scroll).unwrap_or(u16::MAX);
        if body.height == 0 {
            return;
        }
        let lw = u16::try_from(left_w).unwrap_or(u16::MAX).min(body.width);
        frame.render_widget(
            Paragraph::new(left).scroll((scroll, 0)),
            Rect::new(body.x, body.y, lw, body.height),
        );
        if two {
            let rx = body.x + lw + 2;
            let rw = body.width.saturating_sub(lw + 2);
            frame.render_widget(
                Paragraph::new(right).scroll((scroll, 0)),
                Rect::new(rx, body.y, rw, body.height),
            );
        }
        // Say there is more below (or above): the page is often longer than 24 lines.
        if len > self.height && body.width > 12 {
            let last = (self.scroll + self.height).min(len);
            let note = format!(" {}-{} of {len} ", self.scroll + 1, last);
            let w = note.chars().count() as u16;
            if w < body.width {
                let r = Rect::new(body.right() - w, body.bottom() - 1, w, 1);
                frame.render_widget(Line::styled(note, t.selected()), r);
            }
        }
    }

    /// `t`: the port type form of the port shown, if its driver has a type to set.
    fn open_port_type(&mut self, model: &Model) -> Outcome {
        let Some(p) = self.cursor.current(model) else {
            return Outcome::Handled;
        };
        match crate::porttypeform::form(p) {
            Some(form) => {
                self.session = Some(Session::new(form, DetailEdit::PortType(p.path.clone())));
                Outcome::Handled
            }
            None => Outcome::Message(format!(
                "{} has no port type to set: only mlx4 (ConnectX-3) and mlx5 ports with \
                 mstconfig installed have one",
                port_name(p)
            )),
        }
    }

    /// `v`: the VF GUID form of the shown port's device, if it is an SR-IOV PF with VFs.
    fn open_vf_guids(&mut self, model: &Model) -> Outcome {
        let Some(d) = self.cursor.current(model).and_then(|p| model.device_of(p)) else {
            return Outcome::Handled;
        };
        match crate::vfguidform::form(d) {
            Some(form) => {
                self.session = Some(Session::new(form, DetailEdit::VfGuids(d.path.clone())));
                Outcome::Handled
            }
            None => Outcome::Message(format!(
                "{} has no enabled SR-IOV virtual functions to give GUIDs",
                d.name
            )),
        }
    }
}

impl Page for DetailPage {
    fn id(&self) -> PageId {
        PageId::Detail
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        self.render_port(frame, area, ctx);
        edit::render_form(frame, area, &self.session, ctx.theme);
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) = edit::key_to_form(self.session.is_some(), &key, || {
            edit::form_key(
                &mut self.session,
                key,
                model,
                |s, changed| {
                    if let DetailEdit::VfGuids(d) = &s.kind {
                        if let Some(d) = model.devices.get(d) {
                            crate::vfguidform::check(&mut s.form, d, changed);
                        }
                    }
                },
                |s| {
                    Submit::Calls(match &s.kind {
                        DetailEdit::PortType(p) => model
                            .ports
                            .get(p)
                            .map(|p| crate::porttypeform::calls(&s.form, p))
                            .unwrap_or_default(),
                        DetailEdit::VfGuids(d) => model
                            .devices
                            .get(d)
                            .map(|d| crate::vfguidform::calls(&s.form, d))
                            .unwrap_or_default(),
                    })
                },
            )
        }) {
            return out;
        }
        let page = self.height.saturating_sub(1).max(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            // Render clamps the scroll to the content.
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(page),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(page),
            KeyCode::Home => self.scroll = 0,
            KeyCode::End => self.scroll = usize::MAX,
            KeyCode::Left | KeyCode::Char('[') => {
                self.cursor.step(-1, model);
                self.scroll = 0;
            }
            KeyCode::Right | KeyCode::Char(']') => {
                self.cursor.step(1, model);
                self.scroll = 0;
            }
            KeyCode::Char('t') => return self.open_port_type(model),
            KeyCode::Char('v') => return self.open_vf_guids(model),
            KeyCode::Char('g') => {
                return match self.cursor.current(model) {
                    Some(p) => Outcome::ShowPort(PageId::Bandwidth, p.path.clone()),
                    None => Outcome::Handled,
                };
            }
            _ => return Outcome::Ignored,
        }
        Outcome::Handled
    }

    fn handle_mouse(&mut self, event: MouseEvent, _area: Rect, _model: &Model) -> Outcome {
        match event.kind {
            MouseEventKind::ScrollDown => self.scroll = self.scroll.saturating_add(3),
            MouseEventKind::ScrollUp => self.scroll = self.scroll.saturating_sub(3),
            _ => return Outcome::Ignored,
        }
        Outcome::Handled
    }

    fn selected_port(&self, model: &Model) -> Option<String> {
        self.cursor.current(model).map(|p| p.path.clone())
    }

    fn focus_port(&mut self, port: &str, model: &Model) {
        // The same port again keeps where its page was scrolled to.
        if self.cursor.current(model).is_some_and(|p| p.path == port) {
            return;
        }
        self.cursor.select_path(port, model);
        self.scroll = 0;
    }

    fn counters_port(&self, model: &Model) -> Option<String> {
        self.cursor.current(model).map(|p| p.path.clone())
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        edit::answer_and_close(&mut self.session, call, result);
    }

    edit::form_page_methods!();

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        edit::hints(
            self.session.as_ref().map(|s| &s.form),
            vec![
                ("←→ [ ]", "port"),
                ("↑↓", "scroll"),
                ("g", "bandwidth"),
                // Short enough for the whole footer at 80 columns; the help says more.
                ("t", "type"),
                ("v", "VFs"),
            ],
        )
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("Left/Right or [ ]", "the previous / next port"),
            ("Up/Down, PgUp/PgDn", "scroll"),
            ("g", "the port's bandwidth graph"),
            (
                "t",
                "port type of a VPI port (InfiniBand, Ethernet, auto): mlx4 at once, mlx5 in \
                 firmware at the next boot",
            ),
            (
                "v",
                "node and port GUID of an SR-IOV VF of the port's device (a PF), remembered and \
                 set again when the VFs are created",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::model::VfGuid;
    use crate::pages::test_support::{self, key};
    use std::collections::BTreeMap;

    fn render(page: &mut DetailPage, model: &Model, w: u16, h: u16) -> ratatui::buffer::Buffer {
        test_support::draw(page, model, w, h).buffer().clone()
    }

    fn find(buf: &ratatui::buffer::Buffer, needle: &str) -> Option<(u16, u16)> {
        (0..buf.area.height).find_map(|y| {
            let row: Vec<String> = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            let text = row.concat();
            let byte = text.find(needle)?;
            Some((text[..byte].chars().count() as u16, y))
        })
    }

    #[test]
    fn ports_switch_and_the_counters_follow() {
        let m = fixtures::demo_model();
        let ports: Vec<String> = m.ports_in_order().iter().map(|p| p.path.clone()).collect();
        let mut p = DetailPage::default();
        assert_eq!(p.counters_port(&m), Some(ports[0].clone()));
        assert_eq!(p.handle_key(key(KeyCode::Right), &m), Outcome::Handled);
        assert_eq!(p.counters_port(&m), Some(ports[1].clone()));
        p.handle_key(key(KeyCode::Char(']')), &m);
        p.handle_key(key(KeyCode::Char('[')), &m);
        p.handle_key(key(KeyCode::Left), &m);
        p.handle_key(key(KeyCode::Left), &m);
        assert_eq!(p.counters_port(&m), Some(ports[0].clone()));
        p.focus_port(&ports[3], &m);
        assert_eq!(p.counters_port(&m), Some(ports[3].clone()));
        assert_eq!(
            p.handle_key(key(KeyCode::Char('g')), &m),
            Outcome::ShowPort(PageId::Bandwidth, ports[3].clone())
        );
        assert_eq!(p.handle_key(key(KeyCode::Tab), &m), Outcome::Ignored);
        assert_eq!(p.counters_port(&Model::default()), None);
    }

    /// `t` opens the port type form of a port whose driver has one, Enter sends the type
    /// chosen; a port without one says so and opens nothing.
    #[test]
    fn t_opens_the_port_type_form_and_sends_the_type_chosen() {
        let m = fixtures::demo_model();
        let port_with = |control: &str| {
            m.ports_in_order()
                .into_iter()
                .find(|p| p.port_type_control == control)
                .map(|p| (p.path.clone(), p.port_type.clone()))
                .unwrap_or_else(|| panic!("a {control:?} port on the demo host"))
        };
        let mut p = DetailPage::default();
        let (none, _) = port_with("");
        p.focus_port(&none, &m);
        let said = p.handle_key(key(KeyCode::Char('t')), &m);
        assert!(
            matches!(&said, Outcome::Message(s) if s.contains("no port type")),
            "{said:?}"
        );
        assert!(!p.editing());
        let (path, now) = port_with("firmware");
        p.focus_port(&path, &m);
        assert_eq!(p.handle_key(key(KeyCode::Char('t')), &m), Outcome::Handled);
        assert!(p.editing());
        // Keys go to the form: the port does not switch under it.
        p.handle_key(key(KeyCode::Right), &m);
        assert_eq!(p.selected_port(&m), Some(path.clone()));
        let chosen = p
            .session
            .as_ref()
            .and_then(|s| s.form.choice("type"))
            .map(str::to_string)
            .unwrap_or_default();
        assert_ne!(chosen, now, "Right moved to another type");
        assert_eq!(
            p.handle_key(key(KeyCode::Enter), &m),
            Outcome::Call(Call::SetPortType {
                port: path,
                port_type: chosen
            })
        );
    }

    /// `v` opens the VF GUID form of the shown port's device when it is a PF with VFs; the
    /// typed GUIDs are checked, and Enter sends them in `ip link`'s form.
    #[test]
    fn v_opens_the_vf_guid_form_of_a_pf() {
        let mut m = fixtures::demo_model();
        let mut p = DetailPage::default();
        let said = p.handle_key(key(KeyCode::Char('v')), &m);
        assert!(
            matches!(&said, Outcome::Message(s) if s.contains("no enabled SR-IOV")),
            "{said:?}"
        );
        let port = m.ports_in_order()[0].clone();
        let Some(dev) = m.device_of(&port).map(|d| d.path.clone()) else {
            panic!("the first port's device");
        };
        if let Some(d) = m.devices.get_mut(&dev) {
            d.vf_guids = vec![VfGuid {
                vf: 0,
                pci_address: "0000:04:00.1".into(),
                ..VfGuid::default()
            }];
        }
        p.focus_port(&port.path, &m);
        assert_eq!(p.handle_key(key(KeyCode::Char('v')), &m), Outcome::Handled);
        // The VF choice, then the node GUID: a VF without GUIDs is refused until it has both.
        p.handle_key(key(KeyCode::Tab), &m);
        for c in "0x0011223344556677".chars() {
            p.handle_key(key(KeyCode::Char(c)), &m);
        }
        assert_eq!(p.handle_key(key(KeyCode::Enter), &m), Outcome::Handled);
        assert!(p.editing(), "refused without a port GUID");
        // The refusal puts the keyboard on the field at fault.
        let focused = p.session.as_ref().and_then(|s| s.form.focused());
        assert_eq!(focused, Some("port"));
        for c in "0011:2233:4455:6678".chars() {
            p.handle_key(key(KeyCode::Char(c)), &m);
        }
        assert_eq!(
            p.handle_key(key(KeyCode::Enter), &m),
            Outcome::Call(Call::SetVfGuids {
                device: dev,
                vf: 0,
                node_guid: "00:11:22:33:44:55:66:77".into(),
                port_guid: "00:11:22:33:44:55:66:78".into(),
            })
        );
    }

    #[test]
    fn scrolling_stops_at_the_end() {
        let m = fixtures::demo_model();
        let mut p = DetailPage::default();
        render(&mut p, &m, 80, 21);
        p.handle_key(key(KeyCode::End), &m);
        let buf = render(&mut p, &m, 80, 21);
        assert!(p.scroll > 0);
        let at_end = p.scroll;
        p.handle_key(key(KeyCode::Down), &m);
        render(&mut p, &m, 80, 21);
        assert_eq!(p.scroll, at_end);
        assert!(find(&buf, "P_Keys").is_some() || find(&buf, "Counters").is_some());
        p.handle_key(key(KeyCode::Up), &m);
        assert_eq!(p.scroll, at_end - 1);
        p.handle_key(key(KeyCode::Home), &m);
        assert_eq!(p.scroll, 0);
    }

    #[test]
    fn error_counters_are_marked_and_coloured() {
        let mut m = fixtures::demo_model();
        let port = m.ports_in_order()[0].path.clone();
        let v = |errs: u64, recov: u64| {
            BTreeMap::from([
                ("tx_bytes".to_string(), 1000),
                ("symbol_error".to_string(), errs),
                ("link_error_recovery".to_string(), recov),
                ("link_downed".to_string(), 0),
            ])
        };
        m.set_counters(&port, "pma32".into(), false, v(1, 2));
        m.set_counters(&port, "pma32".into(), false, v(5, 2));
        let mut p = DetailPage::default();
        let buf = render(&mut p, &m, 200, 60);
        let t = Theme::colored();
        let (x, y) = find(&buf, "symbol_error").expect("shown");
        assert_eq!(buf[(x, y)].fg, t.bad().fg.expect("bad colour"));
        assert_eq!(buf[(x - 2, y)].symbol(), "▲");
        let (x, y) = find(&buf, "link_error_recovery").expect("shown");
        assert_eq!(buf[(x, y)].fg, t.warn().fg.expect("warn colour"));
        assert_eq!(buf[(x - 2, y)].symbol(), "!");
        let (x, y) = find(&buf, "link_downed").expect("shown");
        assert_eq!(buf[(x - 2, y)].symbol(), " ");
        assert_ne!(buf[(x, y)].fg, t.warn().fg.expect("warn colour"));
    }

    #[test]
    fn vfs_show_their_guids_and_what_is_remembered() {
        let vf = |vf: u32, pci: &str, now: &str, kept: &str| VfGuid {
            vf,
            pci_address: pci.into(),
            node_guid: now.into(),
            port_guid: now.into(),
            remembered_node_guid: kept.into(),
            remembered_port_guid: kept.into(),
        };
        let g = "00:11:22:33:44:55:66:77";
        let d = Device {
            vf_guids: vec![
                vf(0, "", "", g),
                vf(1, "0000:3b:00.3", g, g),
                vf(2, "0000:3b:00.4", "", ""),
            ],
            ..Device::default()
        };
        let t = Theme::colored();
        let lines = vf_lines(t, &d);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert!(
            text[0].contains("VF 0")
                && text[0].contains("not enabled  node -  port -  (remembered: node 00:11"),
            "{text:?}"
        );
        assert!(text[1].ends_with("0000:3b:00.3  node 00:11:22:33:44:55:66:77  port 00:11:22:33:44:55:66:77  (remembered)"), "{text:?}");
        assert!(
            text[2].ends_with("0000:3b:00.4  node -  port -"),
            "{text:?}"
        );
        let style = |i: usize| lines[i].spans[1].style;
        assert_eq!(style(0), t.warn());
        assert_eq!(style(1), t.normal());
        assert_eq!(style(2), t.warn());
    }

    #[test]
    fn unreadable_properties_are_shown_with_their_reason() {
        let m = fixtures::demo_model();
        let rxe = m
            .ports_in_order()
            .iter()
            .find(|p| p.device_name == "rxe0")
            .map(|p| p.path.clone())
            .expect("rxe0 port");
        let mut p = DetailPage::default();
        p.focus_port(&rxe, &m);
        let buf = render(&mut p, &m, 200, 60);
        assert!(find(&buf, "Device HcaType").is_some());
        assert!(find(&buf, "(not present)").is_some());
    }

    #[test]
    fn gids_are_compressed_only_when_narrow() {
        let g = "fe80:0000:0000:0000:b859:9f03:00d4:e62a";
        assert_eq!(gid_text(g, 39), g);
        assert_eq!(gid_text(g, 30), "fe80::b859:9f03:d4:e62a");
        assert_eq!(
            gid_text("0000:0000:0000:0000:0000:ffff:0a14:000b", 20),
            "::ffff:10.20.0.11"
        );
        assert_eq!(gid_text("garbage-that-is-long", 8), "garbage…");
    }
}
