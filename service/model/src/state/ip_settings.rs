//! An interface's IP settings in the document's form (nmstate's, plus `gateway`, `dns` and
//! `dns-search`): the types the `interfaces` list holds and [`super::nmcli`] maps to nmcli's
//! keys.

use serde::{Deserialize, Serialize};

/// One address family's IP settings, in nmstate's form plus `gateway`, `dns` and
/// `dns-search` (which nmstate keeps in its routes and dns-resolver sections).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IpFamily {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhcp: Option<bool>,
    /// IPv6 only: stateless autoconfiguration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoconf: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Vec<IpAddress>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_search: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IpAddress {
    pub ip: String,
    pub prefix_length: u8,
}
