//! Output as nmcli prints it: a table with a header and aligned columns (`--` for an empty
//! value), or with `-t` colon-separated fields without a header (`:` and `\` escaped with
//! `\`), or with `-j` a JSON array of objects keyed by the columns in lower case.

use serde_json::{Map, Value};

/// How data is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Terse,
    Json,
}

/// Rows of text under named columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[&'static str]) -> Self {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    /// The table as `format` prints it, every line ending in a newline.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Table => self.aligned(),
            Format::Terse => self
                .rows
                .iter()
                .map(|r| {
                    let mut line = r.iter().map(|f| escape(f)).collect::<Vec<_>>().join(":");
                    line.push('\n');
                    line
                })
                .collect(),
            Format::Json => {
                let mut text = serde_json::to_string_pretty(&self.json()).unwrap_or_default();
                text.push('\n');
                text
            }
        }
    }

    /// The rows as JSON objects, keyed by the columns in lower case.
    pub fn json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|r| {
                    let mut m = Map::new();
                    for (c, v) in self.columns.iter().zip(r) {
                        m.insert(c.to_lowercase(), Value::String(v.clone()));
                    }
                    Value::Object(m)
                })
                .collect(),
        )
    }

    fn aligned(&self) -> String {
        let cell = |v: &str| {
            if v.is_empty() {
                "--".to_string()
            } else {
                v.to_string()
            }
        };
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for r in &self.rows {
            for (w, v) in widths.iter_mut().zip(r) {
                *w = (*w).max(cell(v).chars().count());
            }
        }
        let line = |fields: Vec<String>| {
            let last = fields.len().saturating_sub(1);
            let mut s = String::new();
            for (i, (f, w)) in fields.iter().zip(&widths).enumerate() {
                s.push_str(f);
                if i < last {
                    let pad = w + 2 - f.chars().count();
                    s.extend(std::iter::repeat_n(' ', pad));
                }
            }
            s.push('\n');
            s
        };
        let mut out = line(self.columns.iter().map(|c| c.to_string()).collect());
        for r in &self.rows {
            out.push_str(&line(r.iter().map(|v| cell(v)).collect()));
        }
        out
    }
}

/// A field of terse output: `\` and `:` escaped with `\`, as nmcli does.
pub fn escape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        if c == '\\' || c == ':' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(&["DEVICE", "PORT", "NETDEV"]);
        t.push(vec!["mlx5_0".into(), "1".into(), "".into()]);
        t.push(vec!["rxe0".into(), "1".into(), "eth:1".into()]);
        t
    }

    #[test]
    fn aligned_terse_and_json() {
        assert_eq!(
            table().render(Format::Table),
            "DEVICE  PORT  NETDEV\nmlx5_0  1     --\nrxe0    1     eth:1\n"
        );
        assert_eq!(table().render(Format::Terse), "mlx5_0:1:\nrxe0:1:eth\\:1\n");
        let j: Value = serde_json::from_str(&table().render(Format::Json)).expect("json");
        assert_eq!(j[1]["netdev"], "eth:1");
        assert_eq!(j[0]["device"], "mlx5_0");
    }

    #[test]
    fn escapes_backslash_and_colon() {
        assert_eq!(escape(r"a:b\c"), r"a\:b\\c");
    }
}
