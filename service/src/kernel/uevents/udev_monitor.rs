//! The udev path: a libudev monitor read on tokio, and enumeration.
//!
//! tokio-udev's stream cannot report ENOBUFS (libudev returns NULL and sets errno), so the
//! monitor's fd is polled here directly and errno is looked at when libudev returns nothing.

use std::ffi::OsStr;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::{forward, overflow, Uevent, UeventAction, SUBSYSTEMS};
use crate::kernel::error::{HostError, Op};
use crate::kernel::HostEvent;
use crate::model::Errno;

fn os(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}

fn udev_err(e: &std::io::Error) -> HostError {
    HostError::from_io(Op::Uevents, e)
}

/// A libudev device as a [`Uevent`] with the given action.
fn to_uevent(dev: &udev::Device, action: UeventAction) -> Uevent {
    let env: Vec<(String, String)> = dev
        .properties()
        .map(|p| (os(p.name()), os(p.value())))
        .collect();
    let seqnum = env
        .iter()
        .find(|(k, _)| k == "SEQNUM")
        .and_then(|(_, v)| v.parse().ok());
    Uevent {
        action,
        devpath: os(dev.devpath()),
        subsystem: dev.subsystem().map(os),
        seqnum,
        env,
    }
}

fn event_to_uevent(ev: &udev::Event) -> Uevent {
    let action = match ev.action() {
        Some(a) => UeventAction::parse(&a.to_string_lossy()),
        None => match ev.event_type() {
            udev::EventType::Add => UeventAction::Add,
            udev::EventType::Remove => UeventAction::Remove,
            udev::EventType::Change => UeventAction::Change,
            udev::EventType::Bind => UeventAction::Bind,
            udev::EventType::Unbind => UeventAction::Unbind,
            udev::EventType::Unknown => UeventAction::Other(String::new()),
        },
    };
    to_uevent(&ev.device(), action)
}

/// Every `infiniband` and `net` device known to sysfs, as `add` uevents, through libudev's
/// enumerator (which reads sysfs, so it works with or without udevd).
pub fn enumerate() -> Result<Vec<Uevent>, HostError> {
    let mut en = udev::Enumerator::new().map_err(|e| udev_err(&e))?;
    for s in SUBSYSTEMS {
        en.match_subsystem(s).map_err(|e| udev_err(&e))?;
    }
    let devices = en.scan_devices().map_err(|e| udev_err(&e))?;
    Ok(devices.map(|d| to_uevent(&d, UeventAction::Add)).collect())
}

fn set_errno(v: i32) {
    // SAFETY: errno is thread-local; writing it has no other effect.
    unsafe { *libc::__errno_location() = v };
}

pub(super) fn spawn(tx: UnboundedSender<HostEvent>) -> Result<JoinHandle<()>, HostError> {
    let mut builder = udev::MonitorBuilder::new().map_err(|e| udev_err(&e))?;
    for s in SUBSYSTEMS {
        builder = builder.match_subsystem(s).map_err(|e| udev_err(&e))?;
    }
    let socket = builder.listen().map_err(|e| udev_err(&e))?;
    // SAFETY: the monitor socket owns its file descriptor and keeps it open until dropped,
    // which happens only after the AsyncFd is dropped.
    let mut fd = unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }
        .map_err(|e| udev_err(&e.into_parts().1))?;
    Ok(tokio::spawn(async move {
        loop {
            let mut guard = tokio::select! {
                r = fd.readable_mut() => match r {
                    Ok(g) => g,
                    Err(e) => {
                        tracing::error!("udev: monitor stopped: {e}");
                        return;
                    }
                },
                _ = tx.closed() => return,
            };
            // Drain everything queued; libudev's socket is non-blocking.
            loop {
                set_errno(0);
                let next = guard.get_inner().iter().next();
                let errno = std::io::Error::last_os_error().raw_os_error();
                match next {
                    Some(ev) => {
                        if !forward(&tx, &event_to_uevent(&ev)) {
                            return;
                        }
                    }
                    None => {
                        if errno == Some(Errno::ENOBUFS.0) {
                            tracing::warn!("udev: receive buffer overflowed, events lost");
                            if tx.send(overflow()).is_err() {
                                return;
                            }
                            continue;
                        }
                        break;
                    }
                }
            }
            guard.clear_ready();
        }
    }))
}
