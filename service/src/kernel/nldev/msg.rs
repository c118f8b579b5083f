//! Netlink message framing: building requests, splitting what the kernel sends into
//! messages, and following one request's replies to their end (a doit's ACK, a dump's
//! NLMSG_DONE, or an NLMSG_ERROR).
//!
//! RDMA netlink has no genetlink header: the nldev attributes follow the 16-byte `nlmsghdr`
//! (`u32 len, u16 type, u16 flags, u32 seq, u32 pid`, host byte order) directly.

use super::attr::{align4, Attrs, WireError};
use super::consts::nl::*;
use crate::kernel::{HostError, Op};
use crate::model::Errno;

/// One message as found in a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NlMsg<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    pub pid: u32,
    pub payload: &'a [u8],
}

/// Splits a datagram (or several concatenated) into messages, checking every length.
pub fn parse_messages(buf: &[u8]) -> Result<Vec<NlMsg<'_>>, WireError> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < buf.len() {
        let left = buf.len() - off;
        if left < NLMSG_HDRLEN {
            return Err(WireError::TruncatedHeader {
                what: "netlink message",
                offset: off,
                need: NLMSG_HDRLEN,
                left,
            });
        }
        let h = &buf[off..off + NLMSG_HDRLEN];
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if len < NLMSG_HDRLEN || len > left {
            return Err(WireError::BadLength {
                what: "netlink message",
                offset: off,
                len,
                left,
            });
        }
        out.push(NlMsg {
            kind: u16::from_ne_bytes([h[4], h[5]]),
            flags: u16::from_ne_bytes([h[6], h[7]]),
            seq: u32::from_ne_bytes([h[8], h[9], h[10], h[11]]),
            pid: u32::from_ne_bytes([h[12], h[13], h[14], h[15]]),
            payload: &buf[off + NLMSG_HDRLEN..off + len],
        });
        off += align4(len).min(left);
    }
    Ok(out)
}

/// Sets the sequence number of a built request (left as it is when shorter than a header).
pub fn with_seq(mut req: Vec<u8>, seq: u32) -> Vec<u8> {
    if let Some(field) = req.get_mut(8..12) {
        field.copy_from_slice(&seq.to_ne_bytes());
    }
    req
}

/// A request under construction: the header is written first and its length fixed up last.
pub struct Request {
    buf: Vec<u8>,
}

impl Request {
    /// `pid` is left 0 ("to the kernel"), as libmnl's `mnl_nlmsg_put_header` leaves it.
    pub fn new(kind: u16, flags: u16, seq: u32) -> Request {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        Request { buf }
    }

    pub fn u32(mut self, kind: u16, value: u32) -> Request {
        super::attr::put_u32(&mut self.buf, kind, value);
        self
    }

    pub fn strz(mut self, kind: u16, value: &str) -> Request {
        super::attr::put_strz(&mut self.buf, kind, value);
        self
    }

    pub fn finish(mut self) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[..4].copy_from_slice(&len.to_ne_bytes());
        self.buf
    }
}

/// Follows the answers to a batch of doit requests sent together without the ACK flag, with
/// the sequence numbers `first`, `first + 1`, ...: each ends with one message, its data or
/// its NLMSG_ERROR. Messages of other sequence numbers (a reply to an earlier batch that
/// timed out) and acks are skipped; a request's second answer is ignored.
#[derive(Debug)]
pub struct BatchAnswers<T> {
    first: u32,
    answers: Vec<Option<Result<T, HostError>>>,
    left: usize,
    op: Op,
}

impl<T> BatchAnswers<T> {
    pub fn new(first: u32, n: usize, op: Op) -> BatchAnswers<T> {
        BatchAnswers {
            first,
            answers: (0..n).map(|_| None).collect(),
            left: n,
            op,
        }
    }

    /// Requests not answered yet.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Takes one datagram, each data message decoded by `decode`.
    pub fn feed(
        &mut self,
        datagram: &[u8],
        decode: impl Fn(&[u8]) -> Result<T, WireError>,
    ) -> Result<(), WireError> {
        for m in parse_messages(datagram)? {
            let i = m.seq.wrapping_sub(self.first) as usize;
            let Some(slot) = self.answers.get_mut(i).filter(|a| a.is_none()) else {
                continue;
            };
            let answer = match m.kind {
                NLMSG_ERROR => match error_code(&m)? {
                    0 => continue,
                    err => Err(HostError::kernel(
                        self.op.clone(),
                        Errno(err.saturating_abs()),
                    )),
                },
                k if k >= NLMSG_MIN_TYPE => decode(m.payload).map_err(|e| HostError::Protocol {
                    op: self.op.clone(),
                    reason: e.to_string(),
                }),
                _ => continue,
            };
            *slot = Some(answer);
            self.left -= 1;
        }
        Ok(())
    }

    /// Every request's answer, in order; one not answered gets `unanswered`.
    pub fn finish(self, unanswered: impl Fn() -> HostError) -> Vec<Result<T, HostError>> {
        self.answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(unanswered())))
            .collect()
    }
}

/// Follows the replies to one request.
///
/// Messages with another sequence number are stale (a reply to an earlier request that
/// timed out) and skipped. Data messages are kept in order. The request is complete at
/// NLMSG_DONE (dumps), at an NLMSG_ERROR with error 0 (the ACK every request here asks for),
/// or fails at an NLMSG_ERROR with an errno, or an NLMSG_DONE carrying one (a dump whose
/// start failed, e.g. PORT_GET for a device that vanished).
#[derive(Debug)]
pub struct ReplyCollector {
    seq: Option<u32>,
    op: Op,
    bodies: Vec<Vec<u8>>,
    complete: bool,
}

impl ReplyCollector {
    /// `seq: None` accepts any sequence number (for decoding captured replies).
    pub fn new(seq: Option<u32>, op: Op) -> ReplyCollector {
        ReplyCollector {
            seq,
            op,
            bodies: Vec::new(),
            complete: false,
        }
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Takes one datagram; returns whether the request is now complete.
    pub fn feed(&mut self, datagram: &[u8]) -> Result<bool, HostError> {
        let msgs = parse_messages(datagram).map_err(|e| self.protocol(e))?;
        for m in msgs {
            if self.complete {
                break;
            }
            if self.seq.is_some_and(|s| s != m.seq) {
                tracing::debug!(seq = m.seq, "RDMA netlink: skipping a stale reply");
                continue;
            }
            self.take(&m)?;
        }
        Ok(self.complete)
    }

    /// The data messages' payloads, once the request is complete.
    pub fn finish(self) -> Result<Vec<Vec<u8>>, HostError> {
        if !self.complete {
            return Err(self.protocol(WireError::Other(
                "the reply ended before NLMSG_DONE or the ACK".into(),
            )));
        }
        Ok(self.bodies)
    }

    fn take(&mut self, m: &NlMsg<'_>) -> Result<(), HostError> {
        match m.kind {
            NLMSG_NOOP => Ok(()),
            NLMSG_ERROR => {
                let err = error_code(m).map_err(|e| self.protocol(e))?;
                if err == 0 {
                    self.complete = true;
                    return Ok(());
                }
                Err(self.kernel_error(err, m))
            }
            NLMSG_DONE => {
                // Since Linux 4.x a failed dump reports its errno in DONE's payload.
                if let Some(err) = read_i32(m.payload).filter(|e| *e < 0) {
                    return Err(self.kernel_error(err, m));
                }
                self.complete = true;
                Ok(())
            }
            NLMSG_OVERRUN => {
                Err(self.protocol(WireError::Other("the kernel reported NLMSG_OVERRUN".into())))
            }
            k if k < NLMSG_MIN_TYPE => Ok(()),
            _ => {
                self.bodies.push(m.payload.to_vec());
                Ok(())
            }
        }
    }

    fn kernel_error(&self, err: i32, m: &NlMsg<'_>) -> HostError {
        if let Some(text) = extack_message(m) {
            tracing::debug!(op = %self.op, %text, "RDMA netlink extended ack");
        }
        // Some netlink families report positive errnos; libmnl accepts both signs.
        HostError::kernel(self.op.clone(), Errno(err.saturating_abs()))
    }

    fn protocol(&self, e: WireError) -> HostError {
        HostError::Protocol {
            op: self.op.clone(),
            reason: e.to_string(),
        }
    }
}

/// Runs a whole captured reply (datagrams concatenated) through a collector.
pub fn collect_all(buf: &[u8], op: Op) -> Result<Vec<Vec<u8>>, HostError> {
    let mut c = ReplyCollector::new(None, op);
    c.feed(buf)?;
    c.finish()
}

fn read_i32(b: &[u8]) -> Option<i32> {
    b.get(..4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map(i32::from_ne_bytes)
}

/// `struct nlmsgerr`'s error field.
fn error_code(m: &NlMsg<'_>) -> Result<i32, WireError> {
    read_i32(m.payload).ok_or(WireError::TruncatedHeader {
        what: "NLMSG_ERROR",
        offset: 0,
        need: 4,
        left: m.payload.len(),
    })
}

/// The extended-ack message ("NLMSGERR_ATTR_MSG"), when the kernel sent one: it follows the
/// error code and the echoed request (only its header when NLM_F_CAPPED).
pub(crate) fn extack_message(m: &NlMsg<'_>) -> Option<String> {
    if m.flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let tlvs = if m.kind == NLMSG_DONE {
        m.payload.get(4..)?
    } else {
        let echoed = m.payload.get(4..4 + NLMSG_HDRLEN)?;
        let echoed_len = u32::from_ne_bytes([echoed[0], echoed[1], echoed[2], echoed[3]]) as usize;
        let skip = if m.flags & NLM_F_CAPPED != 0 {
            NLMSG_HDRLEN
        } else {
            align4(echoed_len)
        };
        m.payload.get(4 + skip..)?
    };
    Attrs::parse(tlvs)
        .ok()?
        .string(NLMSGERR_ATTR_MSG)
        .ok()
        .flatten()
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Builders of kernel-side messages for decode tests.
    use super::super::attr;
    use super::*;

    /// A kernel message: header with `pid` 0, then the payload.
    pub fn kmsg(kind: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let len = (NLMSG_HDRLEN + payload.len()) as u32;
        let mut v = Vec::new();
        v.extend_from_slice(&len.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(payload);
        v.resize(align4(v.len()), 0);
        v
    }

    pub fn done(seq: u32) -> Vec<u8> {
        kmsg(NLMSG_DONE, NLM_F_MULTI, seq, &0i32.to_ne_bytes())
    }

    /// An NLMSG_ERROR as a NETLINK_CAP_ACK socket receives it: error, echoed header only.
    pub fn error(seq: u32, errno: i32, echoed_type: u16) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&(-errno).to_ne_bytes());
        p.extend_from_slice(&kmsg(echoed_type, NLM_F_REQUEST | NLM_F_ACK, seq, &[])[..16]);
        kmsg(NLMSG_ERROR, NLM_F_CAPPED, seq, &p)
    }

    /// Attribute builders mirroring the kernel's `nla_put_*`.
    pub fn a_u8(buf: &mut Vec<u8>, kind: u16, v: u8) {
        attr::put(buf, kind, &[v]);
    }
    pub fn a_u32(buf: &mut Vec<u8>, kind: u16, v: u32) {
        attr::put(buf, kind, &v.to_ne_bytes());
    }
    /// `nla_put_u64_64bit`: a PAD attribute first when the value would be misaligned. The
    /// payload starts after a 16-byte nlmsghdr, so the message-relative offset decides.
    pub fn a_u64(buf: &mut Vec<u8>, kind: u16, v: u64) {
        if (NLMSG_HDRLEN + buf.len() + 4) % 8 != 0 {
            attr::put(buf, 0, &[]);
        }
        attr::put(buf, kind, &v.to_ne_bytes());
    }
    pub fn a_str(buf: &mut Vec<u8>, kind: u16, v: &str) {
        attr::put_strz(buf, kind, v);
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn a_batch_matches_answers_to_requests_by_sequence() {
        let mut b: BatchAnswers<Vec<u8>> = BatchAnswers::new(100, 3, Op::NlStatGet);
        // Request 101 refused, a stale reply of an earlier batch, an ack: in one datagram.
        let mut d = error(101, -19, 0x140c);
        d.extend(kmsg(0x140c, 0, 42, b"stale"));
        d.extend(error(100, 0, 0x140c));
        b.feed(&d, |p| Ok(p.to_vec())).expect("parses");
        assert_eq!(b.left(), 2);
        b.feed(&kmsg(0x140c, 0, 100, b"data"), |p| Ok(p.to_vec()))
            .expect("parses");
        // A second answer to 100 is not taken.
        b.feed(&kmsg(0x140c, 0, 100, b"late"), |p| Ok(p.to_vec()))
            .expect("parses");
        assert_eq!(b.left(), 1);
        let out = b.finish(|| HostError::Protocol {
            op: Op::NlStatGet,
            reason: "no answer".into(),
        });
        assert_eq!(out[0].as_ref().expect("data").as_slice(), b"data");
        assert_eq!(
            out[1].as_ref().expect_err("refused").errno(),
            Some(Errno(19))
        );
        assert!(
            matches!(out[2], Err(HostError::Protocol { .. })),
            "{:?}",
            out[2]
        );
    }

    #[test]
    fn request_header_layout() {
        let r = Request::new(0x1401, 0x305, 0x01020304).finish();
        let mut want = Vec::new();
        want.extend_from_slice(&16u32.to_ne_bytes());
        want.extend_from_slice(&0x1401u16.to_ne_bytes());
        want.extend_from_slice(&0x305u16.to_ne_bytes());
        want.extend_from_slice(&0x01020304u32.to_ne_bytes());
        want.extend_from_slice(&0u32.to_ne_bytes());
        assert_eq!(r, want);
    }

    #[test]
    fn ack_completes_and_errno_fails() {
        let mut c = ReplyCollector::new(Some(9), Op::NlNewLink);
        assert!(c.feed(&error(9, 0, 0x1403)).unwrap());
        assert!(c.finish().unwrap().is_empty());

        let mut c = ReplyCollector::new(Some(9), Op::NlNewLink);
        let e = c.feed(&error(9, libc::EEXIST, 0x1403)).unwrap_err();
        assert_eq!(e, HostError::kernel(Op::NlNewLink, Errno::EEXIST));
    }

    #[test]
    fn stale_sequence_numbers_are_skipped() {
        let mut c = ReplyCollector::new(Some(10), Op::NlSet);
        let mut dgram = error(9, libc::EINVAL, 0x1402);
        dgram.extend(error(10, 0, 0x1402));
        assert!(c.feed(&dgram).unwrap());
    }

    #[test]
    fn done_with_errno_fails_the_dump() {
        let mut c = ReplyCollector::new(None, Op::NlDump("PORT_GET"));
        let d = kmsg(NLMSG_DONE, NLM_F_MULTI, 1, &(-libc::EINVAL).to_ne_bytes());
        assert_eq!(
            c.feed(&d).unwrap_err().errno(),
            Some(Errno::EINVAL),
            "a dump that failed to start"
        );
    }

    #[test]
    fn incomplete_reply_is_a_protocol_error() {
        let body = kmsg(0x1401, NLM_F_MULTI, 1, &[]);
        let e = collect_all(&body, Op::NlDump("GET")).unwrap_err();
        assert!(matches!(e, HostError::Protocol { .. }), "{e:?}");
    }

    #[test]
    fn malformed_framing_is_a_protocol_error() {
        let mut m = done(1);
        m[0] = 0xff; // length beyond the datagram
        assert!(matches!(
            collect_all(&m, Op::NlDump("GET")),
            Err(HostError::Protocol { .. })
        ));
        assert!(matches!(
            collect_all(&m[..10], Op::NlDump("GET")),
            Err(HostError::Protocol { .. })
        ));
        // NLMSG_ERROR too short to carry the error code.
        let short = kmsg(NLMSG_ERROR, 0, 1, &[1, 2]);
        assert!(matches!(
            collect_all(&short, Op::NlSet),
            Err(HostError::Protocol { .. })
        ));
    }

    #[test]
    fn extack_message_is_found() {
        let mut p = Vec::new();
        p.extend_from_slice(&(-libc::EINVAL).to_ne_bytes());
        p.extend_from_slice(&kmsg(0x1403, 5, 3, &[])[..16]);
        a_str(&mut p, NLMSGERR_ATTR_MSG, "bad name");
        let m = kmsg(NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS, 3, &p);
        let msgs = parse_messages(&m).unwrap();
        assert_eq!(extack_message(&msgs[0]).as_deref(), Some("bad name"));
    }
}
