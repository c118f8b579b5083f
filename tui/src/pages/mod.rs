//! The pages of rdma-tui, one module each. A page draws itself from the [`Model`] and turns
//! keys into [`Outcome`]s; it never talks to the bus itself, so every page can be drawn and
//! driven in tests without a service.

pub mod bandwidth;
pub mod detail;
pub mod host;
pub mod ipoib;
pub mod link_test;
pub mod list_view;
pub mod naming;
pub mod overview;
pub mod page;
pub mod port_table;
pub mod roce;
pub mod soft_links;
#[cfg(test)]
mod test_support;

pub use page::{Outcome, Page, PageId, RenderCtx};

/// Every page, in [`PageId::ALL`] order.
pub fn all_pages() -> Vec<Box<dyn Page>> {
    vec![
        Box::new(overview::OverviewPage::default()),
        Box::new(detail::DetailPage::default()),
        Box::new(bandwidth::BandwidthPage::default()),
        Box::new(ipoib::IpoibPage::default()),
        Box::new(soft_links::SoftLinksPage::default()),
        Box::new(roce::RocePage::default()),
        Box::new(naming::NamingPage::default()),
        Box::new(host::HostPage::default()),
        Box::new(link_test::LinkTestPage::default()),
    ]
}
