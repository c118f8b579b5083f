//! The port type of a VPI adapter's port (InfiniBand or Ethernet), checked before the
//! kernel or the firmware sees it, and the texts the drivers and tools speak it in.
//!
//! - mlx4 switches at run time through `/sys/bus/pci/drivers/mlx4_core/<bdf>/mlx4_port<N>`
//!   (`ib`, `eth` or `auto`; it reads back `ib`, `eth`, or `auto (ib)`/`auto (eth)` when the
//!   port senses its type: the driver's `show_port_type`). The driver refuses a combination
//!   the card cannot run (`mlx4_check_port_params`); the one every dual-port ConnectX-3 refuses
//!   is port 1 Ethernet with port 2 InfiniBand, which is why rdma-core's `mlx4-setup.sh`
//!   switches port 2 first ("In order for port1 to be eth, port2 to must also be eth").
//!   Whether a card allows different types at all (the DPDP capability) or auto-sensing is
//!   not published in sysfs: those refusals come from the driver (EOPNOTSUPP).
//! - rdma-core persists it in `/etc/rdma/mlx4.conf`, one line `<bdf> <p1> [p2]` a card,
//!   applied when mlx4_core loads.
//! - mlx5's is a firmware setting, `LINK_TYPE_P<N>` (1 IB, 2 ETH, 3 VPI) written through
//!   mstflint's `mstconfig`, which takes effect at the next boot (or firmware reset).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a user asks a port to be: the words of the mlx4 sysfs file, `devlink port set ...
/// type` and `mlx4.conf` (and of the state document's `ports[].type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortType {
    Ib,
    Eth,
    /// Sensed by the driver from what the port is cabled to (mlx4), VPI in firmware (mlx5).
    Auto,
}

impl PortType {
    pub const ALL: [PortType; 3] = [PortType::Ib, PortType::Eth, PortType::Auto];

    pub fn as_str(self) -> &'static str {
        match self {
            PortType::Ib => "ib",
            PortType::Eth => "eth",
            PortType::Auto => "auto",
        }
    }

    /// `ib`, `eth` or `auto` (the kernel's words), case-insensitive, with the long names a
    /// user may type (`infiniband`, `ethernet`).
    pub fn parse(s: &str) -> Result<PortType, PortTypeError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ib" | "infiniband" => Ok(PortType::Ib),
            "eth" | "ethernet" => Ok(PortType::Eth),
            "auto" => Ok(PortType::Auto),
            _ => Err(PortTypeError::UnknownType(s.to_string())),
        }
    }

    /// The text written to the mlx4 sysfs file: `set_port_type` compares it with the
    /// newline (`strcmp(buf, "ib\n")`), so a write without one is refused (EINVAL).
    pub fn sysfs_write_form(self) -> String {
        format!("{}\n", self.as_str())
    }

    /// The firmware's `LINK_TYPE_P<N>` value for this type.
    pub fn firmware_value(self) -> FwLinkType {
        match self {
            PortType::Ib => FwLinkType::Ib,
            PortType::Eth => FwLinkType::Eth,
            PortType::Auto => FwLinkType::Vpi,
        }
    }
}

impl fmt::Display for PortType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a port runs: InfiniBand or Ethernet (its link layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RunningType {
    Ib,
    Eth,
}

impl RunningType {
    pub fn as_str(self) -> &'static str {
        match self {
            RunningType::Ib => "ib",
            RunningType::Eth => "eth",
        }
    }

    pub fn as_port_type(self) -> PortType {
        match self {
            RunningType::Ib => PortType::Ib,
            RunningType::Eth => PortType::Eth,
        }
    }
}

/// A value of `mlx4_port<N>`: what was asked (`auto` or a type) and what runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mlx4PortValue {
    pub configured: PortType,
    pub running: RunningType,
}

impl Mlx4PortValue {
    /// Parses what `show_port_type` prints: `ib`, `eth`, `auto (ib)` or `auto (eth)`.
    pub fn parse(s: &str) -> Option<Mlx4PortValue> {
        let s = s.trim();
        let running = |t: &str| match t {
            "ib" => Some(RunningType::Ib),
            "eth" => Some(RunningType::Eth),
            _ => None,
        };
        if let Some(rest) = s.strip_prefix("auto") {
            let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
            return Some(Mlx4PortValue {
                configured: PortType::Auto,
                running: running(inner.trim())?,
            });
        }
        let r = running(s)?;
        Some(Mlx4PortValue {
            configured: r.as_port_type(),
            running: r,
        })
    }

    /// The text the kernel prints for it.
    pub fn render(self) -> String {
        match self.configured {
            PortType::Auto => format!("auto ({})", self.running.as_str()),
            _ => self.running.as_str().to_string(),
        }
    }
}

/// A refusal, with nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortTypeError {
    #[error("{0:?} is not a port type: use ib, eth or auto")]
    UnknownType(String),
    #[error("the card has no port {port} (its ports: 1 to {ports})")]
    NoSuchPort { port: u32, ports: u32 },
    #[error(
        "port 1 may be Ethernet only when port 2 is: mlx4 cards refuse port 1 eth with port 2 ib \
         (set port 2 to eth first)"
    )]
    Port1EthNeedsPort2Eth,
}

/// The types each port of an mlx4 card would run after `port` is set to `new`: the other
/// ports keep their setting, and `auto` keeps running what it runs now (the driver senses
/// again from the same cable: `__set_port_type` takes an auto port's current type).
pub fn mlx4_after(
    now: &[Mlx4PortValue],
    port: u32,
    new: PortType,
) -> Result<Vec<RunningType>, PortTypeError> {
    let ports = now.len() as u32;
    if port == 0 || port > ports {
        return Err(PortTypeError::NoSuchPort { port, ports });
    }
    Ok(now
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let asked = if i as u32 + 1 == port {
                new
            } else {
                v.configured
            };
            match asked {
                PortType::Ib => RunningType::Ib,
                PortType::Eth => RunningType::Eth,
                PortType::Auto => v.running,
            }
        })
        .collect())
}

/// mlx4's port rule, checked before the sysfs write: port 1 may be Ethernet only when port
/// 2 is (a single-port card has no rule).
pub fn check_mlx4(now: &[Mlx4PortValue], port: u32, new: PortType) -> Result<(), PortTypeError> {
    let after = mlx4_after(now, port, new)?;
    if let [RunningType::Eth, RunningType::Ib, ..] = after.as_slice() {
        return Err(PortTypeError::Port1EthNeedsPort2Eth);
    }
    Ok(())
}

/// A firmware `LINK_TYPE_P<N>` value (mlx5): 1 IB, 2 ETH, 3 VPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FwLinkType {
    Ib,
    Eth,
    Vpi,
}

impl FwLinkType {
    pub fn value(self) -> u8 {
        match self {
            FwLinkType::Ib => 1,
            FwLinkType::Eth => 2,
            FwLinkType::Vpi => 3,
        }
    }

    pub fn from_value(v: u32) -> Option<FwLinkType> {
        match v {
            1 => Some(FwLinkType::Ib),
            2 => Some(FwLinkType::Eth),
            3 => Some(FwLinkType::Vpi),
            _ => None,
        }
    }

    /// The name mstconfig prints before the value in parentheses (`ETH(2)`).
    pub fn tool_name(self) -> &'static str {
        match self {
            FwLinkType::Ib => "IB",
            FwLinkType::Eth => "ETH",
            FwLinkType::Vpi => "VPI",
        }
    }

    pub fn as_port_type(self) -> PortType {
        match self {
            FwLinkType::Ib => PortType::Ib,
            FwLinkType::Eth => PortType::Eth,
            FwLinkType::Vpi => PortType::Auto,
        }
    }
}

/// The firmware parameter of a port: `LINK_TYPE_P1`, `LINK_TYPE_P2`.
pub fn firmware_param(port: u32) -> String {
    format!("LINK_TYPE_P{port}")
}

/// One parameter as `mstconfig -e -d <bdf> query <PARAM>` shows it: the value in use
/// (`Current`, when the firmware tells it) and the value of the next boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FwQuery {
    pub current: Option<FwLinkType>,
    pub next_boot: FwLinkType,
}

/// Reads `param`'s row of an mstconfig query table. mstflint's `printConfHeader` prints
/// `Configurations:` then the columns shown (`Default`, `Current` with `-e` when the
/// firmware can tell them, and always `Next Boot`), and `printSingleParam` a row: a `*`
/// when the values differ, `RO` when read-only, the name, then one value a column,
/// `NAME(n)` or `N/A`.
pub fn parse_mstconfig_query(out: &str, param: &str) -> Result<FwQuery, String> {
    let header = out
        .lines()
        .find(|l| l.trim_start().starts_with("Configurations:"))
        .ok_or_else(|| "mstconfig printed no configuration table".to_string())?;
    let cols: Vec<&str> = header
        .trim_start()
        .trim_start_matches("Configurations:")
        .replace("Next Boot", "Next_Boot")
        .split_whitespace()
        .map(|c| match c {
            "Default" => "Default",
            "Current" => "Current",
            "New" => "New",
            _ => "Next",
        })
        .collect();
    let row = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|t| t.contains(&param))
        .ok_or_else(|| format!("mstconfig did not list {param}"))?;
    let at = row.iter().position(|w| *w == param).unwrap_or_default();
    let values = &row[at + 1..];
    if values.len() != cols.len() {
        return Err(format!(
            "mstconfig's {param} row has {} values for {} columns",
            values.len(),
            cols.len()
        ));
    }
    let value = |col: &str| -> Result<Option<FwLinkType>, String> {
        let Some(i) = cols.iter().position(|c| *c == col) else {
            return Ok(None);
        };
        parse_fw_value(values[i]).map_err(|e| format!("{param} {col}: {e}"))
    };
    let next_boot = value("Next")?.ok_or_else(|| format!("mstconfig shows no {param} value"))?;
    Ok(FwQuery {
        current: value("Current")?,
        next_boot,
    })
}

/// `ETH(2)`, `IB(1)`, `VPI(3)`, a bare number, or `N/A` (None).
fn parse_fw_value(v: &str) -> Result<Option<FwLinkType>, String> {
    if v == "N/A" {
        return Ok(None);
    }
    let num = match (v.find('('), v.strip_suffix(')')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        _ => v,
    };
    let n: u32 = num
        .parse()
        .map_err(|_| format!("{v:?} is not a link type"))?;
    FwLinkType::from_value(n)
        .map(Some)
        .ok_or_else(|| format!("{v:?} is not a link type (1 IB, 2 ETH, 3 VPI)"))
}

/// The mlx4.conf line of a card, if the file has one: its port types in order.
pub fn mlx4_conf_get(text: &str, bdf: &str) -> Option<Vec<PortType>> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        if words.next()? != bdf {
            return None;
        }
        words.map(|w| PortType::parse(w).ok()).collect()
    })
}

/// `text` with the card's line set to `types` (`<bdf> <p1> [p2]`): the first line of the
/// card replaced in place, later ones of the same card dropped (mlx4-setup.sh applies each,
/// so the last would win), every other line and comment kept as it is; a card without a
/// line gets one at the end.
pub fn mlx4_conf_set(text: &str, bdf: &str, types: &[PortType]) -> String {
    let line = std::iter::once(bdf.to_string())
        .chain(types.iter().map(|t| t.as_str().to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::with_capacity(text.len() + line.len() + 1);
    let mut done = false;
    for l in text.lines() {
        if l.split_whitespace().next() == Some(bdf) {
            if !done {
                out.push_str(&line);
                out.push('\n');
                done = true;
            }
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    if !done {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The header a new `/etc/rdma/mlx4.conf` starts with (the file rdma-core's hook reads).
pub const MLX4_CONF_HEADER: &str = "\
# Port types of mlx4 cards, applied when mlx4_core loads (rdma-core) and by rdma-managerd
# when the card appears. Format: <pci_device_of_card> <port1_type> [port2_type]
# with ib, eth or auto.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Mlx4PortValue {
        Mlx4PortValue::parse(s).unwrap()
    }

    #[test]
    fn the_kernel_words_parse_and_print() {
        for t in PortType::ALL {
            assert_eq!(PortType::parse(t.as_str()), Ok(t));
        }
        assert_eq!(PortType::parse(" Ethernet "), Ok(PortType::Eth));
        assert!(matches!(
            PortType::parse("roce"),
            Err(PortTypeError::UnknownType(_))
        ));
        assert_eq!(PortType::Eth.sysfs_write_form(), "eth\n");
    }

    #[test]
    fn mlx4_sysfs_values_parse_as_show_port_type_prints_them() {
        assert_eq!(
            v("auto (eth)\n"),
            Mlx4PortValue {
                configured: PortType::Auto,
                running: RunningType::Eth
            }
        );
        assert_eq!(v("ib\n").configured, PortType::Ib);
        assert_eq!(v("auto (ib)").render(), "auto (ib)");
        assert_eq!(v("eth").render(), "eth");
        assert_eq!(Mlx4PortValue::parse("auto"), None);
        assert_eq!(Mlx4PortValue::parse("auto (roce)"), None);
    }

    #[test]
    fn port_1_may_be_eth_only_when_port_2_is() {
        let ib_eth = [v("ib"), v("eth")];
        assert_eq!(check_mlx4(&ib_eth, 1, PortType::Eth), Ok(()));
        let eth_eth = [v("eth"), v("eth")];
        assert_eq!(
            check_mlx4(&eth_eth, 2, PortType::Ib),
            Err(PortTypeError::Port1EthNeedsPort2Eth)
        );
        let ib_ib = [v("ib"), v("ib")];
        assert_eq!(
            check_mlx4(&ib_ib, 1, PortType::Eth),
            Err(PortTypeError::Port1EthNeedsPort2Eth)
        );
        // auto keeps what the port runs: port 2 sensing eth lets port 1 go eth.
        let ib_auto_eth = [v("ib"), v("auto (eth)")];
        assert_eq!(check_mlx4(&ib_auto_eth, 1, PortType::Eth), Ok(()));
        // port 1 auto running eth while port 2 goes ib.
        let auto_eth_eth = [v("auto (eth)"), v("eth")];
        assert_eq!(
            check_mlx4(&auto_eth_eth, 2, PortType::Ib),
            Err(PortTypeError::Port1EthNeedsPort2Eth)
        );
        assert_eq!(check_mlx4(&[v("ib")], 1, PortType::Eth), Ok(()));
        assert_eq!(
            check_mlx4(&ib_eth, 3, PortType::Eth),
            Err(PortTypeError::NoSuchPort { port: 3, ports: 2 })
        );
    }

    const QUERY_E: &str = "
Device #1:
----------

Device type:        ConnectX5
Name:               MCX556A-ECA_Ax
Description:        ConnectX-5 VPI adapter card; EDR IB (100Gb/s) and 100GbE; dual-port QSFP28
Device:             0000:03:00.0

Configurations:                                         Default         Current         Next Boot
*        LINK_TYPE_P1                                   IB(1)           IB(1)           ETH(2)
";

    #[test]
    fn mstconfig_columns_give_current_and_next_boot() {
        assert_eq!(
            parse_mstconfig_query(QUERY_E, "LINK_TYPE_P1"),
            Ok(FwQuery {
                current: Some(FwLinkType::Ib),
                next_boot: FwLinkType::Eth
            })
        );
        let plain = "Configurations:                                         Next Boot\n         LINK_TYPE_P2                                   VPI(3)\n";
        assert_eq!(
            parse_mstconfig_query(plain, "LINK_TYPE_P2"),
            Ok(FwQuery {
                current: None,
                next_boot: FwLinkType::Vpi
            })
        );
        let na = "Configurations:       Default   Current   Next Boot\n      LINK_TYPE_P1    ETH(2)    N/A    2\n";
        assert_eq!(
            parse_mstconfig_query(na, "LINK_TYPE_P1"),
            Ok(FwQuery {
                current: None,
                next_boot: FwLinkType::Eth
            })
        );
        assert!(parse_mstconfig_query(QUERY_E, "LINK_TYPE_P2").is_err());
        assert!(parse_mstconfig_query("-E- No such device", "LINK_TYPE_P1").is_err());
        let bad = "Configurations:   Next Boot\n   LINK_TYPE_P1   FOO(7)\n";
        assert!(parse_mstconfig_query(bad, "LINK_TYPE_P1").is_err());
    }

    #[test]
    fn mlx4_conf_keeps_other_lines_and_comments() {
        let text = "# comment\n0000:0b:00.0 eth eth\n\n0000:04:00.0 ib eth\n0000:04:00.0 ib ib\n";
        let out = mlx4_conf_set(text, "0000:04:00.0", &[PortType::Eth, PortType::Eth]);
        assert_eq!(
            out,
            "# comment\n0000:0b:00.0 eth eth\n\n0000:04:00.0 eth eth\n"
        );
        assert_eq!(
            mlx4_conf_get(&out, "0000:04:00.0"),
            Some(vec![PortType::Eth, PortType::Eth])
        );
        let added = mlx4_conf_set(MLX4_CONF_HEADER, "0000:05:00.0", &[PortType::Auto]);
        assert!(added.starts_with(MLX4_CONF_HEADER));
        assert!(added.ends_with("\n0000:05:00.0 auto\n"));
        assert_eq!(mlx4_conf_get(text, "0000:0c:00.0"), None);
        assert_eq!(
            mlx4_conf_get("0000:0b:00.0 eth roce\n", "0000:0b:00.0"),
            None
        );
    }
}
