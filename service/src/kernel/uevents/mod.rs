//! Kernel device events: udev, or the uevent netlink socket when no udevd runs.
