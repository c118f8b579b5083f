//! `CheckHealth` on the root: a node health check against expectations (the state document's
//! `health` section), read only and open to every caller, as reading results is.
//!
//! The expectations come from the document given, or, when it is empty, from the `health`
//! sections of the state directory's files (`/etc/rdma-manager/state.d`, in name order, later
//! files adding ports and replacing the other keys). A document that is refused, or that
//! expects nothing, is `InvalidArgument` with its key path and line; nothing is checked then.
//! A device or port the host lacks is not a refusal but a failed `present` expectation: a
//! missing card is what a health check is for.

use std::path::Path;

use rdma_manager_dbus::text::cap_message;
use rdma_manager_dbus::types::HealthCheck;
use rdma_manager_dbus::Error;
use rdma_manager_model::health::{self, Health};
use rdma_manager_model::state::{self, StateError};

use super::state::STATE_DIR;
use super::Context;
use crate::engine::EngineHandle;

fn refused(e: StateError) -> Error {
    Error::InvalidArgument(e.to_string()).capped()
}

/// The expectations of a document's `health` section.
fn of_document(document: &str) -> Result<Health, Error> {
    let doc = state::parse_document(document).map_err(refused)?;
    doc.state.health.ok_or_else(|| {
        Error::InvalidArgument(
            "the document has no health section: nothing to check (docs/STATE.md, \"health\")"
                .into(),
        )
    })
}

/// The `health` sections of the state directory's files, merged in name order.
async fn of_directory(engine: &EngineHandle) -> Result<Health, Error> {
    let host = engine.host();
    let mut names: Vec<String> = match host.list_dir(Path::new(STATE_DIR)).await {
        Ok(Some(names)) => names
            .into_iter()
            .filter(|n| n.ends_with(".yml") || n.ends_with(".yaml"))
            .collect(),
        Ok(None) => Vec::new(),
        Err(e) => {
            return Err(Error::Failed(format!(
                "the state directory {STATE_DIR} cannot be read: {e}"
            )))
        }
    };
    names.sort();
    let mut health = Health::default();
    for name in names {
        let file = format!("{STATE_DIR}/{name}");
        let text = match host.read_file(Path::new(&file)).await {
            Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| {
                Error::InvalidArgument(format!("{file}: the file is not UTF-8 text"))
            })?,
            Ok(None) => continue,
            Err(e) => return Err(Error::Failed(format!("{file}: {e}"))),
        };
        let doc = state::parse_document(&text)
            .map_err(|e| Error::InvalidArgument(format!("{file}: {e}")).capped())?;
        if let Some(h) = doc.state.health {
            health = health.merged(h);
        }
    }
    Ok(health)
}

/// `CheckHealth`: every expectation's verdict, in the section's order.
pub async fn check_health(ctx: &Context, document: &str) -> Result<Vec<HealthCheck>, Error> {
    let engine = ctx.engine().await?;
    let health = if document.trim().is_empty() {
        of_directory(engine).await?
    } else {
        of_document(document)?
    };
    if health.is_empty() {
        return Err(Error::InvalidArgument(if document.trim().is_empty() {
            format!(
                "no file of {STATE_DIR} has a health section: nothing to check (give \
                 expectations, docs/STATE.md, \"health\")"
            )
        } else {
            "the health section expects nothing: nothing to check".to_string()
        }));
    }
    let facts = engine
        .health_facts(&health)
        .await
        .map_err(super::errors::op_error)?;
    let verdicts = health::evaluate(&health, &facts);
    let rows: Vec<HealthCheck> = verdicts
        .into_iter()
        .map(|v| HealthCheck {
            expectation: v.expectation,
            subject: v.subject,
            passed: v.passed,
            observed: cap_message(&v.observed),
            expected: cap_message(&v.expected),
            message: cap_message(&v.message),
        })
        .collect();
    let bytes: usize = rows
        .iter()
        .map(|r| {
            16 + r.expectation.len()
                + r.subject.len()
                + r.observed.len()
                + r.expected.len()
                + r.message.len()
        })
        .sum();
    super::limits::charge_current(bytes as u64);
    Ok(rows)
}
