//! The daemon loads only the libibverbs providers its devices need (service
//! kernel/verbs_providers.rs), with rdma-core's own libibverbs and providers as installed
//! (`ibverbs-providers`): found beside the library, loaded, and no other mapped. The lab's
//! scale run checks the same of the daemon on a real kernel with 256 rxe devices.

use std::collections::BTreeSet;

use rdma_manager_tests::bus::tools_required;
use rdma_manager_tests::procfs::libibverbs_providers_mapped;
use rdma_managerd::kernel::verbs::{Verbs, VerbsError};

/// The provider files this process has mapped, sorted.
fn mapped_providers() -> Vec<String> {
    libibverbs_providers_mapped("self")
}

#[test]
fn only_the_providers_asked_for_are_mapped() {
    let verbs = match Verbs::load() {
        Ok(v) => v,
        Err(VerbsError::NoLibrary(why)) if !tools_required() => {
            eprintln!("skipped: {why} (install ibverbs-providers)");
            return;
        }
        Err(e) => panic!("libibverbs: {e}"),
    };
    assert!(
        mapped_providers().is_empty(),
        "none before: {:?}",
        mapped_providers()
    );
    let rxe: BTreeSet<&'static str> = ["rxe"].into_iter().collect();
    verbs.load_providers(Some(&rxe));
    assert_eq!(verbs.providers_loaded(), vec!["rxe"]);
    let mapped = mapped_providers();
    assert_eq!(mapped.len(), 1, "{mapped:?}");
    assert!(mapped[0].starts_with("librxe-rdmav"), "{mapped:?}");
    // Asked again, nothing changes; a host whose providers cannot all be told (`None`)
    // loads none here.
    verbs.load_providers(Some(&rxe));
    verbs.load_providers(None);
    assert_eq!(mapped_providers(), mapped);
    // siw's joins it.
    let siw: BTreeSet<&'static str> = ["siw"].into_iter().collect();
    verbs.load_providers(Some(&siw));
    assert_eq!(verbs.providers_loaded(), vec!["rxe", "siw"]);
    assert_eq!(mapped_providers().len(), 2, "{:?}", mapped_providers());
}
