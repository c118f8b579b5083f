//! The daemon's open-file limit. Every kept descriptor of the port poll, every netlink socket
//! and every device context counts against `RLIMIT_NOFILE`, whose soft value is 1024 by
//! default on most systems while the hard value is far higher (systemd: 524288). At start the
//! daemon raises the soft value to the hard one, as systemd's own services do; the port poll
//! keeps at most [`keep_open_budget`] descriptors whatever the limit, so a host with many
//! devices cannot run the daemon out of descriptors even where the raise is refused.

/// The soft and hard `RLIMIT_NOFILE` (`RLIM_INFINITY` as `u64::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    pub soft: u64,
    pub hard: u64,
}

/// What [`raise_nofile_limit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// The soft limit was already the hard one.
    Already(NofileLimit),
    /// The soft limit went from `from` to `to.soft` (the hard limit).
    Raised { from: u64, to: NofileLimit },
}

#[derive(Debug, thiserror::Error)]
pub enum RlimitError {
    #[error("getrlimit(RLIMIT_NOFILE) failed: {0}")]
    Get(std::io::Error),
    #[error("setrlimit(RLIMIT_NOFILE) to {want} failed: {source}")]
    Set { want: u64, source: std::io::Error },
}

/// The current open-file limits of this process.
pub fn nofile_limit() -> Result<NofileLimit, RlimitError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(RlimitError::Get(std::io::Error::last_os_error()));
    }
    Ok(NofileLimit {
        soft: lim.rlim_cur,
        hard: lim.rlim_max,
    })
}

/// Raises the soft open-file limit to the hard one. Nothing the daemon does uses `select(2)`
/// (whose `FD_SETSIZE` of 1024 is why the soft default stays low), so a higher soft limit is
/// safe for it; children it starts (`udevadm`) inherit it, which they do not mind either.
pub fn raise_nofile_limit() -> Result<Raised, RlimitError> {
    let now = nofile_limit()?;
    if now.soft >= now.hard {
        return Ok(Raised::Already(now));
    }
    let lim = libc::rlimit {
        rlim_cur: now.hard,
        rlim_max: now.hard,
    };
    // SAFETY: setrlimit reads only the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(RlimitError::Set {
            want: now.hard,
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(Raised::Raised {
        from: now.soft,
        to: nofile_limit()?,
    })
}

/// The most descriptors the port poll keeps open between polls: every polled file of 256
/// HCAs of 2 InfiniBand ports (8 a port) and a directory a device, 4352, with room. Each kept
/// sysfs file holds about 4.6 KiB of kernel memory once read (seq_file keeps a page until the
/// close; measured in the lab), 37 MiB at this cap; a read through it costs a quarter of an
/// open, read and close: on a host with ports to poll, steady CPU matters more than that
/// kernel memory.
pub const KEEP_OPEN_MAX: usize = 8192;

/// How many descriptors the port poll may keep open under a soft limit of `soft`: a quarter
/// of it, and never more than [`KEEP_OPEN_MAX`]. The rest of the limit is left to what the
/// daemon opens for a moment (a device read, a netlink request, a D-Bus client's
/// credentials) and to what it keeps for good (the bus, netlink and udev sockets: a few
/// dozen). Past the budget the poll opens, reads and closes each file: at 1 Hz that costs
/// an open and a close more per file, not descriptors.
pub fn keep_open_budget(soft: u64) -> usize {
    usize::try_from(soft / 4)
        .unwrap_or(usize::MAX)
        .min(KEEP_OPEN_MAX)
}

/// [`keep_open_budget`] under the soft limit as it is now (after the daemon raised it at
/// start; 1024 if it cannot be read).
pub fn keep_open_budget_now() -> usize {
    keep_open_budget(nofile_limit().map_or(1024, |l| l.soft))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_a_quarter_of_the_limit_and_capped() {
        assert_eq!(keep_open_budget(1024), 256);
        assert_eq!(keep_open_budget(64), 16);
        assert_eq!(keep_open_budget(524_288), KEEP_OPEN_MAX);
        assert_eq!(keep_open_budget(u64::MAX), KEEP_OPEN_MAX);
    }

    /// Runs in its own process under nextest; under `cargo test` it changes the limit of
    /// the whole test binary, upwards only, which no other test minds.
    #[test]
    fn raises_the_soft_limit_to_the_hard_one() {
        let start = nofile_limit().expect("getrlimit");
        let low = start.hard.min(256);
        // Lowering the soft limit needs no privilege.
        let lim = libc::rlimit {
            rlim_cur: low,
            rlim_max: start.hard,
        };
        // SAFETY: as in raise_nofile_limit.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
        let r = raise_nofile_limit().expect("raise");
        let after = nofile_limit().expect("getrlimit");
        assert_eq!(after.soft, start.hard);
        if low < start.hard {
            assert_eq!(
                r,
                Raised::Raised {
                    from: low,
                    to: after
                }
            );
        }
        assert_eq!(raise_nofile_limit().expect("again"), Raised::Already(after));
    }
}
