//! Re-applying what was persisted: at start, and when a device or network interface appears
//! (added, or renamed to a name). Each area looks only at what appeared, so a change the user
//! made by hand to something already present is left alone until it appears again.
//!
//! A restore that fails is logged and not retried until the thing appears again: nothing here
//! answers a caller, and a failing step must not turn into a loop.

use super::ops_ipoib::restore_ipoib;
use super::ops_port_type::restore_port_types;
use super::ops_qos::restore_qos;
use super::ops_roce::restore_roce;
use super::ops_soft_links::restore_soft_links;
use super::ops_vf_guid::restore_vf_guids;
use super::wanted::Appeared;
use super::Engine;

/// Re-applies every area for what appeared. Soft links go first: a restored link is a
/// device that appears, and its RoCE settings follow on its add event.
pub(super) async fn restore(eng: &mut Engine, appeared: &Appeared) {
    restore_soft_links(eng, appeared).await;
    restore_ipoib(eng, appeared).await;
    restore_roce(eng, appeared).await;
    restore_port_types(eng, appeared).await;
    restore_vf_guids(eng, appeared).await;
    restore_qos(eng, appeared).await;
}
