//! The interactive loop on a real terminal: raw mode and the alternate screen (restored on
//! exit and on panic), terminal events, the service's updates, and the calls the application
//! asks for. A frame is drawn only after something happened; idle, the loop sleeps until the
//! next signal (once a second from ThroughputSampled) or key.

use std::io::stdout;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, EventStream};
use crossterm::execute;
use futures::StreamExt;
use tokio::sync::mpsc;
use zbus::Connection;

use crate::app::App;
use crate::client::{self, Update};
use crate::theme::Theme;

/// Microseconds since the epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Benchmarks only: when this names a file, the client writes the milliseconds from `started`
/// to its first full frame (state loaded, every port's history in) there, and exits.
pub const FIRST_FRAME_ENV: &str = "RDMA_TUI_BENCH_FIRST_FRAME";

/// Runs the interactive client on `conn` until the user quits. `started` is when the process
/// started (for [`FIRST_FRAME_ENV`]).
pub async fn run(conn: Connection, mouse: bool, started: Instant) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Update>();
    let listener = tokio::spawn(client::run(conn.clone(), tx.clone()));
    let mut terminal = ratatui::init();
    if mouse {
        let _ = execute!(stdout(), EnableMouseCapture);
    }
    let first_frame = std::env::var_os(FIRST_FRAME_ENV).map(|f| (f, started));
    let result = event_loop(&mut terminal, &conn, &tx, &mut rx, first_frame).await;
    if mouse {
        let _ = execute!(stdout(), DisableMouseCapture);
    }
    ratatui::restore();
    listener.abort();
    result
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    conn: &Connection,
    tx: &mpsc::UnboundedSender<Update>,
    rx: &mut mpsc::UnboundedReceiver<Update>,
    first_frame: Option<(std::ffi::OsString, Instant)>,
) -> anyhow::Result<()> {
    let mut app = App::new(Theme::from_env());
    let mut events = EventStream::new();
    let mut counters = tokio::time::interval(Duration::from_secs(1));
    counters.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // The node health check: at once when the Overview is first shown connected, then every
    // 10 s while it is shown.
    let mut health = tokio::time::interval(Duration::from_secs(10));
    health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    loop {
        if dirty {
            let now = now_us();
            terminal.draw(|f| app.render(f, now))?;
            dirty = false;
            if let Some((file, started)) = &first_frame {
                let m = &app.model;
                if !m.ports.is_empty() && m.ports.keys().all(|p| m.history.contains_key(p)) {
                    let ms = started.elapsed().as_secs_f64() * 1e3;
                    std::fs::write(file, format!("{ms:.2}\n"))?;
                    return Ok(());
                }
            }
        }
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => {
                    app.handle_event(&ev);
                    dirty = true;
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            up = rx.recv() => {
                let Some(up) = up else { return Ok(()) };
                app.apply(up);
                // Everything already queued goes into the same frame.
                while let Ok(up) = rx.try_recv() {
                    app.apply(up);
                }
                dirty = true;
            }
            _ = health.tick(), if app.wants_health() => app.poll_health(),
            _ = counters.tick(), if app.counters_port().is_some() || app.countdown.is_open() || app.ticking() => {
                app.poll_counters();
                // The countdown's seconds, a running test's.
                dirty |= app.countdown.is_open() || app.ticking();
            }
        }
        for (id, call) in app.take_calls() {
            let conn = conn.clone();
            let tx = tx.clone();
            tokio::spawn(async move { client::perform(&conn, id, call, &tx).await });
        }
        if app.quit {
            return Ok(());
        }
    }
}
