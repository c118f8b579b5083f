//! Which devices' files the simulated tree has replaced, so that the port poll can keep its
//! descriptors open on the simulated host as it does on sysfs.
//!
//! On sysfs a kept descriptor reads the current value at every read from offset 0. The
//! simulated tree replaces a file by rename instead (a reader must never see one half
//! written, see [`super::render::put_bytes`]), so a descriptor kept open reads the old file
//! for ever. The simulated host marks here every device whose files it wrote or removed, after
//! the write; the poll asks before each pass and drops the descriptors of the devices marked
//! since it last asked, which it then opens afresh. A write the poll has not yet been told of
//! is read as if the poll had come just before it, as on sysfs.
//!
//! Writes whose device is not known (a netdev's files, whose statistics the poll may read for
//! a port counted on its netdev; an arbitrary file of the tree) mark every device.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::kernel::port_poll::{Replaced, ReplacedFiles};

/// The marks: an epoch counting every write, and the epoch of each device's last one.
#[derive(Debug, Default)]
pub struct TreeChanges {
    /// Raised after every mark; a poll that saw it unchanged has nothing to drop.
    epoch: AtomicU64,
    marks: Mutex<Marks>,
}

#[derive(Debug, Default)]
struct Marks {
    /// The epoch of the last write that marked every device.
    everything: u64,
    /// The epoch of each device's last write (devices removed stay: a name is small, and a
    /// poll that has not asked since must still drop the removed device's descriptors).
    devices: HashMap<String, u64>,
}

impl TreeChanges {
    /// After `dev`'s files were written, replaced or removed.
    pub fn device(&self, dev: &str) {
        let mut m = self.lock();
        let epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        m.devices.insert(dev.to_string(), epoch);
    }

    /// After a write whose device is not known.
    pub fn everything(&self) {
        let mut m = self.lock();
        m.everything = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Marks> {
        // The marks are a map and a number: a panic elsewhere while holding them leaves them
        // usable.
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ReplacedFiles for TreeChanges {
    fn since(&self, seen: &mut u64) -> Replaced {
        // The idle poll's path: one atomic load.
        if self.epoch.load(Ordering::Acquire) == *seen {
            return Replaced::Nothing;
        }
        let m = self.lock();
        let before = *seen;
        // Read under the lock: every mark up to it is in the map.
        *seen = self.epoch.load(Ordering::Acquire);
        if m.everything > before {
            return Replaced::Everything;
        }
        Replaced::Devices(
            m.devices
                .iter()
                .filter(|(_, e)| **e > before)
                .map(|(d, _)| d.clone())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_is_told_each_mark_once() {
        let t = TreeChanges::default();
        let mut seen = 0;
        assert_eq!(t.since(&mut seen), Replaced::Nothing);
        t.device("mlx5_0");
        t.device("mlx5_1");
        t.device("mlx5_0");
        let Replaced::Devices(mut d) = t.since(&mut seen) else {
            panic!("devices expected");
        };
        d.sort();
        assert_eq!(d, ["mlx5_0", "mlx5_1"]);
        assert_eq!(t.since(&mut seen), Replaced::Nothing);
        t.device("mlx5_1");
        assert_eq!(t.since(&mut seen), Replaced::Devices(vec!["mlx5_1".into()]));
        t.everything();
        t.device("mlx5_0");
        assert_eq!(t.since(&mut seen), Replaced::Everything);
        assert_eq!(t.since(&mut seen), Replaced::Nothing);
    }

    #[test]
    fn two_polls_are_told_apart() {
        let t = TreeChanges::default();
        let (mut a, mut b) = (0, 0);
        t.device("rxe0");
        assert_eq!(t.since(&mut a), Replaced::Devices(vec!["rxe0".into()]));
        t.device("rxe1");
        assert_eq!(t.since(&mut a), Replaced::Devices(vec!["rxe1".into()]));
        let Replaced::Devices(mut d) = t.since(&mut b) else {
            panic!("devices expected");
        };
        d.sort();
        assert_eq!(d, ["rxe0", "rxe1"]);
    }
}
