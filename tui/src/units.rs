//! Numbers for people: rates auto-scaled to the largest unit that keeps them above 1.

/// Bytes per second as bits per second with a decimal prefix (`12.5 Gb/s`), the unit link
/// rates are given in, so a rate can be read against the port's `Rate`.
pub fn bits_per_second(bytes_per_s: f64) -> String {
    let bits = (bytes_per_s * 8.0).max(0.0);
    const UNITS: [&str; 5] = ["b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s"];
    let mut v = bits;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else if v < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else if v < 100.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.0} {}", UNITS[u])
    }
}

/// A scale for a chart's axis: the smallest of 1, 2, 5 x 10^n bits per second at or above
/// `max_bytes_per_s`, in bytes per second.
pub fn nice_ceiling(max_bytes_per_s: f64) -> f64 {
    let bits = (max_bytes_per_s * 8.0).max(1.0);
    let mut scale = 1.0;
    while scale * 10.0 <= bits {
        scale *= 10.0;
    }
    let top = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * scale)
        .find(|v| *v >= bits)
        .unwrap_or(bits);
    top / 8.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_scale() {
        assert_eq!(bits_per_second(0.0), "0 b/s");
        assert_eq!(bits_per_second(125.0), "1.00 kb/s");
        assert_eq!(bits_per_second(12.5e9 / 8.0 * 8.0), "100 Gb/s");
        assert_eq!(bits_per_second(1.5e9), "12.0 Gb/s");
    }

    #[test]
    fn ceilings_are_round() {
        assert_eq!(nice_ceiling(100.0) * 8.0, 1000.0);
        assert_eq!(nice_ceiling(130.0) * 8.0, 2000.0);
        assert_eq!(nice_ceiling(0.0) * 8.0, 1.0);
        assert_eq!(nice_ceiling(4e9) * 8.0, 5e10);
    }
}
