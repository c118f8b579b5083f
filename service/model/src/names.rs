//! Validation of interface and RDMA device names against the kernel's rules, tightened so that
//! no accepted name can carry udev rule syntax, a path or a shell word boundary.

use serde::Serialize;

/// IFNAMSIZ - 1.
pub const NETDEV_NAME_MAX: usize = 15;
/// IB_DEVICE_NAME_MAX - 1.
pub const RDMA_NAME_MAX: usize = 63;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum NameError {
    #[error("the name is empty")]
    Empty,
    #[error("the name is {len} bytes long; at most {max} are allowed")]
    TooLong { len: usize, max: usize },
    #[error("the name {0:?} is reserved")]
    Reserved(String),
    #[error("the name may not start with {0:?}")]
    BadStart(char),
    /// `é` is a letter, but not one a name may have: the message says ASCII.
    #[error("the character {0:?} is not allowed; use ASCII letters, digits, '-', '_' and '.'")]
    BadChar(char),
}

fn check(name: &str, max: usize) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > max {
        return Err(NameError::TooLong {
            len: name.len(),
            max,
        });
    }
    if name == "." || name == ".." {
        return Err(NameError::Reserved(name.to_string()));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
    {
        return Err(NameError::BadChar(c));
    }
    let first = name.chars().next().unwrap_or('.');
    if first == '.' || first == '-' {
        return Err(NameError::BadStart(first));
    }
    Ok(())
}

/// A network interface name: the kernel's `dev_valid_name` (1..=15 bytes, no `/`, `:` or
/// whitespace, not `.`/`..`) restricted further to `[A-Za-z0-9_.-]`, not starting with `.`
/// or `-`, which also keeps `%` (a kernel name template), quotes, globs and newlines out.
pub fn validate_netdev_name(name: &str) -> Result<(), NameError> {
    check(name, NETDEV_NAME_MAX)
}

/// An RDMA device name (at most 63 bytes; `%` is refused by the kernel with EINVAL).
pub fn validate_rdma_name(name: &str) -> Result<(), NameError> {
    check(name, RDMA_NAME_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for ok in [
            "ib0",
            "mlx4_ib0",
            "ib0.8002",
            "rxe0",
            "roce_lab",
            "enp3s0f1np1",
            "a-b",
        ] {
            assert_eq!(validate_netdev_name(ok), Ok(()), "{ok}");
        }
        assert_eq!(validate_rdma_name("ibp59s0f0x0123456789abcdef"), Ok(()));
    }

    /// `é` is a letter; the refusal says which letters a name may have.
    #[test]
    fn a_non_ascii_letter_is_refused_as_such() {
        let e = validate_rdma_name("rxé0").expect_err("refused");
        assert_eq!(e, NameError::BadChar('é'));
        assert!(e.to_string().contains("use ASCII letters"), "{e}");
    }

    #[test]
    fn refuses_everything_else() {
        assert_eq!(validate_netdev_name(""), Err(NameError::Empty));
        assert!(matches!(
            validate_netdev_name("abcdefghijklmnop"),
            Err(NameError::TooLong { len: 16, max: 15 })
        ));
        assert_eq!(
            validate_netdev_name(".."),
            Err(NameError::Reserved("..".into()))
        );
        assert_eq!(
            validate_netdev_name(".hidden"),
            Err(NameError::BadStart('.'))
        );
        assert_eq!(validate_netdev_name("-x"), Err(NameError::BadStart('-')));
        for (bad, c) in [
            ("../etc", '/'),
            ("a/b", '/'),
            ("ib0:1", ':'),
            ("ib 0", ' '),
            ("ib\"0", '"'),
            ("ib'0", '\''),
            ("ib0\n", '\n'),
            ("ib*", '*'),
            ("ib?", '?'),
            ("rxe%d", '%'),
            ("ib0,", ','),
            ("ib{0}", '{'),
            ("ïb0", 'ï'),
        ] {
            assert_eq!(
                validate_netdev_name(bad),
                Err(NameError::BadChar(c)),
                "{bad:?}"
            );
        }
        assert!(validate_rdma_name(&"x".repeat(64)).is_err());
        assert!(validate_rdma_name(&"x".repeat(63)).is_ok());
    }
}
