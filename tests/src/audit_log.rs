//! The daemon's audit lines (target `rdma_managerd::audit`), caught in the test process where
//! the service runs in process (`serve_sim`): each line's fields, as the journal gets them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// One audit line: field name to value (`caller_uid`, `method`, `outcome`, `message`, ...).
pub type Record = BTreeMap<String, String>;

static RECORDS: OnceLock<Arc<Mutex<Vec<Record>>>> = OnceLock::new();

struct Catch(Arc<Mutex<Vec<Record>>>);

struct Fields<'a>(&'a mut Record);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: Subscriber> Layer<S> for Catch {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != rdma_managerd::dbus::audit::TARGET {
            return;
        }
        let mut record = Record::new();
        event.record(&mut Fields(&mut record));
        if let Ok(mut all) = self.0.lock() {
            all.push(record);
        }
    }
}

/// Starts catching (once per test process; nextest runs each test in a process of its own).
pub fn catch() {
    RECORDS.get_or_init(|| {
        let records = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Catch(records.clone()));
        // Fails only if a subscriber is set already, and then nothing would be caught: the
        // assertions on `taken()` say so.
        let _ = tracing::subscriber::set_global_default(subscriber);
        records
    });
}

/// The lines caught since the last call.
pub fn taken() -> Vec<Record> {
    RECORDS
        .get()
        .and_then(|r| r.lock().ok().map(|mut all| std::mem::take(&mut *all)))
        .unwrap_or_default()
}
