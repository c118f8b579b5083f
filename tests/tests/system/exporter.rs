//! rdma-exporter end to end: the simulated demo host served by the daemon on a private bus,
//! the exporter reading it, and the consumers of what it serves: `promtool check metrics`, a
//! real Prometheus (Debian's `prometheus`) scraping it and answering queries, `promtool
//! check rules` and `promtool test rules` on the shipped alert rules; a link flap between two
//! scrapes; bad HTTP input; the textfile mode of the binary; its unit files and man page.
//!
//! A check whose tool is missing (promtool, prometheus, systemd-analyze, groff) prints why
//! and passes, unless `RDMA_MANAGER_REQUIRE_TOOLS=1`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use rdma_exporter::args::BusChoice;
use rdma_exporter::http::{self, Limits};
use rdma_exporter::Collector;
use rdma_manager_dbus::PortProxy;
use rdma_manager_tests::bus::{tools_required, PrivateBus};
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip, ServedSim};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::model::{PhysState, PortState};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

/// The tool on PATH, or `None` after saying which package provides it (a failure under
/// `RDMA_MANAGER_REQUIRE_TOOLS=1`).
fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            !tools_required(),
            "{name} is missing (Debian package {package}) and RDMA_MANAGER_REQUIRE_TOOLS=1"
        );
        eprintln!("skipping: {name} not found (Debian package {package})");
    }
    found
}

/// The daemon on the demo host, the exporter following it and serving HTTP.
struct Served {
    sim: SimHost,
    bus: PrivateBus,
    collector: Arc<Collector>,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The daemon's direct socket, which the exporter asks for the counters.
    direct: rdma_managerd::dbus::direct::DirectSocket,
    dir: tempfile::TempDir,
    service: ServedSim,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve(limits: Limits) -> Option<Served> {
    let bus = session_bus_or_skip()?;
    let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
    let config = EngineConfig {
        tick: Duration::from_millis(100),
        // The tests watch counters fail and recover within seconds: the daemon reads them
        // again after a second, not the default's ten.
        counters_max_age: Duration::from_secs(1),
        ..EngineConfig::default()
    };
    let service = serve_sim(&bus, &sim, config).await.expect("daemon");
    let dir = tempfile::tempdir().expect("temp dir");
    let direct = rdma_managerd::dbus::direct::listen(
        &dir.path().join("direct"),
        service.service.direct_sources(),
    )
    .expect("direct socket");
    let conn = rdma_exporter::connect(&BusChoice::Address(bus.address().to_string()))
        .await
        .expect("exporter connects");
    let collector = rdma_exporter::start(conn, Some(direct.path().to_path_buf()));
    assert!(
        rdma_exporter::wait_loaded(&collector, Duration::from_secs(10)).await,
        "the exporter read the daemon"
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let addr = listener.local_addr().expect("address");
    let server = tokio::spawn(http::serve(listener, collector.clone(), limits));
    Some(Served {
        sim,
        bus,
        collector,
        addr,
        server,
        direct,
        dir,
        service,
    })
}

/// One HTTP exchange with `Connection: close`: (status line, head, body).
async fn http_get(addr: SocketAddr, request: &str) -> Result<(String, String, String)> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(request.as_bytes()).await?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .context("response within 20 s")??;
    let text = String::from_utf8(out).context("UTF-8 response")?;
    let (head, body) = text.split_once("\r\n\r\n").context("a response head")?;
    let status = head.lines().next().unwrap_or("").to_string();
    Ok((status, head.to_string(), body.to_string()))
}

async fn metrics(addr: SocketAddr, accept: Option<&str>) -> Result<(String, String)> {
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    let (status, head, body) = http_get(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n"),
    )
    .await?;
    ensure!(status == "HTTP/1.1 200 OK", "{status}");
    Ok((head, body))
}

/// The value of the sample whose line starts with `series` (name and labels, exactly).
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn promtool_check_metrics(promtool: &Path, text: &str) -> Result<()> {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().context("stdin")?;
        stdin.write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {said}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exporter_serves_node_exporters_names_and_promtool_finds_nothing_to_lint() -> Result<()>
{
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let (head, body) = metrics(s.addr, None).await?;
    ensure!(
        head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    // node_exporter 1.5's names, labels and units, for the demo host's values.
    for line in [
        "node_infiniband_info{board_id=\"MT_0000000223\",device=\"mlx5_0\",firmware_version=\"20.31.1014\",hca_type=\"MT4123\"} 1",
        "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4",
        "node_infiniband_physical_state_id{device=\"mlx5_0\",port=\"1\"} 5",
        "node_infiniband_rate_bytes_per_second{device=\"mlx5_0\",port=\"1\"} 25000000000",
        "node_infiniband_rate_bytes_per_second{device=\"rxe0\",port=\"1\"} 1250000000",
        "rdma_port_info{device=\"rxe0\",port=\"1\",link_layer=\"Ethernet\",netdev=\"eth0\",port_guid=\"0x505400fffe123456\",counter_source=\"netdev\",netdev_owner=\"\"} 1",
        "rdma_port_state{device=\"mlx5_0\",port=\"1\",state=\"ACTIVE\"} 1",
        "rdma_port_state{device=\"mlx5_0\",port=\"1\",state=\"DOWN\"} 0",
        "rdma_port_pkey_info{device=\"mlx5_0\",port=\"1\",index=\"0\",pkey=\"0xffff\"} 1",
        "rdma_ipoib_mtu_bytes{interface=\"ibp59s0f0\"} 4092",
        "rdma_daemon_state_stale 0",
        "rdma_exporter_daemon_up 1",
    ] {
        ensure!(body.lines().any(|l| l == line), "no {line} in\n{body}");
    }
    // The PMA's data counter is words x 4, in bytes, as node_exporter exports it; rxe's
    // traffic (no PMA) is not under node_exporter's name, only under rdma_port_*.
    ensure!(
        value(
            &body,
            "node_infiniband_port_data_transmitted_bytes_total{device=\"mlx5_0\",port=\"1\"}"
        )
        .is_some(),
        "{body}"
    );
    ensure!(!body.contains("node_infiniband_port_data_transmitted_bytes_total{device=\"rxe0\""));
    ensure!(
        value(
            &body,
            "rdma_port_transmitted_bytes_total{device=\"rxe0\",port=\"1\"}"
        )
        .is_some(),
        "{body}"
    );
    ensure!(body.contains(
        "rdma_port_hw_stat_total{device=\"rxe0\",port=\"1\",stat=\"duplicate_request\"}"
    ));
    // PFC frames per priority of the mlx5 RoCE port's netdev (DCB), not as PMA counters.
    for family in [
        "rdma_port_pfc_requests_total",
        "rdma_port_pfc_indications_total",
    ] {
        ensure!(
            value(
                &body,
                &format!("{family}{{device=\"mlx5_1\",port=\"1\",priority=\"3\"}}")
            )
            .is_some(),
            "{family}: {body}"
        );
    }
    ensure!(!body.contains("stat=\"pfc."), "{body}");
    // Link-level pause frames of the same netdev (ethtool's pause statistics).
    for family in [
        "rdma_port_pause_tx_frames_total",
        "rdma_port_pause_rx_frames_total",
    ] {
        ensure!(
            value(&body, &format!("{family}{{device=\"mlx5_1\",port=\"1\"}}")).is_some(),
            "{family}: {body}"
        );
    }
    ensure!(!body.contains("stat=\"pause."), "{body}");
    // Port types of the VPI adapters (mlx4 at run time, mlx5 in firmware); none for rxe.
    ensure!(
        value(
            &body,
            "rdma_port_type_info{device=\"mlx5_1\",port=\"1\",type=\"eth\",control=\"firmware\",next=\"eth\"}"
        ) == Some(1.0),
        "{body}"
    );
    ensure!(
        value(
            &body,
            "rdma_port_type_reboot_needed{device=\"mlx5_1\",port=\"1\"}"
        ) == Some(0.0),
        "{body}"
    );
    ensure!(
        !body.contains("rdma_port_type_info{device=\"rxe0\""),
        "{body}"
    );
    // HELP and TYPE for every family, counters ending in _total.
    let mut helped = std::collections::BTreeSet::new();
    for l in body.lines() {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            helped.insert(rest.split(' ').next().unwrap_or("").to_string());
        } else if let Some(rest) = l.strip_prefix("# TYPE ") {
            let mut w = rest.split(' ');
            let (name, kind) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
            ensure!(helped.contains(name), "{name} has no HELP");
            ensure!(kind != "counter" || name.ends_with("_total"), "{name}");
        } else {
            let name = l.split(['{', ' ']).next().unwrap_or("");
            ensure!(
                helped.contains(name),
                "{name} has no HELP before its samples"
            );
        }
    }

    // OpenMetrics when asked, as Prometheus asks.
    let (head, om) = metrics(
        s.addr,
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    )
    .await?;
    ensure!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    ensure!(om.ends_with("# EOF\n"));
    ensure!(om.contains("# TYPE node_infiniband_link_downed counter\n"));
    ensure!(om.contains("\nnode_infiniband_link_downed_total{"));
    // The HTTP server's own counters too: family named without `_total`, samples with it.
    ensure!(
        om.contains("# TYPE rdma_exporter_http_bad_requests counter\n")
            && om.contains("\nrdma_exporter_http_bad_requests_total 0\n")
            && !om.contains("# TYPE rdma_exporter_http_bad_requests_total"),
        "{om}"
    );
    ensure!(body.contains("# TYPE rdma_exporter_http_bad_requests_total counter\n"));
    // When the daemon read the counters: within the last few seconds.
    let read_at = value(&body, "rdma_exporter_counters_timestamp_seconds").context("timestamp")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64();
    ensure!(
        read_at <= now && now - read_at < 10.0,
        "read at {read_at}, now {now}"
    );

    if let Some(promtool) = tool("promtool", "prometheus") {
        promtool_check_metrics(&promtool, &body)?;
    }
    Ok(())
}

/// A TCP port free at the moment of asking, on loopback.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus' HTTP API, GET `path`: the `data` of a success.
async fn prom_api(addr: SocketAddr, path: &str) -> Result<serde_json::Value> {
    let (status, _, body) =
        http_get(addr, &format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n")).await?;
    let v: serde_json::Value = serde_json::from_str(&body).with_context(|| body.clone())?;
    ensure!(
        status.contains(" 200 ") && v["status"] == "success",
        "{path}: {status} {body}"
    );
    Ok(v["data"].clone())
}

async fn query(addr: SocketAddr, q: &str) -> Result<Vec<serde_json::Value>> {
    let data = prom_api(addr, &format!("/api/v1/query?query={}", encode(q))).await?;
    Ok(data["result"].as_array().cloned().unwrap_or_default())
}

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_exporter_and_its_query_api_returns_the_demo_hosts_series(
) -> Result<()> {
    let Some(prometheus) = tool("prometheus", "prometheus") else {
        return Ok(());
    };
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let rules = repo().join("dist/prometheus/rdma-alerts.yml");
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: rdma\n    static_configs:\n      - targets: [\"{}\"]\n",
        rules.display(),
        s.addr
    );
    std::fs::write(dir.path().join("prometheus.yml"), config)?;
    let port = free_port()?;
    let web: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let _prom = Child(
        Command::new(prometheus)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting prometheus")?,
    );
    // Until the scrape has landed: every port's state.
    let deadline = Instant::now() + Duration::from_secs(60);
    let states = loop {
        if let Ok(r) = query(web, "node_infiniband_state_id").await {
            if r.len() == 5 {
                break r;
            }
        }
        if Instant::now() > deadline {
            bail!("Prometheus has no node_infiniband_state_id of the 5 demo ports within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    for r in &states {
        ensure!(r["metric"]["job"] == "rdma", "{r}");
        ensure!(r["value"][1] == "4", "every demo port is ACTIVE: {r}");
    }
    let up = query(web, "up{job=\"rdma\"}").await?;
    ensure!(up.len() == 1 && up[0]["value"][1] == "1", "{up:?}");
    let info = query(web, "node_infiniband_info{device=\"mlx5_0\"}").await?;
    ensure!(
        info.len() == 1 && info[0]["metric"]["hca_type"] == "MT4123",
        "{info:?}"
    );
    let rxe = query(web, "rdma_port_info{device=\"rxe0\"}").await?;
    ensure!(
        rxe.len() == 1
            && rxe[0]["metric"]["link_layer"] == "Ethernet"
            && rxe[0]["metric"]["counter_source"] == "netdev",
        "{rxe:?}"
    );
    let stale = query(web, "rdma_daemon_state_stale").await?;
    ensure!(stale.len() == 1 && stale[0]["value"][1] == "0", "{stale:?}");
    let hw = query(
        web,
        "rdma_port_hw_stat_total{device=\"rxe0\",stat=\"duplicate_request\"}",
    )
    .await?;
    ensure!(hw.len() == 1, "{hw:?}");
    // The shipped rules are loaded, and no alert fires on the healthy demo host.
    let groups = prom_api(web, "/api/v1/rules").await?;
    let names: Vec<String> = groups["groups"][0]["rules"]
        .as_array()
        .context("rules")?
        .iter()
        .map(|r| r["name"].as_str().unwrap_or("").to_string())
        .collect();
    ensure!(
        names
            == [
                "RdmaPortDown",
                "RdmaPortFlapping",
                "RdmaPortErrorsRising",
                "RdmaDaemonStateStale",
                "RdmaDaemonUnreachable"
            ],
        "{names:?}"
    );
    // Every query of the shipped dashboard is valid PromQL over these series.
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        repo().join("dist/prometheus/grafana-dashboard.json"),
    )?)?;
    for panel in dash["panels"].as_array().context("panels")? {
        for t in panel["targets"].as_array().context("targets")? {
            let expr = t["expr"]
                .as_str()
                .context("expr")?
                .replace("$instance", ".*")
                .replace("$__rate_interval", "1m");
            query(web, &expr)
                .await
                .with_context(|| format!("panel {}: {expr}", panel["title"]))?;
        }
    }
    drop(s);
    Ok(())
}

/// Scrapes every 200 ms until `holds` says yes of one, at most `limit`; that scrape's text.
async fn scrape_until(
    addr: SocketAddr,
    limit: Duration,
    what: &str,
    holds: impl Fn(&str) -> bool,
) -> Result<String> {
    let deadline = Instant::now() + limit;
    loop {
        let (_, body) = metrics(addr, None).await?;
        if holds(&body) {
            return Ok(body);
        }
        ensure!(
            Instant::now() < deadline,
            "{what} not within {limit:?}:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The series of a scrape that come from the daemon's counters and model (not the
/// exporter's own timings), with their values; PFC counters left out, as the simulated host
/// moves them at every read.
fn daemon_series(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("node_infiniband_") || l.starts_with("rdma_port_"))
        .filter(|l| !l.starts_with("rdma_port_pfc_"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counters_come_through_the_direct_socket_as_the_bus_gives_them() -> Result<()> {
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let before = s.direct.answered();
    let (_, direct) = metrics(s.addr, None).await?;
    ensure!(
        s.direct.answered() == before + 1,
        "one GetAllCounters on the direct socket, answered {} then {}",
        before,
        s.direct.answered()
    );
    ensure!(value(&direct, "rdma_exporter_port_read_errors") == Some(0.0));
    ensure!(
        direct.contains("rdma_port_transmitted_bytes_total{")
            && direct.contains("node_infiniband_symbol_error_total{"),
        "{direct}"
    );

    // An exporter asking the bus, and one given a socket that is not there (it falls back
    // to the bus): the same series, and nothing more asked of the socket.
    for socket in [None, Some(s.dir.path().join("absent"))] {
        let conn = rdma_exporter::connect(&BusChoice::Address(s.bus.address().to_string())).await?;
        let other = rdma_exporter::start(conn, socket.clone());
        ensure!(rdma_exporter::wait_loaded(&other, Duration::from_secs(10)).await);
        let scrape = other.scrape().await;
        ensure!(scrape.counter_errors == 0, "{socket:?}: {scrape:?}");
        let text = rdma_exporter::render(&scrape, rdma_exporter::Format::Prometheus).await;
        ensure!(
            daemon_series(&text) == daemon_series(&direct),
            "{socket:?}: through the bus\n{text}\nthrough the socket\n{direct}"
        );
    }
    ensure!(s.direct.answered() == before + 1);
    Ok(())
}

/// A kept connection the daemon closed for idleness is replaced at the next scrape, which
/// still gets its counters on the socket, not on the bus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_for_idleness_is_made_again() -> Result<()> {
    use rdma_managerd::dbus::direct::{self, Bounds};
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let path = s.dir.path().join("impatient");
    let idle = Duration::from_millis(300);
    let socket = direct::listen_with(
        &path,
        s.service.service.direct_sources(),
        Bounds {
            idle,
            ..Bounds::default()
        },
    )?;
    let conn = rdma_exporter::connect(&BusChoice::Address(s.bus.address().to_string())).await?;
    let exporter = rdma_exporter::start(conn, Some(path));
    ensure!(rdma_exporter::wait_loaded(&exporter, Duration::from_secs(10)).await);
    for n in 1..=2 {
        let scrape = exporter.scrape().await;
        ensure!(scrape.counter_errors == 0, "{scrape:?}");
        ensure!(
            socket.answered() == n,
            "scrape {n}: {} answered",
            socket.answered()
        );
        // Past the exporter's reuse and the socket's idle bound.
        tokio::time::sleep(idle.max(rdma_exporter::collect::REUSE) * 2).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_daemon_and_unreadable_counters_show_and_clear() -> Result<()> {
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let (_, body) = metrics(s.addr, None).await?;
    ensure!(
        value(&body, "rdma_daemon_state_stale") == Some(0.0),
        "{body}"
    );
    ensure!(value(&body, "rdma_daemon_state_stale_since_seconds") == Some(0.0));
    ensure!(value(&body, "rdma_exporter_port_read_errors") == Some(0.0));
    let ports = body
        .lines()
        .filter(|l| l.starts_with("rdma_port_info{"))
        .count() as f64;
    ensure!(ports == 5.0, "the demo host's five ports: {body}");

    // Out of descriptors: a port's event cannot be re-read, nor can any counter.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64();
    s.sim.fail_reads(Some(rdma_managerd::model::Errno::EMFILE));
    s.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Disabled)?;
    let stale = scrape_until(s.addr, Duration::from_secs(10), "stale", |b| {
        value(b, "rdma_daemon_state_stale") == Some(1.0)
            && value(b, "rdma_exporter_port_read_errors") == Some(ports)
    })
    .await?;
    let since = value(&stale, "rdma_daemon_state_stale_since_seconds").context("since")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64();
    ensure!(
        since >= before - 1.0 && since <= now,
        "stale since {since}, not in [{before}, {now}]"
    );
    // The last state read stays published, and is marked as such.
    ensure!(
        value(
            &stale,
            "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"}"
        ) == Some(4.0),
        "{stale}"
    );
    ensure!(
        !stale.contains("node_infiniband_symbol_error_total{"),
        "{stale}"
    );

    // Reads work again: the daemon recovers by itself, the exporter follows.
    s.sim.fail_reads(None);
    let fresh = scrape_until(s.addr, Duration::from_secs(15), "recovery", |b| {
        value(b, "rdma_daemon_state_stale") == Some(0.0)
            && value(b, "rdma_exporter_port_read_errors") == Some(0.0)
    })
    .await?;
    ensure!(value(&fresh, "rdma_daemon_state_stale_since_seconds") == Some(0.0));
    ensure!(
        value(
            &fresh,
            "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"}"
        ) == Some(1.0),
        "the true state once read: {fresh}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_down_and_up_between_two_scrapes_is_counted_as_two_state_changes() -> Result<()> {
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let series = "rdma_port_state_changes_total{device=\"mlx5_0\",port=\"1\"}";
    let (_, before) = metrics(s.addr, None).await?;
    ensure!(value(&before, series) == Some(0.0), "{before}");
    let path = rdma_exporter::follow::lock(s.collector.model())
        .view()
        .ports
        .iter()
        .find(|p| p.device == "mlx5_0" && p.number == 1)
        .map(|p| p.path.clone())
        .context("mlx5_0/1")?;
    let client = s.bus.connect().await?;
    let port: PortProxy<'static> = PortProxy::builder(&client)
        .path(path)?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    // Each state held until the daemon has published it (a change the daemon never sees is
    // no one's to count; the PMA's link_downed counter is for those).
    for (state, phys, name) in [
        (PortState::Down, PhysState::Polling, "DOWN"),
        (PortState::Active, PhysState::LinkUp, "ACTIVE"),
    ] {
        s.sim.set_port_state("mlx5_0", 1, state, phys)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while port.state().await? != name {
            ensure!(
                Instant::now() < deadline,
                "the daemon never published {name}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The signals reach the exporter after the property did.
    tokio::time::sleep(rdma_exporter::collect::REUSE + Duration::from_millis(200)).await;
    let (_, after) = metrics(s.addr, None).await?;
    ensure!(
        value(
            &after,
            "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"}"
        ) == Some(4.0),
        "a scrape sees the port ACTIVE as before: {after}"
    );
    ensure!(value(&after, series) == Some(2.0), "{after}");
    // The daemon keeps the count (Port.StateChanges): an exporter started after the flap
    // shows it too.
    ensure!(port.state_changes().await? == 2);
    let conn = rdma_exporter::connect(&BusChoice::Address(s.bus.address().to_string())).await?;
    // Without the direct socket: the counters through the bus, the same.
    let late = rdma_exporter::start(conn, None);
    ensure!(rdma_exporter::wait_loaded(&late, Duration::from_secs(10)).await);
    let text =
        rdma_exporter::render(&*late.scrape().await, rdma_exporter::Format::Prometheus).await;
    ensure!(value(&text, series) == Some(2.0), "{text}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_http_input_is_refused_and_bounded_and_scrapes_go_on() -> Result<()> {
    let limits = Limits {
        max_connections: 4,
        header_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let Some(s) = serve(limits.clone()).await else {
        return Ok(());
    };
    let (status, _, _) =
        http_get(s.addr, "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n").await?;
    ensure!(status == "HTTP/1.1 404 Not Found", "{status}");
    let (status, _, body) = http_get(s.addr, "GET / HTTP/1.0\r\n\r\n").await?;
    ensure!(
        status == "HTTP/1.1 200 OK" && body.contains("/metrics"),
        "{status}"
    );
    let (status, _, _) = http_get(
        s.addr,
        "DELETE /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .await?;
    ensure!(status == "HTTP/1.1 405 Method Not Allowed", "{status}");
    let (status, _, body) = http_get(s.addr, "GET /metrics\r\n\r\n").await?;
    ensure!(status == "HTTP/1.1 400 Bad Request", "{status}");
    ensure!(
        body.contains("request line is not METHOD PATH VERSION"),
        "{body}"
    );

    // A head larger than 8 KiB: 431, and the connection closed.
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Filler: ".to_vec();
    huge.resize(limits.max_head, b'a');
    let mut c = TcpStream::connect(s.addr).await?;
    c.write_all(&huge).await?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut out)).await??;
    let out = String::from_utf8_lossy(&out);
    ensure!(out.starts_with("HTTP/1.1 431 "), "{out}");

    // A client sending its head slowly: 408 after the header timeout, whatever it sends.
    let started = Instant::now();
    let mut c = TcpStream::connect(s.addr).await?;
    c.write_all(b"GET /metrics HTTP/1.1\r\n").await?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            // A byte now and then never extends the deadline.
            if c.write_all(b"X").await.is_err() {
                break;
            }
            let mut buf = [0u8; 256];
            match tokio::time::timeout(Duration::from_millis(100), c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
    })
    .await?;
    let took = started.elapsed();
    let out = String::from_utf8_lossy(&out);
    ensure!(out.starts_with("HTTP/1.1 408 "), "{out}");
    ensure!(
        took >= limits.header_timeout && took < Duration::from_secs(3),
        "{took:?}"
    );

    // Many connections: the fifth while four send nothing is closed unread at once, and the
    // daemon answers its bus clients meanwhile as quickly as ever.
    let mut idle = Vec::new();
    for _ in 0..limits.max_connections {
        idle.push(TcpStream::connect(s.addr).await?);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut extra = TcpStream::connect(s.addr).await?;
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(1), extra.read(&mut buf))
        .await
        .context("the connection past the limit is closed at once")?
        .unwrap_or(0);
    ensure!(n == 0, "the connection past the limit got an answer");
    let client = s.bus.connect().await?;
    let t = Instant::now();
    client
        .call_method(
            Some(rdma_manager_dbus::BUS_NAME),
            rdma_manager_dbus::ROOT_PATH,
            Some("org.freedesktop.DBus.ObjectManager"),
            "GetManagedObjects",
            &(),
        )
        .await?;
    ensure!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // Once the idle ones time out, scrapes are served again, and the refusals are counted.
    tokio::time::sleep(limits.header_timeout + Duration::from_millis(300)).await;
    let (_, body) = metrics(s.addr, None).await?;
    ensure!(
        value(&body, "rdma_exporter_http_rejected_connections_total") == Some(1.0),
        "{body}"
    );
    ensure!(
        value(&body, "rdma_exporter_http_bad_requests_total").is_some_and(|v| v >= 3.0),
        "{body}"
    );
    drop(idle);
    Ok(())
}

/// One response read off a kept-alive connection: its head and its body, chunked (none
/// when it answers a HEAD: `body` false).
async fn chunked_response(c: &mut TcpStream, body: bool) -> Result<(String, String)> {
    let mut r = tokio::io::BufReader::new(c);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        ensure!(r.read_line(&mut line).await? > 0, "closed mid-head: {head}");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    ensure!(
        head.contains("Transfer-Encoding: chunked\r\n"),
        "not chunked: {head}"
    );
    if !body {
        return Ok((head, String::new()));
    }
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size).await?;
        let n = usize::from_str_radix(size.trim_end(), 16).context("a chunk's size")?;
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk).await?;
        ensure!(chunk.ends_with(b"\r\n"), "a chunk not ended by CRLF");
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok((head, String::from_utf8(body)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_gets_each_scrape_chunked_and_whole() -> Result<()> {
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let (_, whole) = metrics(s.addr, None).await?;
    let series = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("rdma_exporter_"))
            .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k).to_string())
            .collect()
    };
    let mut c = TcpStream::connect(s.addr).await?;
    // A HEAD, then two scrapes, one after another on one connection.
    c.write_all(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let (head, _) = tokio::time::timeout(Duration::from_secs(20), chunked_response(&mut c, false))
        .await
        .context("HEAD answered")??;
    ensure!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    for _ in 0..2 {
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await?;
        let (head, body) =
            tokio::time::timeout(Duration::from_secs(20), chunked_response(&mut c, true))
                .await
                .context("a scrape answered")??;
        ensure!(head.contains("Connection: keep-alive\r\n"), "{head}");
        ensure!(
            series(&body) == series(&whole),
            "the chunked scrape differs from the whole"
        );
    }
    Ok(())
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_test() -> Result<()> {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return Ok(());
    };
    let dir = repo().join("dist/prometheus");
    for args in [
        vec!["check", "rules", "rdma-alerts.yml"],
        vec!["test", "rules", "rdma-alerts.test.yml"],
    ] {
        let out = Command::new(&promtool)
            .current_dir(&dir)
            .args(&args)
            .output()?;
        ensure!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The example configuration, with its rule file where this tree has it.
    let scratch = tempfile::tempdir()?;
    let config = std::fs::read_to_string(dir.join("prometheus.yml"))?.replace(
        "/usr/share/doc/rdma-manager/examples/prometheus/rdma-alerts.yml",
        &dir.join("rdma-alerts.yml").display().to_string(),
    );
    std::fs::write(scratch.path().join("prometheus.yml"), config)?;
    let out = Command::new(&promtool)
        .args(["check", "config"])
        .arg(scratch.path().join("prometheus.yml"))
        .output()?;
    ensure!(
        out.status.success(),
        "promtool check config: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_textfile_mode_writes_a_file_node_exporter_and_promtool_read() -> Result<()> {
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let bin = rdma_manager_tests::tmux::workspace_bin("rdma-exporter")?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("rdma.prom");
    let out = tokio::process::Command::new(&bin)
        .arg(format!("--address={}", s.bus.address()))
        .arg(format!("--textfile={}", path.display()))
        .output()
        .await?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path)?;
    ensure!(text.contains("node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4"));
    let names: Vec<_> = std::fs::read_dir(dir.path())?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    ensure!(names == ["rdma.prom"], "{names:?}");
    if let Some(promtool) = tool("promtool", "prometheus") {
        promtool_check_metrics(&promtool, &text)?;
    }
    // A name the collector would not read is refused before anything is done.
    let out = tokio::process::Command::new(&bin)
        .arg(format!("--address={}", s.bus.address()))
        .arg(format!(
            "--textfile={}",
            dir.path().join("rdma.txt").display()
        ))
        .output()
        .await?;
    ensure!(!out.status.success());
    ensure!(String::from_utf8_lossy(&out.stderr).contains("end in .prom"));
    ensure!(!dir.path().join("rdma.txt").exists());
    Ok(())
}

/// Kills the child when dropped.
struct KillOnDrop(tokio::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_on_the_socket_systemd_passes() -> Result<()> {
    let Some(activate) = tool("systemd-socket-activate", "systemd") else {
        return Ok(());
    };
    let Some(s) = serve(Limits::default()).await else {
        return Ok(());
    };
    let bin = rdma_manager_tests::tmux::workspace_bin("rdma-exporter")?;
    let port = free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    // systemd's own way of passing a listening socket (LISTEN_FDS, LISTEN_PID), as the
    // .socket unit does; --listen names another port, which must not be used.
    let other = free_port()?;
    let _child = KillOnDrop(
        tokio::process::Command::new(activate)
            .arg(format!("--listen={addr}"))
            .arg(&bin)
            .arg(format!("--address={}", s.bus.address()))
            .arg(format!("--listen=127.0.0.1:{other}"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        match metrics(addr, None).await {
            Ok((_, body)) if body.contains("\nrdma_exporter_daemon_up 1\n") => break body,
            _ if Instant::now() > deadline => bail!("no scrape on the passed socket in 20 s"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    ensure!(
        body.contains("node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4"),
        "{body}"
    );
    ensure!(
        TcpStream::connect(("127.0.0.1", other)).await.is_err(),
        "the exporter listened on --listen as well"
    );
    Ok(())
}

#[test]
fn the_units_verify_and_the_man_page_documents_every_option() -> Result<()> {
    let page = std::fs::read_to_string(repo().join("dist/man/rdma-exporter.1"))?;
    ensure!(page.starts_with(".TH RDMA\\-EXPORTER 1 "));
    let plain = page.replace("\\-", "-");
    for long in rdma_exporter::args::long_options() {
        ensure!(
            plain.contains(&format!("--{long}")),
            "rdma-exporter.1 lacks --{long}"
        );
    }
    ensure!(plain.contains(rdma_exporter::DEFAULT_LISTEN));
    if let Some(groff) = tool("groff", "groff-base") {
        let out = Command::new(groff)
            .args(["-t", "-man", "-ww", "-z"])
            .arg(repo().join("dist/man/rdma-exporter.1"))
            .output()?;
        ensure!(
            out.status.success() && out.stderr.is_empty(),
            "groff: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The socket listens where the program does by default.
    let socket = std::fs::read_to_string(repo().join("dist/systemd/rdma-exporter.socket"))?;
    ensure!(socket.contains(&format!(
        "\nListenStream={}\n",
        rdma_exporter::DEFAULT_LISTEN
    )));
    let unit = std::fs::read_to_string(repo().join("dist/systemd/rdma-exporter.service"))?;
    for line in [
        "User=nobody",
        "CapabilityBoundingSet=",
        "ProtectSystem=strict",
    ] {
        ensure!(unit.lines().any(|l| l == line), "the unit lacks {line}");
    }
    let Some(analyze) = tool("systemd-analyze", "systemd") else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let placeholder = dir.path().join("rdma-exporter");
    std::fs::write(&placeholder, "#!/bin/sh\nexit 0\n")?;
    std::fs::set_permissions(
        &placeholder,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let from = "\nExecStart=/usr/bin/rdma-exporter\n";
    ensure!(unit.matches(from).count() == 1, "one ExecStart= expected");
    std::fs::write(
        dir.path().join("rdma-exporter.service"),
        unit.replace(from, &format!("\nExecStart={}\n", placeholder.display())),
    )?;
    std::fs::write(dir.path().join("rdma-exporter.socket"), socket)?;
    let out = Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(dir.path().join("rdma-exporter.service"))
        .arg(dir.path().join("rdma-exporter.socket"))
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The one warning taken: `User=nobody` is deliberate (the unit says why: dbus-daemon
    // does not serve a DynamicUser), until the package creates a user of its own.
    let unexpected: Vec<&str> = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !l.ends_with("Special user nobody configured, this is not safe!"))
        .collect();
    ensure!(
        out.status.success() && unexpected.is_empty(),
        "systemd-analyze verify:\n{said}"
    );
    Ok(())
}
