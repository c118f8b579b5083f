//! The simulated host as rdma-managerd's command line runs it (`--simulate[=DIR]`,
//! `--sim-host=SPEC`, `--sim-cost=PROFILE`, and `show` on a host without RDMA): the host, its
//! own systemd, the demo's traffic and, under a cost profile, the log of what its reads cost.
//! Only in a build with the `sim` feature; the packaged daemon has none of it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;

use crate::cli::SimArgs;
use crate::engine::history::HistorySeed;
use crate::kernel::sim::cost::OpCounts;
use crate::kernel::sim::{fixtures, traffic, HostSpec, SimHost};
use crate::kernel::Host;
use crate::system::sim::SimSystemServices;
use crate::system::SystemServices;

/// A simulated host the daemon (or `show`) runs on.
pub struct Simulation {
    host: SimHost,
    /// The demo host's traffic model, which moves its counters and fills the history's past.
    traffic: Option<traffic::DemoTraffic>,
    /// The tree is a temporary directory of ours, not a `--simulate=DIR` the user chose.
    temporary: bool,
    logs_cost: bool,
}

/// What a running [`Simulation`] keeps going; dropped, it stops and removes the temporary tree.
pub struct Running {
    _tasks: Vec<AbortOnDrop>,
    _tree: Option<RemoveOnDrop>,
}

impl Simulation {
    /// The simulated host `args` ask for: none when they ask for none.
    pub fn from_args(args: &SimArgs) -> anyhow::Result<Option<Simulation>> {
        match &args.simulate {
            Some(dir) => Simulation::new(args, dir.as_deref()).map(Some),
            None => Ok(None),
        }
    }

    /// The simulated host of `args` (the demo host by default), its tree in `dir` or in a
    /// temporary directory.
    pub fn new(args: &SimArgs, dir: Option<&str>) -> anyhow::Result<Simulation> {
        let (spec, animate) = sim_spec(args.host.as_deref())?;
        let host = match dir {
            Some(dir) => SimHost::in_dir(std::path::Path::new(dir), spec)?,
            None => SimHost::new(spec)?,
        };
        // Host setup's files (rdma-core's module lists, limits.conf, nfs.conf) and the modules
        // a host with RDMA hardware has loaded; files already in a --simulate=DIR tree are kept.
        fixtures::install_host_setup(&host)?;
        // Charged from here on: rendering the tree is not a read of the host.
        if let Some(profile) = args.cost {
            host.set_cost_profile(profile);
        }
        let traffic = animate.then(|| traffic::DemoTraffic::of(&host));
        Ok(Simulation {
            host,
            traffic,
            temporary: dir.is_none(),
            logs_cost: args.cost.is_some(),
        })
    }

    pub fn host(&self) -> Arc<dyn Host> {
        Arc::new(self.host.clone())
    }

    /// A systemd of the simulated host's own, whose units act on the simulated kernel as real
    /// ones do (module lists, nfsd), and its systemd-networkd, which applies the `.network`
    /// files of the simulated tree to the simulated kernel's addresses (so that IP settings
    /// can be tried without NetworkManager); it has no firewalld and no NetworkManager.
    pub fn system_services(&self) -> Arc<dyn SystemServices> {
        let services =
            SimSystemServices::new().on_started(crate::engine::simulated_units(self.host.clone()));
        services.set_networkd(Some(Arc::new(
            crate::kernel::sim::networkd::SimNetworkd::new(self.host.clone()),
        )));
        Arc::new(services)
    }

    /// The past the demo's traffic fills the history with.
    pub fn history_seed(&self) -> Option<Arc<dyn HistorySeed>> {
        self.traffic
            .clone()
            .map(|t| Arc::new(t) as Arc<dyn HistorySeed>)
    }

    /// Starts the demo's traffic. The engine and the bus objects hold the simulated host in
    /// reference cycles, so its temporary tree would outlive the process: [`Running`] removes
    /// it when dropped.
    pub fn start(&self) -> Running {
        let traffic = self.traffic.as_ref().map(|_| {
            AbortOnDrop(traffic::spawn_demo_traffic(
                self.host.clone(),
                Duration::from_secs(1),
            ))
        });
        Running {
            _tasks: traffic.into_iter().collect(),
            _tree: self
                .temporary
                .then(|| RemoveOnDrop(self.host.root().to_path_buf())),
        }
    }

    /// Once start-up is over: under a cost profile, logs the reads start-up made, then
    /// those of every 30 s, for as long as `running` lives.
    pub fn started(&self, running: &mut Running) {
        if self.logs_cost {
            running._tasks.push(log_sim_ops(self.host.clone()));
        }
    }
}

fn sim_spec(spec: Option<&str>) -> anyhow::Result<(HostSpec, bool)> {
    match spec {
        None | Some("demo") => Ok((fixtures::demo_host(), true)),
        Some("naming") => Ok((fixtures::naming_host(), false)),
        Some(s) if s.starts_with("rxe:") => match s["rxe:".len()..].parse::<u32>() {
            Ok(d) if d > 0 && d <= 4096 => Ok((fixtures::rxe_host(d), false)),
            _ => bail!("--sim-host={s}: expected rxe:DEVICES (1 to 4096)"),
        },
        Some(s) => {
            let nums: Vec<u32> = s
                .strip_prefix("large:")
                .map(|r| r.split(':').filter_map(|n| n.parse().ok()).collect())
                .unwrap_or_default();
            match nums.as_slice() {
                [d, p, i] if *d > 0 && *p > 0 && *d <= 4096 && *p <= 8 => {
                    Ok((fixtures::large_host(*d, *p, *i), false))
                }
                _ => bail!(
                    "--sim-host={s}: expected demo, naming, large:DEVICES:PORTS:IPOIB or rxe:DEVICES"
                ),
            }
        }
    }
}

/// Under `--sim-cost`: the simulated host's reads made during start-up, then those of every
/// 30 s, with what the cost model charged for them (what a benchmark's CPU figure holds).
fn log_sim_ops(sim: SimHost) -> AbortOnDrop {
    let profile = sim.cost().profile();
    let log = move |what: &str, ops: &OpCounts| {
        let charged = ops.cost(&profile).as_secs_f64() * 1e3;
        tracing::info!(
            ops = ?ops,
            charged_ms = format!("{charged:.1}"),
            "simulated host: reads {what}"
        );
    };
    let mut last = sim.cost().counts();
    log("during start-up", &last);
    AbortOnDrop(tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(30));
        every.tick().await;
        loop {
            every.tick().await;
            let now = sim.cost().counts();
            log("in the last 30 s", &now.since(&last));
            last = now;
        }
    }))
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Removes a directory tree when dropped.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
