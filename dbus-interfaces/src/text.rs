//! Bounds on the text rdma-managerd sends: error messages, text properties and log lines.
//!
//! Names, values and lines that come from a caller, a file or the kernel can be of any length
//! (a caller may send a 20 MiB name; a hand-edited file may hold a line of megabytes). Quoted
//! whole, one of them could make a reply larger than the bus's message limit (32 MiB on the
//! system bus), and the bus drops a connection that sends such a message, the daemon's name
//! with it. So every such string is quoted through [`quote_capped`], and every message is cut
//! by [`cap_message`] where it is built for the bus, as a last line of defence.

/// Strings up to this many bytes are quoted whole by [`quote_capped`].
pub const QUOTE_MAX_BYTES: usize = 256;
/// How much of a longer string [`quote_capped`] keeps.
pub const QUOTE_HEAD_BYTES: usize = 128;
/// The longest error message, and the longest text value of a property that quotes a file
/// (a `ConfigErrors` value, a note), in bytes.
pub const MESSAGE_MAX_BYTES: usize = 4096;

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` quoted as `{:?}` quotes it; a string longer than [`QUOTE_MAX_BYTES`] is quoted by its
/// first [`QUOTE_HEAD_BYTES`] (cut on a character boundary), an ellipsis and its length:
/// `"xxxx…"… (20971520 bytes)`. The result is at most about 800 bytes whatever `s` holds
/// (escaping makes at most 6 bytes of one).
pub fn quote_capped(s: &str) -> String {
    if s.len() <= QUOTE_MAX_BYTES {
        return format!("{s:?}");
    }
    format!("{:?}… ({} bytes)", head(s, QUOTE_HEAD_BYTES), s.len())
}

/// `s` unchanged when it has at most `max` bytes; else its head and a note of its length,
/// `max` bytes at most in all (for any `max` of 64 or more).
pub fn cap_text(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let note = format!("… (cut: {} bytes in all)", s.len());
    let mut out = head(s, max.saturating_sub(note.len())).to_string();
    out.push_str(&note);
    out
}

/// [`cap_text`] to [`MESSAGE_MAX_BYTES`]: for error messages and text properties.
pub fn cap_message(s: &str) -> String {
    cap_text(s, MESSAGE_MAX_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_quoted_whole() {
        assert_eq!(quote_capped("ib0"), "\"ib0\"");
        assert_eq!(quote_capped("a\"b\n"), "\"a\\\"b\\n\"");
        let at_limit = "x".repeat(QUOTE_MAX_BYTES);
        assert_eq!(quote_capped(&at_limit), format!("{at_limit:?}"));
        assert_eq!(cap_message("a sentence"), "a sentence");
    }

    #[test]
    fn long_strings_keep_their_head_and_say_their_length() {
        let long = "y".repeat(20 << 20);
        let q = quote_capped(&long);
        assert!(
            q.starts_with(&format!("\"{}\"…", "y".repeat(QUOTE_HEAD_BYTES))),
            "{q}"
        );
        assert!(q.ends_with("(20971520 bytes)"), "{q}");
        assert!(q.len() < 200, "{}", q.len());
        let m = cap_message(&long);
        assert!(m.len() <= MESSAGE_MAX_BYTES, "{}", m.len());
        assert!(
            m.starts_with("yyyy") && m.ends_with("(cut: 20971520 bytes in all)"),
            "{m}"
        );
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        // Two-byte, three-byte and four-byte characters, shifted by one byte so that the
        // limits fall inside a character.
        for ch in ["é", "€", "🦀"] {
            let s = format!("a{}", ch.repeat(3000));
            let q = quote_capped(&s);
            let inner = q
                .strip_prefix('"')
                .and_then(|r| r.split_once("\"…"))
                .map(|(h, _)| h)
                .expect("a quoted head");
            assert!(s.starts_with(inner), "{ch}");
            assert!(inner.len() <= QUOTE_HEAD_BYTES && inner.len() > QUOTE_HEAD_BYTES - 4);
            for max in [64, 65, 66, 67, 100, MESSAGE_MAX_BYTES] {
                let c = cap_text(&s, max);
                assert!(c.len() <= max, "{ch} {max}: {}", c.len());
                let kept = c.split_once('…').map(|(h, _)| h).expect("cut");
                assert!(s.starts_with(kept) && !kept.is_empty(), "{ch} {max}");
            }
        }
        assert_eq!(head("é", 1), "");
        assert_eq!(head("aé", 2), "a");
        assert_eq!(head("aé", 3), "aé");
    }

    #[test]
    fn escaping_stays_bounded() {
        // Control characters escape to six bytes each: the quote still stays small.
        let s = "\u{1}".repeat(1 << 20);
        let q = quote_capped(&s);
        assert!(q.len() <= 6 * QUOTE_HEAD_BYTES + 40, "{}", q.len());
    }
}

/// An error and its causes on one line, as anyhow's `{:#}` writes them (`outer: inner`),
/// leaving out a cause whose text the line already ends with: zbus and std give an I/O
/// error both in their own message and as its source, which would print it twice. For the
/// programs' own error messages (never a backtrace).
pub fn error_chain(top: &(dyn std::error::Error + 'static)) -> String {
    let mut line = top.to_string();
    let mut cause = top.source();
    while let Some(e) = cause {
        let text = e.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = e.source();
    }
    line
}

#[cfg(test)]
mod error_chain_tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot connect: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn causes_follow_once() {
        let io = || std::io::Error::from_raw_os_error(2);
        let text = io().to_string();
        assert_eq!(
            error_chain(&Repeats(io())),
            format!("cannot connect: {text}")
        );
        assert_eq!(error_chain(&Outer(io())), format!("outer: {text}"));
    }
}
