//! Running rdma-managerd in the test process on a private bus, and reading its introspection.

use std::sync::Arc;

use rdma_managerd::dbus::server::{self, Bus, Service};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::SimHost;

use anyhow::{Context, Result};
use rdma_manager_dbus::{PortProxy, BUS_NAME, ROOT_PATH};
use rdma_managerd::kernel::sim::fixtures;

use crate::bus::{
    busctl_call, name_policy, tools_required, BusConfig, Credentials, PolkitConfig, PrivateBus,
    PrivatePolkit, Reply, UserDb,
};
use crate::standins::{StandInFirewalld, StandInSystemd};

/// The stand-ins of systemd and firewalld a [`SystemSetup`] runs next to the daemon.
pub struct HostServices {
    pub systemd: StandInSystemd,
    pub firewalld: StandInFirewalld,
}

/// A private session-policy bus, or `None` (with the reason printed) when dbus-daemon cannot
/// run here; under `RDMA_MANAGER_REQUIRE_TOOLS=1` that is a failure instead.
pub fn session_bus_or_skip() -> Option<PrivateBus> {
    match PrivateBus::session() {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(!tools_required(), "cannot start dbus-daemon: {e:#}");
            eprintln!("skipping: cannot start dbus-daemon: {e:#}");
            None
        }
    }
}

/// A service serving a simulated host. The service holds the host in reference cycles, so
/// the host's temporary tree is removed when this is dropped, not when the host is.
pub struct ServedSim {
    pub service: Service,
    tree: std::path::PathBuf,
}

impl Drop for ServedSim {
    fn drop(&mut self) {
        self.service.task.abort();
        if !self.tree.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.tree);
        }
    }
}

impl ServedSim {
    /// Stops the service as stopping the daemon would (the bus name is released), and leaves
    /// the host's tree, with the files under its `etc/`, for a service started after it.
    pub async fn stop_keeping_tree(mut self) {
        self.tree = std::path::PathBuf::new();
        let _ = self.service.conn.release_name(BUS_NAME).await;
    }
}

/// The demo host served on a bus of its own, with a client connected. Keep the whole value:
/// it holds the bus and the service.
pub struct ServedDemo {
    pub sim: SimHost,
    pub client: zbus::Connection,
    _service: ServedSim,
    _bus: PrivateBus,
}

/// [`ServedDemo`] with `config`, after `prepare` has set the host up (before the daemon
/// starts); `None` when dbus-daemon cannot run here (see [`session_bus_or_skip`]).
pub async fn serve_demo_or_skip(
    config: EngineConfig,
    prepare: impl FnOnce(&SimHost),
) -> Option<ServedDemo> {
    let bus = session_bus_or_skip()?;
    let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
    prepare(&sim);
    let service = serve_sim(&bus, &sim, config).await.expect("service");
    let client = bus.connect().await.expect("client");
    Some(ServedDemo {
        sim,
        client,
        _service: service,
        _bus: bus,
    })
}

/// A proxy of `path`'s Port interface that asks the daemon at every read (no property cache).
pub async fn port_proxy(client: &zbus::Connection, path: &str) -> PortProxy<'static> {
    PortProxy::builder(client)
        .path(path.to_string())
        .expect("path")
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .expect("port")
}

/// Serves `sim` on `bus` under the well-known name, as the daemon would; returns when
/// start-up is over (the name is owned before that: see `dbus::server`).
pub async fn serve_sim(
    bus: &PrivateBus,
    sim: &SimHost,
    config: EngineConfig,
) -> anyhow::Result<ServedSim> {
    serve_sim_at(bus.address().to_string(), sim.clone(), config).await
}

/// [`serve_sim`] by the bus's address and with owned arguments, to be spawned as a task by a
/// test that talks to the daemon while it starts.
pub async fn serve_sim_at(
    address: String,
    sim: SimHost,
    config: EngineConfig,
) -> anyhow::Result<ServedSim> {
    let conn = server::connect(&Bus::Address(address)).await?;
    let service = server::serve(conn, Arc::new(sim.clone()), true, config).await?;
    Ok(ServedSim {
        service,
        tree: sim.root().to_path_buf(),
    })
}

/// The `<interface>` elements (name, text as introspected) of the object itself: zbus nests
/// the children's XML in a node's introspection, so only depth 1 counts.
pub fn own_interfaces(xml: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur: Option<(String, String)> = None;
    for line in xml.lines() {
        let t = line.trim();
        if cur.is_none() {
            if t.starts_with("<node") {
                depth += 1;
                if t.ends_with("/>") {
                    depth -= 1;
                }
                continue;
            }
            if t.starts_with("</node>") {
                depth -= 1;
                continue;
            }
        }
        if depth != 1 {
            continue;
        }
        if let Some(name) = attr(t, "<interface name=") {
            cur = Some((name, String::new()));
        }
        if let Some((_, body)) = cur.as_mut() {
            body.push_str(line.trim_end());
            body.push('\n');
            if t == "</interface>" {
                out.extend(cur.take());
            }
        }
    }
    out
}

/// The value of `key="..."` in a line of introspection XML.
pub fn attr(line: &str, key: &str) -> Option<String> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

/// A private *system* bus with the project's bus policy, its user database (the test user
/// in the rdma group or not) and a real polkitd with `config`: what [`SystemSetup`] serves
/// on, for a test that starts the service itself.
pub async fn system_bus_with_polkit(
    in_group: bool,
    config: &PolkitConfig,
) -> Result<(UserDb, PrivateBus, PrivatePolkit)> {
    let users = UserDb::new(in_group)?;
    let bus = BusConfig::system()
        .with_rdma_manager_policy()
        .users(&users)
        .start()?;
    let polkit = PrivatePolkit::start(&bus, &users, config).await?;
    Ok((users, bus, polkit))
}

/// The daemon on the simulated demo host, on a private *system* bus with the project's bus
/// policy and a real polkitd: root (`who` = None) is authorized by polkit itself, the test
/// user (uid 4242) is not unless a rule grants it. Use it for every test of a mutating method.
pub struct SystemSetup {
    /// The configuration the daemon was started with (and is restarted with).
    pub engine: EngineConfig,
    pub users: UserDb,
    pub bus: PrivateBus,
    _polkit: PrivatePolkit,
    pub sim: SimHost,
    _service: ServedSim,
}

impl SystemSetup {
    pub async fn new(in_group: bool, config: PolkitConfig) -> Result<SystemSetup> {
        Self::with_host(in_group, config, SimHost::new(fixtures::demo_host())?).await
    }

    /// As [`SystemSetup::new`], on a given simulated host.
    pub async fn with_host(
        in_group: bool,
        config: PolkitConfig,
        sim: SimHost,
    ) -> Result<SystemSetup> {
        Self::with_engine(in_group, config, sim, EngineConfig::default()).await
    }

    /// As [`SystemSetup::with_host`], with the engine's (and the link tests') configuration.
    pub async fn with_engine(
        in_group: bool,
        config: PolkitConfig,
        sim: SimHost,
        engine: EngineConfig,
    ) -> Result<SystemSetup> {
        let (users, bus, polkit) = system_bus_with_polkit(in_group, &config).await?;
        let service = serve_sim(&bus, &sim, engine.clone())
            .await
            .context("serving")?;
        Ok(SystemSetup {
            engine,
            users,
            bus,
            _polkit: polkit,
            sim,
            _service: service,
        })
    }

    /// As [`SystemSetup::with_host`], with the stand-ins of systemd and firewalld (zone
    /// "public") owning their names on the same private system bus, where the daemon's
    /// `BusSystemServices` reaches them over its own connection, as on a real host. `prepare`
    /// fills the units before the daemon first reads them; the simulated host gets host
    /// setup's files first ([`fixtures::install_host_setup`]).
    pub async fn with_host_services(
        sim: SimHost,
        prepare: impl FnOnce(&HostServices),
    ) -> Result<(SystemSetup, HostServices)> {
        fixtures::install_host_setup(&sim)?;
        let users = UserDb::new(false)?;
        let bus = BusConfig::system()
            .with_rdma_manager_policy()
            .policy(name_policy("org.freedesktop.systemd1", &["root"]))
            .policy(name_policy("org.fedoraproject.FirewallD1", &["root"]))
            .users(&users)
            .start()?;
        let polkit = PrivatePolkit::start(&bus, &users, &PolkitConfig::rdma_manager()).await?;
        let services = HostServices {
            systemd: StandInSystemd::start(&bus)
                .await
                .context("systemd stand-in")?,
            firewalld: StandInFirewalld::start(&bus, &["public"])
                .await
                .context("firewalld stand-in")?,
        };
        prepare(&services);
        let service = serve_sim(&bus, &sim, EngineConfig::default())
            .await
            .context("serving")?;
        Ok((
            SystemSetup {
                engine: EngineConfig::default(),
                users,
                bus,
                _polkit: polkit,
                sim,
                _service: service,
            },
            services,
        ))
    }

    pub async fn call(
        &self,
        who: Option<&Credentials>,
        path: &str,
        iface: &str,
        method: &str,
        args: &[&str],
    ) -> Result<Reply> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        busctl_call(&self.bus, who, true, path, iface, method, &args).await
    }

    /// A method of the root object's manager interface.
    pub async fn manager(
        &self,
        who: Option<&Credentials>,
        method: &str,
        args: &[&str],
    ) -> Result<Reply> {
        self.call(who, ROOT_PATH, BUS_NAME, method, args).await
    }

    pub fn device_names(&self) -> Vec<String> {
        self.sim
            .spec()
            .devices
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    /// A file the daemon wrote, by its absolute path on a real host (`/etc/...`), read from
    /// the simulated host's tree; `None` when absent.
    pub fn etc_file(&self, path: &str) -> Option<String> {
        let p = self.sim.root().join(path.trim_start_matches('/'));
        std::fs::read_to_string(p).ok()
    }

    /// Stops the daemon (it gives up the bus name and its engine ends) and starts a new one
    /// on the same simulated host and files, as a restart or a reboot would. Change the
    /// simulated kernel in `between` to model what the kernel forgot meanwhile.
    pub async fn restart_daemon(&mut self, between: impl FnOnce(&SimHost)) -> Result<()> {
        let old = &mut self._service;
        old.service.task.abort();
        old.service
            .conn
            .release_name(BUS_NAME)
            .await
            .context("releasing the bus name")?;
        between(&self.sim);
        let new = serve_sim(&self.bus, &self.sim, self.engine.clone())
            .await
            .context("serving again")?;
        // The old service must not remove the tree the new one serves.
        let mut old = std::mem::replace(&mut self._service, new);
        old.tree = std::path::PathBuf::new();
        drop(old);
        Ok(())
    }
}

/// Every file under the given top-level directories of a simulated host's tree (`etc`, `usr`),
/// by path relative to the tree, with its bytes: equal maps before and after a refused call
/// show nothing was written.
pub fn tree_files(
    root: &std::path::Path,
    dirs: &[&str],
) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(
        dir: &std::path::Path,
        root: &std::path::Path,
        out: &mut std::collections::BTreeMap<String, Vec<u8>>,
    ) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                out.insert(rel, bytes);
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    for d in dirs {
        walk(&root.join(d), root, &mut out);
    }
    out
}
