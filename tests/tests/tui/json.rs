//! One JSON document for scripts (docs/JSON.md): `rdma-managerd show --json` (the real
//! binary, reading a simulated host without a daemon) and `rdma-tui --json` (the real binary,
//! reading the D-Bus objects of the real daemon binary serving the same simulated host) print
//! the same document: the D-Bus model, versioned, every value as the D-Bus property gives it.

use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use rdma_manager_dbus::{device_path, BUS_NAME, HOST_PATH, ROOT_PATH};
use rdma_manager_tests::service::session_bus_or_skip;
use rdma_manager_tests::tmux::workspace_bin;
use serde_json::Value as Json;
use tokio::process::Command;

/// Standard output of a run that must succeed.
async fn stdout_of(program: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(program).args(args).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .with_context(|| format!("{} {args:?} did not finish in 60 s", program.display()))?
        .with_context(|| format!("running {}", program.display()))?;
    ensure!(
        out.status.success(),
        "{} {args:?} failed: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).context("stdout is not UTF-8")
}

/// Every place in `a` and `b` (JSON pointers) where they differ, for a readable failure.
fn differences(a: &Json, b: &Json, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Json::Null),
                    y.get(k).unwrap_or(&Json::Null),
                );
                differences(va, vb, format!("{at}/{k}"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} vs {b}")),
        _ => {}
    }
}

/// The keys of every object in `v`, at any depth.
fn all_keys<'a>(v: &'a Json, out: &mut Vec<&'a str>) {
    match v {
        Json::Object(m) => {
            for (k, v) in m {
                out.push(k);
                all_keys(v, out);
            }
        }
        Json::Array(a) => a.iter().for_each(|v| all_keys(v, out)),
        _ => {}
    }
}

/// Prints `show --json` of the simulated host `sim_host`, then starts the daemon binary on the
/// same host and reads `rdma-tui --json`; checks that both print the same text, and returns
/// the document. `None` when there is no dbus-daemon here.
async fn both_documents(sim_host: &str) -> Result<Option<Json>> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(None);
    };
    let managerd = workspace_bin("rdma-managerd")?;
    let tui = workspace_bin("rdma-tui")?;
    let dir = tempfile::tempdir()?;
    let simulate = format!("--simulate={}", dir.path().display());
    let host = format!("--sim-host={sim_host}");
    // `show` renders the host's tree into DIR and reads it; the daemon then serves DIR
    // (rendered again from the same description), as the daemon binary does with
    // --simulate: its own host services, the demo's traffic and all.
    let shown = stdout_of(&managerd, &["show", "--json", &simulate, &host]).await?;
    let _daemon = Command::new(&managerd)
        .args([
            format!("--address={}", bus.address()),
            simulate.clone(),
            host,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting rdma-managerd")?;
    // The daemon owns its name only once the whole model is published.
    bus.wait_for_name(BUS_NAME, Duration::from_secs(30)).await?;
    let read = stdout_of(&tui, &[&format!("--address={}", bus.address()), "--json"]).await?;

    let a: Json = serde_json::from_str(&shown).context("show --json is not JSON")?;
    let b: Json = serde_json::from_str(&read).context("rdma-tui --json is not JSON")?;
    let mut diff = Vec::new();
    differences(&a, &b, String::new(), &mut diff);
    ensure!(
        diff.is_empty(),
        "{sim_host}: show --json and rdma-tui --json differ (show vs tui):\n{}",
        diff.join("\n")
    );
    // The same text, too: both print the document the same way.
    ensure!(
        shown == read,
        "{sim_host}: same document, printed differently"
    );

    // No serde wrapper of a kernel reading anywhere: values are the properties'.
    let mut keys = Vec::new();
    all_keys(&a, &mut keys);
    ensure!(
        !keys.iter().any(|k| matches!(*k, "Ok" | "Err")),
        "{sim_host}: a Result wrapper in the document"
    );
    ensure!(a["version"] == 1, "version: {}", a["version"]);
    let objects = a["objects"].as_object().context("objects")?;
    let root = &objects[ROOT_PATH]["org.rdmamanager.RdmaManager1"];
    ensure!(
        root["Simulated"] == true
            && root["HistoryLength"] == 300
            && root["CoarseHistoryLength"] == 360,
        "{root}"
    );
    ensure!(
        objects[HOST_PATH]["org.rdmamanager.RdmaManager1.Host"]["Modules"].is_array(),
        "the Host object"
    );
    // Every object the root and the devices refer to is in the document.
    let devices = root["Devices"].as_array().context("Devices")?;
    ensure!(!devices.is_empty(), "{sim_host}: no device");
    for path in devices.iter().filter_map(Json::as_str) {
        let dev = &objects[path]["org.rdmamanager.RdmaManager1.Device"];
        let guid = dev["NodeGuid"].as_str().unwrap_or_default();
        // As the property gives it (ibstat's form), not the model's f452:1403:0003:9380.
        ensure!(guid.starts_with("0x") && guid.len() == 18, "{path}: {guid}");
        for port in dev["Ports"].as_array().context("Ports")? {
            let port = port.as_str().unwrap_or_default();
            ensure!(
                objects[port]["org.rdmamanager.RdmaManager1.Port"]["Number"].is_u64(),
                "{port} is among the objects"
            );
        }
    }
    for path in root["IpoibInterfaces"]
        .as_array()
        .context("IpoibInterfaces")?
    {
        let path = path.as_str().unwrap_or_default();
        ensure!(
            objects[path]["org.rdmamanager.RdmaManager1.Ipoib"]["Name"].is_string(),
            "{path} is among the objects"
        );
    }
    Ok(Some(a))
}

/// The demo host: two InfiniBand HCAs, a RoCE NIC, rxe0, IPoIB interfaces and P_Key children.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_json_and_tui_json_print_the_same_document_of_the_demo_host() -> Result<()> {
    let Some(doc) = both_documents("demo").await? else {
        return Ok(());
    };
    let objects = &doc["objects"];
    let root = &objects[ROOT_PATH]["org.rdmamanager.RdmaManager1"];
    ensure!(
        root["Devices"].as_array().map(Vec::len) == Some(4),
        "{root}"
    );
    ensure!(
        root["IpoibInterfaces"].as_array().map(Vec::len) == Some(4),
        "{root}"
    );
    // rxe0 has no HCA type: the property is empty and Unreadable says why.
    let rxe = &objects[&device_path(3)]["org.rdmamanager.RdmaManager1.Device"];
    ensure!(rxe["Name"] == "rxe0" && rxe["HcaType"] == "", "{rxe}");
    ensure!(rxe["Unreadable"]["HcaType"].is_string(), "{rxe}");
    Ok(())
}

/// The naming host: an onboard HCA, a PCI function and its VF, a sub-function, rxe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_json_and_tui_json_print_the_same_document_of_the_naming_host() -> Result<()> {
    both_documents("naming").await.map(drop)
}

/// `--json` and `--ibstat` read the objects through the daemon's direct socket when given
/// one (service/src/dbus/direct/) and print what they print through the bus; with nothing
/// listening there, they read through the bus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_reads_through_the_direct_socket_and_prints_the_same() -> Result<()> {
    use rdma_manager_tests::service::serve_sim;
    use rdma_managerd::dbus::direct;
    use rdma_managerd::engine::EngineConfig;
    use rdma_managerd::kernel::sim::{fixtures, SimHost};

    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    let served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("direct");
    let socket = direct::listen(&path, served.service.direct_sources())?;
    let tui = workspace_bin("rdma-tui")?;
    let address = format!("--address={}", bus.address());
    let direct_socket = format!("--direct-socket={}", path.display());
    let mut json_through_bus = String::new();
    for mode in ["--json", "--ibstat"] {
        let through_bus = stdout_of(&tui, &[&address, mode]).await?;
        let before = socket.answered();
        let through_direct = stdout_of(&tui, &[&address, &direct_socket, mode]).await?;
        let answered = socket.answered() - before;
        ensure!(
            answered == 1,
            "{mode}: not one call answered on the direct socket but {answered}"
        );
        ensure!(
            through_direct == through_bus,
            "{mode}: through the direct socket\n{through_direct}\nthrough the bus\n{through_bus}"
        );
        if mode == "--json" {
            json_through_bus = through_bus;
        }
    }
    // ibstat's failures: the same output, message and status either way.
    for args in [
        &["--ibstat", "nosuch"][..],
        &["--ibstat", "mlx4_1", "3"],
        &["--ibstat", "-s", "mlx4_1", "0x2"],
        &["--ibstat", "-p"],
    ] {
        let run = |with_direct: bool| {
            let mut all = vec![address.as_str()];
            if with_direct {
                all.push(direct_socket.as_str());
            }
            all.extend_from_slice(args);
            Command::new(&tui).args(all).kill_on_drop(true).output()
        };
        let through_bus = tokio::time::timeout(Duration::from_secs(60), run(false)).await??;
        let before = socket.answered();
        let through_direct = tokio::time::timeout(Duration::from_secs(60), run(true)).await??;
        ensure!(
            socket.answered() == before + 1,
            "{args:?}: not through the direct socket"
        );
        ensure!(
            (through_direct.status.code(), &through_direct.stdout, &through_direct.stderr)
                == (through_bus.status.code(), &through_bus.stdout, &through_bus.stderr),
            "{args:?}: through the direct socket {through_direct:?}, through the bus {through_bus:?}"
        );
        if args[1] == "nosuch" {
            ensure!(
                !through_direct.status.success()
                    && String::from_utf8_lossy(&through_direct.stderr)
                        .contains("'nosuch' IB device can't be found"),
                "{through_direct:?}"
            );
        }
    }
    drop(socket);
    ensure!(!path.exists(), "the socket is gone");
    let fallback = stdout_of(&tui, &[&address, &direct_socket, "--json"]).await?;
    ensure!(fallback == json_through_bus, "without the socket, the bus");
    Ok(())
}

/// `--json --counters` adds every port's counters as read now and its latest rates, by port
/// object path, beside the same `objects`; `--counters` alone is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_json_with_counters_adds_every_port_s_counters_and_latest_rates() -> Result<()> {
    use rdma_manager_tests::service::serve_sim;
    use rdma_managerd::engine::EngineConfig;
    use rdma_managerd::kernel::sim::{fixtures, SimHost};

    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    let _served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    // Traffic on mlx4_1 port 1 (Device/0/Port/1) across a few samples, and on until the
    // documents are read: the latest rate is the last tick's, which a slow start of rdma-tui
    // on a loaded machine would otherwise find after the traffic stopped.
    for _ in 0..5 {
        sim.add_traffic("mlx4_1", 1, 4_000_000, 1_000)?;
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    let flowing = tokio::spawn({
        let sim = sim.clone();
        async move {
            while sim.add_traffic("mlx4_1", 1, 1_000_000, 250).is_ok() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    let tui = workspace_bin("rdma-tui")?;
    let address = format!("--address={}", bus.address());
    let plain: Json = serde_json::from_str(&stdout_of(&tui, &[&address, "--json"]).await?)?;
    let doc: Json =
        serde_json::from_str(&stdout_of(&tui, &[&address, "--json", "--counters"]).await?)?;
    flowing.abort();
    ensure!(doc["version"] == 1, "version: {}", doc["version"]);
    let objects = doc["objects"].as_object().context("objects")?;
    let ports: Vec<&String> = objects
        .iter()
        .filter(|(_, ifaces)| ifaces.get("org.rdmamanager.RdmaManager1.Port").is_some())
        .map(|(path, _)| path)
        .collect();
    ensure!(ports.len() == 5, "ports: {ports:?}");
    let counters = doc["counters"].as_object().context("counters")?;
    let rates = doc["rates"].as_object().context("rates")?;
    for port in &ports {
        let c = &counters[port.as_str()];
        ensure!(
            c["source"].is_string() && c["saturated"].is_boolean() && c["values"].is_object(),
            "{port}: {c}"
        );
        ensure!(c["values"]["tx_bytes"].is_u64(), "{port}: {c}");
        ensure!(rates.contains_key(port.as_str()), "{port}: no rates");
    }
    let port = format!("{}/Port/1", device_path(0));
    let tx = counters[&port]["values"]["tx_bytes"].as_u64().unwrap_or(0);
    ensure!(tx >= 20_000_000, "{port}: tx_bytes {tx}");
    let r = &rates[&port];
    ensure!(
        r["tx_bytes_per_second"].as_f64().unwrap_or(0.0) > 0.0 && r["time_us"].is_u64(),
        "{port}: {r}"
    );
    // The objects are the same as without --counters, but for the counters that moved.
    ensure!(
        doc["objects"]
            .as_object()
            .map(|o| o.keys().collect::<Vec<_>>())
            == plain["objects"]
                .as_object()
                .map(|o| o.keys().collect::<Vec<_>>()),
        "objects differ"
    );
    ensure!(plain.get("counters").is_none() && plain.get("rates").is_none());

    let out = Command::new(&tui)
        .args([&address, "--counters"])
        .output()
        .await?;
    ensure!(!out.status.success(), "--counters without --json ran");
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(err.contains("--counters goes with --json"), "{err}");
    Ok(())
}
