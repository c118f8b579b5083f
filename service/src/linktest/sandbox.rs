//! The process a test's tool runs in: none of the daemon's privileges. Between fork and exec
//! the child (`pre_exec`, async-signal-safe system calls only) leaves the daemon's process
//! group for one of its own (killed whole at the timeout), dies with the daemon
//! (`PR_SET_PDEATHSIG`), empties its capability bounding set, drops its supplementary groups
//! and takes an unprivileged uid and gid (when the daemon is root: setuid to a uid other than
//! 0 clears the permitted, effective and ambient sets), clears the ambient set, sets
//! `no_new_privs` (no set-uid or file capability can give anything back), raises
//! `RLIMIT_MEMLOCK` to what verbs registers (within the hard limit the daemon has), and gets
//! no core dumps and no file it could write (`RLIMIT_FSIZE` 0). One exception, for `ping`
//! alone ([`Runner::run_with_net_raw`]): the child keeps `CAP_NET_RAW` and nothing else, in
//! its bounding, permitted, inheritable and ambient sets. Debian's iputils ping carries the
//! file capability `cap_net_raw=ep` and the kernel's ICMP datagram sockets are closed
//! (`net.ipv4.ping_group_range` "1 0"): with an empty bounding set its exec fails with
//! EPERM, and without the capability it has no socket to send an echo from. Its environment is empty but
//! for `PATH` and `LC_ALL=C` (the tools' sentences, which the parsers read, in English), its
//! stdin `/dev/null`; stdout and stderr are read up to a bound each, the rest drained and
//! dropped, so that a tool that prints without end neither blocks nor grows the daemon.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Who the child runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The uid and gid to take; `None` keeps the daemon's (a daemon that is not root cannot
    /// change them, and has no capability to drop).
    pub identity: Option<(u32, u32)>,
    /// RLIMIT_MEMLOCK given to the child, in bytes (capped by the daemon's hard limit).
    pub memlock_bytes: u64,
    /// Bytes kept of each of stdout and stderr.
    pub output_bytes: usize,
}

impl Sandbox {
    /// The daemon's default: `nobody` when it runs as root, else its own identity.
    pub fn unprivileged() -> Sandbox {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        Sandbox {
            identity: root.then(nobody),
            memlock_bytes: 64 << 20,
            output_bytes: 64 << 10,
        }
    }
}

/// The uid and gid of `nobody` (65534 where the user database has no such user).
fn nobody() -> (u32, u32) {
    let name = c"nobody";
    // SAFETY: getpwnam returns null or a pointer to static storage, read at once; the daemon
    // calls it before any test runs, from one task.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        (65534, 65534)
    } else {
        // SAFETY: non-null, as above.
        unsafe { ((*pw).pw_uid, (*pw).pw_gid) }
    }
}

/// What a run gave.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The exit code; `None` when a signal ended it (the timeout's kill among them).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// True when the timeout ended it.
    pub timed_out: bool,
    /// True when either stream was cut at the bound.
    pub truncated: bool,
}

/// Runs programs; the daemon's runs them in the [`Sandbox`]. A trait so that what drives
/// the tools can be given another runner (tests count or refuse runs with one).
#[async_trait::async_trait]
pub trait Runner: Send + Sync {
    /// Runs `program` with `args`, killed with its whole process group after `timeout`.
    async fn run(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> std::io::Result<Output>;

    /// As [`Runner::run`], for `ping`: the child keeps `CAP_NET_RAW` (see the module's
    /// comment). Runners without a sandbox run it as any other program.
    async fn run_with_net_raw(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> std::io::Result<Output> {
        self.run(program, args, timeout).await
    }

    /// As [`Runner::run`], with `device` given to the program as its descriptor 3: the
    /// InfiniBand ping's umad device, which only root may open (`rdma-managerd ibping --fd 3`).
    async fn run_with_fd(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
        device: OwnedFd,
    ) -> std::io::Result<Output>;

    /// Starts `program` for the responder: the same sandbox, no timeout, output discarded;
    /// with `device` as its descriptor 3 when given.
    fn spawn(
        &self,
        program: &Path,
        args: &[String],
        device: Option<OwnedFd>,
    ) -> std::io::Result<tokio::process::Child>;
}

/// The runner of the daemon: every run in the [`Sandbox`].
#[derive(Debug, Clone)]
pub struct SandboxRunner {
    pub sandbox: Sandbox,
}

impl SandboxRunner {
    fn command(
        &self,
        program: &Path,
        args: &[String],
        net_raw: bool,
        device: Option<RawFd>,
    ) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(program);
        c.args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let identity = self.sandbox.identity;
        let memlock = self.sandbox.memlock_bytes;
        // SAFETY: the closure runs in the child between fork and exec and makes only
        // async-signal-safe system calls on values copied in; it allocates nothing.
        unsafe {
            c.pre_exec(move || {
                if let Some(fd) = device {
                    give_as_fd3(fd)?;
                }
                confine(identity, memlock, net_raw)
            });
        }
        c
    }
}

#[async_trait::async_trait]
impl Runner for SandboxRunner {
    async fn run(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> std::io::Result<Output> {
        self.run_confined(self.command(program, args, false, None), timeout)
            .await
    }

    async fn run_with_net_raw(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> std::io::Result<Output> {
        self.run_confined(self.command(program, args, true, None), timeout)
            .await
    }

    async fn run_with_fd(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
        device: OwnedFd,
    ) -> std::io::Result<Output> {
        // The parent's copy closes when this returns; the child's is its descriptor 3.
        let cmd = self.command(program, args, false, Some(device.as_raw_fd()));
        self.run_confined(cmd, timeout).await
    }

    fn spawn(
        &self,
        program: &Path,
        args: &[String],
        device: Option<OwnedFd>,
    ) -> std::io::Result<tokio::process::Child> {
        let fd = device.as_ref().map(|d| d.as_raw_fd());
        let child = self
            .command(program, args, false, fd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        drop(device);
        child
    }
}

/// In the child before exec: `fd` becomes descriptor 3 and stays open across exec (a
/// `dup2` copy has no close-on-exec; descriptor 3 itself only loses it).
fn give_as_fd3(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: system calls on integers.
    let r = unsafe {
        if fd == 3 {
            libc::fcntl(3, libc::F_SETFD, 0)
        } else {
            libc::dup2(fd, 3)
        }
    };
    if r == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl SandboxRunner {
    async fn run_confined(
        &self,
        mut command: tokio::process::Command,
        timeout: Duration,
    ) -> std::io::Result<Output> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let pgid = child.id();
        let limit = self.sandbox.output_bytes;
        let out = child.stdout.take();
        let err = child.stderr.take();
        let work = async {
            let (o, e, status) =
                tokio::join!(bounded(out, limit), bounded(err, limit), child.wait());
            (o, e, status)
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(((stdout, t1), (stderr, t2), status)) => Ok(Output {
                code: status?.code(),
                stdout,
                stderr,
                timed_out: false,
                truncated: t1 || t2,
            }),
            Err(_) => {
                kill_group(pgid);
                // Reaped off the caller's task: the answer must not wait past the timeout for
                // a process slow to leave the kernel, nor for one the kill did not reach.
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
                Ok(Output {
                    code: None,
                    timed_out: true,
                    ..Output::default()
                })
            }
        }
    }
}

/// Kills a child's whole process group (it leads one: `process_group(0)`).
pub fn kill_group(pgid: Option<u32>) {
    if let Some(pid) = pgid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: a negative pid names the group the child leads; nothing else is in it.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// Reads up to `limit` bytes, then drains the rest unkept. The text is lossy UTF-8.
async fn bounded<R: AsyncRead + Unpin>(r: Option<R>, limit: usize) -> (String, bool) {
    let Some(mut r) = r else {
        return (String::new(), false);
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    let mut truncated = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), truncated)
}

/// In the child: see the module's comment. Each step that fails fails the spawn (the
/// error reaches the daemon as the spawn's), so a test never runs half-confined.
fn confine(identity: Option<(u32, u32)>, memlock: u64, net_raw: bool) -> std::io::Result<()> {
    // Only a root daemon can hand a capability on; one that is not root has none to give.
    let net_raw = net_raw && identity.is_some();
    let check = |r: libc::c_int| {
        if r == -1 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY (whole block): plain system calls on integers and a stack struct.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        if identity.is_some() {
            // Needs CAP_SETPCAP, which a root daemon has; one that is not root keeps a
            // bounding set it could not use anyway (no_new_privs below).
            let mut cap = 0;
            while libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) >= 0 {
                if !(net_raw && cap == CAP_NET_RAW) {
                    check(libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0))?;
                }
                cap += 1;
            }
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        check(libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim))?;
        let want = memlock.min(lim.rlim_max);
        check(libc::setrlimit(
            libc::RLIMIT_MEMLOCK,
            &libc::rlimit {
                rlim_cur: want,
                rlim_max: want,
            },
        ))?;
        let zero = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        check(libc::setrlimit(libc::RLIMIT_CORE, &zero))?;
        check(libc::setrlimit(libc::RLIMIT_FSIZE, &zero))?;
        if let Some((uid, gid)) = identity {
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setresgid(gid, gid, gid))?;
            if net_raw {
                // Keep the permitted set across the change of uid, to narrow it below.
                check(libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0))?;
            }
            check(libc::setresuid(uid, uid, uid))?;
        }
        check(libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ))?;
        if net_raw {
            let only = 1u32 << CAP_NET_RAW;
            let header = CapHeader {
                version: LINUX_CAPABILITY_VERSION_3,
                pid: 0,
            };
            let data = [
                CapData {
                    effective: only,
                    permitted: only,
                    inheritable: only,
                },
                CapData::default(),
            ];
            check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int)?;
            // Ambient: kept across the exec of a ping without file capabilities (where
            // `ping_group_range` or a distribution does without them).
            check(libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_RAISE,
                CAP_NET_RAW,
                0,
                0,
            ))?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
    }
    Ok(())
}

/// linux/capability.h: `CAP_NET_RAW`, and capset(2)'s structures in their version 3.
const CAP_NET_RAW: libc::c_ulong = 13;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Where a tool is: the name as given when it is a path, else the first directory of the
/// daemon's fixed search list that has it.
pub fn locate(name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    for dir in ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
        let c = Path::new(dir).join(name);
        if c.exists() {
            return c;
        }
    }
    Path::new("/usr/bin").join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner() -> SandboxRunner {
        SandboxRunner {
            sandbox: Sandbox {
                output_bytes: 1000,
                ..Sandbox::unprivileged()
            },
        }
    }

    #[tokio::test]
    async fn the_child_has_no_privilege_and_its_limits() {
        let out = runner()
            .run(
                Path::new("/bin/sh"),
                &["-c".into(), "grep -E '^(Uid|CapBnd|CapAmb|CapEff|NoNewPrivs)' /proc/self/status; ulimit -l; ulimit -f; echo \"$HOME$LD_PRELOAD\"".into()],
                Duration::from_secs(10),
            )
            .await
            .expect("run");
        assert_eq!(out.code, Some(0), "{out:?}");
        let s = &out.stdout;
        assert!(s.contains("NoNewPrivs:\t1"), "{s}");
        assert!(s.contains("CapAmb:\t0000000000000000"), "{s}");
        assert!(s.contains("CapEff:\t0000000000000000"), "{s}");
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(s.contains("CapBnd:\t0000000000000000"), "{s}");
            assert!(!s.contains("Uid:\t0\t"), "{s}");
        }
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[lines.len() - 2], "0", "RLIMIT_FSIZE: {s}");
        assert_eq!(lines[lines.len() - 1], "", "environment: {s}");
    }

    /// What `ping` runs with: `CAP_NET_RAW` alone, in every set that carries it.
    #[tokio::test]
    async fn ping_keeps_cap_net_raw_and_nothing_else() {
        let out = runner()
            .run_with_net_raw(
                Path::new("/bin/sh"),
                &[
                    "-c".into(),
                    "grep -E '^(Uid|Cap[A-Za-z]+|NoNewPrivs)' /proc/self/status".into(),
                ],
                Duration::from_secs(10),
            )
            .await
            .expect("run");
        assert_eq!(out.code, Some(0), "{out:?}");
        let s = &out.stdout;
        assert!(s.contains("NoNewPrivs:\t1"), "{s}");
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
                assert!(
                    s.contains(&format!("{set}:\t0000000000002000")),
                    "{set}: {s}"
                );
            }
            assert!(!s.contains("Uid:\t0\t"), "{s}");
        }
    }

    /// Debian's ping (`cap_net_raw=ep`, ICMP datagram sockets closed by
    /// `ping_group_range`) runs in the sandbox and gets its echo back from the loopback.
    #[tokio::test]
    async fn debians_ping_runs_in_the_sandbox() {
        let ping = locate("ping");
        // SAFETY: no preconditions.
        if !ping.exists() || unsafe { libc::geteuid() } != 0 {
            assert!(
                std::env::var_os("RDMA_MANAGER_REQUIRE_TOOLS").is_none(),
                "ping (iputils-ping) and root are needed"
            );
            eprintln!("skipping: no ping, or not root");
            return;
        }
        let args: Vec<String> = ["-4", "-n", "-c", "1", "-W", "2", "127.0.0.1"]
            .map(String::from)
            .to_vec();
        let out = runner()
            .run_with_net_raw(&ping, &args, Duration::from_secs(10))
            .await
            .expect("run");
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(out.stdout.contains("1 received"), "{out:?}");
        // Without the grant, exec itself fails: the file capability cannot be honoured.
        let refused = runner().run(&ping, &args, Duration::from_secs(10)).await;
        assert!(
            refused.as_ref().map_or(true, |o| o.code != Some(0)),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn a_hang_is_killed_with_its_group_at_the_timeout() {
        let start = std::time::Instant::now();
        // The grandchild keeps the pipe open: only killing the group ends the run.
        let out = runner()
            .run(
                Path::new("/bin/sh"),
                &["-c".into(), "sleep 30 & sleep 30".into()],
                Duration::from_millis(300),
            )
            .await
            .expect("run");
        assert!(out.timed_out);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn output_is_bounded() {
        let out = runner()
            .run(
                Path::new("/bin/sh"),
                &["-c".into(), "yes | head -c 100000".into()],
                Duration::from_secs(10),
            )
            .await
            .expect("run");
        assert_eq!(out.stdout.len(), 1000);
        assert!(out.truncated);
        assert_eq!(out.code, Some(0));
    }
}
