//! GetAllCounters on the daemon's direct socket (docs/DBUS-API.md, "The direct socket"), the
//! same call with the same reply as on the bus, without the bus daemon relaying it: on a host
//! of hundreds of ports the relay cost the bus about as much CPU as the daemon spent reading.
//!
//! One connection is kept between scrapes; the daemon closes one idle for a minute, so a call
//! that fails on a kept connection is made once more on a new one. A daemon without the
//! method (an older one) is not asked again for [`RETRY_UNSUPPORTED`]; any failure sends
//! the scrape to the bus, which answers the same.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::net::UnixStream;
use zbus::Connection;

use crate::all_counters::{all_counters_on, Counters};

/// How long a daemon that does not answer GetAllCounters on its socket is left alone.
pub const RETRY_UNSUPPORTED: Duration = Duration::from_secs(300);
/// Connecting and the handshake, at most: a daemon whose slots are all taken keeps a
/// connection waiting, and the scrape goes to the bus instead.
const CONNECT: Duration = Duration::from_secs(2);

/// The socket and what is kept of it.
pub struct DirectSocket {
    path: PathBuf,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    conn: Option<Connection>,
    /// Set when the daemon answered UnknownMethod: not asked again before then.
    unsupported_until: Option<Instant>,
}

impl DirectSocket {
    pub fn new(path: PathBuf) -> DirectSocket {
        DirectSocket {
            path,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Every port's counters, or why not (the caller asks the bus then).
    pub async fn all_counters(&self) -> zbus::Result<(u64, Vec<(String, Counters)>)> {
        let mut state = self.state.lock().await;
        if state.unsupported_until.is_some_and(|t| Instant::now() < t) {
            return Err(zbus::Error::Failure(
                "the daemon does not answer GetAllCounters on its direct socket".into(),
            ));
        }
        // A kept connection the daemon has closed (idle for a minute) fails at once: once
        // more on a new one.
        if let Some(kept) = state.conn.clone() {
            match self.call(&mut state, &kept).await {
                Err(e) if is_transport(&e) => {
                    tracing::debug!("direct socket: {e}; connecting again");
                }
                answered => return answered,
            }
        }
        let conn = self.connect().await?;
        state.conn = Some(conn.clone());
        self.call(&mut state, &conn).await
    }

    /// The call on `conn`; a connection that failed is dropped, a daemon without the method
    /// left alone for a while.
    async fn call(
        &self,
        state: &mut State,
        conn: &Connection,
    ) -> zbus::Result<(u64, Vec<(String, Counters)>)> {
        let answered = all_counters_on(conn, None).await;
        match &answered {
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.DBus.Error.UnknownMethod" =>
            {
                state.unsupported_until = Some(Instant::now() + RETRY_UNSUPPORTED);
                state.conn = None;
            }
            Err(e) if is_transport(e) => state.conn = None,
            _ => {}
        }
        answered
    }

    async fn connect(&self) -> zbus::Result<Connection> {
        let connecting = async {
            let stream = UnixStream::connect(&self.path).await?;
            zbus::connection::Builder::unix_stream(stream)
                .p2p()
                .build()
                .await
        };
        tokio::time::timeout(CONNECT, connecting)
            .await
            .map_err(|_| zbus::Error::Failure("no handshake in time".into()))?
    }
}

/// A failure of the connection rather than an answer of the daemon.
fn is_transport(e: &zbus::Error) -> bool {
    !matches!(e, zbus::Error::MethodError(..))
}
