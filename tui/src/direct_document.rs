//! `rdma-tui --json` on the daemon's direct socket: one `Direct.GetDocument` call, made with
//! a blocking socket and no async runtime or D-Bus connection object, because the whole run
//! is that one call and the document it prints (docs/DBUS-API.md, "The direct socket").
//!
//! The exchange is D-Bus's own: the SASL EXTERNAL handshake (the peer checks our uid on the
//! socket), `BEGIN`, the method call (built by zbus), then the reply read as the
//! specification lays it out: a fixed 16-byte header, the header fields, padding to 8, and a
//! body that is one string. Anything else (an error reply from an older daemon, a closed
//! socket, a timeout) is `Err`, and the caller reads the objects as before.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rdma_manager_dbus::ROOT_PATH;

/// Longer than the daemon takes to build the document of a large host, shorter than its own
/// bound on writing a reply (30 s).
const TIMEOUT: Duration = Duration::from_secs(20);
/// The largest reply taken: the document of a host of thousands of objects is a few MiB.
const MAX_REPLY: usize = 64 << 20;

/// Why the document could not be read here.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the handshake was refused: {0:?}")]
    Refused(String),
    #[error("building the call: {0}")]
    Call(#[from] zbus::Error),
    #[error("the reply is not a document: {0}")]
    Reply(String),
}

/// The reply, kept whole: the document is printed from where it lies in it, not copied.
#[derive(Debug)]
pub struct Reply {
    message: Vec<u8>,
    text: std::ops::Range<usize>,
}

impl Reply {
    /// The document's text (UTF-8, checked).
    pub fn text(&self) -> &[u8] {
        &self.message[self.text.clone()]
    }
}

/// The document the daemon at `path` writes.
pub fn read(path: &str) -> Result<Reply, DirectError> {
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let hex: String = uid
        .to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    writer.write_all(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())?;
    let mut line = String::new();
    reader.by_ref().take(512).read_line(&mut line)?;
    if !line.starts_with("OK ") {
        return Err(DirectError::Refused(line.trim_end().to_string()));
    }
    let call = zbus::Message::method_call(ROOT_PATH, "GetDocument")?
        .interface("org.rdmamanager.RdmaManager1.Direct")?
        .build(&())?;
    let serial = call.primary_header().serial_num().get();
    writer.write_all(b"BEGIN\r\n")?;
    writer.write_all(call.data().bytes())?;
    reply_body(&mut reader, serial)
}

/// Reads one message and returns it, with where its body's string lies, if it is the method
/// return of `serial`.
fn reply_body(reader: &mut impl Read, serial: u32) -> Result<Reply, DirectError> {
    let mut fixed = [0u8; 16];
    reader.read_exact(&mut fixed)?;
    let u32_at = |at: usize| {
        let b = [fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]];
        match fixed[0] {
            b'l' => Ok(u32::from_le_bytes(b)),
            b'B' => Ok(u32::from_be_bytes(b)),
            other => Err(DirectError::Reply(format!("byte order {other:#x}"))),
        }
    };
    let (kind, body_len, fields_len) = (fixed[1], u32_at(4)? as usize, u32_at(12)? as usize);
    let header_len = (16 + fields_len).next_multiple_of(8);
    if header_len + body_len > MAX_REPLY {
        return Err(DirectError::Reply(format!(
            "{} bytes announced",
            header_len + body_len
        )));
    }
    let mut whole = vec![0u8; header_len + body_len];
    whole[..16].copy_from_slice(&fixed);
    reader.read_exact(&mut whole[16..])?;
    let endian = if fixed[0] == b'l' {
        zbus::zvariant::Endian::Little
    } else {
        zbus::zvariant::Endian::Big
    };
    let ctx = zbus::zvariant::serialized::Context::new_dbus(endian, 0);
    // The header fields: (code, value); 5 is REPLY_SERIAL, 8 the body's SIGNATURE.
    let fields = zbus::zvariant::serialized::Data::new(&whole[..16 + fields_len], ctx);
    // (byte order, type, flags, version, body length, serial, fields): "(yyyyuua(yv))".
    type Header<'f> = (
        u8,
        u8,
        u8,
        u8,
        u32,
        u32,
        Vec<(u8, zbus::zvariant::Value<'f>)>,
    );
    let (header, _): (Header<'_>, usize) = fields
        .deserialize()
        .map_err(|e| DirectError::Reply(format!("header: {e}")))?;
    let field = |code: u8| header.6.iter().find(|(c, _)| *c == code).map(|(_, v)| v);
    let signature = match field(8) {
        Some(zbus::zvariant::Value::Signature(s)) => s.to_string(),
        _ => String::new(),
    };
    let answers_us = matches!(field(5), Some(zbus::zvariant::Value::U32(s)) if *s == serial);
    match kind {
        2 if answers_us && signature == "s" => {}
        3 => return Err(DirectError::Reply("an error reply".into())),
        _ => {
            return Err(DirectError::Reply(format!(
                "message type {kind} with signature {signature:?}"
            )))
        }
    }
    let body = zbus::zvariant::serialized::Data::new(&whole[header_len..], ctx);
    let (text, _) = body
        .deserialize::<&str>()
        .map_err(|e| DirectError::Reply(format!("body: {e}")))?;
    // The string follows its 4-byte length.
    let start = header_len + 4;
    let text = start..start + text.len();
    Ok(Reply {
        message: whole,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> zbus::Message {
        zbus::Message::method_call(ROOT_PATH, "GetDocument")
            .and_then(|b| b.interface("org.rdmamanager.RdmaManager1.Direct"))
            .and_then(|b| b.build(&()))
            .expect("a call")
    }

    fn bytes(m: &zbus::Message) -> Vec<u8> {
        m.data().bytes().to_vec()
    }

    #[test]
    fn the_return_of_our_call_gives_its_string() {
        let call = call();
        let serial = call.primary_header().serial_num().get();
        let reply = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&("{\"version\": 1}\n",)))
            .expect("a reply");
        let reply = reply_body(&mut bytes(&reply).as_slice(), serial).expect("read");
        assert_eq!(reply.text(), b"{\"version\": 1}\n");
    }

    #[test]
    fn an_error_another_serial_or_another_body_is_refused() {
        let call = call();
        let serial = call.primary_header().serial_num().get();
        let error =
            zbus::Message::error(&call.header(), "org.freedesktop.DBus.Error.UnknownMethod")
                .and_then(|b| b.build(&("no",)))
                .expect("an error");
        assert!(reply_body(&mut bytes(&error).as_slice(), serial).is_err());
        let reply = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&("x",)))
            .expect("a reply");
        assert!(reply_body(&mut bytes(&reply).as_slice(), serial + 1).is_err());
        let number = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&(7u32,)))
            .expect("a reply");
        assert!(reply_body(&mut bytes(&number).as_slice(), serial).is_err());
        // Cut short: the socket closed mid-reply.
        let whole = bytes(&reply);
        assert!(reply_body(&mut &whole[..whole.len() - 1], serial).is_err());
    }

    #[test]
    fn a_reply_announcing_more_than_the_bound_is_not_read() {
        let mut fixed = vec![b'l', 2, 0, 1];
        fixed.extend_from_slice(&(u32::MAX).to_le_bytes());
        fixed.extend_from_slice(&1u32.to_le_bytes());
        fixed.extend_from_slice(&0u32.to_le_bytes());
        let err = reply_body(&mut fixed.as_slice(), 1).expect_err("too large");
        assert!(err.to_string().contains("announced"), "{err}");
    }
}
