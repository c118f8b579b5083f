//! Recorded models for snapshot tests and benchmarks: the demo host as rdma-managerd published
//! it (`rdma-tui --demo --json`, in `tests/data/demo-model.json`), with a deterministic
//! throughput history and a Host record built here ([`demo_host`]), and a large host made of
//! copies of it.

use std::collections::BTreeMap;

use crate::model::{HostSetup, ManagedLimits, Model, RdmaModule, Sample, SubnetManager, UnitState};

/// The time of the newest sample in the fixtures' histories (µs since the epoch): snapshots
/// draw "now" as this.
pub const NOW_US: u64 = 1_790_000_000_000_000;

/// The demo host, with a full history (300 samples and 360 averages) on every port.
pub fn demo_model() -> Model {
    let mut model: Model = match serde_json::from_str(include_str!("../tests/data/demo-model.json"))
    {
        Ok(m) => m,
        // The file is part of the source; a test shows it parses.
        Err(e) => panic!("tests/data/demo-model.json: {e}"),
    };
    fill_history(&mut model);
    model.host_setup = Some(demo_host(&model));
    model
}

/// The demo host's Host object: rdma-core's module files as shipped (rds_rdma commented out),
/// the NFS modules in the file but not loaded, no memlock limit set, NFS over RDMA off with
/// nfs-server installed but stopped, no firewalld, opensm installed but stopped and disabled,
/// and a subnet manager seen on both InfiniBand ports.
pub fn demo_host(model: &Model) -> HostSetup {
    let module = |set: &str, module: &str, description: &str, enabled, loaded, line| RdmaModule {
        set: set.into(),
        module: module.into(),
        description: description.into(),
        enabled,
        loaded,
        line,
    };
    let unit = |load: &str, active: &str, file: &str| UnitState {
        load_state: load.into(),
        active_state: active.into(),
        unit_file_state: file.into(),
    };
    let subnet_managers = model
        .ports_in_order()
        .into_iter()
        .filter(|p| p.is_infiniband())
        .map(|p| SubnetManager {
            port: zbus::zvariant::OwnedObjectPath::try_from(p.path.clone()).unwrap_or_default(),
            name: format!("{}/{}", p.device_name, p.number),
            state: p.state.clone(),
            sm_lid: p.sm_lid,
            verdict: if p.sm_lid != 0 {
                "seen"
            } else if p.state == "INIT" {
                "stuck-init"
            } else {
                "none"
            }
            .into(),
        })
        .collect();
    HostSetup {
        path: rdma_manager_dbus::HOST_PATH.into(),
        modules: vec![
            module(
                "infiniband",
                "ib_ipoib",
                "InfiniBand over IP netdevice",
                true,
                true,
                3,
            ),
            module(
                "infiniband",
                "ib_umad",
                "Access to fabric management SMPs and GMPs from userspace.",
                true,
                true,
                6,
            ),
            module(
                "rdma",
                "ib_uverbs",
                "User access to RDMA verbs (supports libibverbs)",
                true,
                true,
                12,
            ),
            module(
                "rdma",
                "rdma_ucm",
                "User access to RDMA connection management (supports librdmacm)",
                true,
                true,
                15,
            ),
            module(
                "rdma",
                "rds_rdma",
                "RDS over RDMA support",
                false,
                false,
                18,
            ),
            module(
                "rdma",
                "xprtrdma",
                "NFS over RDMA client support",
                true,
                false,
                21,
            ),
            module(
                "rdma",
                "svcrdma",
                "NFS over RDMA server support",
                true,
                false,
                24,
            ),
        ],
        modules_unit: "active".into(),
        memlock_soft: String::new(),
        memlock_hard: String::new(),
        memlock_origin: BTreeMap::new(),
        memlock_managed: ManagedLimits::default(),
        memlock_notes: vec![format!(
            "The memlock limit of group rdma is {}.",
            rdma_manager_model::hostconf::memlock::NOT_SET
        )],
        nfs_rdma: false,
        nfs_rdma_port: 0,
        nfs_rdma_origin: BTreeMap::new(),
        nfs_notes: vec![
            "No file sets rdma=y: the NFS server listens on TCP only (/etc/nfs.conf has \
             \"# rdma=n\" commented out)."
                .into(),
        ],
        nfs_server: unit("loaded", "inactive", "disabled"),
        firewalld: false,
        opensm: unit("loaded", "inactive", "disabled"),
        subnet_managers,
    }
}

/// The demo host with mlx5_0's port in INIT and no subnet manager answering on it.
pub fn stuck_init_model() -> Model {
    let mut model = demo_model();
    let port = rdma_manager_dbus::port_path(1, 1);
    if let Some(p) = model.ports.get_mut(&port) {
        p.state = "INIT".into();
        p.sm_lid = 0;
    }
    model.host_setup = Some(demo_host(&model));
    model
}

/// Every port gets `history_length` samples ending at [`NOW_US`], and an hour of 10 s
/// averages before the newest 10 s: a slow wave per port, scaled to a fraction of its link
/// rate, so graphs have shape and differ between ports.
pub fn fill_history(model: &mut Model) {
    let n = model.history_capacity();
    let coarse_n = model.coarse_capacity();
    let ports: Vec<(String, f64)> = model
        .ports
        .values()
        .map(|p| (p.path.clone(), p.rate_gbps))
        .collect();
    for (k, (port, gbps)) in ports.into_iter().enumerate() {
        let peak = gbps.max(1.0) * 1e9 / 8.0 * 0.6;
        // The rates `ago` seconds before NOW_US.
        let wave = |ago: u64, time_us: u64| {
            let t = (n as f64 - 1.0 - ago as f64) / 60.0 + k as f64;
            let tx = peak * (0.5 + 0.4 * t.sin()) * if k % 2 == 0 { 1.0 } else { 0.3 };
            let rx = peak * (0.5 + 0.4 * (t * 0.7).cos());
            Sample {
                time_us,
                tx_bytes: tx,
                rx_bytes: rx,
                tx_packets: tx / 4096.0,
                rx_packets: rx / 4096.0,
                saturated: false,
            }
        };
        let h = model.history.entry(port.clone()).or_default();
        h.samples.clear();
        for i in 0..n {
            let ago = (n - 1 - i) as u64;
            h.push(wave(ago, NOW_US - ago * 1_000_000), n);
        }
        let c = model.history_coarse.entry(port).or_default();
        c.samples.clear();
        for i in 0..coarse_n {
            let ago = (coarse_n - i) as u64 * 10;
            c.samples.push_back(wave(ago, NOW_US - ago * 1_000_000));
        }
    }
}

/// A host of `devices` dual-port InfiniBand HCAs (64 ports from 32), named mlx5_0.., built
/// from the demo's InfiniBand HCA, each port with a full history.
pub fn large_model(devices: u32) -> Model {
    let demo = demo_model();
    let mut model = Model {
        manager: demo.manager.clone(),
        ..Model::default()
    };
    model.manager.devices.clear();
    let Some(template) = demo.devices.values().find(|d| d.name == "mlx5_0") else {
        return model;
    };
    let Some(port_template) = demo.ports.get(&template.ports[0]) else {
        return model;
    };
    for i in 0..devices {
        let path = rdma_manager_dbus::device_path(i);
        let mut d = template.clone();
        d.path = path.clone();
        d.index = i;
        d.name = format!("mlx5_{i}");
        d.node_guid = format!("0x0c42a10300{i:06x}");
        d.ports.clear();
        for n in 1..=2 {
            let pp = rdma_manager_dbus::port_path(i, n);
            let mut p = port_template.clone();
            p.path = pp.clone();
            p.device = path.clone();
            p.device_name = d.name.clone();
            p.number = n;
            p.lid = 100 + 2 * i + n;
            p.netdev = format!("ibp{i}s0f{}", n - 1);
            if (i + n) % 7 == 0 {
                p.state = "INIT".into();
                p.phys_state = "LinkUp".into();
                p.sm_lid = 0;
            }
            d.ports.push(pp.clone());
            model.ports.insert(pp, p);
        }
        model.manager.devices.push(path.clone());
        model.devices.insert(path, d);
    }
    fill_history(&mut model);
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_parse_and_fill() {
        let m = demo_model();
        assert_eq!(m.devices.len(), 4);
        assert!(m.history.values().all(|h| h.samples.len() == 300));
        assert!(m.history_coarse.values().all(|h| h.samples.len() == 360));
        let l = large_model(32);
        assert_eq!(l.ports.len(), 64);
        assert_eq!(l.ports_in_order().len(), 64);
        let h = m.host_setup.unwrap_or_default();
        assert_eq!(h.subnet_managers.len(), 2);
        assert!(h.subnet_managers.iter().all(|s| s.verdict == "seen"));
        let s = stuck_init_model().host_setup.unwrap_or_default();
        assert_eq!(s.subnet_managers[1].verdict, "stuck-init");
    }

    #[test]
    fn json_carries_the_host_setup() {
        let m = demo_model();
        let json = serde_json::to_string(&m).unwrap_or_default();
        assert!(json.contains("\"host_setup\":{"), "{json}");
        assert!(json.contains("\"subnet_managers\""));
        let back: Model = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back.host_setup, m.host_setup);
    }
}
