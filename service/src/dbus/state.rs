//! The declarative state on the root object: `GetState`, `DiffState`, `ApplyState` and the
//! state directory applied at start (`StateDirectory`).
//!
//! A document is read and checked, its GUID-named devices resolved and its difference from
//! the host computed before anything changes, so a bad document is refused with nothing
//! changed (`InvalidArgument`, or `NotFound` for a name the host lacks). An apply asks polkit
//! for every area it touches, each once and all before the first step; the steps and their
//! verification are the engine's (`engine/ops_state.rs`).

use std::sync::Arc;

use rdma_manager_dbus::types::{StateChange, StateFile};
use rdma_manager_dbus::{Action, Error};
use rdma_manager_model::state::{self, Area, Change, State, StateError};
use tracing::{info, warn};
use zbus::message::Header;
use zbus::zvariant::OwnedObjectPath;

use super::Context;
use crate::engine::{EngineHandle, StateFileOutcome};

/// How long an applied state may wait for confirmation, in seconds (`ApplyState`, and
/// `Extend` of its pending change): NetworkManager's range for its checkpoints.
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<u32> = 10..=3600;

/// Where the state directory is, under the daemon's configuration root.
pub const STATE_DIR: &str = "/etc/rdma-manager/state.d";

/// The polkit action of each area of the state.
pub fn action_of(area: Area) -> Action {
    match area {
        Area::Links => Action::ManageLinks,
        Area::Roce => Action::ManageRoce,
        Area::Naming => Action::ManageNaming,
        Area::Host => Action::ManageHost,
        Area::Ipoib => Action::ManageIpoib,
        Area::Ip => Action::ManageIp,
        Area::LinkTest => Action::TestLink,
        Area::Adapter => Action::ManageAdapter,
    }
}

/// The distinct actions of `changes`, in the order their areas first appear.
fn actions_of(changes: &[Change]) -> Vec<Action> {
    let mut out = Vec::new();
    for c in changes {
        let a = action_of(c.step.area());
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

fn wire(c: &Change) -> StateChange {
    StateChange {
        path: c.path.clone(),
        op: c.op.as_str().to_string(),
        current: c.current.clone(),
        wanted: c.wanted.clone(),
        action: action_of(c.step.area()).id().to_string(),
    }
}

fn refused(e: StateError) -> Error {
    if e.is_not_found() {
        Error::NotFound(e.to_string())
    } else {
        Error::InvalidArgument(e.to_string())
    }
    .capped()
}

/// A document's difference from the host: the changes, in their order, and the wanted
/// state with its devices named as the kernel names them.
async fn prepare(engine: &EngineHandle, document: &str) -> Result<(Vec<Change>, State), Error> {
    let doc = state::parse_document(document).map_err(refused)?;
    let (current, guids) = engine
        .current_state_and_guids()
        .await
        .map_err(super::errors::op_error)?;
    let mut wanted = doc.state;
    wanted
        .resolve_devices(|guid| guids.get(guid).cloned())
        .map_err(|e| refused(e.with_lines(&doc.lines)))?;
    let changes = state::diff(&current, &wanted).map_err(|e| refused(e.with_lines(&doc.lines)))?;
    Ok((changes, wanted))
}

/// `GetState`: the host's state as a document, `yaml` or `json`.
pub async fn get_state(ctx: &Context, format: &str) -> Result<String, Error> {
    let render = match format {
        "yaml" => state::to_yaml,
        "json" => state::to_json,
        other => {
            return Err(Error::InvalidArgument(format!(
                "{} is not a format; give \"yaml\" or \"json\"",
                rdma_manager_dbus::text::quote_capped(other)
            )))
        }
    };
    let current = ctx
        .engine()
        .await?
        .current_state()
        .await
        .map_err(super::errors::op_error)?;
    Ok(render(&current))
}

/// `DiffState`: what applying `document` would change; changes nothing.
pub async fn diff_state(ctx: &Context, document: &str) -> Result<Vec<StateChange>, Error> {
    let (changes, _) = prepare(ctx.engine().await?, document).await?;
    Ok(changes.iter().map(wire).collect())
}

/// `ApplyState`: applies `document`, verified; with a timeout, as a pending change.
pub async fn apply_state(
    ctx: &Arc<Context>,
    header: &Header<'_>,
    document: &str,
    timeout: u32,
) -> Result<(Vec<StateChange>, OwnedObjectPath), Error> {
    if timeout != 0 && !TIMEOUT_RANGE.contains(&timeout) {
        return Err(Error::InvalidArgument(format!(
            "a timeout of {timeout} s is outside 10 to 3600 (0: no confirmation)"
        )));
    }
    let engine = ctx.engine().await?;
    let (changes, wanted) = prepare(engine, document).await?;
    let shown: Vec<StateChange> = changes.iter().map(wire).collect();
    let none = super::values::object_path("/".to_string());
    // Nothing to do: nothing asked, nothing written.
    if changes.is_empty() {
        return Ok((shown, none));
    }
    let actions = actions_of(&changes);
    let arguments = crate::audit_args![document, timeout];
    authorized(ctx, header, &actions, arguments, async {
        let pending = engine
            .apply_state_changes(&changes, &wanted)
            .await
            .map_err(super::errors::op_error)?;
        if timeout == 0 {
            return Ok((shown, none));
        }
        let path = ctx
            .changes()
            .add_state(ctx, pending, timeout, actions[0])
            .await?;
        Ok((shown, path))
    })
    .await
}

/// [`Context::change`] for several actions: polkit is asked for each, all before `change`
/// runs; the first refusal ends the call with one audit line. A change that runs leaves one
/// audit line per action.
async fn authorized<T>(
    ctx: &Context,
    header: &Header<'_>,
    actions: &[Action],
    arguments: String,
    change: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let uid = match header.sender() {
        Some(sender) => ctx.limits.uid_of(sender.as_str()).await,
        None => None,
    };
    let requests: Vec<super::audit::Request> = actions
        .iter()
        .map(|a| super::audit::Request::new(header, uid, *a, arguments.clone()))
        .collect();
    for r in &requests {
        if let Err(e) = ctx.authorize(header, r.action).await {
            let refused = Err(e);
            r.record::<T>(&refused, false);
            return refused;
        }
    }
    let outcome = change.await;
    for r in &requests {
        r.record(&outcome, true);
    }
    outcome
}

/// Applies the state directory's files in name order, each as an `ApplyState` with no
/// timeout (the daemon's own start: no polkit), and publishes each outcome as the root's
/// `StateDirectory`. Run once, after start-up.
pub async fn apply_directory(ctx: &Context) {
    let Ok(engine) = ctx.engine_now() else {
        return;
    };
    let host = engine.host();
    let mut names: Vec<String> = match host.list_dir(std::path::Path::new(STATE_DIR)).await {
        Ok(Some(names)) => names
            .into_iter()
            .filter(|n| n.ends_with(".yml") || n.ends_with(".yaml"))
            .collect(),
        Ok(None) => return,
        Err(e) => {
            warn!(target: "rdma_managerd::state", dir = STATE_DIR, error = %e,
                "the state directory cannot be read; nothing from it is applied");
            return;
        }
    };
    names.sort();
    let mut outcomes = Vec::new();
    for name in names {
        let file = format!("{STATE_DIR}/{name}");
        let outcome = apply_file(engine, &file).await;
        match outcome.outcome.as_str() {
            "applied" | "unchanged" => {
                info!(target: "rdma_managerd::state", file = %outcome.file,
                    outcome = %outcome.outcome, summary = %outcome.summary, "state file")
            }
            _ => warn!(target: "rdma_managerd::state", file = %outcome.file,
                outcome = %outcome.outcome, summary = %outcome.summary,
                message = %outcome.message, "state file"),
        }
        outcomes.push(outcome);
    }
    if !outcomes.is_empty() {
        engine.set_state_directory(outcomes).await;
    }
}

async fn apply_file(engine: &EngineHandle, file: &str) -> StateFileOutcome {
    let outcome = |outcome: &str, summary: String, message: String| StateFileOutcome {
        file: file.to_string(),
        outcome: outcome.to_string(),
        summary,
        message,
    };
    let text = match engine.host().read_file(std::path::Path::new(file)).await {
        Ok(None) => return outcome("refused", "no change".into(), "the file is gone".into()),
        Ok(Some(bytes)) => match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => {
                return outcome(
                    "refused",
                    "no change".into(),
                    "the file is not UTF-8 text".into(),
                )
            }
        },
        Err(e) => return outcome("refused", "no change".into(), e.to_string()),
    };
    let (changes, wanted) = match prepare(engine, &text).await {
        Ok(p) => p,
        Err(e) => return outcome("refused", "no change".into(), e.message()),
    };
    if changes.is_empty() {
        return outcome("unchanged", "no change".into(), String::new());
    }
    let summary = match changes.len() {
        1 => "1 change".to_string(),
        n => format!("{n} changes"),
    };
    match engine.apply_state_changes(&changes, &wanted).await {
        Ok(_) => outcome("applied", summary, String::new()),
        Err(e) => outcome("rolled-back", summary, e.to_string()),
    }
}

/// The `StateDirectory` rows of what the engine holds.
pub fn directory_rows(files: &[StateFileOutcome]) -> Vec<StateFile> {
    files
        .iter()
        .map(|f| StateFile {
            file: f.file.clone(),
            outcome: f.outcome.clone(),
            summary: f.summary.clone(),
            message: rdma_manager_dbus::text::cap_message(&f.message),
        })
        .collect()
}
