//! Links a release `rdma-managerd` with `link/text-order.ld`, which places the functions the
//! daemon runs together at the front of its code. The kernel maps an executable's pages 16 at
//! a time around each one touched, so with the functions that run scattered through the code
//! most of the executable was resident; grouped, much less is (on the simulated 256x2 host
//! 2.3 MiB less RSS; on the real kernel in the lab, whose own paths the committed profile does
//! not cover yet, 0.3 MiB: docs/PERFORMANCE.md, "Memory, thirteenth pass"). The script only
//! adds output sections before `.text` (`INSERT BEFORE`), which lld and GNU ld both read
//! (gold does not); a function it no longer names stays where the linker puts it anyway.
//! `RDMA_MANAGER_TEXT_ORDER=off` links without it. tests/text-order/regenerate.sh writes the
//! script, from a build with `RDMA_MANAGER_LINK_MAP=PATH`, which has the linker write its map
//! there.

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=link/text-order.ld");
    println!("cargo::rerun-if-env-changed=RDMA_MANAGER_TEXT_ORDER");
    println!("cargo::rerun-if-env-changed=RDMA_MANAGER_LINK_MAP");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let off = std::env::var("RDMA_MANAGER_TEXT_ORDER").is_ok_and(|v| v == "off");
    if !release || !linux || off {
        return;
    }
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let script = Path::new(&dir).join("link").join("text-order.ld");
    if script.is_file() {
        // `-T` and the path as two arguments: the C compiler that drives the linker takes
        // `-T SCRIPT` itself, and a path with a comma would break `-Wl,-T,PATH`.
        println!("cargo::rustc-link-arg-bin=rdma-managerd=-T");
        println!(
            "cargo::rustc-link-arg-bin=rdma-managerd={}",
            script.display()
        );
    }
    if let Ok(map) = std::env::var("RDMA_MANAGER_LINK_MAP") {
        println!("cargo::rustc-link-arg-bin=rdma-managerd=-Xlinker");
        println!("cargo::rustc-link-arg-bin=rdma-managerd=-Map={map}");
    }
}
