//! `/etc/rdma-manager/link-test.toml`: whether the responder runs, re-applied at start. Read
//! and replaced atomically through [`Host`] like the other areas' files; a file that cannot be
//! parsed is never overwritten (the change is refused with its reason).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kernel::Host;

pub const PATH: &str = "/etc/rdma-manager/link-test.toml";

const HEADER: &str = "# rdma-managerd's link-test settings, written by the daemon (SetLinkResponder,\n# rdma-cli responder on|off). responder: run perftest's servers (ib_send_lat on\n# rdma_cm port 18515, ib_send_bw on 18516) so that peers can test against this host.\n";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkTestSettings {
    #[serde(default)]
    pub responder: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("{PATH} cannot be used: {0}; fix or remove it (the daemon will not overwrite it)")]
    Malformed(String),
    #[error("{PATH} could not be read: {0}")]
    Unreadable(String),
    #[error("{PATH} could not be written: {0}; nothing was changed")]
    Unwritable(String),
}

/// The settings; a missing file is the default (responder off).
pub async fn load(host: &dyn Host) -> Result<LinkTestSettings, SettingsError> {
    match host.read_file(Path::new(PATH)).await {
        Ok(None) => Ok(LinkTestSettings::default()),
        Ok(Some(bytes)) => parse(&bytes),
        Err(e) => Err(SettingsError::Unreadable(e.to_string())),
    }
}

pub fn parse(bytes: &[u8]) -> Result<LinkTestSettings, SettingsError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| SettingsError::Malformed(format!("not UTF-8 ({e})")))?;
    toml::from_str(text).map_err(|e| {
        SettingsError::Malformed(
            e.to_string()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        )
    })
}

pub async fn save(host: &dyn Host, s: &LinkTestSettings) -> Result<(), SettingsError> {
    let body = toml::to_string(s).map_err(|e| SettingsError::Unwritable(e.to_string()))?;
    let text = format!("{HEADER}\n{body}");
    host.write_file_atomic(Path::new(PATH), text.as_bytes())
        .await
        .map_err(|e| SettingsError::Unwritable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_reads_back_and_refuses_what_it_does_not_know() {
        let s = LinkTestSettings { responder: true };
        let text = format!("{HEADER}\n{}", toml::to_string(&s).unwrap());
        assert_eq!(parse(text.as_bytes()), Ok(s));
        assert_eq!(parse(b""), Ok(LinkTestSettings::default()));
        assert!(matches!(
            parse(b"responder = \"yes\""),
            Err(SettingsError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"other = 1"),
            Err(SettingsError::Malformed(_))
        ));
    }
}
