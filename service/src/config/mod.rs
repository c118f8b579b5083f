//! What the daemon remembers because the kernel forgets it at reboot: soft links, RoCE
//! defaults, IPoIB children and settings. Each area is one commented TOML file under
//! `/etc/rdma-manager/`, read at start and replaced atomically (through
//! [`Host::write_file_atomic`]) after every change that succeeded in the kernel.
//!
//! A file that cannot be parsed is never overwritten: the area is reported as broken, nothing
//! from it is re-applied, and every change in that area is refused until the file is fixed, so
//! hand edits are not silently lost.

pub mod ipoib;
pub mod qos;
pub mod roce;
pub mod soft_links;
pub mod vf_guids;

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::kernel::{Host, HostError};

pub use ipoib::{IpoibChildEntry, IpoibConfig, IpoibPortEntry, IpoibSettings};
pub use qos::{QosPortEntry, QosSettings};
pub use roce::{RocePortEntry, RoceSettings};
pub use soft_links::{SoftLinkEntry, SoftLinks};
pub use vf_guids::{VfGuidEntry, VfGuidSettings};

/// Where the daemon's own files live.
pub const CONFIG_DIR: &str = "/etc/rdma-manager";

/// One persisted area.
pub trait ConfigFile:
    Serialize + DeserializeOwned + Default + Clone + PartialEq + Send + Sync + 'static
{
    /// Absolute path of the file.
    const PATH: &'static str;
    /// Comment lines written above the TOML, each starting with `#`.
    const HEADER: &'static str;
    /// Checks what serde cannot (names, ranges, duplicates); a failure makes the file broken.
    fn validate(&self) -> Result<(), String>;
    /// This area in the whole persisted state.
    fn slot(desired: &Desired) -> &Loaded<Self>;
    fn slot_mut(desired: &mut Desired) -> &mut Loaded<Self>;
}

/// Why a persisted area could not be used or saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{path} cannot be used: {reason}; fix or remove it (the daemon will not overwrite it)"
    )]
    Malformed { path: String, reason: String },
    #[error("{path} could not be read: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} could not be written: {reason}; nothing was changed")]
    Unwritable { path: String, reason: String },
}

/// A loaded area, or why it is unusable.
pub type Loaded<T> = Result<T, ConfigError>;

/// Parses a file's text; the header comments are ignored by TOML itself.
pub fn parse<T: ConfigFile>(text: &[u8]) -> Result<T, ConfigError> {
    let malformed = |reason: String| ConfigError::Malformed {
        path: T::PATH.to_string(),
        reason,
    };
    let text = std::str::from_utf8(text).map_err(|e| malformed(format!("not UTF-8 ({e})")))?;
    let value: T = toml::from_str(text).map_err(|e| malformed(one_line(&e.to_string())))?;
    value.validate().map_err(malformed)?;
    Ok(value)
}

/// The file's text: header, then the TOML.
pub fn render<T: ConfigFile>(value: &T) -> Result<String, ConfigError> {
    let body = toml::to_string(value).map_err(|e| ConfigError::Unwritable {
        path: T::PATH.to_string(),
        reason: e.to_string(),
    })?;
    let mut out = String::with_capacity(T::HEADER.len() + body.len() + 1);
    out.push_str(T::HEADER);
    if !T::HEADER.ends_with('\n') {
        out.push('\n');
    }
    if !body.is_empty() {
        out.push('\n');
        out.push_str(&body);
    }
    Ok(out)
}

/// Reads an area; a missing file is the empty default.
pub async fn load<T: ConfigFile>(host: &dyn Host) -> Loaded<T> {
    match host.read_file(Path::new(T::PATH)).await {
        Ok(None) => Ok(T::default()),
        Ok(Some(bytes)) => parse(&bytes),
        Err(e) => Err(ConfigError::Unreadable {
            path: T::PATH.to_string(),
            reason: e.to_string(),
        }),
    }
}

/// Replaces an area's file atomically.
pub async fn save<T: ConfigFile>(host: &dyn Host, value: &T) -> Result<(), ConfigError> {
    value.validate().map_err(|reason| ConfigError::Unwritable {
        path: T::PATH.to_string(),
        reason,
    })?;
    let text = render(value)?;
    host.write_file_atomic(Path::new(T::PATH), text.as_bytes())
        .await
        .map_err(|e: HostError| ConfigError::Unwritable {
            path: T::PATH.to_string(),
            reason: e.to_string(),
        })
}

/// toml's messages span several lines with a source excerpt; a D-Bus error wants one. The
/// excerpt quotes the broken line whole, however long it is, so each line of the message is
/// cut to [`EXCERPT_MAX_BYTES`]: the position and the reason, which come before and after
/// it, are kept.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| rdma_manager_dbus::text::cap_text(l, EXCERPT_MAX_BYTES))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The longest line of a TOML error message kept whole (its source excerpt is one line of the
/// file).
const EXCERPT_MAX_BYTES: usize = 256;

/// Everything the daemon has persisted, as last loaded or saved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Desired {
    pub soft_links: Loaded<SoftLinks>,
    pub ipoib: Loaded<IpoibConfig>,
    pub roce: Loaded<RoceSettings>,
    pub vf_guids: Loaded<VfGuidSettings>,
    pub qos: Loaded<QosSettings>,
}

impl Default for Desired {
    fn default() -> Self {
        Desired {
            soft_links: Ok(SoftLinks::default()),
            ipoib: Ok(IpoibConfig::default()),
            roce: Ok(RoceSettings::default()),
            vf_guids: Ok(VfGuidSettings::default()),
            qos: Ok(QosSettings::default()),
        }
    }
}

impl Desired {
    /// The areas that cannot be used, and why.
    pub fn errors(&self) -> Vec<&ConfigError> {
        [
            self.soft_links.as_ref().err(),
            self.ipoib.as_ref().err(),
            self.roce.as_ref().err(),
            self.vf_guids.as_ref().err(),
            self.qos.as_ref().err(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Reads every area.
    pub async fn load(host: &dyn Host) -> Desired {
        Desired {
            soft_links: load(host).await,
            ipoib: load(host).await,
            roce: load(host).await,
            vf_guids: load(host).await,
            qos: load(host).await,
        }
    }
}
