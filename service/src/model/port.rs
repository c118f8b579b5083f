//! Port attributes: logical and physical state, link layer and rate.

use serde::Serialize;

use super::attr::{split_numbered, trim_attr, AttrError, Field};

/// `ports/<N>/state` ("%d: %s"); numbers follow `enum ib_port_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PortState {
    Nop,
    Down,
    Init,
    Armed,
    Active,
    ActiveDefer,
}

impl PortState {
    pub fn from_number(n: u32) -> Option<PortState> {
        Some(match n {
            0 => PortState::Nop,
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            5 => PortState::ActiveDefer,
            _ => return None,
        })
    }

    pub fn number(self) -> u32 {
        self as u32
    }

    /// The word sysfs prints after the number.
    pub fn sysfs_name(self) -> &'static str {
        match self {
            PortState::Nop => "NOP",
            PortState::Down => "DOWN",
            PortState::Init => "INIT",
            PortState::Armed => "ARMED",
            PortState::Active => "ACTIVE",
            PortState::ActiveDefer => "ACTIVE_DEFER",
        }
    }

    pub fn parse_sysfs(raw: &str) -> Field<PortState> {
        let (n, _name) = split_numbered(raw)?;
        PortState::from_number(n)
            .ok_or_else(|| AttrError::malformed(trim_attr(raw), "unknown port state number"))
    }
}

/// `ports/<N>/phys_state` ("%u: %s"); numbers follow `enum ib_port_phys_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PhysState {
    Sleep,
    Polling,
    Disabled,
    PortConfigurationTraining,
    LinkUp,
    LinkErrorRecovery,
    PhyTest,
}

impl PhysState {
    pub fn from_number(n: u32) -> Option<PhysState> {
        Some(match n {
            1 => PhysState::Sleep,
            2 => PhysState::Polling,
            3 => PhysState::Disabled,
            4 => PhysState::PortConfigurationTraining,
            5 => PhysState::LinkUp,
            6 => PhysState::LinkErrorRecovery,
            7 => PhysState::PhyTest,
            _ => return None,
        })
    }

    pub fn number(self) -> u32 {
        self as u32 + 1
    }

    pub fn sysfs_name(self) -> &'static str {
        match self {
            PhysState::Sleep => "Sleep",
            PhysState::Polling => "Polling",
            PhysState::Disabled => "Disabled",
            PhysState::PortConfigurationTraining => "PortConfigurationTraining",
            PhysState::LinkUp => "LinkUp",
            PhysState::LinkErrorRecovery => "LinkErrorRecovery",
            PhysState::PhyTest => "Phy Test",
        }
    }

    pub fn parse_sysfs(raw: &str) -> Field<PhysState> {
        let (n, _name) = split_numbered(raw)?;
        PhysState::from_number(n)
            .ok_or_else(|| AttrError::malformed(trim_attr(raw), "unknown physical state number"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LinkLayer {
    InfiniBand,
    Ethernet,
    Unknown,
}

impl LinkLayer {
    pub fn parse_sysfs(raw: &str) -> Field<LinkLayer> {
        match trim_attr(raw) {
            "InfiniBand" => Ok(LinkLayer::InfiniBand),
            "Ethernet" => Ok(LinkLayer::Ethernet),
            "Unknown" => Ok(LinkLayer::Unknown),
            other => Err(AttrError::malformed(
                other,
                "expected InfiniBand, Ethernet or Unknown",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LinkLayer::InfiniBand => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
            LinkLayer::Unknown => "Unknown",
        }
    }
}

/// `ports/<N>/rate`: "%d%s Gb/sec (%dX%s)", e.g. `100 Gb/sec (4X EDR)`, `2.5 Gb/sec (1X SDR)`,
/// and on old kernels SDR without a name: `10 Gb/sec (4X)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rate {
    /// Gb/s times ten, so that 2.5 Gb/s is exact.
    pub deci_gbps: u32,
    /// Link width in lanes (1, 2, 4, 8, 12).
    pub width: u32,
    /// Lane speed name (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR), if printed.
    pub speed: Option<String>,
}

impl Rate {
    pub fn parse_sysfs(raw: &str) -> Field<Rate> {
        let s = trim_attr(raw).trim();
        let bad = |why: &str| AttrError::malformed(s, why.to_string());
        let (num, rest) = s
            .split_once(' ')
            .ok_or_else(|| bad("expected \"<n> Gb/sec (<w>X <speed>)\""))?;
        let deci_gbps = match num.split_once('.') {
            Some((int, frac)) => {
                let int: u32 = int.parse().map_err(|_| bad("rate is not a number"))?;
                let frac: u32 = match frac {
                    f if f.len() == 1 => f.parse().map_err(|_| bad("rate is not a number"))?,
                    _ => return Err(bad("rate has more than one decimal")),
                };
                int * 10 + frac
            }
            None => {
                num.parse::<u32>()
                    .map_err(|_| bad("rate is not a number"))?
                    * 10
            }
        };
        let rest = rest
            .strip_prefix("Gb/sec (")
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| bad("expected \"Gb/sec (...)\""))?;
        let (width, speed) = match rest.split_once(' ') {
            Some((w, sp)) => (w, Some(sp.to_string())),
            None => (rest, None),
        };
        let width = width
            .strip_suffix('X')
            .and_then(|w| w.parse::<u32>().ok())
            .ok_or_else(|| bad("expected a width such as 4X"))?;
        if speed.as_deref() == Some("") {
            return Err(bad("empty speed name"));
        }
        Ok(Rate {
            deci_gbps,
            width,
            speed,
        })
    }

    /// Bits per second, for reference lines on bandwidth graphs.
    pub fn bits_per_second(&self) -> u64 {
        u64::from(self.deci_gbps) * 100_000_000
    }

    /// The sysfs text, as the kernel would print it.
    pub fn to_sysfs(&self) -> String {
        let half = if self.deci_gbps % 10 != 0 { ".5" } else { "" };
        let speed = self
            .speed
            .as_deref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        format!(
            "{}{} Gb/sec ({}X{})",
            self.deci_gbps / 10,
            half,
            self.width,
            speed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_from_lab_capture() {
        assert_eq!(PortState::parse_sysfs("4: ACTIVE\n"), Ok(PortState::Active));
        assert_eq!(PortState::parse_sysfs("1: DOWN"), Ok(PortState::Down));
        assert_eq!(
            PortState::parse_sysfs("5: ACTIVE_DEFER"),
            Ok(PortState::ActiveDefer)
        );
        assert_eq!(PhysState::parse_sysfs("5: LinkUp\n"), Ok(PhysState::LinkUp));
        assert_eq!(
            PhysState::parse_sysfs("7: Phy Test"),
            Ok(PhysState::PhyTest)
        );
        assert_eq!(
            PhysState::parse_sysfs("2: Polling").map(|p| p.number()),
            Ok(2)
        );
    }

    #[test]
    fn states_malformed() {
        assert!(PortState::parse_sysfs("9: WHAT").is_err());
        assert!(PortState::parse_sysfs("ACTIVE").is_err());
        assert!(PortState::parse_sysfs("").is_err());
        assert!(PhysState::parse_sysfs("0: Nothing").is_err());
        assert!(PhysState::parse_sysfs("LinkUp").is_err());
    }

    #[test]
    fn link_layer() {
        assert_eq!(
            LinkLayer::parse_sysfs("InfiniBand\n"),
            Ok(LinkLayer::InfiniBand)
        );
        assert_eq!(
            LinkLayer::parse_sysfs("Ethernet\n"),
            Ok(LinkLayer::Ethernet)
        );
        assert!(LinkLayer::parse_sysfs("ethernet").is_err());
        assert!(LinkLayer::parse_sysfs("").is_err());
    }

    #[test]
    fn rates() {
        let r = Rate::parse_sysfs("100 Gb/sec (4X EDR)\n").unwrap();
        assert_eq!(
            (r.deci_gbps, r.width, r.speed.as_deref()),
            (1000, 4, Some("EDR"))
        );
        let r = Rate::parse_sysfs("10 Gb/sec (1X FDR10)\n").unwrap();
        assert_eq!(
            (r.deci_gbps, r.width, r.speed.as_deref()),
            (100, 1, Some("FDR10"))
        );
        let r = Rate::parse_sysfs("2.5 Gb/sec (1X SDR)").unwrap();
        assert_eq!(r.deci_gbps, 25);
        assert_eq!(r.to_sysfs(), "2.5 Gb/sec (1X SDR)");
        let r = Rate::parse_sysfs("10 Gb/sec (4X)").unwrap();
        assert_eq!((r.deci_gbps, r.width, r.speed.clone()), (100, 4, None));
        assert_eq!(r.to_sysfs(), "10 Gb/sec (4X)");
        let r = Rate::parse_sysfs("200 Gb/sec (4X HDR)").unwrap();
        assert_eq!(r.bits_per_second(), 200_000_000_000);
        assert_eq!(r.to_sysfs(), "200 Gb/sec (4X HDR)");
    }

    #[test]
    fn rates_malformed() {
        for bad in [
            "",
            "100",
            "100 Gb/sec",
            "fast Gb/sec (4X EDR)",
            "100 Gb/sec (4 EDR)",
            "100 Gb/sec (X EDR)",
            "100 Mb/sec (4X EDR)",
            "2.25 Gb/sec (1X SDR)",
            "100 Gb/sec (4X EDR",
        ] {
            assert!(Rate::parse_sysfs(bad).is_err(), "{bad:?}");
        }
    }
}
