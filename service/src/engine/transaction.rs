//! One transaction for every change: the steps of an operation run in order, each with the
//! undo that takes it back; when a step fails, the steps done before it are undone in reverse
//! order and the caller gets the step's error followed by what each undo did (or why it could
//! not). Every step and every undo is logged.
//!
//! Operations build their transaction as they go (`Transaction::step`), because a later step
//! often needs what an earlier one returned (the index of a device just made). Steps are
//! async closures over a context (`&mut Engine` in the daemon), so a step may wait on
//! anything: a kernel call, a file write, a NetworkManager checkpoint. A step's own failure
//! must leave nothing behind (it is not undone: only the steps before it are). A step with
//! nothing to undo (a re-read, a reload) is `Transaction::check`: its failure still undoes
//! the steps before it.
//!
//! Ending without `commit` keeps what was done (an operation may give up after the kernel
//! accepted its change, when there is no sensible undo); it is logged.

use futures::future::BoxFuture;
use tracing::{debug, info, warn};

use super::OpError;

/// What an undo did, in words for the caller: `Ok` what was put back, `Err` what could not
/// be (and what to do about it). An empty `Ok` says nothing.
pub(crate) type UndoResult = Result<String, String>;

/// An undo, erased to run later with the context.
type UndoFn<C> = Box<dyn for<'a> FnOnce(&'a mut C) -> BoxFuture<'a, UndoResult> + Send>;

struct Done<C: ?Sized> {
    step: String,
    undo: Option<UndoFn<C>>,
}

/// What one undo of a rolled-back transaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Undone {
    pub step: String,
    pub outcome: UndoResult,
}

/// A step that failed, and the undo of every step before it, last first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rollback {
    pub failed_step: String,
    pub error: OpError,
    pub undone: Vec<Undone>,
}

impl Rollback {
    /// Whether every undo succeeded.
    #[cfg(test)]
    pub fn clean(&self) -> bool {
        self.undone.iter().all(|u| u.outcome.is_ok())
    }
}

impl From<Rollback> for OpError {
    /// The step's error, of its kind, followed by each undo's words: "...; X was removed
    /// again", "...; removing X again also failed (...)".
    fn from(r: Rollback) -> OpError {
        r.undone
            .into_iter()
            .map(|u| match u.outcome {
                Ok(m) | Err(m) => m,
            })
            .filter(|m| !m.is_empty())
            .fold(r.error, |e, m| e.with_more(&format!("; {m}")))
    }
}

/// The steps done so far of one operation; see the module comment.
pub(crate) struct Transaction<C: ?Sized> {
    what: String,
    done: Vec<Done<C>>,
    finished: bool,
}

impl<C: ?Sized + Send> Transaction<C> {
    /// A transaction for the operation `what` (named in the log).
    pub fn new(what: impl Into<String>) -> Self {
        Transaction {
            what: what.into(),
            done: Vec::new(),
            finished: false,
        }
    }

    /// Runs `apply`; when it succeeds, `undo` (given what `apply` returned) is what takes it
    /// back. When it fails, the steps before it are undone and the error says so.
    pub async fn step<T, A, U>(
        &mut self,
        cx: &mut C,
        step: &str,
        apply: A,
        undo: U,
    ) -> Result<T, Rollback>
    where
        T: Clone + Send + 'static,
        A: for<'a> FnOnce(&'a mut C) -> BoxFuture<'a, Result<T, OpError>>,
        U: for<'a> FnOnce(&'a mut C, T) -> BoxFuture<'a, UndoResult> + Send + 'static,
    {
        let t = self.apply(cx, step, apply).await?;
        let kept = t.clone();
        let undo: UndoFn<C> = Box::new(move |cx: &mut C| undo(cx, kept));
        self.done.push(Done {
            step: step.to_string(),
            undo: Some(undo),
        });
        Ok(t)
    }

    /// Runs a step with nothing to undo; when it fails, the steps before it are undone.
    pub async fn check<T, A>(&mut self, cx: &mut C, step: &str, apply: A) -> Result<T, Rollback>
    where
        A: for<'a> FnOnce(&'a mut C) -> BoxFuture<'a, Result<T, OpError>>,
    {
        let t = self.apply(cx, step, apply).await?;
        self.done.push(Done {
            step: step.to_string(),
            undo: None,
        });
        Ok(t)
    }

    async fn apply<T, A>(&mut self, cx: &mut C, step: &str, apply: A) -> Result<T, Rollback>
    where
        A: for<'a> FnOnce(&'a mut C) -> BoxFuture<'a, Result<T, OpError>>,
    {
        debug!(transaction = %self.what, step, "applying");
        match apply(cx).await {
            Ok(t) => {
                debug!(transaction = %self.what, step, "applied");
                Ok(t)
            }
            Err(error) => {
                warn!(transaction = %self.what, step, %error, undo = self.done.len(),
                    "step failed; undoing the steps before it");
                let undone = self.roll_back(cx).await;
                Err(Rollback {
                    failed_step: step.to_string(),
                    error,
                    undone,
                })
            }
        }
    }

    /// Undoes every step done, last first; an undo that fails does not stop the others.
    async fn roll_back(&mut self, cx: &mut C) -> Vec<Undone> {
        self.finished = true;
        let mut undone = Vec::new();
        while let Some(d) = self.done.pop() {
            let Some(undo) = d.undo else {
                continue;
            };
            let outcome = undo(cx).await;
            match &outcome {
                Ok(m) => info!(transaction = %self.what, step = %d.step, outcome = %m, "undone"),
                Err(m) => warn!(transaction = %self.what, step = %d.step, error = %m,
                    "undo failed; the step stays applied"),
            }
            undone.push(Undone {
                step: d.step,
                outcome,
            });
        }
        undone
    }

    /// Every step stays: the operation succeeded.
    pub fn commit(mut self) {
        self.finished = true;
        debug!(transaction = %self.what, steps = self.done.len(), "committed");
    }
}

impl<C: ?Sized> Drop for Transaction<C> {
    fn drop(&mut self) {
        if !self.finished && !self.done.is_empty() {
            let steps: Vec<&str> = self.done.iter().map(|d| d.step.as_str()).collect();
            warn!(transaction = %self.what, ?steps,
                "operation ended without committing; its steps stay applied");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The context of the tests: what happened, in order.
    #[derive(Default)]
    struct Log(Vec<String>);

    fn ok(
        name: &'static str,
    ) -> impl for<'a> FnOnce(&'a mut Log) -> BoxFuture<'a, Result<u32, OpError>> {
        move |l: &mut Log| {
            Box::pin(async move {
                l.0.push(format!("apply {name}"));
                Ok(7)
            })
        }
    }

    fn fail(
        name: &'static str,
    ) -> impl for<'a> FnOnce(&'a mut Log) -> BoxFuture<'a, Result<u32, OpError>> {
        move |l: &mut Log| {
            Box::pin(async move {
                l.0.push(format!("apply {name}"));
                Err(OpError::Busy(format!("{name} refused")))
            })
        }
    }

    fn undo(
        name: &'static str,
        works: bool,
    ) -> impl for<'a> FnOnce(&'a mut Log, u32) -> BoxFuture<'a, UndoResult> + Send + 'static {
        move |l: &mut Log, got: u32| {
            Box::pin(async move {
                l.0.push(format!("undo {name} of {got}"));
                if works {
                    Ok(format!("{name} undone"))
                } else {
                    Err(format!("undoing {name} failed"))
                }
            })
        }
    }

    #[tokio::test]
    async fn steps_run_in_order_and_a_commit_undoes_nothing() {
        let mut log = Log::default();
        let mut tx = Transaction::new("test");
        for n in ["a", "b", "c"] {
            let got = tx.step(&mut log, n, ok(n), undo(n, true)).await;
            assert_eq!(got, Ok(7));
        }
        tx.commit();
        assert_eq!(log.0, ["apply a", "apply b", "apply c"]);
    }

    #[tokio::test]
    async fn a_failed_step_undoes_the_ones_before_it_in_reverse_and_not_itself() {
        let mut log = Log::default();
        let mut tx = Transaction::new("test");
        tx.step(&mut log, "a", ok("a"), undo("a", true))
            .await
            .unwrap();
        tx.check(&mut log, "b", ok("b")).await.unwrap();
        tx.step(&mut log, "c", ok("c"), undo("c", true))
            .await
            .unwrap();
        let r = tx
            .step(&mut log, "d", fail("d"), undo("d", true))
            .await
            .unwrap_err();
        assert_eq!(
            log.0,
            [
                "apply a",
                "apply b",
                "apply c",
                "apply d",
                "undo c of 7",
                "undo a of 7"
            ]
        );
        assert_eq!(r.failed_step, "d");
        assert!(r.clean());
        assert_eq!(
            OpError::from(r),
            OpError::Busy("d refused; c undone; a undone".into()),
            "the error keeps its kind and says what was undone, last first"
        );
    }

    #[tokio::test]
    async fn an_undo_that_fails_is_reported_and_the_others_still_run() {
        let mut log = Log::default();
        let mut tx = Transaction::new("test");
        tx.step(&mut log, "a", ok("a"), undo("a", true))
            .await
            .unwrap();
        tx.step(&mut log, "b", ok("b"), undo("b", false))
            .await
            .unwrap();
        let r = tx.check(&mut log, "c", fail("c")).await.unwrap_err();
        assert_eq!(log.0[3..], ["undo b of 7", "undo a of 7"]);
        assert!(!r.clean());
        assert_eq!(
            r.undone,
            [
                Undone {
                    step: "b".into(),
                    outcome: Err("undoing b failed".into())
                },
                Undone {
                    step: "a".into(),
                    outcome: Ok("a undone".into())
                },
            ]
        );
        assert_eq!(
            OpError::from(r),
            OpError::Busy("c refused; undoing b failed; a undone".into())
        );
    }

    #[tokio::test]
    async fn a_first_step_that_fails_undoes_nothing_and_keeps_its_error() {
        let mut log = Log::default();
        let mut tx = Transaction::new("test");
        let r = tx
            .step(&mut log, "a", fail("a"), undo("a", true))
            .await
            .unwrap_err();
        assert_eq!(log.0, ["apply a"]);
        assert_eq!(OpError::from(r), OpError::Busy("a refused".into()));
    }

    #[tokio::test]
    async fn an_undo_that_has_nothing_to_say_adds_nothing() {
        let mut log = Log::default();
        let mut tx = Transaction::new("test");
        fn silent(l: &mut Log, _: u32) -> BoxFuture<'_, UndoResult> {
            Box::pin(async move {
                l.0.push("undo a".into());
                Ok(String::new())
            })
        }
        tx.step(&mut log, "a", ok("a"), silent).await.unwrap();
        let r = tx.check(&mut log, "b", fail("b")).await.unwrap_err();
        assert_eq!(log.0.last().map(String::as_str), Some("undo a"));
        assert_eq!(OpError::from(r), OpError::Busy("b refused".into()));
    }
}
