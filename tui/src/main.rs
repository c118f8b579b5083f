//! rdma-tui, the terminal client of rdma-managerd. It is built on the service's D-Bus API,
//! which does not exist yet; until then this binary only says so.

fn main() {
    eprintln!(
        "rdma-tui: the terminal client arrives with the rdma-managerd D-Bus service.\n\
         For now, `rdma-managerd show` prints this host's RDMA state the way ibstat does."
    );
    std::process::exit(2);
}
