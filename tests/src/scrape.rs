//! Scraping a Prometheus exporter without an HTTP client library: a GET over HTTP/1.0 (no
//! chunked replies, the server closes when done) and the text format's samples, for the
//! comparisons of rdma-exporter with node_exporter (`rdma-lab-scale`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// `GET PATH` of `addr` (`127.0.0.1:PORT`): the time to the whole body, and the body.
pub fn get(addr: &str, path: &str) -> Result<(Duration, String)> {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply)
        .with_context(|| format!("reading {addr}{path}"))?;
    let took = t.elapsed();
    let text = String::from_utf8(reply).context("a reply that is not UTF-8")?;
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        bail!("{addr}{path}: no end of the reply's head");
    };
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("{addr}{path}: {}", head.lines().next().unwrap_or_default());
    }
    Ok((took, body.to_string()))
}

/// The samples of every metric whose name starts with `prefix`, keyed by the name and its
/// labels sorted (`name{a="1",b="2"}`), so that two exporters' orders compare equal.
pub fn series(text: &str, prefix: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with(prefix)) {
        let Some((key, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let key = match key.split_once('{') {
            Some((name, labels)) => {
                let mut labels: Vec<&str> = split_labels(labels.trim_end_matches('}'));
                labels.sort_unstable();
                format!("{name}{{{}}}", labels.join(","))
            }
            None => key.to_string(),
        };
        out.insert(key, value);
    }
    out
}

/// The labels of a sample, split at the commas outside their quoted values.
fn split_labels(labels: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in labels.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&labels[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < labels.len() {
        out.push(&labels[start..]);
    }
    out
}

/// The value of the sample `name` with exactly `labels` (in any order).
pub fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    l.sort_unstable();
    let key = if l.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{}}}", l.join(","))
    };
    series(text, name).get(&key).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_sort_labels_and_keep_commas_in_values() {
        let text = "# HELP x y\nnode_a{port=\"1\",device=\"rxe0\"} 3\nnode_b{v=\"a,b\",d=\"x\"} 1e3\nother 1\n";
        let s = series(text, "node_");
        assert_eq!(s.get("node_a{device=\"rxe0\",port=\"1\"}"), Some(&3.0));
        assert_eq!(s.get("node_b{d=\"x\",v=\"a,b\"}"), Some(&1000.0));
        assert_eq!(s.len(), 2);
        assert_eq!(
            value(text, "node_a", &[("device", "rxe0"), ("port", "1")]),
            Some(3.0)
        );
        assert_eq!(value(text, "node_a", &[("device", "rxe1")]), None);
    }
}
