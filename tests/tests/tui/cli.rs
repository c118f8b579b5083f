//! rdma-cli as scripts run it: the real binary against rdma-managerd on a private system bus
//! with the project's bus policy and the real polkitd (tests/src/service.rs `SystemSetup`):
//! root is authorized by polkit, the unprivileged test user is not. Each test checks the
//! output, the exit code (rdma-cli(1), "EXIT STATUS") and what changed on the simulated host.

use std::process::Output;

use anyhow::{ensure, Context, Result};
use rdma_manager_tests::bus::{skip_reason, Credentials, PolkitConfig, PrivateBus};
use rdma_manager_tests::service::{port_proxy, tree_files, HostServices, SystemSetup};
use rdma_manager_tests::tmux::workspace_bin;

macro_rules! require_harness {
    () => {
        if let Some(reason) = skip_reason() {
            eprintln!("skipping: {reason}");
            return Ok(());
        }
    };
}

/// `rdma-cli --address=<bus> ARGS` as `who` (root when None), with its output.
async fn cli(bus: &PrivateBus, who: Option<&Credentials>, args: &[&str]) -> Result<Output> {
    cli_with_input(bus, who, args, None).await
}

/// [`cli`] with `input` on its standard input.
async fn cli_with_input(
    bus: &PrivateBus,
    who: Option<&Credentials>,
    args: &[&str],
    input: Option<&str>,
) -> Result<Output> {
    use std::io::Write as _;
    use std::process::Stdio;
    let bin = workspace_bin("rdma-cli")?;
    let mut cmd = std::process::Command::new(bin);
    cmd.arg(format!("--address={}", bus.address()))
        .args(["--wait", "60"])
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = who {
        c.apply(&mut cmd);
    }
    let input = input.map(str::to_string);
    let out = tokio::task::spawn_blocking(move || -> std::io::Result<Output> {
        let mut child = cmd.spawn()?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes())?;
        }
        child.wait_with_output()
    })
    .await
    .context("joining")?
    .context("running rdma-cli")?;
    Ok(out)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks the exit code, with the whole output in the failure.
fn exited(o: &Output, code: i32, what: &str) -> Result<()> {
    ensure!(
        o.status.code() == Some(code),
        "{what}: exit {:?}, expected {code}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    Ok(())
}

/// The simulated kernel and every file under the host's /etc: equal before and after a
/// refused command shows that nothing changed.
fn host_state(t: &SystemSetup) -> (String, std::collections::BTreeMap<String, Vec<u8>>) {
    (t.sim.kernel_snapshot(), tree_files(t.sim.root(), &["etc"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_every_port_as_a_table_tersely_and_as_json() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let table = cli(&t.bus, None, &["status"]).await?;
    exited(&table, 0, "status")?;
    let text = stdout(&table);
    let lines: Vec<&str> = text.lines().collect();
    ensure!(
        lines[0].split_whitespace().collect::<Vec<_>>()
            == [
                "DEVICE",
                "PORT",
                "STATE",
                "PHYS",
                "RATE",
                "LINK-LAYER",
                "NETDEV"
            ],
        "{text}"
    );
    // The demo host: mlx4_1 (2 ports), mlx5_0, mlx5_1, rxe0.
    ensure!(lines.len() == 6, "{text}");
    ensure!(
        lines[1].starts_with("mlx4_1  1 ") && lines[1].contains("ACTIVE"),
        "{text}"
    );
    ensure!(
        lines
            .iter()
            .any(|l| l.starts_with("rxe0 ") && l.ends_with("eth0")),
        "{text}"
    );

    let terse = cli(&t.bus, None, &["-t", "status"]).await?;
    exited(&terse, 0, "-t status")?;
    let terse = stdout(&terse);
    let rows: Vec<Vec<&str>> = terse.lines().map(|l| l.split(':').collect()).collect();
    ensure!(rows.len() == 5, "no header, one line a port:\n{terse}");
    ensure!(rows.iter().all(|r| r.len() == 7), "{terse}");
    ensure!(
        rows[0][..4] == ["mlx4_1", "1", "ACTIVE", "LinkUp"] && rows[0][5] == "InfiniBand",
        "{terse}"
    );

    let json = cli(&t.bus, None, &["--json", "status"]).await?;
    exited(&json, 0, "--json status")?;
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).context("JSON")?;
    let ports = v.as_array().context("an array")?;
    ensure!(ports.len() == 5, "{v}");
    ensure!(
        ports[2]["device"] == "mlx5_0" && ports[2]["link-layer"] == "InfiniBand",
        "{v}"
    );
    Ok(())
}

/// `rdma-cli show --yaml | head`: output into a closed pipe ends rdma-cli by SIGPIPE,
/// silently, as it ends nmcli; not with a panic of the printing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_ends_rdma_cli_quietly() -> Result<()> {
    use std::os::unix::process::ExitStatusExt;
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    for args in [&["status"][..], &["show", "--yaml"]] {
        let (reader, writer) = std::io::pipe()?;
        drop(reader);
        let mut cmd = std::process::Command::new(workspace_bin("rdma-cli")?);
        cmd.arg(format!("--address={}", t.bus.address()))
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped());
        let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
        ensure!(
            out.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?}, stderr:\n{}",
            out.status,
            stderr(&out)
        );
        ensure!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soft_link_is_added_and_deleted_with_the_documented_exit_codes() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let add = cli(
        &t.bus,
        None,
        &["link", "add", "rxe1", "type", "rxe", "netdev", "enp4s0d1"],
    )
    .await?;
    exited(&add, 0, "link add")?;
    ensure!(stdout(&add).contains("'rxe1'"), "{}", stdout(&add));
    ensure!(
        t.device_names().iter().any(|d| d == "rxe1"),
        "not in the kernel"
    );
    let remembered = t
        .etc_file("/etc/rdma-manager/soft-links.toml")
        .unwrap_or_default();
    ensure!(remembered.contains("rxe1"), "{remembered}");
    // The same name again: the daemon refuses, in its own words.
    let again = cli(
        &t.bus,
        None,
        &["link", "add", "rxe1", "type", "rxe", "netdev", "enp4s0d1"],
    )
    .await?;
    ensure!(again.status.code() == Some(1), "{}", stderr(&again));
    ensure!(stderr(&again).starts_with("Error: "), "{}", stderr(&again));

    let status = stdout(&cli(&t.bus, None, &["-t", "status"]).await?);
    ensure!(status.lines().any(|l| l.starts_with("rxe1:1:")), "{status}");

    let delete = cli(&t.bus, None, &["link", "delete", "rxe1"]).await?;
    exited(&delete, 0, "link delete")?;
    ensure!(!t.device_names().iter().any(|d| d == "rxe1"), "still there");
    // Gone: not found.
    let missing = cli(&t.bus, None, &["link", "delete", "rxe1"]).await?;
    exited(&missing, 4, "deleting a link that is not there")?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roce_tos_is_set_on_the_port_named_by_device_and_number() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let set = cli(&t.bus, None, &["roce", "mlx5_1/1", "tos", "106"]).await?;
    exited(&set, 0, "roce tos")?;
    let client = t.bus.connect().await?;
    let mut port = None;
    for index in 0..4 {
        let p = port_proxy(&client, &rdma_manager_dbus::port_path(index, 1)).await;
        if p.device_name().await.is_ok_and(|n| n == "mlx5_1") {
            port = Some(p);
        }
    }
    let port = port.context("mlx5_1's port 1")?;
    ensure!(port.roce_tos().await? == 106, "ToS not set");
    let mode = cli(&t.bus, None, &["roce", "mlx5_1/1", "mode", "v1"]).await?;
    exited(&mode, 0, "roce mode")?;
    ensure!(port.roce_mode().await?.contains("v1"), "mode not set");
    // A port the device lacks, a device the host lacks.
    exited(
        &cli(&t.bus, None, &["roce", "mlx5_1/7", "tos", "1"]).await?,
        4,
        "no such port",
    )?;
    exited(
        &cli(&t.bus, None, &["roce", "mlx9_9/1", "tos", "1"]).await?,
        4,
        "no such device",
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_type_is_set_now_on_mlx4_and_staged_on_mlx5() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let o = cli(&t.bus, None, &["port-type", "mlx4_1/1", "eth"]).await?;
    exited(&o, 0, "port-type mlx4")?;
    ensure!(
        stdout(&o).contains("successfully set to eth"),
        "{}",
        stdout(&o)
    );
    let o = cli(&t.bus, None, &["port-type", "mlx5_1/1", "ib"]).await?;
    exited(&o, 0, "port-type mlx5")?;
    ensure!(
        stdout(&o).contains("for the next boot (reboot needed; it runs eth until then)"),
        "{}",
        stdout(&o)
    );
    // The port rule: port 2 to ib would leave port 1 eth with port 2 ib.
    let o = cli(&t.bus, None, &["port-type", "mlx4_1/2", "ib"]).await?;
    ensure!(
        stderr(&o).contains("port 1 may be Ethernet only when port 2 is"),
        "{}",
        stderr(&o)
    );
    exited(
        &cli(&t.bus, None, &["port-type", "mlx4_1/1", "roce"]).await?,
        2,
        "bad word",
    )?;
    Ok(())
}

/// `qos`: shown as nmcli prints, changed setting by setting (the rest kept), read back by
/// the daemon from the simulated mlx5's DCB; rxe0 has no DCB; bad words exit 2 unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qos_profile_is_shown_and_changed_setting_by_setting() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let o = cli(&t.bus, None, &["-t", "qos", "mlx5_1/1"]).await?;
    exited(&o, 0, "qos show")?;
    let before = stdout(&o);
    ensure!(before.starts_with("mlx5_1/1:pcp:none:"), "{before}");
    let o = cli(
        &t.bus,
        None,
        &[
            "qos",
            "mlx5_1/1",
            "dscp",
            "26:3",
            "pfc",
            "3",
            "traffic-class",
            "106",
        ],
    )
    .await?;
    exited(&o, 0, "qos set")?;
    let o = cli(&t.bus, None, &["-j", "qos", "mlx5_1/1"]).await?;
    let shown: serde_json::Value = serde_json::from_str(&stdout(&o))?;
    let row = &shown[0];
    ensure!(
        row["trust"] == "dscp"
            && row["pfc"] == "3"
            && row["dscp"] == "26:3"
            && row["traffic-class"] == "106"
            && row["remembered"] == "yes",
        "{shown}"
    );
    // ETS, not named, is what it was.
    let ets_before = before.split(':').nth(3).unwrap_or_default();
    ensure!(row["ets"] == ets_before, "{shown} vs {before}");
    // trust pcp alone drops the map.
    exited(
        &cli(&t.bus, None, &["qos", "mlx5_1/1", "trust", "pcp"]).await?,
        0,
        "pcp",
    )?;
    let o = cli(&t.bus, None, &["-t", "qos", "mlx5_1/1"]).await?;
    ensure!(stdout(&o).starts_with("mlx5_1/1:pcp:3:"), "{}", stdout(&o));
    // rxe0's netdev has no DCB: the kernel's reason, exit 5 (not supported).
    let o = cli(&t.bus, None, &["qos", "rxe0/1"]).await?;
    ensure!(o.status.code() != Some(0), "{}", stdout(&o));
    ensure!(stderr(&o).contains("EOPNOTSUPP"), "{}", stderr(&o));
    let writes = t.sim.writes();
    for args in [
        &["qos", "mlx5_1/1", "pfc", "8"][..],
        &["qos", "mlx5_1/1", "trust", "dscp", "dscp", "none"],
        &[
            "qos",
            "mlx5_1/1",
            "ets",
            "60,60,0,0,0,0,0,0/0,0,0,0,0,0,0,0",
        ],
        &["qos", "mlx5_1/1", "lossless", "3"],
    ] {
        exited(&cli(&t.bus, None, args).await?, 2, &args.join(" "))?;
    }
    ensure!(t.sim.writes() == writes, "a refused qos changed the host");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_is_refused_with_exit_2_and_nothing_changes() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let before = host_state(&t);
    for args in [
        &["roce", "mlx5_1/1", "tos", "300"][..],
        &["roce", "mlx5_1/1", "mode", "v3"],
        &["ipoib", "add", "ibp59s0f0", "pkey", "0x8000"],
        &["ipoib", "add", "ib0", "pkey", "0x8005", "mtu", "70000"],
        &["ipoib", "set", "ib0", "mode", "connected", "mtu", "65521"],
        &["link", "add", "bad/name", "type", "rxe", "netdev", "eth0"],
        &["link", "add", "rxe1", "type", "udp", "netdev", "eth0"],
        &["memlock", "unlimited", "1024"],
        &["nfs", "on", "port", "0"],
        &["ip", "ib0", "ipv4.addresses", "192.0.2.1"],
        // Refused by the daemon itself (a GUID is its to read): InvalidArgument is 2 too.
        &["naming", "fixed", "not-a-guid", "ibx0"],
        // Not a command line.
        &["link", "add", "rxe1"],
        &["frobnicate"],
    ] {
        let o = cli(&t.bus, None, args).await?;
        exited(&o, 2, &args.join(" "))?;
        ensure!(
            stderr(&o).starts_with("Error: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    ensure!(host_state(&t) == before, "something changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthorized_user_gets_exit_3_with_the_daemons_words() -> Result<()> {
    require_harness!();
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let before = host_state(&t);
    let user = Credentials::test_user(false);
    // Reading is open to everyone.
    exited(&cli(&t.bus, Some(&user), &["status"]).await?, 0, "status")?;
    let o = cli(&t.bus, Some(&user), &["roce", "mlx5_1/1", "tos", "106"]).await?;
    exited(&o, 3, "roce tos as an unprivileged user")?;
    ensure!(
        stderr(&o).contains("org.rdmamanager.rdmamanager1.manage-roce"),
        "{}",
        stderr(&o)
    );
    ensure!(host_state(&t) == before, "something changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_p_key_child_is_added_changed_and_deleted() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let add = cli(
        &t.bus,
        None,
        &["ipoib", "add", "ib0", "pkey", "0x8005", "mode", "datagram"],
    )
    .await?;
    exited(&add, 0, "ipoib add")?;
    ensure!(stdout(&add).contains("'ib0.8005'"), "{}", stdout(&add));
    let set = cli(
        &t.bus,
        None,
        &[
            "ipoib",
            "set",
            "ib0.8005",
            "mode",
            "connected",
            "mtu",
            "65520",
        ],
    )
    .await?;
    exited(&set, 0, "ipoib set")?;
    let remembered = t
        .etc_file("/etc/rdma-manager/ipoib.toml")
        .unwrap_or_default();
    ensure!(
        remembered.contains("8005") && remembered.contains("65520"),
        "{remembered}"
    );
    let delete = cli(&t.bus, None, &["ipoib", "delete", "ib0.8005"]).await?;
    exited(&delete, 0, "ipoib delete")?;
    ensure!(
        !t.sim.kernel_snapshot().contains("ib0.8005"),
        "still in the kernel"
    );
    exited(
        &cli(&t.bus, None, &["ipoib", "delete", "ib0.8005"]).await?,
        4,
        "deleting it again",
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_daemon_on_the_bus_is_exit_5() -> Result<()> {
    let Some(bus) = rdma_manager_tests::service::session_bus_or_skip() else {
        return Ok(());
    };
    let o = cli(&bus, None, &["status"]).await?;
    exited(&o, 5, "status without a daemon")?;
    ensure!(stderr(&o).contains("not running"), "{}", stderr(&o));
    let o = cli(&bus, None, &["confirm"]).await?;
    exited(&o, 5, "confirm without a daemon")?;
    // No bus at all.
    let gone = std::process::Command::new(workspace_bin("rdma-cli")?)
        .args(["--address=unix:path=/nonexistent/bus", "status"])
        .output()?;
    exited(&gone, 5, "no bus")?;
    Ok(())
}

/// The demo host with host setup's files and the stand-ins of systemd (nfs-server, opensm,
/// rdma-load-modules@ installed and stopped, acting on the simulated kernel) and firewalld.
async fn host_setup() -> Result<(SystemSetup, HostServices)> {
    use rdma_manager_tests::standins::StandInUnit;
    use rdma_managerd::kernel::sim::{fixtures, SimHost};
    let sim = SimHost::new(fixtures::demo_host())?;
    let kernel = sim.clone();
    SystemSetup::with_host_services(sim, move |s| {
        s.systemd
            .add_unit("nfs-server.service", StandInUnit::service());
        s.systemd.add_unit("opensm.service", StandInUnit::service());
        for set in ["rdma", "infiniband"] {
            s.systemd.add_unit(
                &format!("rdma-load-modules@{set}.service"),
                StandInUnit::service().static_unit(),
            );
        }
        s.systemd
            .set_on_started(std::sync::Arc::new(move |unit: String| {
                let kernel = kernel.clone();
                Box::pin(async move {
                    rdma_managerd::engine::simulate_unit_started(&kernel, &unit)
                        .await
                        .expect("the unit acts on the simulated host");
                })
            }));
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_setup_modules_memlock_nfs_and_the_subnet_manager() -> Result<()> {
    require_harness!();
    // The stand-ins serve as long as they are kept.
    let (t, _services) = host_setup().await?;
    let on = cli(&t.bus, None, &["modules", "rdma", "rds_rdma", "on"]).await?;
    exited(&on, 0, "modules on")?;
    let conf = t
        .etc_file("/etc/rdma/modules/rdma.conf")
        .unwrap_or_default();
    ensure!(
        conf.lines().any(|l| l.trim() == "rds_rdma"),
        "rds_rdma not enabled:\n{conf}"
    );
    let apply = cli(&t.bus, None, &["-t", "modules", "apply", "rdma"]).await?;
    exited(&apply, 0, "modules apply")?;
    ensure!(
        stdout(&apply).lines().all(|l| l.split(':').count() >= 3),
        "{}",
        stdout(&apply)
    );

    let memlock = cli(&t.bus, None, &["memlock", "65536", "unlimited"]).await?;
    exited(&memlock, 0, "memlock")?;
    let limits = t
        .etc_file("/etc/security/limits.d/zz-rdma-manager.conf")
        .unwrap_or_default();
    ensure!(limits.contains("65536"), "{limits}");
    exited(
        &cli(&t.bus, None, &["memlock", "reset"]).await?,
        0,
        "memlock reset",
    )?;

    let nfs = cli(&t.bus, None, &["--json", "nfs", "on"]).await?;
    exited(&nfs, 0, "nfs on")?;
    let steps: serde_json::Value = serde_json::from_slice(&nfs.stdout).context("JSON")?;
    ensure!(
        steps.as_array().is_some_and(|s| s
            .iter()
            .any(|r| r["step"] == "nfs.conf" && r["outcome"] == "done")),
        "{steps}"
    );
    exited(&cli(&t.bus, None, &["sm", "enable"]).await?, 0, "sm enable")?;
    exited(&cli(&t.bus, None, &["sm", "start"]).await?, 0, "sm start")?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_settings_without_networkmanager_and_no_pending_change() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // No NetworkManager on this bus: the daemon says so, a failure (1), not bad input.
    let ip = cli(
        &t.bus,
        None,
        &[
            "ip",
            "ib0",
            "ipv4.method",
            "manual",
            "ipv4.addresses",
            "192.0.2.1/24",
        ],
    )
    .await?;
    exited(&ip, 1, "ip without NetworkManager")?;
    ensure!(stderr(&ip).contains("NetworkManager"), "{}", stderr(&ip));
    // Nothing pending: nothing to confirm or roll back.
    exited(&cli(&t.bus, None, &["confirm"]).await?, 4, "confirm")?;
    exited(&cli(&t.bus, None, &["rollback"]).await?, 4, "rollback")?;
    exited(
        &cli(&t.bus, None, &["confirm", "/org/example/Other"]).await?,
        2,
        "confirm of something else",
    )?;
    exited(&cli(&t.bus, None, &["confirm", "7"]).await?, 4, "confirm 7")?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shown_state_applies_as_no_change_and_diff_says_what_differs() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let shown = cli(&t.bus, None, &["show", "--yaml"]).await?;
    exited(&shown, 0, "show --yaml")?;
    let yaml = stdout(&shown);
    ensure!(
        yaml.contains("soft-links:") && yaml.contains("roce:"),
        "{yaml}"
    );
    let before = host_state(&t);

    // The settings by key path, the paths diff names; terse and JSON for scripts.
    let settings = stdout(&cli(&t.bus, None, &["show"]).await?);
    ensure!(
        settings
            .lines()
            .any(|l| l.starts_with("roce[mlx5_1/1].tos:") && l.ends_with(" 0")),
        "{settings}"
    );
    let terse = stdout(&cli(&t.bus, None, &["-t", "show"]).await?);
    ensure!(
        terse.lines().any(|l| l == "soft-links[rxe0].netdev:eth0"),
        "{terse}"
    );
    let json = cli(&t.bus, None, &["--json", "show"]).await?;
    exited(&json, 0, "show --json")?;
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).context("JSON")?;
    ensure!(doc["soft-links"][0]["name"] == "rxe0", "{doc}");

    // What show printed, back through a pipe: nothing to change, nothing written.
    let diff = cli_with_input(&t.bus, None, &["diff", "-"], Some(&yaml)).await?;
    exited(&diff, 0, "diff of the shown state")?;
    ensure!(stdout(&diff).is_empty(), "{}", stdout(&diff));
    let apply = cli_with_input(&t.bus, None, &["apply", "-"], Some(&yaml)).await?;
    exited(&apply, 0, "apply of the shown state")?;
    ensure!(
        stdout(&apply).contains("Nothing to change"),
        "{}",
        stdout(&apply)
    );
    ensure!(
        host_state(&t) == before,
        "applying the shown state changed something"
    );

    // One setting changed: diff names it, exits 10, and changes nothing.
    let wanted = "roce:\n- device: mlx5_1\n  port: 1\n  tos: 106\n";
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("tos.yml");
    std::fs::write(&file, wanted)?;
    let file = file.display().to_string();
    let diff = cli(&t.bus, None, &["diff", &file]).await?;
    exited(&diff, 10, "diff with a change")?;
    ensure!(
        stdout(&diff).trim() == "roce[mlx5_1/1].tos  set     0 -> 106",
        "{}",
        stdout(&diff)
    );
    let json = cli(&t.bus, None, &["--json", "diff", &file]).await?;
    exited(&json, 10, "diff --json")?;
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).context("JSON")?;
    ensure!(
        v[0]["path"] == "roce[mlx5_1/1].tos"
            && v[0]["op"] == "set"
            && v[0]["current"] == "0"
            && v[0]["wanted"] == "106"
            && v[0]["action"] == "org.rdmamanager.rdmamanager1.manage-roce",
        "{v}"
    );
    ensure!(host_state(&t) == before, "diff changed something");

    // A bad document: the daemon's refusal names the key, exit 2, nothing changed.
    let bad = cli_with_input(
        &t.bus,
        None,
        &["diff", "-"],
        Some("roce:\n- device: mlx5_1\n  port: 1\n  tos: 300\n"),
    )
    .await?;
    exited(&bad, 2, "a ToS out of range")?;
    ensure!(stderr(&bad).contains("tos"), "{}", stderr(&bad));
    let unknown = cli_with_input(&t.bus, None, &["apply", "-"], Some("colour: red\n")).await?;
    exited(&unknown, 2, "an unknown key")?;
    exited(
        &cli(&t.bus, None, &["diff", "/nonexistent/state.yml"]).await?,
        4,
        "a file that is not there",
    )?;
    ensure!(
        host_state(&t) == before,
        "a refused document changed something"
    );

    // Applied: the change is made and a second diff finds nothing.
    let apply = cli(&t.bus, None, &["apply", &file]).await?;
    exited(&apply, 0, "apply")?;
    ensure!(
        stdout(&apply).contains("Applied 1 change."),
        "{}",
        stdout(&apply)
    );
    exited(
        &cli(&t.bus, None, &["diff", &file]).await?,
        0,
        "diff after apply",
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setting_is_set_by_its_key_path_and_a_refused_one_changes_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let tos = "roce[mlx5_1/1].tos";
    let shown = |o: &Output| stdout(o).trim().to_string();

    // Refused before or by the daemon: exit 2, the path as given, nothing changed.
    let before = host_state(&t);
    for (args, says) in [
        (&["set", tos, "300"][..], tos),
        (&["set", "roce[mlx5_1/1].colour", "red"], "colour"),
        (&["set", "roce.tos", "1"], "roce[DEVICE/PORT]"),
        (&["set", tos], "a value is missing"),
        // The first setting is good, the second is not: neither is made.
        (
            &["set", tos, "106", "interfaces[ib0].mtu", "1"],
            "interfaces[ib0]",
        ),
        (
            &["set", "--dry-run", "health.min-ports", "1"],
            "rdma-cli health",
        ),
    ] {
        let o = cli(&t.bus, None, args).await?;
        exited(&o, 2, &args.join(" "))?;
        let err = stderr(&o);
        ensure!(
            err.starts_with("Error: ") && err.contains(says) && !err.contains("line "),
            "{args:?}: {err}"
        );
    }
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let user = Credentials::test_user(false);
        let o = cli(&t.bus, Some(&user), &["set", tos, "106"]).await?;
        exited(&o, 3, "set as an unprivileged user")?;
        ensure!(
            stderr(&o).contains("org.rdmamanager.rdmamanager1.manage-roce"),
            "{}",
            stderr(&o)
        );
    }
    ensure!(host_state(&t) == before, "a refused set changed something");

    // A dry run says what would change, as diff does, and changes nothing.
    let dry = cli(&t.bus, None, &["set", "--dry-run", tos, "106"]).await?;
    exited(&dry, 10, "set --dry-run")?;
    ensure!(
        shown(&dry) == "roce[mlx5_1/1].tos  set     0 -> 106",
        "{}",
        shown(&dry)
    );
    ensure!(host_state(&t) == before, "a dry run changed something");

    // Set, shown back by its path, and setting it again is no change.
    let set = cli(
        &t.bus,
        None,
        &["set", tos, "106", "roce[mlx5_1/1].mode", "v1"],
    )
    .await?;
    exited(&set, 0, "set")?;
    ensure!(
        stdout(&set).contains("Applied 2 changes."),
        "{}",
        stdout(&set)
    );
    let show = cli(&t.bus, None, &["-t", "show", tos, "roce[mlx5_1/1].mode"]).await?;
    exited(&show, 0, "show PATH")?;
    ensure!(
        shown(&show) == "roce[mlx5_1/1].tos:106\nroce[mlx5_1/1].mode:v1",
        "{}",
        shown(&show)
    );
    let again = cli(&t.bus, None, &["set", tos, "106"]).await?;
    ensure!(
        stdout(&again).contains("Nothing to change"),
        "{}",
        stdout(&again)
    );
    exited(
        &cli(&t.bus, None, &["show", "roce[mlx5_1/9]"]).await?,
        4,
        "show of a path that holds no setting",
    )?;

    // An entry added by its identity, and removed by its state.
    let add = cli(
        &t.bus,
        None,
        &[
            "set",
            "soft-links[rxe7].type",
            "rxe",
            "soft-links[rxe7].netdev",
            "enp4s0d1",
        ],
    )
    .await?;
    exited(&add, 0, "set of a new soft link")?;
    let listed = stdout(&cli(&t.bus, None, &["-t", "show", "soft-links[rxe7]"]).await?);
    ensure!(
        listed.contains("soft-links[rxe7].netdev:enp4s0d1"),
        "{listed}"
    );
    let remove = cli(&t.bus, None, &["set", "soft-links[rxe7].state", "absent"]).await?;
    exited(&remove, 0, "set of state absent")?;
    exited(
        &cli(&t.bus, None, &["show", "soft-links[rxe7]"]).await?,
        4,
        "the removed link",
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_with_a_timeout_waits_for_confirm_or_rolls_back() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let client = t.bus.connect().await?;
    let tos = |v: u8| format!("roce:\n- device: mlx5_1\n  port: 1\n  tos: {v}\n");
    let mut port = None;
    for index in 0..4 {
        let p = port_proxy(&client, &rdma_manager_dbus::port_path(index, 1)).await;
        if p.device_name().await.is_ok_and(|n| n == "mlx5_1") {
            port = Some(p);
        }
    }
    let port = port.context("mlx5_1's port 1")?;

    // Pending, then confirmed: it stays.
    let apply = cli_with_input(
        &t.bus,
        None,
        &["apply", "-", "--timeout", "60"],
        Some(&tos(106)),
    )
    .await?;
    exited(&apply, 0, "apply --timeout")?;
    let out = stdout(&apply);
    ensure!(
        out.contains("rdma-cli confirm /org/rdmamanager/RdmaManager1/Change/"),
        "{out}"
    );
    ensure!(port.roce_tos().await? == 106, "in force while pending");
    let confirm = cli(&t.bus, None, &["confirm"]).await?;
    exited(&confirm, 0, "confirm")?;
    exited(&cli(&t.bus, None, &["confirm"]).await?, 4, "nothing left")?;
    ensure!(port.roce_tos().await? == 106, "kept once confirmed");

    // Pending, then rolled back by its path: the ToS is what it was.
    let apply = cli_with_input(
        &t.bus,
        None,
        &["-t", "apply", "-", "--timeout", "60"],
        Some(&tos(32)),
    )
    .await?;
    exited(&apply, 0, "apply --timeout, terse")?;
    let terse = stdout(&apply);
    let path = terse
        .lines()
        .find_map(|l| l.strip_prefix("pending:"))
        .context("the pending line")?
        .to_string();
    ensure!(port.roce_tos().await? == 32, "in force while pending");
    exited(
        &cli(&t.bus, None, &["rollback", &path]).await?,
        0,
        "rollback",
    )?;
    ensure!(port.roce_tos().await? == 106, "rolled back");
    // An apply timeout outside the daemon's range is refused here.
    exited(
        &cli_with_input(
            &t.bus,
            None,
            &["apply", "-", "--timeout", "5"],
            Some(&tos(1)),
        )
        .await?,
        2,
        "a timeout of 5 s",
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_that_fails_half_way_is_rolled_back_with_exit_6() -> Result<()> {
    use rdma_managerd::kernel::sim::SimOp;
    use rdma_managerd::model::Errno;
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let before = host_state(&t);
    // A soft link first, then a RoCE setting whose configfs write fails.
    let doc = "soft-links:\n- name: rxe1\n  type: rxe\n  netdev: enp4s0d1\n\
               roce:\n- device: mlx5_1\n  port: 1\n  tos: 106\n";
    t.sim.fail_next(SimOp::RoceWrite, Errno::EIO);
    let apply = cli_with_input(&t.bus, None, &["apply", "-"], Some(doc)).await?;
    exited(&apply, 6, "a failed step")?;
    let err = stderr(&apply);
    ensure!(
        err.starts_with("Error: ") && err.contains("rolled back"),
        "{err}"
    );
    ensure!(
        !t.device_names().iter().any(|d| d == "rxe1"),
        "the link made before the failure is still there"
    );
    // The files are as they were, but for soft-links.toml, written and written back.
    let (_, mut files) = host_state(&t);
    let links = files
        .remove("etc/rdma-manager/soft-links.toml")
        .unwrap_or_default();
    ensure!(
        !String::from_utf8_lossy(&links).contains("rxe1"),
        "rxe1 still remembered"
    );
    let mut files_before = before.1;
    files_before.remove("etc/rdma-manager/soft-links.toml");
    ensure!(files == files_before, "the files are not as they were");
    let shown = stdout(&cli(&t.bus, None, &["-t", "show"]).await?);
    ensure!(
        shown.lines().any(|l| l == "roce[mlx5_1/1].tos:0"),
        "{shown}"
    );
    Ok(())
}

/// `rdma-managerd --session --simulate`, as the README offers it for trying the client, serves
/// its own user as rdma-tui --demo does: a change from rdma-cli on that session bus is made
/// with no polkit on the machine, and shows in the state.
#[test]
fn a_simulated_daemon_on_the_session_bus_serves_its_user() -> Result<()> {
    let daemon = workspace_bin("rdma-managerd")?;
    let cli = workspace_bin("rdma-cli")?;
    let (daemon, cli) = (daemon.display(), cli.display());
    let script = format!(
        "{daemon} --session --simulate 2>/dev/null & i=0
         until {cli} --session status >/dev/null 2>&1; do
           i=$((i + 1)); [ $i -gt 300 ] && exit 9; sleep 0.1
         done
         {cli} --session roce mlx5_1/1 tos 96 && {cli} --session -t show | grep -F 'roce[mlx5_1/1].tos'
         status=$?; kill %1; exit $status"
    );
    let out = std::process::Command::new("dbus-run-session")
        .args(["--", "sh", "-c", &script])
        .output()
        .context("dbus-run-session (Debian: dbus-daemon)")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success() && stdout.contains("96"),
        "{}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// `rdma-cli health` as Slurm's HealthCheckProgram runs it: exit 0 and a summary when every
/// expectation holds (for anyone: reading is open), exit 11 and one NHC line per failed
/// expectation once a port is down, every verdict in `--json`, exit 2 with the key path for
/// an expectation the daemon refuses, and for no expectations at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_11_with_a_line_per_failed_expectation() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let expect = [
        "health",
        "--port",
        "mlx5_0/1",
        "--port",
        "mlx4_1/1",
        "--state",
        "ACTIVE",
        "--phys-state",
        "LinkUp",
        "--min-rate",
        "56",
    ];
    let o = cli(&t.bus, None, &expect).await?;
    exited(&o, 0, "health of a healthy host")?;
    ensure!(stdout(&o) == "healthy: 8 checks passed\n", "{}", stdout(&o));
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let user = Credentials::test_user(false);
        exited(
            &cli(&t.bus, Some(&user), &expect).await?,
            0,
            "health as a user",
        )?;
    }

    t.sim
        .set_port_state(
            "mlx5_0",
            1,
            rdma_managerd::model::PortState::Down,
            rdma_managerd::model::PhysState::Disabled,
        )
        .context("port down")?;
    let started = std::time::Instant::now();
    let o = loop {
        let o = cli(&t.bus, None, &expect).await?;
        if o.status.code() != Some(0) || started.elapsed() > std::time::Duration::from_secs(10) {
            break o;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    exited(&o, 11, "health with mlx5_0/1 down")?;
    ensure!(
        stdout(&o)
            == "ERROR:  rdma-cli:  Health check failed:  state mlx5_0/1:  mlx5_0/1 state is DOWN, \
                expected ACTIVE\n\
                ERROR:  rdma-cli:  Health check failed:  phys-state mlx5_0/1:  mlx5_0/1 \
                physical state is Disabled, expected LinkUp\n",
        "{}",
        stdout(&o)
    );
    let mut json_args = vec!["--json"];
    json_args.extend(expect);
    let o = cli(&t.bus, None, &json_args).await?;
    exited(&o, 11, "health --json")?;
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).context("JSON")?;
    ensure!(
        doc["healthy"] == false && doc["checked"] == 8 && doc["failed"] == 2,
        "{doc}"
    );
    ensure!(
        doc["checks"][1]["expectation"] == "state" && doc["checks"][1]["observed"] == "DOWN",
        "{doc}"
    );

    let o = cli(&t.bus, None, &["health", "--min-rate=-5"]).await?;
    exited(&o, 2, "a negative rate")?;
    ensure!(
        stderr(&o).contains("health.ports[0].min-rate-gbps"),
        "{}",
        stderr(&o)
    );
    let o = cli(&t.bus, None, &["health"]).await?;
    exited(&o, 2, "no expectations and no state directory")?;
    ensure!(stderr(&o).contains("health section"), "{}", stderr(&o));
    Ok(())
}

/// `test-link` from a port named by its netdev, against the stand-in tools (what perftest,
/// ping and ibping print, by peer): a RoCE port's Ethernet interface and an InfiniBand port's
/// IPoIB interface name their ports; a P_Key child and an unknown name are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_test_runs_from_the_port_its_netdev_names() -> Result<()> {
    use rdma_managerd::linktest::sandbox::{Sandbox, SandboxRunner};
    require_harness!();
    let standin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_rdma-standin-linktest"));
    let engine = rdma_managerd::engine::EngineConfig {
        link_test: rdma_managerd::linktest::LinkTestConfig {
            send_lat: standin.clone(),
            send_bw: standin.clone(),
            ping: standin.clone(),
            ibping: standin,
            runner: std::sync::Arc::new(SandboxRunner {
                sandbox: Sandbox::unprivileged(),
            }),
            max_concurrent: 2,
        },
        ..rdma_managerd::engine::EngineConfig::default()
    };
    let sim = rdma_managerd::kernel::sim::SimHost::new(
        rdma_managerd::kernel::sim::fixtures::demo_host(),
    )?;
    let t = SystemSetup::with_engine(false, PolkitConfig::rdma_manager(), sim, engine).await?;
    let json = |o: &Output| -> Result<serde_json::Value> {
        serde_json::from_str(&stdout(o)).context("test-link -j prints one JSON object")
    };
    // eth0 carries rxe0/1.
    let o = cli(
        &t.bus,
        None,
        &["-j", "test-link", "eth0", "192.0.2.10", "--kind", "icmp"],
    )
    .await?;
    exited(&o, 0, "test-link eth0")?;
    let r = json(&o)?;
    ensure!(
        r["device"] == "rxe0" && r["port"] == 1 && r["kind"] == "icmp",
        "{r}"
    );
    // ib0 is mlx4_1/1's IPoIB interface: an InfiniBand ping of LID 2 from there.
    let o = cli(
        &t.bus,
        None,
        &["-j", "test-link", "ib0", "2", "--kind", "ibping"],
    )
    .await?;
    exited(&o, 0, "test-link ib0 --kind ibping")?;
    let r = json(&o)?;
    ensure!(
        r["device"] == "mlx4_1" && r["tool"] == "ibping" && r["round_trips"] == 3,
        "{r}"
    );
    // Nobody answers at LID 3: the test ran and did not pass.
    let o = cli(&t.bus, None, &["test-link", "ib0", "3", "--kind", "ibping"]).await?;
    exited(&o, 7, "test-link ib0 3")?;
    ensure!(stdout(&o).contains("no-responder"), "{}", stdout(&o));
    // A P_Key child runs no test of its own; an unknown name is not found.
    let o = cli(
        &t.bus,
        None,
        &["test-link", "ibp59s0f0.8002", "2", "--kind", "ibping"],
    )
    .await?;
    exited(&o, 2, "a P_Key child")?;
    ensure!(
        stderr(&o).contains("P_Key child of ibp59s0f0"),
        "{}",
        stderr(&o)
    );
    let o = cli(&t.bus, None, &["test-link", "nosuch0", "192.0.2.10"]).await?;
    exited(&o, 4, "an unknown netdev")?;
    // On a terminal (script(1)'s pty) the stages come on standard error as the daemon says
    // them: the start, then the latency while the bandwidth test runs; piped (above), not.
    ensure!(!stderr(&o).contains("Testing"), "{}", stderr(&o));
    let bin = workspace_bin("rdma-cli")?;
    let command = format!(
        "{} --address={} test-link eth0 192.0.2.10 --kind rdma",
        bin.display(),
        t.bus.address()
    );
    let o = tokio::task::spawn_blocking(move || {
        std::process::Command::new("script")
            .args(["-q", "-e", "-c", &command, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
    })
    .await??;
    let screen = stdout(&o);
    exited(&o, 0, "test-link on a terminal")?;
    let testing = screen
        .find("Testing rdma from rxe0/1 to 192.0.2.10 (at most 30 s)...")
        .context(screen.clone())?;
    let latency = screen
        .find("Latency p50 25222.49 us, p99 37654.92 us, max 87823.69 us (1000 round trips); the bandwidth test runs...")
        .context(screen.clone())?;
    let result = screen.find("0.07 Gb/s").context(screen.clone())?;
    ensure!(testing < latency && latency < result, "{screen}");
    Ok(())
}
