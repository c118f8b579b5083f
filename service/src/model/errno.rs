//! Kernel error numbers with their symbolic names, so that transcripts and messages say
//! `EEXIST` rather than 17, and the simulated host returns exactly what the kernel returns.

use serde::{Serialize, Serializer};

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const ENXIO: Errno = Errno(libc::ENXIO);
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    pub const ENFILE: Errno = Errno(libc::ENFILE);
    pub const EMFILE: Errno = Errno(libc::EMFILE);
    pub const ENOTUNIQ: Errno = Errno(libc::ENOTUNIQ);
    pub const ENOBUFS: Errno = Errno(libc::ENOBUFS);
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    pub const EPROTONOSUPPORT: Errno = Errno(libc::EPROTONOSUPPORT);
    pub const EAFNOSUPPORT: Errno = Errno(libc::EAFNOSUPPORT);
    pub const ETIMEDOUT: Errno = Errno(libc::ETIMEDOUT);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);

    /// The symbolic name (`EEXIST`), or `E<number>` for numbers this table does not know.
    pub fn name(self) -> String {
        const NAMES: [(Errno, &str); 22] = [
            (Errno::EPERM, "EPERM"),
            (Errno::ENOENT, "ENOENT"),
            (Errno::EIO, "EIO"),
            (Errno::ENXIO, "ENXIO"),
            (Errno::EAGAIN, "EAGAIN"),
            (Errno::ENOMEM, "ENOMEM"),
            (Errno::EACCES, "EACCES"),
            (Errno::EBUSY, "EBUSY"),
            (Errno::EEXIST, "EEXIST"),
            (Errno::ENODEV, "ENODEV"),
            (Errno::EINVAL, "EINVAL"),
            (Errno::ERANGE, "ERANGE"),
            (Errno::ENFILE, "ENFILE"),
            (Errno::EMFILE, "EMFILE"),
            (Errno::ENOTUNIQ, "ENOTUNIQ"),
            (Errno::ENOBUFS, "ENOBUFS"),
            (Errno::EOPNOTSUPP, "EOPNOTSUPP"),
            (Errno::EPROTONOSUPPORT, "EPROTONOSUPPORT"),
            (Errno::EAFNOSUPPORT, "EAFNOSUPPORT"),
            (Errno::ETIMEDOUT, "ETIMEDOUT"),
            (Errno::ENAMETOOLONG, "ENAMETOOLONG"),
            (Errno::ENOTDIR, "ENOTDIR"),
        ];
        NAMES
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, n)| n.to_string())
            .unwrap_or_else(|| format!("E{}", self.0))
    }

    /// The C library's description ("File exists").
    pub fn description(self) -> String {
        std::io::Error::from_raw_os_error(self.0).to_string()
    }

    pub fn from_io(err: &std::io::Error) -> Errno {
        Errno(err.raw_os_error().unwrap_or(libc::EIO))
    }
}

impl std::fmt::Debug for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.description())
    }
}

impl Serialize for Errno {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(Errno::EEXIST.name(), "EEXIST");
        assert_eq!(Errno::ENFILE.name(), "ENFILE");
        assert_eq!(Errno(9999).name(), "E9999");
        assert!(Errno::ENODEV.to_string().starts_with("ENODEV ("));
    }
}
