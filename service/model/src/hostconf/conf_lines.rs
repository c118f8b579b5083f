//! Physical lines of a configuration file, for the host-setup parsers that edit or report a
//! user's file line by line and must give every other byte back unchanged.
//!
//! Unlike [`super::udev_rules::split_lines`] nothing is joined: none of the formats read with
//! this (rdma-core's module lists, limits.conf, nfs.conf) continues a line the way udev does
//! where it matters to us, and each parser decides for itself what a `\r` before the `\n`
//! means, because the tools differ there.

use serde::Serialize;

/// A line of a file, for results that say where a setting comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Origin {
    pub file: String,
    /// 1-based; 0 when the whole file is meant.
    pub line: u32,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One physical line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawLine<'a> {
    /// 1-based.
    pub number: u32,
    /// The bytes exactly as read, `\n` included.
    pub raw: &'a [u8],
    /// The line without its `\n`; a `\r` before it is kept.
    pub body: &'a [u8],
    /// Whether the line ends with `\n` (only the last line of a file can lack one).
    pub terminated: bool,
}

/// The physical lines of `bytes`; their `raw` parts concatenate back to `bytes` exactly.
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = RawLine<'_>> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .zip(1u32..)
        .map(|(raw, number)| {
            let (body, terminated) = match raw.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (raw, false),
            };
            RawLine {
                number,
                raw,
                body,
                terminated,
            }
        })
}

/// The line terminator a file uses: CRLF when its first terminated line ends so, else LF.
pub fn file_eol(bytes: &[u8]) -> &'static str {
    match bytes.iter().position(|b| *b == b'\n') {
        Some(i) if i > 0 && bytes[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Appends a terminator when `out` is not empty and does not end with one, so that what is
/// appended next starts a line of its own.
pub fn terminate_last_line(out: &mut Vec<u8>, eol: &str) {
    if !out.is_empty() && out.last() != Some(&b'\n') {
        out.extend_from_slice(eol.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_every_byte_back() {
        for file in [
            &b""[..],
            b"\n",
            b"a",
            b"a\nb",
            b"a\r\nb\r\n",
            b"x \\\ny\n",
            b"bad \xff\nok",
        ] {
            let back: Vec<u8> = lines(file).flat_map(|l| l.raw.to_vec()).collect();
            assert_eq!(back, file, "{file:?}");
        }
        let l: Vec<_> = lines(b"a\r\n\nlast").collect();
        assert_eq!(l.len(), 3);
        assert_eq!(
            (l[0].number, l[0].body, l[0].terminated),
            (1, &b"a\r"[..], true)
        );
        assert_eq!((l[1].number, l[1].body), (2, &b""[..]));
        assert_eq!(
            (l[2].number, l[2].body, l[2].terminated),
            (3, &b"last"[..], false)
        );
    }

    #[test]
    fn eol_and_termination() {
        assert_eq!(file_eol(b"a\r\nb\n"), "\r\n");
        assert_eq!(file_eol(b"a\nb\r\n"), "\n");
        assert_eq!(file_eol(b""), "\n");
        let mut v = b"a".to_vec();
        terminate_last_line(&mut v, "\r\n");
        assert_eq!(v, b"a\r\n");
        terminate_last_line(&mut v, "\r\n");
        assert_eq!(v, b"a\r\n");
        let mut empty = Vec::new();
        terminate_last_line(&mut empty, "\n");
        assert!(empty.is_empty());
    }
}
