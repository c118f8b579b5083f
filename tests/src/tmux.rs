//! Driving a terminal program as a person would: a detached tmux session of a fixed size on
//! a private tmux server, keys sent with `send-keys`, the screen read with `capture-pane`.
//! Also finds the workspace's binaries (rdma-tui) for such tests.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A workspace binary built by this cargo (`target/<profile>/<name>`), brought up to date first
/// (integration tests of one crate do not build another crate's binaries).
pub fn workspace_bin(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // target/<profile>/deps/<test> -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .context("the test binary is not in target/<profile>/deps")?;
    let bin = profile_dir.join(name);
    // Always asked for (a no-op when it is current), so a test never drives a stale binary.
    {
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let mut cargo = Command::new(env!("CARGO"));
        // From the workspace root, naming the package: cargo runs tests in the test crate's
        // directory, whose own package has no such binary.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        cargo
            .current_dir(root)
            .args(["build", "--workspace", "--bin", name]);
        if release {
            cargo.arg("--release");
        }
        let status = cargo.status().context("running cargo build")?;
        if !status.success() || !bin.is_file() {
            bail!("cannot build {name} ({})", bin.display());
        }
    }
    Ok(bin)
}

/// A tmux server of its own (`tmux -L <socket>`) with one session; killed when dropped.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` (run by `sh -c`) in a detached `width`x`height` session, with `env`.
    pub fn start(command: &str, width: u16, height: u16, env: &[(&str, &str)]) -> Result<Tmux> {
        if which("tmux").is_none() {
            bail!("tmux is missing (Debian package tmux)");
        }
        let socket = format!("rdma-test-{}-{}", std::process::id(), unique());
        let t = Tmux { socket };
        let mut args: Vec<String> = vec![
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            "t".into(),
            "-x".into(),
            width.to_string(),
            "-y".into(),
            height.to_string(),
        ];
        for (k, v) in env {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        // Keep the pane after the program exits, so a crash's last screen can be read.
        args.push(format!("{command}; echo; echo '[exited '$?']'; sleep 600"));
        t.run(&args)?;
        Ok(t)
    }

    fn run<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args.iter().map(|a| a.as_ref()))
            .output()
            .context("running tmux")?;
        if !out.status.success() {
            bail!(
                "tmux {}: {}",
                args.iter()
                    .map(|a| a.as_ref())
                    .collect::<Vec<_>>()
                    .join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Sends keys in tmux's names (`Down`, `Enter`, `Tab`, `BTab`, `Escape`, `C-c`) or text
    /// (`-l` literally).
    pub fn keys(&self, keys: &[&str]) -> Result<()> {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.run(&args).map(|_| ())
    }

    /// Types text literally.
    pub fn type_text(&self, text: &str) -> Result<()> {
        self.run(&["send-keys", "-t", "t", "-l", text]).map(|_| ())
    }

    /// The screen as text, one line per row.
    pub fn screen(&self) -> Result<String> {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    /// Waits until the screen satisfies `pred`, returning it; the last screen in the error.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let t0 = Instant::now();
        loop {
            let s = self.screen()?;
            if pred(&s) {
                return Ok(s);
            }
            if t0.elapsed() > timeout {
                bail!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the screen contains `text`.
    pub fn wait_for_text(&self, text: &str, timeout: Duration) -> Result<String> {
        self.wait_for(&format!("{text:?}"), timeout, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}
