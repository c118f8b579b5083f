//! What the sysfs readers do, told to whoever runs them and asked to know.
//!
//! The readers of [`crate::kernel::sysfs`] and the port poll ([`crate::kernel::port_poll`])
//! report each file system primitive they perform here ([`note`]). Nobody listens in the
//! daemon on a real host: a report is one thread-local read. A caller that wants to count or
//! weigh them (the simulated host's cost model, a benchmark) runs the reads inside
//! [`observed`] with its own [`SysfsObserver`]; the readers never learn who it is.

use std::cell::RefCell;
use std::sync::Arc;

/// A file system primitive a reader performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysfsOp {
    /// An attribute file opened, read and closed.
    File,
    /// An attribute read again at offset 0 through a descriptor kept open (the port poll's):
    /// the attribute's code runs, the path walk, open and close do not.
    KeptRead,
    /// A path looked up without reading it (`stat`, `readlink`, `exists`).
    Lookup,
    /// A directory listed (its entries are reported apart, as [`SysfsOp::DirEntry`]).
    DirList,
    /// One entry of a listed directory.
    DirEntry,
}

/// Told of every primitive the readers perform on the thread it observes.
pub trait SysfsObserver: Send + Sync {
    /// `n` of `op` were performed.
    fn saw(&self, op: SysfsOp, n: u64);
}

thread_local! {
    /// The observer of the reads running on this thread, if any.
    static CURRENT: RefCell<Option<Arc<dyn SysfsObserver>>> = const { RefCell::new(None) };
}

/// Runs `f` with `observer` told of the primitives performed on this thread (`None`: nobody),
/// and puts the previous observer back afterwards, even if `f` panics (a test thread may catch
/// it and go on). Nested calls tell the innermost observer only.
pub fn observed<T>(observer: Option<Arc<dyn SysfsObserver>>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<dyn SysfsObserver>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(observer)));
    f()
}

/// Reports `n` of `op` to this thread's observer, if there is one. Called by the readers at
/// each primitive they perform.
pub fn note(op: SysfsOp, n: u64) {
    if n == 0 {
        return;
    }
    let observer = CURRENT.with(|c| c.borrow().clone());
    if let Some(observer) = observer {
        observer.saw(op, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Default)]
    struct Count(AtomicU64);

    impl SysfsObserver for Count {
        fn saw(&self, _: SysfsOp, n: u64) {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Told inside `observed`, not outside it, not to the outer observer of a nested call,
    /// and not under `observed(None, ...)`; the outer one is back after a panic.
    #[test]
    fn the_innermost_observer_is_told() {
        let a = Arc::new(Count::default());
        let b = Arc::new(Count::default());
        note(SysfsOp::File, 1);
        observed(Some(a.clone()), || {
            note(SysfsOp::File, 2);
            observed(Some(b.clone()), || note(SysfsOp::DirEntry, 3));
            observed(None, || note(SysfsOp::File, 100));
            let caught = std::panic::catch_unwind(|| {
                observed(Some(b.clone()), || panic!("a reader failed"))
            });
            assert!(caught.is_err());
            note(SysfsOp::Lookup, 5);
        });
        note(SysfsOp::File, 7);
        assert_eq!(a.0.load(Ordering::Relaxed), 7);
        assert_eq!(b.0.load(Ordering::Relaxed), 3);
    }
}
