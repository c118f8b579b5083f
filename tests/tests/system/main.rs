//! What surrounds the service: the packaging files, the kernel lab's transcripts, the
//! simulated host, the polkit harness, the Ansible collection, rdma-core's libibverbs and
//! providers, and the real NetworkManager, systemd and firewalld the service talks to. One
//! test binary for all of them.

mod ansible;
mod dist_files;
mod exporter;
mod ibping;
mod lab_transcripts;
mod netplan;
mod networkd;
mod nm_changes;
mod nm_profiles;
mod polkit_harness;
mod product_deps;
mod sim_host;
mod system_services;
mod verbs_providers;
