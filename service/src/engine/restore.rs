//! Re-applying what was persisted: at start, and when a device or network interface appears
//! (added, or renamed to a name). Each area looks only at what appeared, so a change the user
//! made by hand to something already present is left alone until it appears again.
//!
//! A restore that fails is logged and not retried until the thing appears again: nothing here
//! answers a caller, and a failing step must not turn into a loop.

pub(super) use super::ops_ipoib::restore_ipoib;
use super::ops_port_type::restore_port_types;
use super::ops_qos::restore_qos;
use super::ops_roce::restore_roce;
use super::ops_soft_links::restore_soft_links;
use super::ops_vf_guid::restore_vf_guids;
use super::wanted::Appeared;
use super::Engine;

/// Re-applies every area for what appeared: IPoIB last ([`restore_ipoib`]), after the
/// others ([`restore_but_ipoib`]).
pub(super) async fn restore(eng: &mut Engine, appeared: &Appeared) {
    restore_but_ipoib(eng, appeared).await;
    restore_ipoib(eng, appeared).await;
}

/// Every area but IPoIB. Soft links go first: a restored link is a device that appears, and
/// its RoCE settings follow on its add event. IPoIB is left for last because it is the area
/// NetworkManager may own, whose answer start-up waits for only after these (see
/// `engine::start`), and because a port type or a VF's GUID re-applied here may be what
/// makes its interfaces appear.
pub(super) async fn restore_but_ipoib(eng: &mut Engine, appeared: &Appeared) {
    restore_soft_links(eng, appeared).await;
    restore_roce(eng, appeared).await;
    restore_port_types(eng, appeared).await;
    restore_vf_guids(eng, appeared).await;
    restore_qos(eng, appeared).await;
}
