//! Netlink attributes (NLAs): reading a run of them from a kernel message without trusting any
//! length in it, and appending them to a request.
//!
//! Layout (`linux/netlink.h`): `u16 nla_len` (header + payload, unpadded), `u16 nla_type`
//! (the top two bits are the NESTED / NET_BYTEORDER flags), the payload, then padding to a
//! 4-byte boundary. Integers are in host byte order; the kernel writes 64-bit values with
//! `nla_put_u64_64bit`, which may insert an `RDMA_NLDEV_ATTR_PAD` attribute first so that the
//! value is 8-byte aligned: readers skip it like any attribute they do not know.

use super::consts::nl::{NLA_HDRLEN, NLA_TYPE_MASK};

/// Why bytes from the kernel could not be decoded. The caller knows the operation and turns
/// this into [`crate::kernel::HostError::Protocol`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{what} truncated at byte {offset}: header needs {need} bytes, {left} left")]
    TruncatedHeader {
        what: &'static str,
        offset: usize,
        need: usize,
        left: usize,
    },
    #[error("{what} at byte {offset} claims length {len} but only {left} bytes are left")]
    BadLength {
        what: &'static str,
        offset: usize,
        len: usize,
        left: usize,
    },
    #[error("attribute {kind}: expected a {expected}-byte payload, got {got}")]
    BadWidth {
        kind: u16,
        expected: usize,
        got: usize,
    },
    #[error("attribute {kind}: string is not UTF-8")]
    NotUtf8 { kind: u16 },
    #[error("required attribute {name} ({kind}) is missing")]
    Missing { kind: u16, name: &'static str },
    #[error("{0}")]
    Other(String),
}

/// Rounds up to the netlink alignment (4 bytes).
pub const fn align4(len: usize) -> usize {
    (len + 3) & !3
}

/// One attribute as found in a message: its type without flag bits, and its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nla<'a> {
    pub kind: u16,
    pub payload: &'a [u8],
}

/// The attributes of one message (or one nest), in wire order. Lookups return the last
/// occurrence, as libmnl's attribute tables do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs<'a> {
    list: Vec<Nla<'a>>,
}

impl<'a> Attrs<'a> {
    /// Splits `buf` into attributes, checking every length against what is left.
    pub fn parse(buf: &'a [u8]) -> Result<Attrs<'a>, WireError> {
        let mut list = Vec::new();
        let mut off = 0;
        while off < buf.len() {
            let left = buf.len() - off;
            if left < NLA_HDRLEN {
                return Err(WireError::TruncatedHeader {
                    what: "attribute",
                    offset: off,
                    need: NLA_HDRLEN,
                    left,
                });
            }
            let len = usize::from(u16::from_ne_bytes([buf[off], buf[off + 1]]));
            let kind = u16::from_ne_bytes([buf[off + 2], buf[off + 3]]) & NLA_TYPE_MASK;
            if len < NLA_HDRLEN || len > left {
                return Err(WireError::BadLength {
                    what: "attribute",
                    offset: off,
                    len,
                    left,
                });
            }
            list.push(Nla {
                kind,
                payload: &buf[off + NLA_HDRLEN..off + len],
            });
            // The last attribute's padding may be missing; never step past the end.
            off += align4(len).min(left);
        }
        Ok(Attrs { list })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Nla<'a>> {
        self.list.iter()
    }

    pub fn get(&self, kind: u16) -> Option<&'a [u8]> {
        self.list
            .iter()
            .rev()
            .find(|a| a.kind == kind)
            .map(|a| a.payload)
    }

    pub fn u8(&self, kind: u16) -> Result<Option<u8>, WireError> {
        self.fixed::<1>(kind).map(|o| o.map(|b| b[0]))
    }

    pub fn u32(&self, kind: u16) -> Result<Option<u32>, WireError> {
        self.fixed::<4>(kind).map(|o| o.map(u32::from_ne_bytes))
    }

    pub fn u64(&self, kind: u16) -> Result<Option<u64>, WireError> {
        self.fixed::<8>(kind).map(|o| o.map(u64::from_ne_bytes))
    }

    /// A string attribute: the bytes before the first NUL (the kernel always terminates
    /// them; an unterminated one is taken whole).
    pub fn string(&self, kind: u16) -> Result<Option<String>, WireError> {
        let Some(raw) = self.get(kind) else {
            return Ok(None);
        };
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        std::str::from_utf8(&raw[..end])
            .map(|s| Some(s.to_owned()))
            .map_err(|_| WireError::NotUtf8 { kind })
    }

    /// The attributes inside a nest.
    pub fn nested(&self, kind: u16) -> Result<Option<Attrs<'a>>, WireError> {
        self.get(kind).map(Attrs::parse).transpose()
    }

    fn fixed<const N: usize>(&self, kind: u16) -> Result<Option<[u8; N]>, WireError> {
        let Some(raw) = self.get(kind) else {
            return Ok(None);
        };
        <[u8; N]>::try_from(raw)
            .map(Some)
            .map_err(|_| WireError::BadWidth {
                kind,
                expected: N,
                got: raw.len(),
            })
    }
}

/// Appends one attribute (header, payload, zero padding) to a message under construction.
pub fn put(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = NLA_HDRLEN + payload.len();
    // Requests only carry short names and integers; a payload that does not fit the u16
    // length is a bug in this module, and is clamped rather than wrapped.
    let len16 = u16::try_from(len).unwrap_or(u16::MAX);
    buf.extend_from_slice(&len16.to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len() + (align4(len) - len), 0);
}

pub fn put_u32(buf: &mut Vec<u8>, kind: u16, value: u32) {
    put(buf, kind, &value.to_ne_bytes());
}

/// A NUL-terminated string (`mnl_attr_put_strz`), as the kernel's NLA_NUL_STRING policy wants.
pub fn put_strz(buf: &mut Vec<u8>, kind: u16, value: &str) {
    let mut payload = Vec::with_capacity(value.len() + 1);
    payload.extend_from_slice(value.as_bytes());
    payload.push(0);
    put(buf, kind, &payload);
}

/// NLA_F_NESTED: set on every nest a request opens, as `mnl_attr_nest_start` sets it (strict
/// generic netlink families refuse a nest without it).
pub const NLA_F_NESTED: u16 = 1 << 15;

/// Opens a nest (NLA_F_NESTED set); returns its offset for [`nest_end`].
pub fn nest_start(buf: &mut Vec<u8>, kind: u16) -> usize {
    let at = buf.len();
    buf.extend_from_slice(&0u16.to_ne_bytes());
    buf.extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
    at
}

/// Closes the nest opened at `at`: its length is what was written since.
pub fn nest_end(buf: &mut [u8], at: usize) {
    let len = u16::try_from(buf.len() - at).unwrap_or(u16::MAX);
    buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
}

/// Writes a finished message's length into its netlink header.
pub fn finish_message(mut buf: Vec<u8>) -> Vec<u8> {
    let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    buf[..4].copy_from_slice(&len.to_ne_bytes());
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nla(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        put(&mut v, kind, payload);
        v
    }

    #[test]
    fn put_pads_to_four_bytes() {
        let mut v = Vec::new();
        put_strz(&mut v, 2, "rxe0");
        let mut want = Vec::new();
        want.extend_from_slice(&9u16.to_ne_bytes());
        want.extend_from_slice(&2u16.to_ne_bytes());
        want.extend_from_slice(b"rxe0\0\0\0\0");
        assert_eq!(v, want);
    }

    #[test]
    fn parses_typed_values_and_masks_flags() {
        let mut buf = nla(1, &7u32.to_ne_bytes());
        buf.extend(nla(0, &[0; 4])); // PAD
        buf.extend(nla(6, &0x0102_0304_0506_0708u64.to_ne_bytes()));
        buf.extend(nla(12, &[4]));
        // NLA_F_NESTED set on the type must not hide the attribute.
        buf.extend(nla(80 | 0x8000, &nla(81, &[])));
        let a = Attrs::parse(&buf).unwrap();
        assert_eq!(a.u32(1).unwrap(), Some(7));
        assert_eq!(a.u64(6).unwrap(), Some(0x0102_0304_0506_0708));
        assert_eq!(a.u8(12).unwrap(), Some(4));
        assert_eq!(a.u8(13).unwrap(), None);
        let nest = a.nested(80).unwrap().unwrap();
        assert_eq!(nest.iter().count(), 1);
    }

    #[test]
    fn last_attribute_may_lack_padding() {
        let mut buf = nla(12, &[1]);
        buf.truncate(5);
        assert_eq!(Attrs::parse(&buf).unwrap().u8(12).unwrap(), Some(1));
    }

    #[test]
    fn rejects_bad_lengths_without_panicking() {
        // Length beyond the buffer.
        let mut buf = nla(2, b"abc\0");
        buf[0] = 200;
        assert!(matches!(
            Attrs::parse(&buf),
            Err(WireError::BadLength { .. })
        ));
        // Length below the header size.
        buf[0] = 2;
        buf[1] = 0;
        assert!(Attrs::parse(&buf).is_err());
        // Dangling partial header.
        assert!(matches!(
            Attrs::parse(&[8, 0]),
            Err(WireError::TruncatedHeader { .. })
        ));
        // Wrong width for a u32.
        let a = nla(1, &[1, 2]);
        assert!(matches!(
            Attrs::parse(&a).unwrap().u32(1),
            Err(WireError::BadWidth { .. })
        ));
        // Not UTF-8.
        let s = nla(2, &[0xff, 0xfe, 0]);
        assert!(Attrs::parse(&s).unwrap().string(2).is_err());
    }

    #[test]
    fn strings_stop_at_nul() {
        let a = nla(2, b"mlx5_0\0junk");
        assert_eq!(
            Attrs::parse(&a).unwrap().string(2).unwrap().as_deref(),
            Some("mlx5_0")
        );
    }
}
