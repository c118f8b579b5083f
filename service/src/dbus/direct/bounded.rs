//! The direct socket's read half for zbus: messages over [`MAX_MESSAGE`] are refused before
//! anything is allocated for them, and no file descriptor is taken.
//!
//! zbus reads a message's 16-byte primary header, then allocates (and zero-fills) the whole
//! length it announces, up to D-Bus's 128 MiB, before reading the rest. On the bus, the bus
//! daemon has received and checked a message before the daemon sees it; here the client is
//! anyone on the host, so a header announcing 128 MiB, sent on 16 connections, would make
//! the daemon hold 2 GiB for nothing. So this reads each header ahead of zbus, and a message
//! longer than what the direct socket's calls need ends the connection. Descriptors: the
//! direct socket's calls carry none, so the socket says it cannot pass them (zbus then does
//! not agree to `NEGOTIATE_UNIX_FD`), and any a client sends anyway are closed at once.
//!
//! The authentication lines before `BEGIN` are passed through, each at most [`MAX_LINE`]
//! bytes; what follows `BEGIN` in the same read is held back and read as messages.

use std::io;

use async_trait::async_trait;
use zbus::connection::socket::ReadHalf;
use zbus::fdo::ConnectionCredentials;

/// The longest message the direct socket takes: its calls have no body, and their header
/// fields (path, interface, member, destination) are well under 1 KiB.
pub const MAX_MESSAGE: usize = 8 << 10;
/// The longest authentication line (the SASL exchange's lines are under 100 bytes).
pub const MAX_LINE: usize = 1 << 10;
/// D-Bus's fixed primary header.
const PRIMARY_HEADER: usize = 16;

#[derive(Debug)]
enum Phase {
    /// SASL lines until `BEGIN`.
    Auth { line: Vec<u8> },
    /// Messages: `remaining` bytes of the current one still to pass through.
    Messages { remaining: usize },
}

/// A Unix socket's read half that bounds what a client can make zbus allocate.
#[derive(Debug)]
pub struct BoundedRead<R> {
    inner: R,
    phase: Phase,
    /// Bytes read from the socket and not given to zbus yet: what followed `BEGIN`, and a
    /// message's header once checked.
    ahead: Vec<u8>,
}

impl<R: ReadHalf> BoundedRead<R> {
    pub fn new(inner: R) -> Self {
        BoundedRead {
            inner,
            phase: Phase::Auth { line: Vec::new() },
            ahead: Vec::new(),
        }
    }

    /// Reads into `buf` from what is held back, else from the socket; descriptors are
    /// dropped (closed) here.
    async fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.ahead.is_empty() {
            let n = buf.len().min(self.ahead.len());
            buf[..n].copy_from_slice(&self.ahead[..n]);
            self.ahead.drain(..n);
            return Ok(n);
        }
        let (n, fds) = self.inner.recvmsg(buf).await?;
        drop(fds);
        Ok(n)
    }

    /// Passes the authentication lines through, until `BEGIN`: what follows it in the same
    /// read is held back, to be read as messages.
    async fn auth(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_raw(buf).await?;
        let Phase::Auth { line } = &mut self.phase else {
            return Ok(n);
        };
        for (i, &b) in buf[..n].iter().enumerate() {
            line.push(b);
            if line.len() > MAX_LINE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "an authentication line too long",
                ));
            }
            if b == b'\n' {
                if line.as_slice() == b"BEGIN\r\n" {
                    // Nothing is held back during authentication: `ahead` is empty.
                    self.ahead = buf[i + 1..n].to_vec();
                    self.phase = Phase::Messages { remaining: 0 };
                    return Ok(i + 1);
                }
                line.clear();
            }
        }
        Ok(n)
    }

    /// The next message's primary header, read whole and checked; `None` at the end of the
    /// stream between messages.
    async fn next_header(&mut self) -> io::Result<Option<[u8; PRIMARY_HEADER]>> {
        let mut header = [0u8; PRIMARY_HEADER];
        let mut have = 0;
        while have < PRIMARY_HEADER {
            let n = self.read_raw(&mut header[have..]).await?;
            if n == 0 {
                return if have == 0 {
                    Ok(None)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection ended inside a message header",
                    ))
                };
            }
            have += n;
        }
        Ok(Some(header))
    }
}

/// The whole length of the message whose primary header is `h`, as zbus will compute it:
/// the header, its fields, padding to 8, the body.
pub fn message_length(h: &[u8; PRIMARY_HEADER]) -> io::Result<u64> {
    let u32_at = |i: usize| {
        let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
        match h[0] {
            b'l' => Ok(u32::from_le_bytes(b)),
            b'B' => Ok(u32::from_be_bytes(b)),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a D-Bus message (endianness byte {other:#04x})"),
            )),
        }
    };
    let body = u64::from(u32_at(4)?);
    let fields = u64::from(u32_at(12)?);
    let header = PRIMARY_HEADER as u64 + fields;
    Ok(header.next_multiple_of(8) + body)
}

#[async_trait]
impl<R: ReadHalf> ReadHalf for BoundedRead<R> {
    async fn recvmsg(&mut self, buf: &mut [u8]) -> io::Result<(usize, Vec<std::os::fd::OwnedFd>)> {
        if buf.is_empty() {
            return Ok((0, vec![]));
        }
        let remaining = match &self.phase {
            Phase::Auth { .. } => return self.auth(buf).await.map(|n| (n, vec![])),
            Phase::Messages { remaining } => *remaining,
        };
        if remaining > 0 {
            let want = buf.len().min(remaining);
            let n = self.read_raw(&mut buf[..want]).await?;
            self.phase = Phase::Messages {
                remaining: remaining - n,
            };
            return Ok((n, vec![]));
        }
        let Some(header) = self.next_header().await? else {
            return Ok((0, vec![]));
        };
        let length = message_length(&header)?;
        if length > MAX_MESSAGE as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a message of {length} bytes; the direct socket takes at most {MAX_MESSAGE}"
                ),
            ));
        }
        // Checked: given to zbus now, before what was held back.
        let n = buf.len().min(PRIMARY_HEADER);
        buf[..n].copy_from_slice(&header[..n]);
        let mut ahead = header[n..].to_vec();
        ahead.append(&mut self.ahead);
        self.ahead = ahead;
        // At most MAX_MESSAGE (above).
        self.phase = Phase::Messages {
            remaining: length as usize - n,
        };
        Ok((n, vec![]))
    }

    /// No descriptors through the direct socket (see the module's documentation).
    fn can_pass_unix_fd(&self) -> bool {
        false
    }

    async fn peer_credentials(&mut self) -> io::Result<ConnectionCredentials> {
        self.inner.peer_credentials().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn header(endian: u8, body: u32, fields: u32) -> [u8; PRIMARY_HEADER] {
        let mut h = [0u8; PRIMARY_HEADER];
        h[0] = endian;
        h[1] = 1; // a method call
        h[3] = 1; // protocol version
        let (b, f) = if endian == b'l' {
            (body.to_le_bytes(), fields.to_le_bytes())
        } else {
            (body.to_be_bytes(), fields.to_be_bytes())
        };
        h[4..8].copy_from_slice(&b);
        h[8..12].copy_from_slice(&1u32.to_le_bytes());
        h[12..16].copy_from_slice(&f);
        h
    }

    #[test]
    fn a_message_is_as_long_as_zbus_will_read() {
        assert_eq!(message_length(&header(b'l', 0, 0)).ok(), Some(16));
        // Fields padded to 8 before the body.
        assert_eq!(message_length(&header(b'l', 5, 3)).ok(), Some(24 + 5));
        assert_eq!(message_length(&header(b'B', 100, 8)).ok(), Some(24 + 100));
        assert_eq!(
            message_length(&header(b'l', u32::MAX, u32::MAX)).ok(),
            Some((16 + u64::from(u32::MAX)).next_multiple_of(8) + u64::from(u32::MAX))
        );
        assert!(message_length(&header(b'x', 0, 0)).is_err());
    }

    /// Reads everything `reader` gives in reads of up to `chunk` bytes, until the end (zbus's
    /// read half says so with BrokenPipe) or another error.
    async fn read_all<R: ReadHalf>(
        reader: &mut BoundedRead<R>,
        chunk: usize,
    ) -> (Vec<u8>, Option<io::Error>) {
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            match reader.recvmsg(&mut buf).await {
                Ok((0, _)) => return (out, None),
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return (out, None),
                Ok((n, _)) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[tokio::test]
    async fn small_messages_pass_through_unchanged_in_any_read_size() {
        let mut sent = b"\0AUTH EXTERNAL 30\r\nBEGIN\r\n".to_vec();
        for (body, fields) in [(0u32, 0u32), (3, 5), (40, 100)] {
            sent.extend_from_slice(&header(b'l', body, fields));
            let rest = (16 + fields as usize).next_multiple_of(8) - 16 + body as usize;
            sent.extend((0..rest).map(|i| i as u8));
        }
        for chunk in [1, 7, 16, 4096] {
            let (a, b) = tokio::net::UnixStream::pair().expect("pair");
            let (read, _write) = b.into_split();
            let mut reader = BoundedRead::new(read);
            let mut a = a;
            a.write_all(&sent).await.expect("write");
            drop(a);
            let (got, err) = read_all(&mut reader, chunk).await;
            assert!(err.is_none(), "chunk {chunk}: {err:?}");
            assert_eq!(got, sent, "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn a_message_announced_too_long_ends_the_stream_before_its_body() {
        for (endian, body) in [(b'l', 100_000_000u32), (b'B', MAX_MESSAGE as u32)] {
            let (a, b) = tokio::net::UnixStream::pair().expect("pair");
            let (read, _write) = b.into_split();
            let mut reader = BoundedRead::new(read);
            let mut a = a;
            // A small message first, then one too long, in the same write as BEGIN.
            let mut sent = b"\0AUTH EXTERNAL 30\r\nBEGIN\r\n".to_vec();
            let auth = sent.len();
            sent.extend_from_slice(&header(endian, 0, 0));
            sent.extend_from_slice(&header(endian, body, 0));
            a.write_all(&sent).await.expect("write");
            let (got, err) = read_all(&mut reader, 4096).await;
            assert_eq!(got.len(), auth + 16, "only the small message passes");
            let err = err.expect("refused");
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert!(err.to_string().contains("at most"), "{err}");
        }
    }

    #[tokio::test]
    async fn an_endless_authentication_line_is_refused() {
        let (a, b) = tokio::net::UnixStream::pair().expect("pair");
        let (read, _write) = b.into_split();
        let mut reader = BoundedRead::new(read);
        let mut a = a;
        a.write_all(&vec![b'A'; MAX_LINE + 10])
            .await
            .expect("write");
        let (_, err) = read_all(&mut reader, 4096).await;
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::InvalidData));
    }
}
