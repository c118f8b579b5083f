//! Where each key path of a document is, so that a refusal found after parsing (a
//! contradiction, a name the host lacks) still names its line.
//!
//! The serde parser keeps no positions once a value is built, so the text is read a second
//! time as a stream of YAML events, each with its position, and every path is recorded with
//! the line of its key (a mapping's value) or of its first token (a list's entry).

use std::collections::HashMap;
use std::sync::OnceLock;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Key path (`interfaces[0].infiniband.pkey`) to line, from 1. The positions are read from
/// the text the first time a line is asked for: a document that is not refused never needs
/// them.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    text: String,
    map: OnceLock<HashMap<String, usize>>,
}

impl PartialEq for Lines {
    fn eq(&self, other: &Lines) -> bool {
        self.text == other.text
    }
}

impl Eq for Lines {}

impl Lines {
    /// The positions of `text`'s paths; none when the text is not YAML (the serde parser
    /// reports that).
    pub fn of(text: &str) -> Lines {
        Lines {
            text: text.to_string(),
            map: OnceLock::new(),
        }
    }

    fn map(&self) -> &HashMap<String, usize> {
        self.map.get_or_init(|| {
            let mut rec = Recorder::default();
            let mut parser = Parser::new_from_str(&self.text);
            match parser.load(&mut rec, false) {
                Ok(()) => rec.map,
                Err(_) => HashMap::new(),
            }
        })
    }

    /// The line of `path`, or of its nearest enclosing path the document has (a missing key
    /// is reported at its entry).
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut p = path;
        loop {
            if let Some(l) = self.map().get(p) {
                return Some(*l);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }
}

/// One open collection: a mapping waiting for a key or a value, or a list and the index of
/// its next entry.
enum Frame {
    Map { path: String, key: Option<String> },
    Seq { path: String, next: usize },
}

#[derive(Default)]
struct Recorder {
    stack: Vec<Frame>,
    map: HashMap<String, usize>,
}

fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

impl Recorder {
    /// The path of the value that starts now (and, in a mapping, whether it is a key).
    fn value_path(&mut self, line: usize) -> Option<String> {
        match self.stack.last_mut() {
            None => Some(String::new()),
            Some(Frame::Map { key: None, .. }) => None,
            Some(Frame::Map { path, key }) => {
                let p = join(path, key.as_deref().unwrap_or_default());
                *key = None;
                Some(p)
            }
            Some(Frame::Seq { path, next }) => {
                let p = format!("{path}[{next}]");
                *next += 1;
                self.map.entry(p.clone()).or_insert(line);
                Some(p)
            }
        }
    }
}

impl MarkedEventReceiver for Recorder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line();
        match ev {
            Event::Scalar(text, ..) => match self.value_path(line) {
                Some(_) => {}
                None => {
                    if let Some(Frame::Map { path, key }) = self.stack.last_mut() {
                        let p = join(path, &text);
                        self.map.entry(p).or_insert(line);
                        *key = Some(text);
                    }
                }
            },
            Event::Alias(_) => {
                self.value_path(line);
            }
            Event::MappingStart(..) => {
                // A mapping used as a key has no path of ours; give it an unusable one.
                let path = self.value_path(line).unwrap_or_else(|| "?".into());
                self.stack.push(Frame::Map { path, key: None });
            }
            Event::SequenceStart(..) => {
                let path = self.value_path(line).unwrap_or_else(|| "?".into());
                self.stack.push(Frame::Seq { path, next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

// Here rather than beside `StateError`, which the health section shares and which knows
// nothing of the document's lines.
impl crate::state_error::StateError {
    /// The same error with its line looked up in `lines` when it has none yet: errors found
    /// after parsing (by [`diff`](super::diff)) carry the path only.
    pub fn with_lines(mut self, lines: &Lines) -> Self {
        let found = lines.line_of(self.path());
        match &mut self {
            Self::Syntax { .. } => {}
            Self::Invalid { line, .. }
            | Self::Contradiction { line, .. }
            | Self::NotFound { line, .. } => {
                if line.is_none() {
                    *line = found;
                }
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_paths_and_their_lines() {
        let text = "\
soft-links:
  - name: rxe0
    type: rxe
interfaces:
  - name: ib0
    type: infiniband
  -
    name: ib0.8002
    infiniband:
      pkey: \"0x8002\"
modules:
  rdma: {ib_ipoib: true,
    rpcrdma: false}
";
        let l = Lines::of(text);
        assert_eq!(l.line_of("soft-links"), Some(1));
        assert_eq!(l.line_of("soft-links[0]"), Some(2));
        assert_eq!(l.line_of("soft-links[0].name"), Some(2));
        assert_eq!(l.line_of("soft-links[0].type"), Some(3));
        assert_eq!(l.line_of("interfaces[1]"), Some(8));
        assert_eq!(l.line_of("interfaces[1].name"), Some(8));
        assert_eq!(l.line_of("interfaces[1].infiniband.pkey"), Some(10));
        assert_eq!(l.line_of("modules.rdma.rpcrdma"), Some(13));
        // A key the document lacks: its entry's line.
        assert_eq!(l.line_of("interfaces[1].mtu"), Some(8));
        assert_eq!(l.line_of("interfaces[1].infiniband.mode"), Some(9));
        assert_eq!(l.line_of("naming.rdma-policy"), None);
    }

    #[test]
    fn json_lines() {
        let text = "{\n \"roce\": [\n  {\"device\": \"mlx5_0\", \"port\": 1},\n  {\"device\": \"mlx5_1\",\n   \"port\": 0}\n ]\n}\n";
        let l = Lines::of(text);
        assert_eq!(l.line_of("roce[0].port"), Some(3));
        assert_eq!(l.line_of("roce[1]"), Some(4));
        assert_eq!(l.line_of("roce[1].port"), Some(5));
    }

    #[test]
    fn not_yaml_has_no_lines() {
        assert_eq!(Lines::of("a: [").line_of("a"), None);
    }
}
