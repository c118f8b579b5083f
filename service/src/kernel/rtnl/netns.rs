//! Test helper: run an async closure in a fresh network namespace.
//!
//! A dedicated thread calls `unshare(CLONE_NEWNET)` (which moves only that thread) and runs a
//! current-thread tokio runtime, so every socket the closure opens, and every task it spawns,
//! lives in the new namespace. The host's real interfaces are never touched. Nothing may use
//! `spawn_blocking` in there: blocking-pool threads are in the original namespace.

use std::future::Future;

/// Runs `f` in a new network namespace. `Err(reason)` when the namespace cannot be made (no
/// privilege, no CONFIG_NET_NS): the caller prints the reason and skips.
pub(crate) fn in_new_netns<F, Fut, T>(f: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let thread = std::thread::Builder::new()
        .name("netns-test".into())
        .spawn(move || -> Result<T, String> {
            // SAFETY: unshare only changes this thread's namespaces.
            let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
            if rc != 0 {
                return Err(format!(
                    "unshare(CLONE_NEWNET) refused: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("tokio runtime: {e}"))?;
            Ok(rt.block_on(f()))
        })
        .map_err(|e| format!("spawning the namespace thread: {e}"))?;
    match thread.join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Runs a namespace test, or prints why it is skipped.
pub(crate) fn run_or_skip<F, Fut>(test: &str, f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    if let Err(reason) = in_new_netns(f) {
        eprintln!("SKIP {test}: {reason}");
    }
}

/// `ip link add NAME type veth peer name PEER` inside the current thread's namespace, over
/// rtnetlink (no child process, so nothing can escape to another namespace).
pub(crate) async fn add_veth(name: &str, peer: &str) -> Result<(), rtnetlink::Error> {
    let (conn, handle, _) = rtnetlink::new_connection()
        .map_err(|e| rtnetlink::Error::NamespaceError(format!("rtnetlink socket: {e}")))?;
    tokio::spawn(conn);
    handle
        .link()
        .add(rtnetlink::LinkVeth::new(name, peer).build())
        .execute()
        .await
}

/// Runs `sh -c script` from the namespace thread and waits for it (blocking the runtime,
/// which tests use to let a socket's buffer overflow). Children inherit the calling thread's
/// namespaces; the script checks that before doing anything, so it can never touch the host.
pub(crate) fn sh_here(script: &str) -> Result<(), String> {
    let me = std::fs::read_link("/proc/thread-self/ns/net")
        .map_err(|e| format!("reading /proc/thread-self/ns/net: {e}"))?;
    let guarded = format!(
        "[ \"$(readlink /proc/self/ns/net)\" = '{}' ] || exit 99\n{script}",
        me.display()
    );
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(guarded)
        .status()
        .map_err(|e| format!("sh: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(99) => Err("the child process is not in the test namespace".into()),
        _ => Err(format!("script failed: {status}")),
    }
}
