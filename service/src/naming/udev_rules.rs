//! udev rules files that users also edit: split into lines without losing a byte, read the
//! rules the daemon understands, and replace only the block between the daemon's markers.
//!
//! A file is a list of [`Line`]s whose raw bytes, concatenated, are the file exactly (CRLF,
//! tabs, a missing final newline, bytes that are not UTF-8 included). A rule continued with a
//! trailing backslash is one logical line over several physical ones, numbered by its first,
//! as udev reads it. The daemon owns only the lines from `# BEGIN rdma-manager` to
//! `# END rdma-manager`; rendering replaces that block and copies every other line as read.

use serde::Serialize;

/// The first line of the block the daemon owns.
pub const BEGIN_MARKER: &str = "# BEGIN rdma-manager";
/// The last line of the block the daemon owns.
pub const END_MARKER: &str = "# END rdma-manager";

/// One logical line of a rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based number of its first physical line.
    pub number: u32,
    /// The bytes exactly as read, line terminators included.
    pub raw: Vec<u8>,
    /// The logical text: physical lines joined without their continuation backslashes and
    /// terminators; `None` when the bytes are not UTF-8 (such a line is never understood).
    pub text: Option<String>,
}

impl Line {
    /// The text without surrounding whitespace, if UTF-8.
    pub fn trimmed(&self) -> Option<&str> {
        self.text.as_deref().map(str::trim)
    }

    fn is_marker(&self, marker: &str) -> bool {
        self.trimmed() == Some(marker)
    }
}

/// Strips one line terminator (`\n` or `\r\n`) from a physical line.
fn strip_eol(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// Splits a file into logical lines; `lines.concat() == bytes` always holds.
pub fn split_lines(bytes: &[u8]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut physical = bytes.split_inclusive(|b| *b == b'\n').peekable();
    let mut number = 0u32;
    while let Some(first) = physical.next() {
        number += 1;
        let start = number;
        let mut raw = first.to_vec();
        let mut content: Vec<u8> = strip_eol(first).to_vec();
        // A trailing backslash continues a rule on the next line (udev joins them); a comment
        // is never continued.
        let comment = content.trim_ascii_start().first() == Some(&b'#');
        while !comment && content.last() == Some(&b'\\') && raw.last() == Some(&b'\n') {
            let Some(next) = physical.next() else { break };
            number += 1;
            content.pop();
            content.extend_from_slice(strip_eol(next));
            raw.extend_from_slice(next);
        }
        out.push(Line {
            number: start,
            raw,
            text: String::from_utf8(content).ok(),
        });
    }
    out
}

/// The line terminator a file uses (shared with the host-setup files).
pub use crate::hostconf::conf_lines::file_eol;

/// A comparison or assignment operator of a udev rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RuleOp {
    /// `==`
    Match,
    /// `!=`
    NoMatch,
    /// `=`
    Assign,
    /// `+=`
    Add,
    /// `-=`
    Remove,
    /// `:=`
    AssignFinal,
}

/// One `KEY{attr}OP"value"` of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleToken {
    pub key: String,
    pub attr: Option<String>,
    pub op: RuleOp,
    pub value: String,
}

impl RuleToken {
    pub fn is(&self, key: &str, attr: Option<&str>) -> bool {
        self.key == key && self.attr.as_deref() == attr
    }
}

/// Reads one rule line into its tokens, or `None` for a comment, an empty line or anything
/// this reader does not fully understand (an escape, an `e"..."` string, a stray character):
/// such a line is kept as it is and never interpreted.
pub fn parse_rule(text: &str) -> Option<Vec<RuleToken>> {
    let s = text.trim();
    if s.is_empty() || s.starts_with('#') {
        return None;
    }
    let b = s.as_bytes();
    let mut i = 0;
    let mut tokens = Vec::new();
    loop {
        // Separators: commas and blanks.
        while i < b.len() && (b[i] == b',' || b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let key_start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i == key_start {
            return None;
        }
        let key = s[key_start..i].to_string();
        let mut attr = None;
        if i < b.len() && b[i] == b'{' {
            let close = s[i..].find('}')? + i;
            let a = &s[i + 1..close];
            if a.is_empty() || a.contains(['"', '{', ',']) {
                return None;
            }
            attr = Some(a.to_string());
            i = close + 1;
        }
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        let rest = &s[i..];
        let (op, len) = [
            ("==", RuleOp::Match),
            ("!=", RuleOp::NoMatch),
            ("+=", RuleOp::Add),
            ("-=", RuleOp::Remove),
            (":=", RuleOp::AssignFinal),
            ("=", RuleOp::Assign),
        ]
        .iter()
        .find(|(t, _)| rest.starts_with(t))
        .map(|(t, op)| (*op, t.len()))?;
        i += len;
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        if i >= b.len() || b[i] != b'"' {
            return None;
        }
        let close = s[i + 1..].find('"')? + i + 1;
        let value = &s[i + 1..close];
        if value.contains('\\') {
            return None;
        }
        tokens.push(RuleToken {
            key,
            attr,
            op,
            value: value.to_string(),
        });
        i = close + 1;
        // A value must be followed by a separator or the end.
        if i < b.len() && !(b[i] == b',' || b[i] == b' ' || b[i] == b'\t') {
            return None;
        }
    }
    (!tokens.is_empty()).then_some(tokens)
}

/// Where the daemon's block is, or why it cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum BlockError {
    #[error("line {begin} opens the rdma-manager block but no \"{END_MARKER}\" line closes it")]
    Unclosed { begin: u32 },
    #[error("line {line} closes an rdma-manager block that was never opened")]
    Unopened { line: u32 },
    #[error("lines {first} and {second} both open an rdma-manager block")]
    Twice { first: u32, second: u32 },
}

/// A rules file split into lines, with the position of the daemon's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockFile {
    pub lines: Vec<Line>,
    /// Indices into `lines` of the BEGIN and END markers, if there is a block.
    pub block: Result<Option<(usize, usize)>, BlockError>,
    eol: &'static str,
}

impl BlockFile {
    pub fn parse(bytes: &[u8]) -> BlockFile {
        let lines = split_lines(bytes);
        let block = find_block(&lines);
        BlockFile {
            lines,
            block,
            eol: file_eol(bytes),
        }
    }

    /// Whether line `index` lies inside the block (markers included).
    pub fn in_block(&self, index: usize) -> bool {
        matches!(self.block, Ok(Some((b, e))) if index >= b && index <= e)
    }

    /// The lines between the markers.
    pub fn block_lines(&self) -> &[Line] {
        match self.block {
            Ok(Some((b, e))) => &self.lines[b + 1..e],
            _ => &[],
        }
    }

    /// The line terminator new lines get (the file's own).
    pub fn eol(&self) -> &'static str {
        self.eol
    }

    /// The file with the block's content replaced by `content` (lines without terminators),
    /// markers added around it. An empty `content` removes the block and its markers. Every
    /// line outside the block is copied byte for byte; a block added to a file whose last
    /// line has no terminator gets one first, so that the marker starts a line.
    pub fn render(&self, content: &[String]) -> Result<Vec<u8>, BlockError> {
        let block = self.block.clone()?;
        let mut new_block = Vec::new();
        if !content.is_empty() {
            for l in std::iter::once(BEGIN_MARKER)
                .chain(content.iter().map(String::as_str))
                .chain(std::iter::once(END_MARKER))
            {
                new_block.extend_from_slice(l.as_bytes());
                new_block.extend_from_slice(self.eol.as_bytes());
            }
        }
        let mut out = Vec::new();
        match block {
            Some((b, e)) => {
                for l in &self.lines[..b] {
                    out.extend_from_slice(&l.raw);
                }
                out.extend_from_slice(&new_block);
                for l in &self.lines[e + 1..] {
                    out.extend_from_slice(&l.raw);
                }
            }
            None => {
                for l in &self.lines {
                    out.extend_from_slice(&l.raw);
                }
                if !new_block.is_empty() {
                    if !out.is_empty() && out.last() != Some(&b'\n') {
                        out.extend_from_slice(self.eol.as_bytes());
                    }
                    out.extend_from_slice(&new_block);
                }
            }
        }
        Ok(out)
    }
}

fn find_block(lines: &[Line]) -> Result<Option<(usize, usize)>, BlockError> {
    let mut begin: Option<usize> = None;
    let mut found: Option<(usize, usize)> = None;
    for (i, l) in lines.iter().enumerate() {
        if l.is_marker(BEGIN_MARKER) {
            if let Some(b) = begin {
                return Err(BlockError::Twice {
                    first: lines[b].number,
                    second: l.number,
                });
            }
            if let Some((b, _)) = found {
                return Err(BlockError::Twice {
                    first: lines[b].number,
                    second: l.number,
                });
            }
            begin = Some(i);
        } else if l.is_marker(END_MARKER) {
            match begin.take() {
                Some(b) => found = Some((b, i)),
                None => return Err(BlockError::Unopened { line: l.number }),
            }
        }
    }
    if let Some(b) = begin {
        return Err(BlockError::Unclosed {
            begin: lines[b].number,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat(lines: &[Line]) -> Vec<u8> {
        lines.iter().flat_map(|l| l.raw.clone()).collect()
    }

    #[test]
    fn lines_keep_every_byte() {
        for file in [
            &b""[..],
            b"\n",
            b"a",
            b"a\nb",
            b"a\r\nb\r\n",
            b"\t# c\n\nx \\\n  y\n",
            b"trailing backslash \\",
            b"bad \xff utf8\nok\n",
            b"cont \\\r\n  crlf\r\n",
        ] {
            assert_eq!(concat(&split_lines(file)), file, "{file:?}");
        }
    }

    #[test]
    fn continuation_joins_and_numbers_by_first_line() {
        let l = split_lines(b"# one\nA==\"1\", \\\n  B==\"2\"\nC=\"3\"\n");
        assert_eq!(l.len(), 3);
        assert_eq!(l[1].number, 2);
        assert_eq!(l[1].text.as_deref(), Some("A==\"1\",   B==\"2\""));
        assert_eq!(l[2].number, 4);
        let crlf = split_lines(b"A==\"1\", \\\r\n B=\"2\"\r\n");
        assert_eq!(crlf.len(), 1);
        assert_eq!(crlf[0].text.as_deref(), Some("A==\"1\",  B=\"2\""));
        assert_eq!(split_lines(b"x\xffy\n")[0].text, None);
        assert_eq!(split_lines(b"# comment \\\nA=\"1\"\n").len(), 2);
    }

    #[test]
    fn eol_style() {
        assert_eq!(file_eol(b"a\r\nb\n"), "\r\n");
        assert_eq!(file_eol(b"a\nb\r\n"), "\n");
        assert_eq!(file_eol(b""), "\n");
        assert_eq!(file_eol(b"\n"), "\n");
    }

    #[test]
    fn tokens() {
        let t = parse_rule(
            "ACTION==\"add\", SUBSYSTEM==\"net\",DRIVERS==\"?*\"\tATTR{type}==\"32\" , NAME:=\"ib0\"",
        )
        .unwrap();
        assert_eq!(t.len(), 5);
        assert!(t[3].is("ATTR", Some("type")));
        assert_eq!(t[3].value, "32");
        assert_eq!(t[4].op, RuleOp::AssignFinal);
        let spaced = parse_rule("KERNEL == \"ib*\" , NAME = \"x\"").unwrap();
        assert_eq!(spaced[0].op, RuleOp::Match);
        assert_eq!(spaced[1].op, RuleOp::Assign);
        assert_eq!(
            parse_rule("RUN+=\"/bin/true\", ENV{X}-=\"y\", A!=\"b\"")
                .unwrap()
                .iter()
                .map(|t| t.op)
                .collect::<Vec<_>>(),
            vec![RuleOp::Add, RuleOp::Remove, RuleOp::NoMatch]
        );
        for not_a_rule in [
            "",
            "   ",
            "# ACTION==\"add\", NAME=\"x\"",
            "  #x",
            "NAME=\"a\\\"b\"",
            "NAME=e\"x\"",
            "NAME=\"unterminated",
            "NAME=\"a\"x",
            "=\"a\"",
            "NAME",
            "NAME==",
            "ATTR{}==\"x\"",
            "ATTR{a\"}==\"x\"",
            "LABEL=\"x\" junk",
        ] {
            assert_eq!(parse_rule(not_a_rule), None, "{not_a_rule:?}");
        }
    }

    #[test]
    fn block_found_and_replaced() {
        let file =
            b"# mine\r\nA=\"1\"\r\n# BEGIN rdma-manager\r\nold\r\n# END rdma-manager\r\nB=\"2\"";
        let f = BlockFile::parse(file);
        assert_eq!(f.block, Ok(Some((2, 4))));
        assert_eq!(f.block_lines().len(), 1);
        assert!(f.in_block(3) && !f.in_block(5));
        let out = f.render(&["new".into()]).unwrap();
        assert_eq!(
            out,
            b"# mine\r\nA=\"1\"\r\n# BEGIN rdma-manager\r\nnew\r\n# END rdma-manager\r\nB=\"2\""
        );
        let removed = f.render(&[]).unwrap();
        assert_eq!(removed, b"# mine\r\nA=\"1\"\r\nB=\"2\"");
    }

    #[test]
    fn block_appended_after_a_last_line_without_newline() {
        let f = BlockFile::parse(b"A=\"1\"");
        assert_eq!(f.block, Ok(None));
        assert_eq!(
            f.render(&["x".into()]).unwrap(),
            b"A=\"1\"\n# BEGIN rdma-manager\nx\n# END rdma-manager\n"
        );
        assert_eq!(f.render(&[]).unwrap(), b"A=\"1\"");
        let empty = BlockFile::parse(b"");
        assert_eq!(
            empty.render(&["x".into()]).unwrap(),
            b"# BEGIN rdma-manager\nx\n# END rdma-manager\n"
        );
    }

    #[test]
    fn broken_blocks_refuse_to_render() {
        let unclosed = BlockFile::parse(b"a\n# BEGIN rdma-manager\nb\n");
        assert_eq!(unclosed.block, Err(BlockError::Unclosed { begin: 2 }));
        assert!(unclosed.render(&[]).is_err());
        let unopened = BlockFile::parse(b"# END rdma-manager\n");
        assert_eq!(unopened.block, Err(BlockError::Unopened { line: 1 }));
        let twice = BlockFile::parse(
            b"# BEGIN rdma-manager\n# END rdma-manager\n# BEGIN rdma-manager\n# END rdma-manager\n",
        );
        assert_eq!(
            twice.block,
            Err(BlockError::Twice {
                first: 1,
                second: 3
            })
        );
        // Markers are matched on the whole trimmed line, so a mention in a comment is not one.
        let mention = BlockFile::parse(b"# see # BEGIN rdma-manager in the docs\n");
        assert_eq!(mention.block, Ok(None));
    }
}
