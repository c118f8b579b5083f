//! A port's umad device (`/dev/infiniband/umadN`): register an agent, send and receive MADs.
//!
//! Every call goes through libc's `open`, `ioctl`, `read`, `write`, `poll` and `close` by
//! those names (not Rust's `open64` and friends), so that ibsim's `libumad2sim.so`, which
//! wraps exactly these, can stand in for the kernel in the tests: the MADs then travel
//! through a simulated fabric that rdma-core's own `ibping` talks to as well.

use std::ffi::CString;
use std::io;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use super::wire::{Hdr, HDR_LEN, MAD_LEN, OLD_HDR_LEN};

/// `IB_USER_MAD_REGISTER_AGENT`: `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)` (28 bytes).
const REGISTER_AGENT: libc::c_ulong = 0xC01C_1B01;
/// `IB_USER_MAD_ENABLE_PKEY`: `_IO(0x1b, 3)`.
const ENABLE_PKEY: libc::c_ulong = 0x1B03;

/// An open umad device; closed when dropped.
#[derive(Debug)]
pub struct Umad {
    fd: RawFd,
    /// The header's length: [`HDR_LEN`] once the P_Key index is on, else the old ABI's
    /// [`OLD_HDR_LEN`], which ends before it.
    hdr_len: usize,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Umad {
    /// Opens the device at `path` (root's, or a member of a group it is opened to).
    pub fn open(path: &Path) -> io::Result<Umad> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a valid NUL-terminated path; the descriptor is owned by the result.
        let fd = check(unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) })?;
        Ok(Umad {
            fd,
            hdr_len: OLD_HDR_LEN,
        })
    }

    /// A device someone else opened: the daemon opens it and gives it to the unprivileged
    /// process that uses it.
    pub fn from_fd(fd: OwnedFd) -> Umad {
        Umad {
            fd: fd.into_raw_fd(),
            hdr_len: OLD_HDR_LEN,
        }
    }

    /// Asks for the header with the P_Key index ([`HDR_LEN`] bytes), before any agent is
    /// registered. The kernel grants it; where it is refused (ibsim's stand-in does) the old
    /// header stays, as libibumad does.
    pub fn enable_pkey(&mut self) {
        // SAFETY: an ioctl without argument on our descriptor.
        if check(unsafe { libc::ioctl(self.fd, ENABLE_PKEY) }).is_ok() {
            self.hdr_len = HDR_LEN;
        }
    }

    /// Registers an agent on QP1 for `class` (version 1) and, for a vendor range 2 class,
    /// `oui`: receiving requests of every method when `serve`, else only the replies to what
    /// it sends (no method: libibumad's client registration). Gives the agent's id.
    pub fn register(&self, class: u8, oui: u32, serve: bool) -> io::Result<u32> {
        // struct ib_user_mad_reg_req { u32 id; u32 method_mask[4]; u8 qpn, mgmt_class,
        // mgmt_class_version, oui[3], rmpp_version; } padded to 28 bytes.
        let mut req = [0u8; 28];
        if serve {
            req[4..20].fill(0xff);
        }
        req[20] = 1;
        req[21] = class;
        req[22] = 1;
        req[23..26].copy_from_slice(&oui.to_be_bytes()[1..]);
        // SAFETY: the request is the kernel's struct in size and layout; it writes the id.
        check(unsafe { libc::ioctl(self.fd, REGISTER_AGENT, req.as_mut_ptr()) })?;
        Ok(u32::from_ne_bytes([req[0], req[1], req[2], req[3]]))
    }

    /// Sends one MAD.
    pub fn send(&self, hdr: &Hdr, mad: &[u8; MAD_LEN]) -> io::Result<()> {
        let h = self.hdr_len;
        let mut buf = [0u8; HDR_LEN + MAD_LEN];
        buf[..h].copy_from_slice(&hdr.encode()[..h]);
        buf[h..h + MAD_LEN].copy_from_slice(mad);
        // SAFETY: writes from a buffer of at least the length given.
        let n = unsafe { libc::write(self.fd, buf.as_ptr().cast(), h + MAD_LEN) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The next MAD (a request, a reply, or a send the kernel gave up on: its status is then
    /// `ETIMEDOUT`), or `None` when none came within `timeout`.
    pub fn recv(&self, timeout: Duration) -> io::Result<Option<(Hdr, [u8; MAD_LEN])>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut p = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: one pollfd of ours.
            let r = unsafe { libc::poll(&mut p, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if r == 0 {
                return Ok(None);
            }
            let h = self.hdr_len;
            let mut buf = [0u8; HDR_LEN + MAD_LEN];
            // SAFETY: reads into a buffer of at least the length given.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), h + MAD_LEN) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            // Shorter than a header and a MAD: nothing this module sends or answers.
            if (n as usize) < h + MAD_LEN {
                if left.is_zero() {
                    return Ok(None);
                }
                continue;
            }
            // The old header ends before the P_Key index, which reads as 0 then.
            let mut hdr = [0u8; HDR_LEN];
            hdr[..h].copy_from_slice(&buf[..h]);
            let mut mad = [0u8; MAD_LEN];
            mad.copy_from_slice(&buf[h..h + MAD_LEN]);
            return Ok(Some((Hdr::decode(&hdr), mad)));
        }
    }
}

impl Drop for Umad {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe {
            libc::close(self.fd);
        }
    }
}
