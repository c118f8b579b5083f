//! The command line (clap), as rdma-cli(1) documents it. Settings that nmcli writes as
//! `KEY VALUE` pairs (`link add rxe0 type rxe netdev eth1`) are taken as words here and read
//! by [`crate::words`], so that they may come in any order, as nmcli's do.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The exit codes, as the usage and the man page list them.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   success
  1   the daemon reported a failure
  2   bad usage, or input refused (InvalidArgument)
  3   not authorized (polkit)
  4   not found
  5   rdma-managerd is not running (not on the bus)
  6   rolled back (verification failed, timeout, rollback)
  7   test-link: the test ran and did not pass (REASON says why)
  10  diff: there are changes
  11  health: an expectation is not met";

#[derive(Debug, Parser)]
#[command(
    name = "rdma-cli",
    version,
    about = "Command-line client of rdma-managerd: RDMA devices, soft links, RoCE, IPoIB, \
             naming, host setup, and the host's declarative state",
    after_help = EXIT_CODES_HELP,
    propagate_version = true
)]
pub struct Cli {
    /// Terse output for scripts: colon-separated fields, no header (`:` and `\` escaped
    /// with `\`)
    #[arg(short = 't', long, global = true)]
    pub terse: bool,

    /// JSON output, where the output is data (status, show, diff, steps)
    #[arg(short = 'j', long, global = true, conflicts_with = "terse")]
    pub json: bool,

    /// Give up after SECONDS (0: wait as long as it takes; default 90)
    #[arg(short = 'w', long, value_name = "SECONDS", global = true)]
    pub wait: Option<u64>,

    #[command(flatten)]
    pub bus: BusArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Which bus rdma-managerd is on (rdma-tui's options).
#[derive(Debug, Clone, Args, Default)]
#[group(multiple = false)]
pub struct BusArgs {
    /// rdma-managerd on the system bus (the default)
    #[arg(long, global = true)]
    pub system: bool,
    /// rdma-managerd on the session bus (rdma-managerd --session --simulate)
    #[arg(long, global = true)]
    pub session: bool,
    /// rdma-managerd on the bus at ADDRESS (a D-Bus address, unix:path=...)
    #[arg(long, value_name = "ADDRESS", global = true)]
    pub address: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The host's state: every setting by key path, or the whole document (--yaml, --json)
    /// that apply takes
    Show {
        /// Only the settings at or under these key paths (roce[mlx5_0/1], memlock.soft)
        #[arg(value_name = "PATH")]
        paths: Vec<String>,
        /// Print the state document as YAML
        #[arg(long)]
        yaml: bool,
    },
    /// Set settings by their key paths, as show prints them (roce[mlx5_0/1].tos 106): applied
    /// as a state document of their own, verified, rolled back on failure
    Set {
        /// Key paths and values, in pairs
        #[arg(value_name = "PATH VALUE", num_args = 1.., required = true)]
        settings: Vec<String>,
        /// Only say what would change, as diff does (exit 0 when nothing, 10 when something)
        #[arg(long, conflicts_with = "timeout")]
        dry_run: bool,
        /// Keep the change pending for SECONDS: it is rolled back unless confirmed
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u32>,
    },
    /// Devices and ports, as `nmcli device status` lists devices
    Status,
    /// What `apply FILE` would change; exit 0 when nothing, 10 when something
    Diff {
        /// A state document (YAML or JSON), or - for standard input
        #[arg(value_name = "FILE|-")]
        file: String,
    },
    /// Apply a state document: everything or nothing, verified, rolled back on failure
    Apply {
        /// A state document (YAML or JSON), or - for standard input
        #[arg(value_name = "FILE|-")]
        file: String,
        /// Keep the change pending for SECONDS: it is rolled back unless confirmed
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u32>,
    },
    /// Confirm a pending change (default: the only one)
    Confirm {
        /// The pending change: its object path or its number
        pending: Option<String>,
    },
    /// Roll back a pending change (default: the only one)
    Rollback {
        /// The pending change: its object path or its number
        pending: Option<String>,
    },
    /// Soft RDMA links (rxe, siw)
    #[command(subcommand)]
    Link(LinkCommand),
    /// RoCE default mode or type of service of a port
    Roce {
        /// The port: DEVICE/PORT, the device by name or node GUID (mlx5_0/1)
        #[arg(value_name = "DEV/PORT")]
        port: String,
        /// What to set
        setting: RoceSetting,
        /// v1|v2 for mode, 0 to 255 for tos
        value: String,
    },
    /// IPoIB interfaces and their P_Key children
    #[command(subcommand)]
    Ipoib(IpoibCommand),
    /// IP settings of an RDMA netdev through the host's IP manager, with nmcli's keys
    Ip {
        /// The interface (an IPoIB interface, or a RoCE port's netdev)
        name: String,
        /// nmcli's keys and values: ipv4.method manual ipv4.addresses 192.0.2.1/24 ...
        #[arg(value_name = "KEY VALUE", num_args = 2.., required = true)]
        settings: Vec<String>,
        /// Leave the change pending for SECONDS: rolled back unless confirmed
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u32>,
    },
    /// Persistent names of RDMA devices and IPoIB interfaces (udev rules)
    #[command(subcommand)]
    Naming(NamingCommand),
    /// rdma-core's module lists: SET MODULE on|off, or apply SET (load them now)
    Modules {
        #[arg(value_name = "SET MODULE on|off | apply SET", num_args = 2..=3, required = true)]
        words: Vec<String>,
    },
    /// The memlock limits of group rdma: SOFT HARD (KiB or unlimited), or reset
    Memlock {
        #[arg(value_name = "SOFT HARD | reset", num_args = 1..=2, required = true)]
        words: Vec<String>,
    },
    /// NFS over RDMA: on|off [port N]
    Nfs {
        #[arg(value_name = "on|off [port N]", num_args = 1..=3, required = true)]
        words: Vec<String>,
    },
    /// The subnet manager (opensm)
    Sm { action: SmAction },
    /// SR-IOV VF GUIDs of an InfiniBand PF: set DEVICE VF NODE_GUID PORT_GUID, reset DEVICE VF
    #[command(subcommand)]
    VfGuid(VfGuidCommand),
    /// Node health check (NHC style): exit 0 when every expectation holds, 11 and one
    /// `ERROR:` line per failed expectation otherwise. Expectations: the health section of
    /// FILE, else the options, else the state directory's health sections
    Health(HealthArgs),
    /// Test the link from a port to a peer: RDMA (latency and bandwidth through rdma_cm),
    /// ICMP over the port's netdev, or on InfiniBand ibping to a LID; exit 7 when it ran and
    /// did not pass
    TestLink {
        /// The port: DEVICE/PORT (rxe0/1), or its netdev (eth0, ib0)
        #[arg(value_name = "DEV/PORT|NETDEV")]
        port: String,
        /// The peer: an IPv4 or IPv6 address, or a RoCE v2 GID; for --kind ibping the peer
        /// port's LID
        peer: String,
        /// What to test
        #[arg(long, value_enum, default_value_t = TestKind::Rdma)]
        kind: TestKind,
        /// Seconds: ICMP or ibping requests for this long (default 2); RDMA bandwidth for
        /// this long against a server given -D SECONDS (default: perftest's iteration counts)
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        duration: u32,
        /// The most the test may take, 1 to 600 seconds (default 30)
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        timeout: u32,
    },
    /// The link-test responder, which peers test against: on, off, or its status
    Responder { action: ResponderAction },
    /// Print a shell completion script
    Completions { shell: CompletionShell },
    /// QoS profile of a RoCE port (lossless RoCE): show it, or change the settings named as
    /// KEY VALUE pairs, the others kept: trust pcp|dscp, pfc 3,4|none,
    /// ets BW0,..,BW7/TC0,..,TC7, dscp 26:3,48:6|none, traffic-class 0-255, ecn 3|none
    Qos {
        /// The port: DEVICE/PORT, the device by name or node GUID (mlx5_0/1)
        #[arg(value_name = "DEV/PORT")]
        port: String,
        /// Settings to change; none: show the profile
        #[arg(value_name = "KEY VALUE", num_args = 0..)]
        settings: Vec<String>,
    },
    /// Port type of a VPI adapter's port: mlx4 switches now, mlx5 at the next boot
    PortType {
        /// The port: DEVICE/PORT, the device by name or node GUID (mlx4_0/1)
        #[arg(value_name = "DEV/PORT")]
        port: String,
        /// ib, eth or auto
        #[arg(value_name = "ib|eth|auto")]
        value: String,
    },
}

/// What `health` checks: a state document's health section, or expectations as options.
#[derive(Debug, Clone, Default, Args)]
pub struct HealthArgs {
    /// A state document (YAML or JSON) whose health section is checked, or - for standard
    /// input
    #[arg(value_name = "FILE|-", conflicts_with_all = [
        "ports", "state", "phys_state", "min_rate", "link_layer", "mtu", "min_ports",
        "firmware_equal", "counter_window", "max_flaps"
    ])]
    pub file: Option<String>,
    /// The ports the port options apply to: DEVICE or DEVICE/PORT, repeated (default: every
    /// port); each must be present
    #[arg(long = "port", value_name = "DEV[/PORT]")]
    pub ports: Vec<String>,
    /// Expected logical state (ACTIVE, ...)
    #[arg(long, value_name = "STATE")]
    pub state: Option<String>,
    /// Expected physical state (LinkUp, ...)
    #[arg(long, value_name = "PHYS")]
    pub phys_state: Option<String>,
    /// Expected rate, at least GBPS Gb/s
    #[arg(long, value_name = "GBPS")]
    pub min_rate: Option<f64>,
    /// Expected link layer (InfiniBand or Ethernet)
    #[arg(long, value_name = "LAYER")]
    pub link_layer: Option<String>,
    /// Expected MTU of the ports' network interface (IPoIB interface or netdev)
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u32>,
    /// At least N RDMA ports present
    #[arg(long, value_name = "N")]
    pub min_ports: Option<u32>,
    /// Hardware devices of one board run one firmware version
    #[arg(long)]
    pub firmware_equal: bool,
    /// No error counter rises over SECONDS (1 to 20; the check waits them out)
    #[arg(long, value_name = "SECONDS")]
    pub counter_window: Option<u32>,
    /// At most N state changes of each port in the last --flap-window seconds
    #[arg(long, value_name = "N", requires = "flap_window")]
    pub max_flaps: Option<u32>,
    /// The flap window, in seconds
    #[arg(long, value_name = "SECONDS", requires = "max_flaps")]
    pub flap_window: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestKind {
    /// rdma_cm RC: latency ping-pong, then bandwidth (perftest)
    Rdma,
    /// ICMP echo over the port's netdev (ping)
    Icmp,
    /// InfiniBand ping of the peer port's LID (infiniband-diags' ibping, vendor class 0x32)
    Ibping,
}

impl TestKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TestKind::Rdma => "rdma",
            TestKind::Icmp => "icmp",
            TestKind::Ibping => "ibping",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResponderAction {
    /// Run the responder, now and at every start
    On,
    /// Stop it, and do not run it at start
    Off,
    /// Whether it runs, and what it served
    Status,
}

#[derive(Debug, Subcommand)]
pub enum LinkCommand {
    /// Add a soft link: NAME type rxe|siw netdev DEV
    Add {
        name: String,
        #[arg(value_name = "type rxe|siw netdev DEV", num_args = 4, required = true)]
        settings: Vec<String>,
    },
    /// Delete a soft link
    Delete { name: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoceSetting {
    /// The default RoCE version of rdma_cm (v1 or v2)
    Mode,
    /// The default type of service of rdma_cm (0 to 255)
    Tos,
}

#[derive(Debug, Subcommand)]
pub enum IpoibCommand {
    /// Add a P_Key child: PARENT pkey 0xNNNN [name NAME] [mode M] [mtu N]
    Add {
        parent: String,
        #[arg(
            value_name = "pkey 0xNNNN [name NAME] [mode datagram|connected] [mtu N]",
            num_args = 2..,
            required = true
        )]
        settings: Vec<String>,
    },
    /// Delete a P_Key child
    Delete { name: String },
    /// Change an interface: [mode datagram|connected] [mtu N] [umcast on|off]
    Set {
        name: String,
        #[arg(
            value_name = "[mode datagram|connected] [mtu N] [umcast on|off]",
            num_args = 2..,
            required = true
        )]
        settings: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum VfGuidCommand {
    /// Set a VF's node and port GUID (ip link's 00:11:22:33:44:55:66:77 or sysfs's
    /// 0011:2233:4455:6677), rebind the VF and remember them
    Set {
        /// The PF: its name or node GUID
        device: String,
        /// The VF index (ip link set PF vf N)
        vf: u32,
        node_guid: String,
        port_guid: String,
    },
    /// Forget the GUIDs remembered for a VF (the driver keeps the current ones)
    Reset {
        /// The PF: its name or node GUID
        device: String,
        /// The VF index
        vf: u32,
    },
}

#[derive(Debug, Subcommand)]
pub enum NamingCommand {
    /// The host's RDMA device naming policy
    Policy {
        policy: NamingPolicy,
        /// Rename the devices now, not only from the next boot
        #[arg(long)]
        now: bool,
    },
    /// A fixed name for an RDMA device (NAME_FIXED), by node GUID
    Fixed {
        node_guid: String,
        name: String,
        /// Rename the device now, not only from the next boot
        #[arg(long)]
        now: bool,
    },
    /// Forget a device's fixed name
    Unfix { node_guid: String },
    /// A persistent IPoIB interface name, by port GUID
    Ipoib {
        port_guid: String,
        name: String,
        /// Rename the interface now, not only from the next boot
        #[arg(long)]
        now: bool,
    },
    /// Forget an IPoIB interface name
    IpoibRemove { port_guid: String },
}

/// rdma-core's naming policies (rdma_rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NamingPolicy {
    NameKernel,
    NameOnboard,
    NamePci,
    NameGuid,
    NameFallback,
}

impl NamingPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            NamingPolicy::NameKernel => "NAME_KERNEL",
            NamingPolicy::NameOnboard => "NAME_ONBOARD",
            NamingPolicy::NamePci => "NAME_PCI",
            NamingPolicy::NameGuid => "NAME_GUID",
            NamingPolicy::NameFallback => "NAME_FALLBACK",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SmAction {
    /// Start opensm now
    Start,
    /// Stop opensm now
    Stop,
    /// Start opensm at boot
    Enable,
    /// Do not start opensm at boot
    Disable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

impl CompletionShell {
    /// The file name the completion is installed under in `dist/completions/`.
    pub fn file_name(self) -> &'static str {
        match self {
            CompletionShell::Bash => "rdma-cli.bash",
            CompletionShell::Zsh => "_rdma-cli",
            CompletionShell::Fish => "rdma-cli.fish",
        }
    }
}

/// The whole command, for completions and the tests.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Every command, subcommand and long option, as the man page must name them.
pub fn words() -> Vec<String> {
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            if let Some(long) = a.get_long() {
                out.push(format!("--{long}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                out.push(sub.get_name().to_string());
                walk(sub, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&command(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// The completion script of `shell`.
pub fn completion(shell: CompletionShell) -> String {
    let mut cmd = command();
    let mut out = Vec::new();
    match shell {
        CompletionShell::Bash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "rdma-cli", &mut out);
            // clap_complete names the functions of a command `rdma__cli...` but its case
            // labels `rdma__subcmd__cli...` (the program name's `-` replaced two ways), so no
            // subcommand would complete past its name: one spelling for both.
            let text = String::from_utf8_lossy(&out).replace("rdma__subcmd__cli", "rdma__cli");
            return text;
        }
        CompletionShell::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "rdma-cli", &mut out)
        }
        CompletionShell::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "rdma-cli", &mut out)
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        command().debug_assert();
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rdma-cli").chain(args.iter().copied()))
    }

    #[test]
    fn global_options_go_before_or_after_the_command() {
        let c = parse(&["-t", "status"]).expect("parses");
        assert!(c.terse && matches!(c.command, Command::Status));
        let c = parse(&["status", "--json", "--address", "unix:path=/x"]).expect("parses");
        assert!(c.json && c.bus.address.as_deref() == Some("unix:path=/x"));
        assert!(parse(&["-t", "-j", "status"]).is_err());
        assert!(parse(&["--system", "--session", "status"]).is_err());
    }

    #[test]
    fn keyword_settings_are_taken_as_words() {
        let c = parse(&["link", "add", "rxe1", "type", "rxe", "netdev", "eth1"]).expect("parses");
        match c.command {
            Command::Link(LinkCommand::Add { name, settings }) => {
                assert_eq!(name, "rxe1");
                assert_eq!(settings, ["type", "rxe", "netdev", "eth1"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["link", "add", "rxe1", "type", "rxe"]).is_err());
        let c = parse(&[
            "ip",
            "ib0",
            "ipv4.method",
            "manual",
            "ipv4.addresses",
            "192.0.2.1/24",
            "--timeout",
            "30",
        ])
        .expect("parses");
        match c.command {
            Command::Ip {
                settings, timeout, ..
            } => {
                assert_eq!(settings.len(), 4);
                assert_eq!(timeout, Some(30));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["roce", "mlx5_0/1", "speed", "3"]).is_err());
        let c = parse(&["naming", "policy", "NAME_GUID"]).expect("parses");
        assert!(matches!(
            c.command,
            Command::Naming(NamingCommand::Policy {
                policy: NamingPolicy::NameGuid,
                now: false
            })
        ));
    }
}
