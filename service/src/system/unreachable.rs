//! [`Unreachable`]: host services when there is no system bus to reach them through
//! (`rdma-managerd show` on a host whose D-Bus is not running). Every call fails as the bus
//! clients fail when nobody owns the service's name, so host setup shows the units' fields
//! empty, as it documents for "systemd cannot be asked".

use async_trait::async_trait;

use super::{
    EnableOutcome, JobResult, PortAddition, Protocol, Service, SystemError, SystemServices,
    UnitFileChange, UnitStatus,
};

#[derive(Clone, Copy, Debug, Default)]
pub struct Unreachable;

fn systemd<T>() -> Result<T, SystemError> {
    Err(SystemError::NotRunning {
        service: Service::Systemd,
    })
}

fn firewalld<T>() -> Result<T, SystemError> {
    Err(SystemError::NotRunning {
        service: Service::Firewalld,
    })
}

#[async_trait]
impl SystemServices for Unreachable {
    async fn unit_status(&self, _unit: &str) -> Result<UnitStatus, SystemError> {
        systemd()
    }

    async fn start_unit(&self, _unit: &str) -> Result<JobResult, SystemError> {
        systemd()
    }

    async fn stop_unit(&self, _unit: &str) -> Result<JobResult, SystemError> {
        systemd()
    }

    async fn restart_unit(&self, _unit: &str) -> Result<JobResult, SystemError> {
        systemd()
    }

    async fn enable_unit(&self, _unit: &str) -> Result<EnableOutcome, SystemError> {
        systemd()
    }

    async fn disable_unit(&self, _unit: &str) -> Result<Vec<UnitFileChange>, SystemError> {
        systemd()
    }

    async fn firewalld_running(&self) -> Result<bool, SystemError> {
        firewalld()
    }

    async fn firewall_default_zone(&self) -> Result<String, SystemError> {
        firewalld()
    }

    async fn firewall_query_port(
        &self,
        _zone: &str,
        _port: u16,
        _protocol: Protocol,
    ) -> Result<bool, SystemError> {
        firewalld()
    }

    async fn firewall_add_port(
        &self,
        _zone: &str,
        _port: u16,
        _protocol: Protocol,
    ) -> Result<PortAddition, SystemError> {
        firewalld()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sim::{fixtures, SimHost};

    /// Without systemd and firewalld, the host is still read whole and the units' fields are
    /// empty, as the Host object documents for "systemd cannot be asked".
    #[tokio::test]
    async fn the_host_is_read_with_the_units_empty() {
        let sim = SimHost::new(fixtures::demo_host()).expect("simulated host");
        fixtures::install_host_setup(&sim).expect("host setup files");
        let (state, _) = crate::engine::read_host(&sim, &Unreachable)
            .await
            .expect("read");
        assert_eq!(state.devices.len(), 4);
        let h = &state.host_setup;
        assert!(!h.modules.is_empty(), "the files are read");
        assert_eq!(h.modules_unit, "");
        assert_eq!(h.nfs_server, Default::default());
        assert_eq!(h.opensm, Default::default());
        assert!(!h.firewalld);
        let _ = std::fs::remove_dir_all(sim.root());
    }
}
