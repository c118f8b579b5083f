//! A line of a limits file as pam_limits splits it: fields, C's `strtoull`, uid and gid ranges.

use super::*;

/// C's isspace in the C locale.
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C's `strtoul`/`strtoull` in base 10: `None` when no digit is read; the value wraps for a
/// minus sign and saturates on overflow (with `overflow` set, errno ERANGE). Returns the
/// value, whether it overflowed and how many bytes were used.
pub(super) fn strtoull(s: &[u8]) -> Option<(u64, bool, usize)> {
    let mut i = s.iter().take_while(|b| c_space(**b)).count();
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for d in &s[i..i + digits] {
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(d - b'0')))
        {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        return Some((u64::MAX, true, i + digits));
    }
    Some((
        if negative { v.wrapping_neg() } else { v },
        false,
        i + digits,
    ))
}

/// A memlock value as `process_limit()` reads it (already lower-cased).
pub(super) fn interpret_value(value: &str) -> Result<MemlockValue, ()> {
    if matches!(value, "-1" | "-" | "unlimited" | "infinity") {
        return Ok(MemlockValue::Unlimited);
    }
    let (v, _, _) = strtoull(value.as_bytes()).ok_or(())?;
    if v >= KIB_LIMIT {
        return Ok(MemlockValue::Unlimited);
    }
    Ok(MemlockValue::Kib(v))
}

/// `parse_uid_range()`: `Err` for a malformed range (the line is skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Range {
    None,
    /// `:id` (max only; min = max).
    One(u32),
    /// `min:`
    Min(u32),
    /// `min:max`
    MinMax(u32, u32),
}

pub(super) fn parse_range(domain: &str) -> Result<Range, ()> {
    let Some(colon) = domain.find(':') else {
        return Ok(Range::None);
    };
    let max_text = &domain.as_bytes()[colon + 1..];
    let range = domain
        .strip_prefix('@')
        .or_else(|| domain.strip_prefix('%'))
        .unwrap_or(domain)
        .as_bytes();
    // uid_t/gid_t are 32 bits: strtoul's value is truncated when stored.
    let min = if range.first() == Some(&b':') {
        None
    } else {
        match strtoull(range) {
            Some((v, false, used)) if range.get(used) == Some(&b':') => Some(v as u32),
            _ => return Err(()),
        }
    };
    if max_text.is_empty() {
        return min.map(Range::Min).ok_or(());
    }
    let max = match strtoull(max_text) {
        Some((v, false, used)) if used == max_text.len() => v as u32,
        _ => return Err(()),
    };
    Ok(match min {
        None => Range::One(max),
        Some(min) => Range::MinMax(min, max),
    })
}

/// A line split as `parse_config_file()` and `split()` do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fields {
    /// Blank or comment.
    Nothing,
    /// Neither four fields nor `<domain> -`.
    Invalid,
    /// A domain whose range cannot be read.
    BadRange(String),
    Entry {
        domain: String,
        ltype: String,
        item: String,
        value: String,
        /// The value as Linux-PAM before 1.6 read it: the fourth white-space separated word.
        old_value: Option<String>,
    },
    /// `<domain> -`
    NoLimits { domain: String },
}

pub(super) fn parse_line(body: &[u8]) -> Fields {
    let start = body.iter().take_while(|b| c_space(**b)).count();
    let mut line = &body[start..];
    if let Some(hash) = line.iter().position(|b| *b == b'#') {
        line = &line[..hash];
    }
    if line.is_empty() {
        return Fields::Nothing;
    }
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    // strtok_r(" \t") three times: each token ends at a delimiter, which is consumed.
    let mut rest = line;
    let mut tokens: Vec<&[u8]> = Vec::new();
    for _ in 0..3 {
        let skip = rest.iter().take_while(|b| blank(b)).count();
        rest = &rest[skip..];
        if rest.is_empty() {
            break;
        }
        let len = rest.iter().take_while(|b| !blank(b)).count();
        tokens.push(&rest[..len]);
        rest = rest.get(len + 1..).unwrap_or(&[]);
    }
    // strtok_r(NULL, "") takes the rest, then trim() strips blanks and tabs.
    let value = if tokens.len() == 3 {
        let lead = rest.iter().take_while(|b| blank(b)).count();
        let t = &rest[lead..];
        let t = &t[..t.len() - t.iter().rev().take_while(|b| blank(b)).count()];
        (!t.is_empty()).then_some(t)
    } else {
        None
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let Some(first) = tokens.first() else {
        return Fields::Nothing;
    };
    let domain = text(first);
    let ltype = tokens.get(1).map(|t| text(t).to_ascii_lowercase());
    if parse_range(&domain).is_err() {
        return Fields::BadRange(domain);
    }
    match (ltype, tokens.get(2), value) {
        (Some(ltype), Some(item), Some(value)) => {
            let old_value = line
                .split(|b| c_space(*b))
                .filter(|w| !w.is_empty())
                .nth(3)
                .map(|w| text(w).to_ascii_lowercase());
            Fields::Entry {
                domain,
                ltype,
                item: text(item).to_ascii_lowercase(),
                value: text(value).to_ascii_lowercase(),
                old_value,
            }
        }
        (Some(ltype), None, None) if ltype.starts_with('-') => Fields::NoLimits { domain },
        _ => Fields::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_parsers() {
        assert_eq!(strtoull(b"  42x"), Some((42, false, 4)));
        assert_eq!(strtoull(b"-1"), Some((u64::MAX, false, 2)));
        assert_eq!(strtoull(b"x"), None);
        assert_eq!(strtoull(b"-"), None);
        assert_eq!(parse_range("alice"), Ok(Range::None));
        assert_eq!(parse_range(":5"), Ok(Range::One(5)));
        assert_eq!(parse_range("@:5"), Ok(Range::One(5)));
        assert_eq!(parse_range("5:"), Ok(Range::Min(5)));
        assert_eq!(parse_range("@5:9"), Ok(Range::MinMax(5, 9)));
        assert_eq!(parse_range("%:7"), Ok(Range::One(7)));
        for bad in [":", "@:", "a:5", "5:a", "5:6:7", "5x:6"] {
            assert_eq!(parse_range(bad), Err(()), "{bad:?}");
        }
    }
}
