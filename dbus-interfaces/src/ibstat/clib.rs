//! The few C library and libibumad reading rules that decide what `ibstat` prints for a
//! given file content. Written from the behaviour documented in glibc's `strtoul(3)` and
//! `strsep(3)` and from rdma-core v44.0 `libibumad/sysfs.c`; no code is copied.

/// C `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn digit_value(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some(u64::from(b - b'0')),
        b'a'..=b'z' => Some(u64::from(b - b'a') + 10),
        b'A'..=b'Z' => Some(u64::from(b - b'A') + 10),
        _ => None,
    }
}

/// What `strtoul` and `strtol` scan: the sign, the magnitude of the digits, and whether
/// that magnitude overflowed 64 bits.
struct Scanned {
    negative: bool,
    magnitude: u64,
    overflow: bool,
}

/// The common scan of `strtoul` / `strtol` for base 0 or 16 (see [`strtoul`]).
fn scan(s: &str, base: u32) -> Scanned {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let has_hex_prefix = |i: usize| {
        b.get(i) == Some(&b'0')
            && matches!(b.get(i + 1), Some(b'x') | Some(b'X'))
            && b.get(i + 2)
                .and_then(|&c| digit_value(c))
                .is_some_and(|d| d < 16)
    };
    let radix: u64 = match base {
        0 if has_hex_prefix(i) => {
            i += 2;
            16
        }
        0 if b.get(i) == Some(&b'0') => 8,
        0 => 10,
        16 => {
            if has_hex_prefix(i) {
                i += 2;
            }
            16
        }
        other => u64::from(other),
    };
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = b.get(i).and_then(|&c| digit_value(c)) {
        if d >= radix {
            break;
        }
        match magnitude.checked_mul(radix).and_then(|v| v.checked_add(d)) {
            Some(v) => magnitude = v,
            None => overflow = true,
        }
        i += 1;
    }
    Scanned {
        negative,
        magnitude,
        overflow,
    }
}

/// `strtoul(s, NULL, base)` on a 64-bit Linux (`unsigned long` is 64 bits) for base 0 or 16.
///
/// Leading white space and one sign are skipped; base 0 picks 16 after `0x`/`0X`, 8 after a
/// leading `0`, else 10; base 16 also accepts the `0x` prefix. Digits are read until the first
/// character that is not a digit of the base; none at all gives 0. Overflow gives
/// `ULONG_MAX`; a minus sign negates in unsigned arithmetic.
pub fn strtoul(s: &str, base: u32) -> u64 {
    let n = scan(s, base);
    if n.overflow {
        u64::MAX
    } else if n.negative {
        n.magnitude.wrapping_neg()
    } else {
        n.magnitude
    }
}

/// `strtol(s, NULL, base)` on a 64-bit Linux for base 0 or 16: the scan of [`strtoul`], with
/// a result outside `long` clamped to `LONG_MIN` / `LONG_MAX`.
pub fn strtol(s: &str, base: u32) -> i64 {
    let n = scan(s, base);
    let magnitude = i128::from(n.magnitude);
    let value = match (n.overflow, n.negative) {
        (true, false) => return i64::MAX,
        (true, true) => return i64::MIN,
        (false, false) => magnitude,
        (false, true) => -magnitude,
    };
    i64::try_from(value).unwrap_or(if n.negative { i64::MIN } else { i64::MAX })
}

/// `int = strtol(s, NULL, 0)` as ibstat reads its port argument: the `long` is cut to the
/// low 32 bits (GCC's conversion to `int`).
pub fn strtol_int(s: &str) -> i32 {
    // Truncation is the C assignment `int = long`.
    strtol(s, 0) as i32
}

/// libibumad `sys_read_uint` (sysfs.c): `strtoul(text, NULL, 0)` stored in an `unsigned`,
/// i.e. truncated to 32 bits.
pub fn read_uint(text: &str) -> u32 {
    // Truncation is the C assignment `unsigned = unsigned long`.
    (strtoul(text, 0) & 0xffff_ffff) as u32
}

/// libibumad `sys_read_string` (sysfs.c), and its copy in ibstat.c: one `read()` of at most
/// `max_len` bytes into a `max_len`-byte buffer, a terminator after the bytes read (or in the
/// last byte when the buffer is full, so at most `max_len - 1` bytes survive), then the *last*
/// newline of the C string becomes the terminator.
///
/// `content` is the whole file as the kernel serves it (including its trailing newline).
pub fn read_string(content: &str, max_len: usize) -> String {
    let bytes = content.as_bytes();
    let keep = bytes.len().min(max_len.saturating_sub(1));
    let mut s = &bytes[..keep];
    if let Some(nul) = s.iter().position(|&c| c == 0) {
        s = &s[..nul];
    }
    if let Some(nl) = s.iter().rposition(|&c| c == b'\n') {
        s = &s[..nl];
    }
    String::from_utf8_lossy(s).into_owned()
}

/// libibumad `sys_read_guid` (sysfs.c): the text (read into a 32-byte buffer) is cut with
/// `strsep` at any of `:`, space, tab or newline; the first four pieces are each read with
/// `strtoul(piece, NULL, 16)`, masked to 16 bits and shifted in. Fewer than four pieces is
/// an error (`-EINVAL`). Empty pieces (two separators in a row) count and read as 0.
///
/// The result is the numeric GUID: libibumad stores it big-endian (`htobe64`) and ibstat
/// converts it back (`be64toh`) before printing, so no byte swapping shows.
pub fn read_guid(content: &str) -> Option<u64> {
    let buf = read_string(content, 32);
    let mut pieces = buf.split([':', ' ', '\t', '\n']);
    let mut guid: u64 = 0;
    for _ in 0..4 {
        let piece = pieces.next()?;
        guid = (guid << 16) | (strtoul(piece, 16) & 0xffff);
    }
    Some(guid)
}

/// ibstat.c `is_fdr10`: the port's `rate` file is read again (32-byte buffer); if it has a
/// `)`, the five characters before the first `)` are compared case-insensitively with
/// `fdr10`. (With fewer than five characters before the `)` the C code reads outside its
/// buffer; that cannot happen with a kernel rate string and is taken as "not FDR10".)
pub fn is_fdr10(rate_content: &str) -> bool {
    let buf = read_string(rate_content, 32);
    match buf.find(')') {
        Some(p) if p >= 5 => buf.as_bytes()[p - 5..p].eq_ignore_ascii_case(b"fdr10"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoul_like_glibc() {
        assert_eq!(strtoul("10 Gb/sec (1X FDR10)", 0), 10);
        assert_eq!(strtoul("2.5 Gb/sec (1X SDR)", 0), 2);
        assert_eq!(strtoul("0x2", 0), 2);
        assert_eq!(strtoul("0xffff", 0), 0xffff);
        assert_eq!(strtoul("0x00010000", 0), 0x10000);
        assert_eq!(strtoul("4: ACTIVE", 0), 4);
        assert_eq!(strtoul("  017", 0), 0o17);
        assert_eq!(strtoul("08", 0), 0);
        assert_eq!(strtoul("0x", 0), 0);
        assert_eq!(strtoul("0xzz", 0), 0);
        assert_eq!(strtoul("garbage", 0), 0);
        assert_eq!(strtoul("", 0), 0);
        assert_eq!(strtoul("-1", 0), u64::MAX);
        assert_eq!(strtoul("99999999999999999999999", 0), u64::MAX);
        assert_eq!(strtoul("04f6", 16), 0x04f6);
        assert_eq!(strtoul("0x0001", 16), 1);
        assert_eq!(strtoul("zz", 16), 0);
        assert_eq!(read_uint("0x1ffffffff"), 0xffff_ffff);
        assert_eq!(read_uint("300"), 300);
    }

    #[test]
    fn strtol_like_glibc() {
        assert_eq!(strtol("2", 0), 2);
        assert_eq!(strtol("0x2", 0), 2);
        assert_eq!(strtol("010", 0), 8);
        assert_eq!(strtol(" 3abc", 0), 3);
        assert_eq!(strtol("abc", 0), 0);
        assert_eq!(strtol("-1", 0), -1);
        assert_eq!(strtol("+7", 0), 7);
        assert_eq!(strtol("9223372036854775807", 0), i64::MAX);
        assert_eq!(strtol("9223372036854775808", 0), i64::MAX);
        assert_eq!(strtol("-9223372036854775808", 0), i64::MIN);
        assert_eq!(strtol("-9223372036854775809", 0), i64::MIN);
        assert_eq!(strtol("99999999999999999999999", 0), i64::MAX);
        // The low 32 bits of the long, as C's `int = long` on GCC.
        assert_eq!(strtol_int("4294967297"), 1);
        assert_eq!(strtol_int("2147483648"), i32::MIN);
        assert_eq!(strtol_int("-1"), -1);
    }

    #[test]
    fn read_string_truncates_like_a_fixed_buffer() {
        assert_eq!(read_string("20.31.1014\n", 20), "20.31.1014");
        assert_eq!(read_string("\n", 20), "");
        assert_eq!(
            read_string("12345678901234567890abc\n", 20),
            "1234567890123456789"
        );
        // Exactly max_len - 1 characters plus the newline: the newline is cut by the buffer.
        assert_eq!(
            read_string("1234567890123456789\n", 20),
            "1234567890123456789"
        );
        assert_eq!(read_string("a\nb\n", 20), "a\nb");
        assert_eq!(read_string("ab\0cd\n", 20), "ab");
    }

    #[test]
    fn guid_reading() {
        assert_eq!(
            read_guid("04f6:b9ff:fe05:ca57\n"),
            Some(0x04f6_b9ff_fe05_ca57)
        );
        assert_eq!(read_guid("zz:1:2:3\n"), Some(0x0000_0001_0002_0003));
        assert_eq!(read_guid("0x0001:2:3:4:5\n"), Some(0x0001_0002_0003_0004));
        assert_eq!(read_guid("04f6:b9ff:fe05\n"), None);
        assert_eq!(read_guid("04f6b9fffe05ca57\n"), None);
        assert_eq!(read_guid("\n"), None);
        assert_eq!(read_guid("1::2:3\n"), Some(0x0001_0000_0002_0003));
    }

    #[test]
    fn fdr10_detection() {
        assert!(is_fdr10("10 Gb/sec (1X FDR10)\n"));
        assert!(is_fdr10("10 Gb/sec (1X fdr10)\n"));
        assert!(!is_fdr10("56 Gb/sec (4X FDR)\n"));
        assert!(!is_fdr10("10 Gb/sec (4X)\n"));
        assert!(!is_fdr10("fast\n"));
        assert!(!is_fdr10("(x)\n"));
    }
}
