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
