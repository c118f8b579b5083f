//! The default RoCE mode of a port, as rdma_cm's configfs spells it.

use serde::Serialize;

use super::attr::{trim_attr, AttrError, Field};
use super::GidType;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RoceMode {
    V1,
    V2,
}

impl RoceMode {
    /// The exact text `default_roce_mode` reads and accepts.
    pub fn configfs_str(self) -> &'static str {
        match self {
            RoceMode::V1 => "IB/RoCE v1",
            RoceMode::V2 => "RoCE v2",
        }
    }

    pub fn parse_configfs(raw: &str) -> Field<RoceMode> {
        match trim_attr(raw) {
            "IB/RoCE v1" => Ok(RoceMode::V1),
            "RoCE v2" => Ok(RoceMode::V2),
            other => Err(AttrError::malformed(
                other,
                "expected \"IB/RoCE v1\" or \"RoCE v2\"",
            )),
        }
    }

    /// The GID type a port must list in `gid_attrs/types` for this mode to be accepted.
    pub fn gid_type(self) -> GidType {
        match self {
            RoceMode::V1 => GidType::IbRoceV1,
            RoceMode::V2 => GidType::RoceV2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        assert_eq!(RoceMode::parse_configfs("RoCE v2\n"), Ok(RoceMode::V2));
        assert_eq!(RoceMode::parse_configfs("IB/RoCE v1\n"), Ok(RoceMode::V1));
        assert!(RoceMode::parse_configfs("v2").is_err());
        assert!(RoceMode::parse_configfs("").is_err());
        assert_eq!(RoceMode::V1.configfs_str(), "IB/RoCE v1");
    }
}
