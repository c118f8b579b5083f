//! Start-up order: connect, put the ObjectManager at the root, enumerate the host and publish
//! every object, start the engine, and only then request the well-known name, so that a
//! client activated by the name (or systemd's Type=dbus) finds the full model at once.

use std::sync::Arc;

use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use zbus::Connection;

use super::managed::{ManagedCache, ManagedObjects};
use super::polkit::Authorizer;
use super::publisher::Publisher;
use super::Context;
use crate::engine::{self, EngineConfig, EngineHandle};
use crate::kernel::Host;
use crate::system::{BusSystemServices, SystemServices};

/// Which bus to serve on.
#[derive(Debug, Clone)]
pub enum Bus {
    System,
    Session,
    /// A bus at this address (tests, private buses).
    Address(String),
}

/// A running service.
pub struct Service {
    pub conn: Connection,
    pub engine: EngineHandle,
    pub task: tokio::task::JoinHandle<()>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot connect to the bus: {0}")]
    Connect(zbus::Error),
    #[error("cannot serve objects: {0}")]
    Objects(zbus::Error),
    #[error("cannot read the host: {0}")]
    Host(#[from] crate::kernel::HostError),
    #[error("cannot own {BUS_NAME}: {0} (is another rdma-managerd running, or does the bus policy deny it?)")]
    Name(zbus::Error),
}

pub async fn connect(bus: &Bus) -> Result<Connection, ServeError> {
    let builder = match bus {
        Bus::System => zbus::connection::Builder::system(),
        Bus::Session => zbus::connection::Builder::session(),
        Bus::Address(a) => zbus::connection::Builder::address(a.as_str()),
    }
    .map_err(ServeError::Connect)?;
    builder.build().await.map_err(ServeError::Connect)
}

/// Serves `host` on `conn` and owns the bus name; changes are authorized by polkit, and host
/// setup talks to systemd and firewalld over the same connection.
pub async fn serve(
    conn: Connection,
    host: Arc<dyn Host>,
    simulated: bool,
    config: EngineConfig,
) -> Result<Service, ServeError> {
    let authorizer = Authorizer::new(&conn);
    let system = Arc::new(BusSystemServices::new(&conn));
    serve_with(conn, host, simulated, config, authorizer, system).await
}

/// [`serve`] with another authorizer ([`Authorizer::same_user_for_simulation`] for the demo)
/// and other host services ([`crate::system::sim::SimSystemServices`] on a simulated host).
pub async fn serve_with(
    conn: Connection,
    host: Arc<dyn Host>,
    simulated: bool,
    config: EngineConfig,
    authorizer: Authorizer,
    system: Arc<dyn SystemServices>,
) -> Result<Service, ServeError> {
    let managed = Arc::new(ManagedCache::default());
    conn.object_server()
        .at(ROOT_PATH, ManagedObjects::new(managed.clone()))
        .await
        .map_err(ServeError::Objects)?;
    let ctx = Arc::new(Context::new(authorizer));
    let tick_us = config.tick.as_micros() as u64;
    let publisher = Arc::new(Publisher::new(
        &conn,
        ctx.clone(),
        managed,
        simulated,
        tick_us,
    ));
    let (engine, task) = engine::start(host, system, publisher, config).await?;
    ctx.set_engine(engine.clone());
    conn.request_name(BUS_NAME)
        .await
        .map_err(ServeError::Name)?;
    Ok(Service { conn, engine, task })
}
