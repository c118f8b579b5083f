//! The interactive loop on a real terminal: raw mode and the alternate screen (restored on
//! exit and on panic), terminal events, the service's updates, and the calls the application
//! asks for. A frame is drawn only after something happened; idle, the loop sleeps until the
//! next signal (once a second from ThroughputSampled) or key.

use std::io::stdout;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Runs the interactive client on `conn` until the user quits.
pub async fn run(conn: Connection, mouse: bool) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Update>();
    let listener = tokio::spawn(client::run(conn.clone(), tx.clone()));
    let mut terminal = ratatui::init();
    if mouse {
        let _ = execute!(stdout(), EnableMouseCapture);
    }
    let result = event_loop(&mut terminal, &conn, &tx, &mut rx).await;
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
) -> anyhow::Result<()> {
    let mut app = App::new(Theme::from_env());
    let mut events = EventStream::new();
    let mut counters = tokio::time::interval(Duration::from_secs(1));
    counters.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    loop {
        if dirty {
            let now = now_us();
            terminal.draw(|f| app.render(f, now))?;
            dirty = false;
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
            _ = counters.tick(), if app.counters_port().is_some() => app.poll_counters(),
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
