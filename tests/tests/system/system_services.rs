//! The daemon's clients of systemd and firewalld (`rdma_managerd::system`) driven against the
//! stand-ins (`rdma_manager_tests::standins`) on a private dbus-daemon, and, where the real
//! programs can run here, against them: firewalld on a private system bus in a network
//! namespace of its own, and systemd's manager as a user instance (`systemd --user`) on a
//! private bus. The comparison tests run one scenario against a stand-in and the real program
//! and require the same transcript.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdma_manager_tests::bus::PrivateBus;
use rdma_manager_tests::hostsvc::{RealFirewalld, UserSystemd};
use rdma_manager_tests::service::session_bus_or_skip;
use rdma_manager_tests::standins::{StandInFirewalld, StandInSystemd, StandInUnit};
use rdma_managerd::system::{
    firewalld, systemd, Added, BusSystemServices, Firewalld, JobResult, Protocol, SystemError,
    SystemServices, Systemd, NFS_RDMA_PORT,
};
use zbus::Connection;

const NFS: &str = "nfs-server.service";
const OPENSM: &str = "opensm.service";
const MODULES: &str = "rdma-load-modules@rdma.service";

struct Sd {
    _bus: PrivateBus,
    standin: StandInSystemd,
    client: Systemd,
}

async fn systemd_standin() -> Option<Sd> {
    let bus = session_bus_or_skip()?;
    let standin = StandInSystemd::start(&bus).await.expect("stand-in starts");
    standin.add_unit(NFS, StandInUnit::service().running().enabled());
    standin.add_unit(OPENSM, StandInUnit::service());
    standin.add_unit(MODULES, StandInUnit::service().static_unit());
    let conn = bus.connect().await.expect("client connects");
    let client = Systemd::new(&conn).with_job_timeout(Duration::from_secs(5));
    Some(Sd {
        _bus: bus,
        standin,
        client,
    })
}

#[tokio::test]
async fn restart_waits_for_job_removed() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    sd.standin.set_job_delay(Duration::from_millis(300));
    let t0 = Instant::now();
    let result = sd.client.restart(NFS).await.expect("restart");
    assert_eq!(result, JobResult::Done);
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "returned before the job ended: {:?}",
        t0.elapsed()
    );
    assert_eq!(sd.standin.calls(), [format!("RestartUnit {NFS} replace")]);
    let status = sd.client.unit_status(NFS).await.expect("status");
    assert_eq!(
        (status.id.as_str(), status.active_state.as_str()),
        (NFS, "active")
    );
}

#[tokio::test]
async fn job_removed_before_the_reply_is_not_missed() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    sd.standin.set_signal_before_reply(true);
    assert_eq!(
        sd.client.start(OPENSM).await.expect("start"),
        JobResult::Done
    );
    assert_eq!(
        sd.standin.unit(OPENSM).expect("unit").active_state,
        "active"
    );
}

#[tokio::test]
async fn template_instance_restarts() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    assert_eq!(
        sd.client.restart(MODULES).await.expect("restart"),
        JobResult::Done
    );
    let status = sd.client.unit_status(MODULES).await.expect("status");
    assert_eq!(status.id, MODULES);
    assert_eq!(status.unit_file_state, "static");
    assert!(status.installed() && status.active() && !status.enabled());
}

#[tokio::test]
async fn failing_unit_reports_failed() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    sd.standin
        .add_unit(OPENSM, StandInUnit::service().failing("failed"));
    match sd.client.start(OPENSM).await {
        Err(SystemError::JobFailed { unit, result, .. }) => {
            assert_eq!((unit.as_str(), result), (OPENSM, JobResult::Failed));
        }
        other => panic!("{other:?}"),
    }
    let status = sd.client.unit_status(OPENSM).await.expect("status");
    assert_eq!(
        (status.active_state.as_str(), status.sub_state.as_str()),
        ("failed", "failed")
    );
}

#[tokio::test]
async fn missing_unit_is_no_such_unit() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    let missing = "nosuch.service";
    assert!(matches!(
        sd.client.start(missing).await,
        Err(SystemError::NoSuchUnit { unit, .. }) if unit == missing
    ));
    assert!(matches!(
        sd.client.enable(missing).await,
        Err(SystemError::NoSuchUnit { .. })
    ));
    // Its status still answers: not installed.
    let status = sd.client.unit_status(missing).await.expect("status");
    assert_eq!(status.load_state, "not-found");
    assert!(!status.installed());
    assert_eq!(status.unit_file_state, "");
    assert_eq!(sd.standin.reloads(), 0, "no reload after a failed enable");
}

#[tokio::test]
async fn enable_and_disable_change_unit_file_state() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    let enabled = sd.client.enable(OPENSM).await.expect("enable");
    assert!(enabled.carries_install_info);
    assert_eq!(enabled.changes.len(), 1);
    assert_eq!(enabled.changes[0].kind, "symlink");
    assert_eq!(
        sd.client
            .unit_status(OPENSM)
            .await
            .expect("status")
            .unit_file_state,
        "enabled"
    );
    // Enabling again changes nothing, and still reloads as systemctl does.
    assert!(sd
        .client
        .enable(OPENSM)
        .await
        .expect("enable")
        .changes
        .is_empty());
    let disabled = sd.client.disable(OPENSM).await.expect("disable");
    assert_eq!(disabled.len(), 1);
    assert_eq!(disabled[0].kind, "unlink");
    let status = sd.client.unit_status(OPENSM).await.expect("status");
    assert_eq!(status.unit_file_state, "disabled");
    assert_eq!(sd.standin.reloads(), 3);
    assert_eq!(
        sd.standin.calls(),
        [
            format!("EnableUnitFiles [{OPENSM}] runtime=false force=false"),
            "Reload".into(),
            format!("LoadUnit {OPENSM}"),
            format!("EnableUnitFiles [{OPENSM}] runtime=false force=false"),
            "Reload".into(),
            format!("DisableUnitFiles [{OPENSM}] runtime=false"),
            "Reload".into(),
            format!("LoadUnit {OPENSM}"),
        ]
    );
}

#[tokio::test]
async fn static_and_masked_units() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    let outcome = sd.client.enable(MODULES).await.expect("enable");
    assert!(!outcome.carries_install_info && outcome.changes.is_empty());
    sd.standin.add_unit(OPENSM, StandInUnit::service().masked());
    match sd.client.start(OPENSM).await {
        Err(SystemError::Refused { name, message, .. }) => {
            assert_eq!(name, "org.freedesktop.systemd1.UnitMasked");
            assert_eq!(message, format!("Unit {OPENSM} is masked."));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_job_that_never_ends_times_out() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    sd.standin
        .add_unit(OPENSM, StandInUnit::service().hanging());
    let client = sd
        .client
        .clone()
        .with_job_timeout(Duration::from_millis(300));
    assert!(matches!(
        client.start(OPENSM).await,
        Err(SystemError::JobTimeout { job, .. }) if job.starts_with("/org/freedesktop/systemd1/job/")
    ));
}

/// A JobRemoved for our job sent by someone other than systemd does not end the wait.
#[tokio::test]
async fn a_forged_job_removed_is_ignored() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    sd.standin
        .add_unit(OPENSM, StandInUnit::service().hanging());
    let forger = sd._bus.connect().await.expect("forger connects");
    let forging = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(25)).await;
            // The stand-in numbers jobs from 1.
            let job = zbus::zvariant::ObjectPath::try_from("/org/freedesktop/systemd1/job/1")
                .expect("path");
            let _ = forger
                .emit_signal(
                    None::<()>,
                    systemd::MANAGER_PATH,
                    systemd::MANAGER_INTERFACE,
                    "JobRemoved",
                    &(1u32, job, OPENSM, "done"),
                )
                .await;
        }
    });
    let client = sd
        .client
        .clone()
        .with_job_timeout(Duration::from_millis(700));
    assert!(matches!(
        client.start(OPENSM).await,
        Err(SystemError::JobTimeout { .. })
    ));
    forging.await.expect("forger");
}

#[tokio::test]
async fn systemd_absent_is_not_running() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let client = Systemd::new(&bus.connect().await.expect("connects"));
    assert!(!client.running().await.expect("asks the bus"));
    for e in [
        client.unit_status(NFS).await.err(),
        client.restart(NFS).await.err(),
        client.enable(NFS).await.err(),
    ] {
        assert!(matches!(e, Some(SystemError::NotRunning { .. })), "{e:?}");
    }
}

#[tokio::test]
async fn names_systemd_would_misread_are_refused_before_the_bus() {
    let Some(sd) = systemd_standin().await else {
        return;
    };
    assert!(matches!(
        sd.client.unit_status("").await,
        Err(SystemError::Invalid(_))
    ));
    assert!(matches!(
        sd.client.enable("/tmp/evil.service").await,
        Err(SystemError::Invalid(_))
    ));
    assert!(sd.standin.calls().is_empty());
}

struct Fw {
    bus: PrivateBus,
    standin: StandInFirewalld,
    client: Firewalld,
}

async fn firewalld_standin() -> Option<Fw> {
    let bus = session_bus_or_skip()?;
    let standin = StandInFirewalld::start(&bus, &["public", "trusted"])
        .await
        .expect("stand-in starts");
    let client = Firewalld::new(&bus.connect().await.expect("client connects"));
    Some(Fw {
        bus,
        standin,
        client,
    })
}

fn pair(port: u16, protocol: &str) -> (String, String) {
    (port.to_string(), protocol.to_string())
}

#[tokio::test]
async fn add_port_runtime_and_permanent() {
    let Some(fw) = firewalld_standin().await else {
        return;
    };
    assert!(fw.client.running().await.expect("running"));
    assert_eq!(fw.client.state().await.expect("state"), "RUNNING");
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        let added = fw
            .client
            .add_port("", NFS_RDMA_PORT, protocol)
            .await
            .expect("add");
        assert_eq!(added.zone, "public");
        assert_eq!((added.runtime, added.permanent), (Added::Now, Added::Now));
        assert!(fw
            .client
            .query_port("", NFS_RDMA_PORT, protocol)
            .await
            .expect("query"));
        assert!(fw
            .client
            .query_permanent_port("public", NFS_RDMA_PORT, protocol)
            .await
            .expect("query"));
    }
    let both = vec![pair(NFS_RDMA_PORT, "tcp"), pair(NFS_RDMA_PORT, "udp")];
    assert_eq!(fw.standin.ports("public", false), both);
    assert_eq!(fw.standin.ports("public", true), both);
    assert!(fw.standin.ports("trusted", false).is_empty());
    assert_eq!(
        fw.standin.calls()[..4],
        [
            "getDefaultZone".to_string(),
            "zone.addPort public 20049 tcp 0".into(),
            "config.getZoneByName public".into(),
            "config.zone.addPort 20049 tcp (public)".into(),
        ]
    );
}

#[tokio::test]
async fn already_enabled_is_tolerated() {
    let Some(fw) = firewalld_standin().await else {
        return;
    };
    fw.standin.open("trusted", "20049", "tcp", false);
    let added = fw
        .client
        .add_port("trusted", NFS_RDMA_PORT, Protocol::Tcp)
        .await
        .expect("add");
    assert_eq!(
        (added.runtime, added.permanent),
        (Added::Already, Added::Now)
    );
    let again = fw
        .client
        .add_port("trusted", NFS_RDMA_PORT, Protocol::Tcp)
        .await
        .expect("add again");
    assert_eq!(
        (again.runtime, again.permanent),
        (Added::Already, Added::Already)
    );
}

#[tokio::test]
async fn an_unknown_zone_is_refused() {
    let Some(fw) = firewalld_standin().await else {
        return;
    };
    let e = fw
        .client
        .add_port("nosuch", NFS_RDMA_PORT, Protocol::Tcp)
        .await
        .expect_err("refused");
    assert_eq!(e.firewalld_code(), Some("INVALID_ZONE"), "{e}");
    assert!(fw.standin.ports("public", true).is_empty());
    assert!(matches!(
        fw.client.add_port("", 0, Protocol::Tcp).await,
        Err(SystemError::Invalid(_))
    ));
}

#[tokio::test]
async fn firewalld_absent_nothing_is_called() {
    let Some(fw) = firewalld_standin().await else {
        return;
    };
    fw.standin.stop().await.expect("stops");
    assert!(!fw.client.running().await.expect("asks the bus"));
    assert!(matches!(
        fw.client.add_port("", NFS_RDMA_PORT, Protocol::Tcp).await,
        Err(SystemError::NotRunning { .. })
    ));
    assert!(fw.standin.calls().is_empty(), "{:?}", fw.standin.calls());
    drop(fw.bus);
}

/// A stopped firewalld whose bus name is activatable (an activation file naming it, as a
/// distribution or administrator may add for its dbus-org.fedoraproject.FirewallD1.service
/// alias) is not started by the client.
#[tokio::test]
async fn a_stopped_firewalld_is_not_activated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("activated");
    let services = dir.path().join("services");
    std::fs::create_dir(&services).expect("mkdir");
    std::fs::write(
        services.join("org.fedoraproject.FirewallD1.service"),
        format!(
            "[D-BUS Service]\nName=org.fedoraproject.FirewallD1\nExec=/usr/bin/touch {}\n",
            marker.display()
        ),
    )
    .expect("activation file");
    let bus = match rdma_manager_tests::bus::BusConfig::session()
        .policy(format!(
            "  <servicedir>{}</servicedir>\n",
            services.display()
        ))
        .start()
    {
        Ok(bus) => bus,
        Err(e) => {
            assert!(!rdma_manager_tests::bus::tools_required(), "{e:#}");
            eprintln!("skipping: {e:#}");
            return;
        }
    };
    let conn = bus.connect().await.expect("connects");
    let client = Firewalld::new(&conn);
    assert!(!client.running().await.expect("asks the bus"));
    assert!(matches!(
        client.default_zone().await,
        Err(SystemError::NotRunning { .. })
    ));
    assert!(matches!(
        client.add_port("", NFS_RDMA_PORT, Protocol::Tcp).await,
        Err(SystemError::NotRunning { .. })
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists(), "the client activated firewalld");
    // The control: a call without NO_AUTO_START does activate it. The activated program never
    // takes the name, so the call's answer is not awaited past the marker's appearance.
    let call = conn.call_method(
        Some(firewalld::BUS_NAME),
        firewalld::PATH,
        Some(firewalld::INTERFACE),
        "getDefaultZone",
        &(),
    );
    let _ = tokio::time::timeout(Duration::from_millis(500), call).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !marker.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(marker.exists(), "the activation file was not used");
}

/// The engine holds the services as a trait object.
#[tokio::test]
async fn the_trait_object_reaches_both_services() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let sd = StandInSystemd::start(&bus).await.expect("systemd stand-in");
    sd.add_unit(NFS, StandInUnit::service().running());
    let fw = StandInFirewalld::start(&bus, &["public"])
        .await
        .expect("firewalld stand-in");
    let conn: Connection = bus.connect().await.expect("connects");
    let services: Arc<dyn SystemServices> = Arc::new(BusSystemServices::new(&conn));
    assert_eq!(
        services.restart_unit(NFS).await.expect("restart"),
        JobResult::Done
    );
    assert!(services.firewalld_running().await.expect("running"));
    assert_eq!(
        services.firewall_default_zone().await.expect("zone"),
        "public"
    );
    services
        .firewall_add_port("", NFS_RDMA_PORT, Protocol::Udp)
        .await
        .expect("add");
    assert!(services
        .firewall_query_port("public", NFS_RDMA_PORT, Protocol::Udp)
        .await
        .expect("query"));
    assert_eq!(fw.ports("public", true), vec![pair(NFS_RDMA_PORT, "udp")]);
}

// ---- The real programs ------------------------------------------------------------------

/// One scenario against firewalld, written as a transcript: every answer, and every refusal as
/// its D-Bus error name and message.
async fn firewalld_transcript(conn: &Connection) -> Vec<String> {
    let client = Firewalld::new(conn);
    let mut t = Vec::new();
    let answer = |r: Result<String, SystemError>| match r {
        Ok(s) => s,
        Err(SystemError::Refused { name, message, .. }) => format!("error {name}: {message}"),
        Err(e) => format!("other error {e}"),
    };
    t.push(format!("running {:?}", client.running().await.ok()));
    t.push(format!("state {}", answer(client.state().await)));
    t.push(format!(
        "default zone {}",
        answer(client.default_zone().await)
    ));
    for (zone, protocol) in [
        ("", Protocol::Tcp),
        ("", Protocol::Tcp),
        ("public", Protocol::Udp),
        ("nosuch", Protocol::Tcp),
    ] {
        let q = client.query_port(zone, NFS_RDMA_PORT, protocol).await;
        t.push(format!(
            "query {zone:?} {protocol} {}",
            answer(q.map(|b| b.to_string()))
        ));
        let a = client.add_port(zone, NFS_RDMA_PORT, protocol).await;
        t.push(format!(
            "add {zone:?} {protocol} {}",
            answer(a.map(|a| format!("{} {:?} {:?}", a.zone, a.runtime, a.permanent)))
        ));
        let p = client
            .query_permanent_port(zone, NFS_RDMA_PORT, protocol)
            .await;
        t.push(format!(
            "permanent {zone:?} {protocol} {}",
            answer(p.map(|b| b.to_string()))
        ));
    }
    // Raw calls for what the client never sends but the stand-in answers.
    let call = |r: zbus::Result<zbus::Message>| match r {
        Ok(m) => format!("ok {}", m.body().signature()),
        Err(zbus::Error::MethodError(name, message, _)) => {
            format!("error {name}: {}", message.unwrap_or_default())
        }
        Err(e) => format!("other error {e}"),
    };
    let zone_iface = firewalld::ZONE_INTERFACE;
    t.push(call(
        conn.call_method(
            Some(firewalld::BUS_NAME),
            firewalld::PATH,
            Some(zone_iface),
            "addPort",
            &("", "20050", "xyz", 0i32),
        )
        .await,
    ));
    match conn
        .call_method(
            Some(firewalld::BUS_NAME),
            firewalld::PATH,
            Some(zone_iface),
            "addPort",
            &("", "20051", "tcp", 0i32),
        )
        .await
    {
        Ok(m) => t.push(format!(
            "runtime addPort \"\" answers {:?}",
            m.body().deserialize::<String>().ok()
        )),
        Err(e) => t.push(format!("runtime addPort failed {e}")),
    }
    t.push(call(
        conn.call_method(
            Some(firewalld::BUS_NAME),
            firewalld::CONFIG_PATH,
            Some(firewalld::CONFIG_INTERFACE),
            "getZoneByName",
            &("nosuch",),
        )
        .await,
    ));
    if let Ok(m) = conn
        .call_method(
            Some(firewalld::BUS_NAME),
            firewalld::CONFIG_PATH,
            Some(firewalld::CONFIG_INTERFACE),
            "getZoneByName",
            &("public",),
        )
        .await
    {
        if let Ok(path) = m.body().deserialize::<zbus::zvariant::OwnedObjectPath>() {
            t.push(call(
                conn.call_method(
                    Some(firewalld::BUS_NAME),
                    path.as_str(),
                    Some(firewalld::CONFIG_ZONE_INTERFACE),
                    "addPort",
                    &("20050", "bogus"),
                )
                .await,
            ));
        }
    }
    t
}

#[tokio::test]
async fn firewalld_stand_in_matches_real_firewalld() {
    let Some(real) = RealFirewalld::start_or_skip().await else {
        return;
    };
    let zones = real.zones().await.expect("the real firewalld's zones");
    let real_transcript = firewalld_transcript(&real.connect().await.expect("connects")).await;

    let bus = PrivateBus::session().expect("bus");
    let default = real.default_zone().await.expect("default zone");
    let mut ordered: Vec<&str> = vec![default.as_str()];
    ordered.extend(zones.iter().map(String::as_str).filter(|z| *z != default));
    let _standin = StandInFirewalld::start(&bus, &ordered)
        .await
        .expect("stand-in");
    let standin_transcript = firewalld_transcript(&bus.connect().await.expect("connects")).await;
    assert_eq!(
        standin_transcript,
        real_transcript,
        "the stand-in differs from firewalld {}; firewalld's log:\n{}",
        real.version().await.unwrap_or_default(),
        real.log()
    );
}

/// The units of the systemd scenario, as unit files for the real manager and as the stand-in's
/// table.
fn scenario_units() -> Vec<(&'static str, Option<&'static str>, StandInUnit)> {
    vec![
        (
            "ok.service",
            Some(
                "[Service]\nExecStart=/bin/sleep 1000\n[Install]\nWantedBy=default.target\n",
            ),
            StandInUnit::service(),
        ),
        (
            "bad.service",
            Some(
                "[Service]\nType=oneshot\nExecStart=/bin/false\n[Install]\nWantedBy=default.target\n",
            ),
            StandInUnit::service().failing("failed"),
        ),
        (
            "tpl@.service",
            Some("[Service]\nExecStart=/bin/sleep 1000\n[Install]\nWantedBy=default.target\n"),
            StandInUnit::service(),
        ),
        (
            "static.service",
            Some("[Service]\nExecStart=/bin/sleep 1000\n"),
            StandInUnit::service().static_unit(),
        ),
        ("masked.service", None, StandInUnit::service().masked()),
    ]
}

/// One scenario against systemd's manager, as a transcript.
async fn systemd_transcript(conn: &Connection) -> Vec<String> {
    let client = Systemd::new(conn).with_job_timeout(Duration::from_secs(20));
    let mut t = Vec::new();
    let status = |client: Systemd, unit: &'static str| async move {
        match client.unit_status(unit).await {
            Ok(s) => format!(
                "status {unit}: {} {} {} {:?}",
                s.load_state, s.active_state, s.sub_state, s.unit_file_state
            ),
            Err(e) => format!("status {unit}: {}", describe(&e)),
        }
    };
    let units = [
        "ok.service",
        "bad.service",
        "tpl@rdma.service",
        "static.service",
        "masked.service",
        "nosuch.service",
    ];
    for unit in units {
        t.push(status(client.clone(), unit).await);
    }
    let jobs: [(&str, &'static str); 7] = [
        ("start", "ok.service"),
        ("restart", "ok.service"),
        ("restart", "tpl@rdma.service"),
        ("stop", "ok.service"),
        ("start", "bad.service"),
        ("start", "nosuch.service"),
        ("start", "masked.service"),
    ];
    for (verb, unit) in jobs {
        let r = match verb {
            "start" => client.start(unit).await,
            "stop" => client.stop(unit).await,
            _ => client.restart(unit).await,
        };
        t.push(format!(
            "{verb} {unit}: {}",
            match r {
                Ok(result) => result.to_string(),
                Err(e) => describe(&e),
            }
        ));
        t.push(status(client.clone(), unit).await);
    }
    for (verb, unit) in [
        ("enable", "ok.service"),
        ("enable", "ok.service"),
        ("enable", "tpl@rdma.service"),
        ("enable", "static.service"),
        ("enable", "nosuch.service"),
        ("enable", "masked.service"),
        ("disable", "ok.service"),
        ("disable", "ok.service"),
        ("disable", "nosuch.service"),
    ] {
        let r = if verb == "enable" {
            client.enable(unit).await.map(|o| {
                format!(
                    "install info {}, changes {:?}",
                    o.carries_install_info,
                    o.changes
                        .iter()
                        .map(|c| c.kind.as_str())
                        .collect::<Vec<_>>()
                )
            })
        } else {
            client.disable(unit).await.map(|c| {
                format!(
                    "changes {:?}",
                    c.iter().map(|c| c.kind.as_str()).collect::<Vec<_>>()
                )
            })
        };
        t.push(format!(
            "{verb} {unit}: {}",
            r.unwrap_or_else(|e| describe(&e))
        ));
        t.push(status(client.clone(), unit).await);
    }
    t
}

fn describe(e: &SystemError) -> String {
    match e {
        SystemError::NoSuchUnit { message, .. } => format!("NoSuchUnit: {message}"),
        SystemError::JobFailed { result, .. } => format!("job {result}"),
        SystemError::Refused { name, message, .. } => format!("{name}: {message}"),
        e => format!("other: {e}"),
    }
}

#[tokio::test]
async fn systemd_stand_in_matches_real_systemd_manager() {
    let units = scenario_units();
    let files: Vec<(&str, Option<&str>)> = units.iter().map(|(n, f, _)| (*n, *f)).collect();
    let Some(real) = UserSystemd::start_or_skip(&files).await else {
        return;
    };
    let real_transcript = systemd_transcript(&real.connect().await.expect("connects")).await;
    let unit_dir = real.unit_dir().display().to_string();
    drop(real);

    let bus = PrivateBus::session().expect("bus");
    let standin = StandInSystemd::start(&bus).await.expect("stand-in");
    standin.set_config_dir(&unit_dir);
    for (name, _, unit) in units {
        let name = if name == "tpl@.service" {
            "tpl@rdma.service"
        } else {
            name
        };
        standin.add_unit(name, unit);
    }
    let standin_transcript = systemd_transcript(&bus.connect().await.expect("connects")).await;
    assert_eq!(standin_transcript, real_transcript);
}

/// NetworkManager's settings with no profile.
struct EmptySettings;
#[zbus::interface(name = "org.freedesktop.NetworkManager.Settings")]
impl EmptySettings {
    fn list_connections(&self) -> Vec<zbus::zvariant::OwnedObjectPath> {
        Vec::new()
    }
}

/// A NetworkManager that owns its name with its object server running (a call to a path not
/// exported gets UnknownObject) and its settings not there yet, as at boot.
async fn network_manager_without_settings(bus: &PrivateBus) -> Connection {
    let nm = bus.connect().await.expect("connects");
    nm.request_name("org.freedesktop.NetworkManager")
        .await
        .expect("owns the name");
    let _ = nm.object_server();
    nm
}

/// At boot NetworkManager owns its name before it exports its settings (the daemon, started
/// beside it, met this on the installed system's boots). Asked in that window, the daemon waits
/// for them rather than taking it for a NetworkManager without profiles, which would let the
/// restore re-create IPoIB interfaces that NetworkManager owns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_network_manager_is_waited_for_not_taken_for_one_without_profiles() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let nm = network_manager_without_settings(&bus).await;
    let conn = bus.connect().await.expect("connects");
    let services = BusSystemServices::new(&conn);
    let exporter = {
        let nm = nm.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            nm.object_server()
                .at("/org/freedesktop/NetworkManager/Settings", EmptySettings)
                .await
                .expect("exported");
        })
    };
    let t = Instant::now();
    match services.network_manager_profiles().await {
        Ok(Some(profiles)) => assert!(profiles.is_empty(), "{profiles:?}"),
        other => panic!("expected the profiles once exported, got {other:?}"),
    }
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "answered before the settings existed: {:?}",
        t.elapsed()
    );
    exporter.await.expect("joins");
}

/// A NetworkManager that owns its name and never exports its settings (hung at boot): after
/// the wait it is not taken for one without profiles. The restore leaves the IPoIB children
/// `ipoib.toml` remembers alone (NetworkManager may own them), and makes them once it
/// answers, at the periodic re-read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_restore_waits_for_a_network_manager_that_does_not_answer() {
    use rdma_managerd::engine::{self, Dirty, EngineConfig, ObservedState, Sample, Sink};
    use rdma_managerd::kernel::sim::{fixtures, SimHost};

    struct NoSink;
    #[async_trait::async_trait]
    impl Sink for NoSink {
        async fn publish(&self, _: &ObservedState, _: &Dirty) {}
        async fn samples(&self, _: u64, _: &[((u32, u32), Sample)]) {}
    }
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let nm = network_manager_without_settings(&bus).await;

    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(dir.path().join("etc/rdma-manager")).expect("etc");
    // ib0's port on the demo host, with one child remembered.
    std::fs::write(
        dir.path().join("etc/rdma-manager/ipoib.toml"),
        "[[port]]\nguid = \"0xf452140300039381\"\n[[port.child]]\nname = \"ib0.0002\"\npkey = \"0x8002\"\n",
    )
    .expect("file");
    let sim = SimHost::in_dir(dir.path(), fixtures::demo_host()).expect("host");
    let has_child = || sim.spec().netdevs.iter().any(|n| n.name == "ib0.0002");
    let conn = bus.connect().await.expect("connects");
    let mut system = BusSystemServices::new(&conn);
    system.nm_settings_wait = Duration::from_millis(300);
    let config = EngineConfig {
        tick: Duration::from_millis(50),
        resync_ticks: 10,
        ..EngineConfig::default()
    };
    let (_handle, task) = engine::start(
        Arc::new(sim.clone()),
        Arc::new(system),
        Arc::new(NoSink),
        config,
        &mut engine::phases::Phases::new(),
    )
    .await
    .expect("engine starts");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !has_child(),
        "re-created while NetworkManager had not said what it owns"
    );

    nm.object_server()
        .at("/org/freedesktop/NetworkManager/Settings", EmptySettings)
        .await
        .expect("exported");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !has_child() {
        assert!(
            Instant::now() < deadline,
            "not re-created 10 s after NetworkManager answered without a profile for it"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    task.abort();
}
