//! rdma-managerd. Until the D-Bus service lands, `rdma-managerd show` prints the host's RDMA
//! state the way `ibstat` does, followed by its IPoIB interfaces; on a host without RDMA (or
//! with `--simulate`) it shows the simulated demo host.

use std::sync::Arc;

use anyhow::{bail, Context};
use rdma_managerd::kernel::linux::LinuxHost;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::kernel::Host;

const USAGE: &str = "usage: rdma-managerd show [--simulate[=DIR]] [--json] [DEVICE [PORT]]

  show            print every RDMA device and port as ibstat does, then the IPoIB interfaces
  --simulate      use the simulated demo host (the default when this host has no RDMA)
  --simulate=DIR  the same, with its sysfs-shaped tree kept in DIR
  --json          print the state as JSON instead";

struct Args {
    simulate: Option<Option<String>>,
    json: bool,
    device: Option<String>,
    port: Option<u32>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("show") => {}
        Some("-h" | "--help") => {
            println!("{USAGE}");
            std::process::exit(0);
        }
        _ => bail!("{USAGE}"),
    }
    let mut out = Args {
        simulate: None,
        json: false,
        device: None,
        port: None,
    };
    for a in args {
        match a.as_str() {
            "--simulate" => out.simulate = Some(None),
            "--json" => out.json = true,
            s if s.starts_with("--simulate=") => {
                out.simulate = Some(Some(s["--simulate=".len()..].to_string()))
            }
            s if s.starts_with('-') => bail!("unknown option {s}\n{USAGE}"),
            s if out.device.is_none() => out.device = Some(s.to_string()),
            s if out.port.is_none() => {
                out.port = Some(
                    s.parse()
                        .with_context(|| format!("port {s:?} is not a number"))?,
                )
            }
            s => bail!("unexpected argument {s:?}\n{USAGE}"),
        }
    }
    Ok(out)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = parse_args()?;
    let simulate = match &args.simulate {
        Some(dir) => Some(dir.clone()),
        None if !LinuxHost::has_rdma() => {
            eprintln!("This host has no RDMA devices (no /sys/class/infiniband): showing the simulated demo host.");
            Some(None)
        }
        None => None,
    };
    let host: Arc<dyn Host> = match simulate {
        Some(Some(dir)) => Arc::new(SimHost::in_dir(
            std::path::Path::new(&dir),
            fixtures::demo_host(),
        )?),
        Some(None) => Arc::new(SimHost::new(fixtures::demo_host())?),
        None => Arc::new(LinuxHost::new()),
    };
    let devices = host.read_devices().await?;
    let netdevs = host.read_netdevs().await?;
    if args.json {
        let state = serde_json::json!({ "devices": devices, "netdevs": netdevs });
        println!("{}", serde_json::to_string_pretty(&state)?);
        return Ok(());
    }
    let text = match &args.device {
        None => rdma_managerd::ibstat::render_all(&devices),
        Some(name) => {
            let dev = devices
                .iter()
                .find(|d| &d.name == name)
                .with_context(|| format!("no RDMA device named {name}"))?;
            rdma_managerd::ibstat::render_device(dev, args.port)?
        }
    };
    print!("{text}");
    if args.device.is_none() {
        print!(
            "{}",
            rdma_managerd::ipoib_report::render_ipoib(&devices, &netdevs)
        );
    }
    Ok(())
}
