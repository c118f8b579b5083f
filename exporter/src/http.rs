//! A small HTTP/1.1 server of GET `/metrics` and `/`, on tokio.
//!
//! Hand-rolled rather than hyper or axum: two paths and one method need a request line and
//! two headers, and every bound that matters (request size, the time to send a request,
//! connections at once) is a few lines here, where a framework would bring tens of crates
//! into a program meant to stay small and unprivileged.
//!
//! Bounds: a request head of at most [`Limits::max_head`] bytes (else 431 and the connection
//! closed), sent within [`Limits::header_timeout`] (else 408 and closed: a slow client holds
//! one connection for that long at most), [`Limits::max_connections`] served at once (one
//! more is closed at once, unread), a response written within [`Limits::write_timeout`].
//! Keep-alive as HTTP/1.1 has it, each next request bounded as the first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::timeout;

use crate::collect::Collector;
use crate::render::{write_scrape, Format, OwnCounter, Sink};

#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub max_head: usize,
    pub header_timeout: Duration,
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 32,
            max_head: 8 * 1024,
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// Why a request was not served.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("request head larger than {0} bytes")]
    TooLarge(usize),
    #[error("request not sent within {0:?}")]
    Timeout(Duration),
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("connection closed")]
    Closed,
    #[error("read failed: {0}")]
    Io(String),
}

/// What the server counts, exported under `rdma_exporter_http_*`.
#[derive(Debug, Default)]
pub struct Stats {
    pub rejected_connections: AtomicU64,
    pub bad_requests: AtomicU64,
}

/// Serves `listener` until it fails.
pub async fn serve(
    listener: TcpListener,
    collector: Arc<Collector>,
    limits: Limits,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let stats = Arc::new(Stats::default());
    let limits = Arc::new(limits);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors and the like: wait instead of spinning.
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            stats.rejected_connections.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, "connection refused: {} served already", limits.max_connections);
            drop(stream);
            continue;
        };
        let (collector, limits, stats) = (collector.clone(), limits.clone(), stats.clone());
        tokio::spawn(async move {
            if let Err(e) = connection(stream, &collector, &limits, &stats).await {
                tracing::debug!(%peer, "{e}");
            }
            drop(permit);
        });
    }
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub accept: Option<String>,
    pub keep_alive: bool,
    /// HTTP/1.1 (else 1.0, which has no chunked responses).
    pub http_1_1: bool,
}

async fn connection(
    mut stream: TcpStream,
    collector: &Collector,
    limits: &Limits,
    stats: &Stats,
) -> Result<(), RequestError> {
    // A scrape is written in chunks as it is rendered: each sent at once, not held for the
    // peer's acknowledgement of the last (Nagle's algorithm).
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    loop {
        let head = match read_head(&mut stream, &mut buf, limits).await {
            Ok(h) => h,
            Err(RequestError::Closed) => return Ok(()),
            Err(e) => {
                stats.bad_requests.fetch_add(1, Ordering::Relaxed);
                let status = match e {
                    RequestError::TooLarge(_) => Some("431 Request Header Fields Too Large"),
                    RequestError::Timeout(_) => Some("408 Request Timeout"),
                    RequestError::Malformed(_) => Some("400 Bad Request"),
                    _ => None,
                };
                if let Some(status) = status {
                    let _ = respond(
                        &mut stream,
                        limits,
                        status,
                        "text/plain",
                        &format!("{e}\n"),
                        false,
                        false,
                    )
                    .await;
                }
                return Err(e);
            }
        };
        let req = match parse_head(&head) {
            Ok(r) => r,
            Err(e) => {
                stats.bad_requests.fetch_add(1, Ordering::Relaxed);
                let _ = respond(
                    &mut stream,
                    limits,
                    "400 Bad Request",
                    "text/plain",
                    &format!("{e}\n"),
                    false,
                    false,
                )
                .await;
                return Err(e);
            }
        };
        let head_only = req.method == "HEAD";
        let path = req.path.split('?').next().unwrap_or("");
        if path == "/metrics" && (req.method == "GET" || head_only) {
            let keep_alive = metrics(&mut stream, collector, limits, stats, &req).await?;
            if !keep_alive {
                return Ok(());
            }
            continue;
        }
        let (status, ctype, body) = if req.method != "GET" && !head_only {
            (
                "405 Method Not Allowed",
                "text/plain",
                "only GET and HEAD\n".to_string(),
            )
        } else {
            match path {
                "/" => ("200 OK", "text/html; charset=utf-8", INDEX.to_string()),
                _ => (
                    "404 Not Found",
                    "text/plain",
                    "not found: try /metrics\n".to_string(),
                ),
            }
        };
        respond(
            &mut stream,
            limits,
            status,
            ctype,
            &body,
            head_only,
            req.keep_alive,
        )
        .await?;
        if !req.keep_alive {
            return Ok(());
        }
    }
}

/// A scrape's response, written as it is rendered: chunked (HTTP/1.1 keep-alive), else
/// ended by closing the connection, as HTTP/1.0 and `Connection: close` have it. Whether the
/// connection stays open.
async fn metrics(
    stream: &mut TcpStream,
    collector: &Collector,
    limits: &Limits,
    stats: &Stats,
    req: &Request,
) -> Result<bool, RequestError> {
    let format = Format::from_accept(req.accept.as_deref());
    let chunked = req.keep_alive && req.http_1_1;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\n{}\r\n",
        format.content_type(),
        if chunked {
            "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n"
        } else {
            "Connection: close\r\n"
        },
    );
    let write = async {
        if req.method == "HEAD" {
            // The head a GET would get, without the scrape.
            return stream.write_all(head.as_bytes()).await;
        }
        let scrape = collector.scrape().await;
        stream.write_all(head.as_bytes()).await?;
        let mut body = Body {
            stream: &mut *stream,
            chunked,
            frame: Vec::new(),
        };
        write_scrape(&mut body, &scrape, format, &http_counters(stats)).await?;
        if chunked {
            stream.write_all(b"0\r\n\r\n").await?;
        }
        stream.flush().await
    };
    match timeout(limits.write_timeout, write).await {
        Ok(Ok(())) => Ok(chunked),
        Ok(Err(e)) => Err(RequestError::Io(e.to_string())),
        Err(_) => Err(RequestError::Timeout(limits.write_timeout)),
    }
}

/// A response's body as the scrape is written: each piece a chunk of its own when chunked,
/// else the bytes as they are.
struct Body<'a> {
    stream: &'a mut TcpStream,
    chunked: bool,
    /// A chunk with its framing, sent in one write.
    frame: Vec<u8>,
}

impl Sink for Body<'_> {
    async fn write(&mut self, text: &str) -> std::io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        if !self.chunked {
            return self.stream.write_all(text.as_bytes()).await;
        }
        self.frame.clear();
        self.frame
            .extend_from_slice(format!("{:x}\r\n", text.len()).as_bytes());
        self.frame.extend_from_slice(text.as_bytes());
        self.frame.extend_from_slice(b"\r\n");
        self.stream.write_all(&self.frame).await
    }
}

const INDEX: &str = "<html><head><title>rdma-exporter</title></head><body>\
<h1>rdma-exporter</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

fn http_counters(stats: &Stats) -> [OwnCounter; 2] {
    [
        OwnCounter {
            name: "rdma_exporter_http_rejected_connections_total",
            help: "Connections closed unread because the most allowed were being served.",
            value: stats.rejected_connections.load(Ordering::Relaxed),
        },
        OwnCounter {
            name: "rdma_exporter_http_bad_requests_total",
            help: "Requests refused as too large, too slow or malformed.",
            value: stats.bad_requests.load(Ordering::Relaxed),
        },
    ]
}

/// Reads up to the end of a request head (the blank line), within the limits; the bytes after
/// it stay in `buf` for the next request.
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    limits: &Limits,
) -> Result<Vec<u8>, RequestError> {
    let deadline = tokio::time::Instant::now() + limits.header_timeout;
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = find_end(buf) {
            let head = buf[..end].to_vec();
            buf.drain(..end);
            return Ok(head);
        }
        if buf.len() >= limits.max_head {
            return Err(RequestError::TooLarge(limits.max_head));
        }
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) if buf.is_empty() => return Err(RequestError::Closed),
            Err(_) => return Err(RequestError::Timeout(limits.header_timeout)),
            Ok(Err(e)) => return Err(RequestError::Io(e.to_string())),
            Ok(Ok(0)) if buf.is_empty() => return Err(RequestError::Closed),
            Ok(Ok(0)) => return Err(RequestError::Malformed("connection closed mid-request")),
            Ok(Ok(n)) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The index just past the blank line ending a head, if `buf` holds one.
fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .or_else(|| buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2))
}

/// The request line and the headers this server reads.
pub fn parse_head(head: &[u8]) -> Result<Request, RequestError> {
    let text = std::str::from_utf8(head).map_err(|_| RequestError::Malformed("not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let line = lines
        .next()
        .ok_or(RequestError::Malformed("no request line"))?;
    let mut parts = line.split(' ');
    let (Some(method), Some(path), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(RequestError::Malformed(
            "request line is not METHOD PATH VERSION",
        ));
    };
    if !path.starts_with('/') {
        return Err(RequestError::Malformed("path does not start with /"));
    }
    let mut keep_alive = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(RequestError::Malformed("not HTTP/1.0 or HTTP/1.1")),
    };
    let mut accept = None;
    for l in lines.filter(|l| !l.is_empty()) {
        let (k, v) = l
            .split_once(':')
            .ok_or(RequestError::Malformed("header without a colon"))?;
        let v = v.trim();
        if k.eq_ignore_ascii_case("accept") {
            accept = Some(v.to_string());
        } else if k.eq_ignore_ascii_case("connection") {
            if v.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if v.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        } else if (k.eq_ignore_ascii_case("content-length") && v != "0")
            || k.eq_ignore_ascii_case("transfer-encoding")
        {
            // A body is never read: one sent would be taken for the next request.
            return Err(RequestError::Malformed("a request body is not accepted"));
        }
    }
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
        accept,
        keep_alive,
        http_1_1: version == "HTTP/1.1",
    })
}

async fn respond(
    stream: &mut TcpStream,
    limits: &Limits,
    status: &str,
    content_type: &str,
    body: &str,
    head_only: bool,
    keep_alive: bool,
) -> Result<(), RequestError> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        if !head_only {
            stream.write_all(body.as_bytes()).await?;
        }
        stream.flush().await
    };
    match timeout(limits.write_timeout, write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(RequestError::Io(e.to_string())),
        Err(_) => Err(RequestError::Timeout(limits.write_timeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_request_is_read_with_its_accept_header() {
        let r = parse_head(
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/metrics");
        assert_eq!(r.accept.as_deref(), Some("application/openmetrics-text"));
        assert!(r.keep_alive);
        let r = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(!r.keep_alive);
    }

    #[test]
    fn malformed_requests_are_refused_with_their_reason() {
        for (head, want) in [
            (
                &b"GET /metrics\r\n\r\n"[..],
                "request line is not METHOD PATH VERSION",
            ),
            (
                b"GET metrics HTTP/1.1\r\n\r\n",
                "path does not start with /",
            ),
            (b"GET / HTTP/2\r\n\r\n", "not HTTP/1.0 or HTTP/1.1"),
            (
                b"GET / HTTP/1.1\r\nbroken\r\n\r\n",
                "header without a colon",
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n",
                "a request body is not accepted",
            ),
            (b"GET / HTTP/1.1\r\n\xff\r\n\r\n", "not UTF-8"),
        ] {
            assert_eq!(parse_head(head), Err(RequestError::Malformed(want)));
        }
    }
}
