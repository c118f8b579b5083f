//! `rdma-tui --json` and `--ibstat` on the daemon's direct socket: one call
//! (`Direct.GetDocument`, `Direct.GetIbstat`, else `GetManagedObjects`), made with a blocking
//! socket and no async runtime or D-Bus connection object, because the whole run is that one call and what it
//! prints (docs/DBUS-API.md, "The direct socket").
//!
//! The exchange is D-Bus's own: the SASL EXTERNAL handshake (the peer checks our uid on the
//! socket), `BEGIN`, the method call (built by zbus), then the reply read as the
//! specification lays it out: a fixed 16-byte header, the header fields, padding to 8, and
//! the body, whose signature must be the one asked for. Anything else (an error reply from an
//! older daemon, a closed socket, a timeout) is `Err`, and the caller reads through zbus as
//! before.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rdma_manager_dbus::ROOT_PATH;

/// For the handshake: as zbus's connection to the socket is given, so that a daemon that
/// does not answer (its connections all taken, say) sends us to the bus soon.
const HANDSHAKE: Duration = Duration::from_secs(2);
/// For the reply: longer than the daemon takes to build the document of a large host,
/// shorter than its own bound on writing a reply (30 s).
const REPLY: Duration = Duration::from_secs(20);
/// The largest reply taken: the document of a host of thousands of objects is a few MiB.
const MAX_REPLY: usize = 64 << 20;

/// Why the call could not be made here.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the handshake was refused: {0:?}")]
    Refused(String),
    #[error("building the call: {0}")]
    Call(#[from] zbus::Error),
    #[error("the reply is not the one asked for: {0}")]
    Reply(String),
}

/// A method return, kept whole: its body is read from where it lies, not copied.
#[derive(Debug)]
pub struct Reply {
    message: Vec<u8>,
    body: usize,
    endian: zbus::zvariant::Endian,
}

impl Reply {
    /// The body, to deserialize.
    pub fn body(&self) -> zbus::zvariant::serialized::Data<'_, 'static> {
        let ctx = zbus::zvariant::serialized::Context::new_dbus(self.endian, 0);
        zbus::zvariant::serialized::Data::new(&self.message[self.body..], ctx)
    }
}

/// The text of a reply whose body is one string (`s`): the bytes after its length,
/// UTF-8 checked.
pub fn text(reply: &Reply) -> Result<&[u8], DirectError> {
    let body = reply.body();
    let len = body
        .deserialize::<&str>()
        .map(|(text, _)| text.len())
        .map_err(|e| DirectError::Reply(format!("body: {e}")))?;
    let start = reply.body + 4;
    Ok(&reply.message[start..start + len])
}

/// `Direct.GetDocument`: the JSON document the daemon at `path` writes.
pub fn document(path: &str) -> Result<Reply, DirectError> {
    call(
        path,
        "org.rdmamanager.RdmaManager1.Direct",
        "GetDocument",
        "s",
    )
}

/// `Direct.GetIbstat(argv)`: what ibstat with `argv` prints, ibstat's message when it
/// stopped on an error, and the daemon's reason behind it (both empty when it did not).
pub fn ibstat(path: &str, argv: &[String]) -> Result<(String, String, String), DirectError> {
    let reply = call_with(
        path,
        "org.rdmamanager.RdmaManager1.Direct",
        "GetIbstat",
        &(argv,),
        "sss",
    )?;
    reply
        .body()
        .deserialize::<(String, String, String)>()
        .map(|(run, _)| run)
        .map_err(|e| DirectError::Reply(format!("body: {e}")))
}

/// `GetManagedObjects` at the root, decoded.
pub fn managed_objects(path: &str) -> Result<zbus::fdo::ManagedObjects, DirectError> {
    let reply = call(
        path,
        "org.freedesktop.DBus.ObjectManager",
        "GetManagedObjects",
        "a{oa{sa{sv}}}",
    )?;
    reply
        .body()
        .deserialize::<zbus::fdo::ManagedObjects>()
        .map(|(objects, _)| objects)
        .map_err(|e| DirectError::Reply(format!("body: {e}")))
}

/// Calls `interface.member` without arguments at the root of the daemon listening at `path`;
/// its reply must have the body `signature`.
fn call(path: &str, interface: &str, member: &str, signature: &str) -> Result<Reply, DirectError> {
    call_with(path, interface, member, &(), signature)
}

/// Calls `interface.member` with the arguments `body` (see [`call`]).
fn call_with<B>(
    path: &str,
    interface: &str,
    member: &str,
    body: &B,
    signature: &str,
) -> Result<Reply, DirectError>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(HANDSHAKE))?;
    stream.set_write_timeout(Some(HANDSHAKE))?;
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
    let call = zbus::Message::method_call(ROOT_PATH, member)?
        .interface(interface)?
        .build(body)?;
    let serial = call.primary_header().serial_num().get();
    writer.write_all(b"BEGIN\r\n")?;
    writer.write_all(call.data().bytes())?;
    writer.set_read_timeout(Some(REPLY))?;
    reply_of(&mut reader, serial, signature)
}

/// Reads one message and returns it if it is the method return of `serial` with a body of
/// `signature`.
fn reply_of(reader: &mut impl Read, serial: u32, signature: &str) -> Result<Reply, DirectError> {
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
    if fields_len > MAX_REPLY || body_len > MAX_REPLY || fields_len + body_len > MAX_REPLY {
        return Err(DirectError::Reply(format!(
            "{} bytes announced",
            fields_len.saturating_add(body_len)
        )));
    }
    let header_len = (16 + fields_len).next_multiple_of(8);
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
    let got = match field(8) {
        // zvariant reads "sss" as one structure: compared without its parentheses.
        Some(zbus::zvariant::Value::Signature(s)) => s.to_string_no_parens(),
        _ => String::new(),
    };
    let answers_us = matches!(field(5), Some(zbus::zvariant::Value::U32(s)) if *s == serial);
    match kind {
        2 if answers_us && got == signature => {}
        3 => return Err(DirectError::Reply("an error reply".into())),
        _ => {
            return Err(DirectError::Reply(format!(
                "message type {kind} with signature {got:?}"
            )))
        }
    }
    drop(header);
    Ok(Reply {
        message: whole,
        body: header_len,
        endian,
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
        let reply = reply_of(&mut bytes(&reply).as_slice(), serial, "s").expect("read");
        assert_eq!(text(&reply).expect("a string"), b"{\"version\": 1}\n");
    }

    #[test]
    fn a_managed_objects_reply_decodes() {
        let call = call();
        let serial = call.primary_header().serial_num().get();
        let mut props = std::collections::HashMap::new();
        props.insert("Lid".to_string(), zbus::zvariant::Value::U32(7));
        let mut ifaces = std::collections::HashMap::new();
        ifaces.insert("org.rdmamanager.RdmaManager1.Port".to_string(), props);
        let path =
            zbus::zvariant::ObjectPath::try_from("/org/rdmamanager/RdmaManager1/Device/0/Port/1")
                .expect("path");
        let mut objects = std::collections::HashMap::new();
        objects.insert(path, ifaces);
        let reply = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&(objects,)))
            .expect("a reply");
        let sig = "a{oa{sa{sv}}}";
        let read = reply_of(&mut bytes(&reply).as_slice(), serial, sig).expect("read");
        let (decoded, _): (zbus::fdo::ManagedObjects, usize) =
            read.body().deserialize().expect("decodes");
        let port = decoded.values().next().expect("one object");
        assert_eq!(
            u32::try_from(&port["org.rdmamanager.RdmaManager1.Port"]["Lid"]).ok(),
            Some(7)
        );
        assert!(
            reply_of(&mut bytes(&reply).as_slice(), serial, "s").is_err(),
            "not a string"
        );
    }

    #[test]
    fn an_ibstat_reply_gives_its_three_strings() {
        let call = call();
        let serial = call.primary_header().serial_num().get();
        let run = ("CA 'a'\n".to_string(), "msg".to_string(), String::new());
        let reply = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&run))
            .expect("a reply");
        let read = reply_of(&mut bytes(&reply).as_slice(), serial, "sss").expect("read");
        let (decoded, _): ((String, String, String), usize) =
            read.body().deserialize().expect("decodes");
        assert_eq!(decoded, run);
    }

    #[test]
    fn an_error_another_serial_or_another_body_is_refused() {
        let call = call();
        let serial = call.primary_header().serial_num().get();
        let error =
            zbus::Message::error(&call.header(), "org.freedesktop.DBus.Error.UnknownMethod")
                .and_then(|b| b.build(&("no",)))
                .expect("an error");
        assert!(reply_of(&mut bytes(&error).as_slice(), serial, "s").is_err());
        let reply = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&("x",)))
            .expect("a reply");
        assert!(reply_of(&mut bytes(&reply).as_slice(), serial + 1, "s").is_err());
        let number = zbus::Message::method_return(&call.header())
            .and_then(|b| b.build(&(7u32,)))
            .expect("a reply");
        assert!(reply_of(&mut bytes(&number).as_slice(), serial, "s").is_err());
        // Cut short: the socket closed mid-reply.
        let whole = bytes(&reply);
        assert!(reply_of(&mut &whole[..whole.len() - 1], serial, "s").is_err());
    }

    #[test]
    fn a_reply_announcing_more_than_the_bound_is_not_read() {
        let mut fixed = vec![b'l', 2, 0, 1];
        fixed.extend_from_slice(&(u32::MAX).to_le_bytes());
        fixed.extend_from_slice(&1u32.to_le_bytes());
        fixed.extend_from_slice(&0u32.to_le_bytes());
        let err = reply_of(&mut fixed.as_slice(), 1, "s").expect_err("too large");
        assert!(err.to_string().contains("announced"), "{err}");
    }
}
