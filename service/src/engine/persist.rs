//! The engine's side of persistence: an operation reads the area it changes, makes its change
//! in the kernel, then saves the new area. Only a save that succeeded replaces what the engine
//! holds, so a failed write leaves file and memory as they were.

use crate::config::{self, ConfigFile};

use super::{Dirty, Engine, OpError};

impl Engine {
    /// A copy of a persisted area to change, or why it cannot be changed (a broken file).
    pub(super) fn config<T: ConfigFile>(&self) -> Result<T, OpError> {
        T::slot(&self.state.config).clone().map_err(OpError::from)
    }

    /// Saves `value` as its area and publishes the change; nothing changes when the write fails.
    pub(super) async fn persist<T: ConfigFile>(&mut self, value: T) -> Result<(), OpError> {
        if T::slot(&self.state.config).as_ref().ok() == Some(&value) {
            return Ok(());
        }
        config::save(self.host.as_ref(), &value).await?;
        *T::slot_mut(&mut self.state.config) = Ok(value);
        self.publish(Dirty {
            config: true,
            ..Dirty::default()
        })
        .await;
        Ok(())
    }
}
