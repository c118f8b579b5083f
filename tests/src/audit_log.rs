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

/// Starts catching, in a process that runs one test only (see [`run_alone`]).
pub fn catch() {
    assert!(
        own_process(),
        "a test that reads audit lines must start with audit_test_alone!(its name)"
    );
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

/// The variable that marks a test process started by [`run_alone`].
const ALONE: &str = "RDMA_MANAGER_TEST_ALONE";

/// The lines caught are the whole process's, so a test that reads them must be the only test
/// in its process. nextest runs each test in a process of its own; libtest (`cargo test`) runs
/// tests as threads of one process, and there this runs the test `path` (`module_path!()` and
/// the function's name) again, alone, in a new process of the same test binary.
///
/// `None`: this process is the test's own, run the test here. `Some(outcome)`: the test ran
/// in a process of its own; return its outcome.
pub fn run_alone(path: &str) -> Option<anyhow::Result<()>> {
    if own_process() {
        return None;
    }
    // libtest names a test by its path inside the crate: the crate's name goes.
    let name = path.split_once("::").map_or(path, |(_, rest)| rest);
    Some(rerun(name))
}

/// Whether this process runs one test only: under nextest, or started by [`run_alone`].
fn own_process() -> bool {
    std::env::var("NEXTEST_EXECUTION_MODE").as_deref() == Ok("process-per-test")
        || std::env::var_os(ALONE).is_some()
}

fn rerun(name: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let exe = std::env::current_exe().context("the test binary's path")?;
    let out = std::process::Command::new(&exe)
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, "1")
        .output()
        .with_context(|| format!("running {} {name}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A name that matches no test would pass by running nothing: exactly one must have run.
    if out.status.success() && stdout.contains("test result: ok. 1 passed") {
        return Ok(());
    }
    anyhow::bail!(
        "{name} in a process of its own: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the enclosing test alone in its process ([`run_alone`]); `$name` is the test
/// function's name.
#[macro_export]
macro_rules! audit_test_alone {
    ($name:ident) => {
        if let Some(outcome) =
            $crate::audit_log::run_alone(concat!(module_path!(), "::", stringify!($name)))
        {
            return outcome;
        }
    };
}
