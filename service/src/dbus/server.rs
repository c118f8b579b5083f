//! Start-up order: connect, watch the connection, put the ObjectManager and the root object
//! (`Startup` true, no device yet) on the bus, own the well-known name, then read the host,
//! publish every object, re-apply what was persisted and start the engine, and only then set
//! `Startup` to false.
//!
//! The name is owned first, as NetworkManager does, so that the daemon answers as soon as it
//! runs: reading 256 devices and publishing 500 objects takes several times one `ibstat`
//! on a real kernel (docs/PERFORMANCE.md). What a client may rely on meanwhile: Get and GetAll
//! answer at once with what is published; GetManagedObjects waits until the host is
//! published and restored, so it never answers with a half-read host; a method that changes
//! something waits for the engine (`Context::engine`), so it acts on the restored model; the
//! root's `Startup` says which phase the daemon is in. systemd learns that start-up is over
//! from `READY=1` (`Type=notify`, sent by the binary when [`serve`] returns), so units
//! ordered after the daemon find the complete model.

use std::sync::Arc;

use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use zbus::Connection;

use super::guard::Guarded;
use super::limits::{LimitConfig, Limits};
use super::managed::{ManagedCache, ManagedObjects, KEEP_ENCODINGS_IDLE};
use super::polkit::Authorizer;
use super::publisher::Publisher;
use super::Context;
use crate::engine::phases::Phases;
use crate::engine::{self, EngineConfig, EngineHandle};
use crate::kernel::Host;
use crate::system::{BusSystemServices, SystemServices};

/// Which bus to serve on.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Becomes `Some(reason)` when the service can no longer serve: its bus connection closed
    /// or its name was taken away. The daemon then exits with a failure status so that
    /// systemd's `Restart=on-failure` starts it again.
    pub lost: tokio::sync::watch::Receiver<Option<String>>,
    /// GetManagedObjects' encoded objects, which the direct socket answers from too
    /// ([`super::direct`]).
    pub managed: Arc<ManagedCache>,
    /// What every object shares (the direct socket's GetAllCounters reads through it).
    pub ctx: Arc<Context>,
}

impl Service {
    /// What the direct socket answers from ([`super::direct::listen`]).
    pub fn direct_sources(&self) -> super::direct::Sources {
        super::direct::Sources {
            managed: self.managed.clone(),
            ctx: self.ctx.clone(),
        }
    }

    /// Waits until the service has lost its bus connection or its name, and says which.
    pub fn wait_lost(&self) -> impl std::future::Future<Output = String> + Send + 'static {
        let mut lost = self.lost.clone();
        async move {
            let reason = match lost.wait_for(|l| l.is_some()).await {
                Ok(l) => l.clone().unwrap_or_default(),
                Err(_) => "the watch of the bus connection ended".to_string(),
            };
            reason
        }
    }
}

/// Watches `conn` for its end: a stream of the bus's NameLost signals for our name ends when
/// the connection's socket closes (zbus ends every stream then), and yields when the bus takes
/// the name away. Subscribed before the name is requested, so that nothing is missed.
async fn watch_connection(
    conn: &Connection,
) -> Result<tokio::sync::watch::Receiver<Option<String>>, ServeError> {
    use futures::StreamExt;
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender("org.freedesktop.DBus")
        .and_then(|b| b.interface("org.freedesktop.DBus"))
        .and_then(|b| b.member("NameLost"))
        .and_then(|b| b.add_arg(BUS_NAME))
        .map_err(ServeError::Objects)?
        .build();
    let mut stream = zbus::MessageStream::for_match_rule(rule, conn, Some(4))
        .await
        .map_err(ServeError::Objects)?;
    let (tx, rx) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        let reason = match stream.next().await {
            Some(Ok(_)) => format!("the bus took the name {BUS_NAME} away"),
            Some(Err(e)) => format!("the bus connection failed: {e}"),
            None => "the bus connection closed".to_string(),
        };
        tracing::error!(%reason, "cannot serve any longer");
        let _ = tx.send(Some(reason));
    });
    Ok(rx)
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
/// and other host services (`SimSystemServices` on a simulated host).
pub async fn serve_with(
    conn: Connection,
    host: Arc<dyn Host>,
    simulated: bool,
    config: EngineConfig,
    authorizer: Authorizer,
    system: Arc<dyn SystemServices>,
) -> Result<Service, ServeError> {
    let mut phases = Phases::new();
    let lost = watch_connection(&conn).await?;
    let limits = Limits::new(LimitConfig::default());
    limits.attach(&conn);
    let managed = Arc::new(ManagedCache::default());
    let ctx = Arc::new(Context::new(authorizer, limits.clone()));
    conn.object_server()
        .at(
            ROOT_PATH,
            Guarded::new(
                ManagedObjects::new(managed.clone(), ctx.started_watch()),
                limits.clone(),
            ),
        )
        .await
        .map_err(ServeError::Objects)?;
    ctx.changes().set_connection(&conn);
    conn.object_server()
        .at(
            ROOT_PATH,
            Guarded::new(
                super::network::NetworkObject { ctx: ctx.clone() },
                limits.clone(),
            ),
        )
        .await
        .map_err(ServeError::Objects)?;
    let tick_us = config.tick.as_micros() as u64;
    let publisher = Arc::new(Publisher::new(
        &conn,
        ctx.clone(),
        managed.clone(),
        simulated,
        tick_us,
    ));
    publisher.starting().await;
    phases.mark("bus_objects");
    conn.request_name(BUS_NAME)
        .await
        .map_err(ServeError::Name)?;
    phases.mark("name");
    let link_tests = Arc::new(crate::linktest::LinkTests::new(
        config.link_test.clone(),
        host.clone(),
    ));
    let (engine, task) =
        engine::start(host, system, publisher.clone(), config, &mut phases).await?;
    engine.set_link_tests(link_tests.clone());
    ctx.set_engine(engine.clone());
    // The responder as remembered, before start-up ends: a peer may test once READY=1.
    link_tests.restore().await;
    ctx.set_link_tests(link_tests);
    // Startup false first: a client whose GetManagedObjects was answered finds it false.
    publisher.started().await;
    ctx.mark_started();
    phases.mark("started");
    tracing::info!(phases = %phases.summary(), "start-up phases, ms");
    // The state directory, once the host is read, published and restored.
    let directory = ctx.clone();
    tokio::spawn(async move { super::state::apply_directory(&directory).await });
    // The model's size, so that GetManagedObjects calls admitted together reserve what they
    // will send (see `limits`). Encoded off the start-up path, and not kept: the first call
    // encodes again (see `managed`).
    let sizing = managed.clone();
    tokio::task::spawn_blocking(move || {
        if let Ok(len) = sizing.body_len() {
            limits.note_reply_size(len as u64);
        }
    });
    // Encodings no call has used for a while are given back (see `managed`); the task ends
    // with the cache.
    let idle = Arc::downgrade(&managed);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(KEEP_ENCODINGS_IDLE / 5);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(cache) = idle.upgrade() else { break };
            if cache.forget_if_idle(std::time::Instant::now(), KEEP_ENCODINGS_IDLE) {
                tracing::debug!("GetManagedObjects' encodings dropped: no call for a while");
            }
        }
    });
    Ok(Service {
        conn,
        engine,
        task,
        lost,
        managed,
        ctx,
    })
}
