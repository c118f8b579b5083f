//! One command, from the parsed command line to its exit code.

use std::time::Duration;

use crate::args::{Cli, Command};
use crate::failure::{code, Failure};
use crate::output::Format;
use crate::{bus, commands, health, linktest, pending, qos, state, status};

/// How long a command may take when `-w` does not say (nmcli's default).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(90);

/// Runs `cli`; the exit code, or the failure to print.
pub async fn run(cli: Cli) -> Result<u8, Failure> {
    let format = if cli.json {
        Format::Json
    } else if cli.terse {
        Format::Terse
    } else {
        Format::Table
    };
    if let Command::Completions { shell } = cli.command {
        print!("{}", crate::args::completion(shell));
        return Ok(code::SUCCESS);
    }
    let wait = match cli.wait {
        // A link test may take its whole timeout (600 s at most) and is bounded by it.
        None if matches!(cli.command, Command::TestLink { timeout, .. } if timeout >= 80) => None,
        None => Some(DEFAULT_WAIT),
        Some(0) => None,
        Some(s) => Some(Duration::from_secs(s)),
    };
    let work = async {
        let conn = bus::connect(&cli.bus).await?;
        dispatch(&conn, cli.command, format).await
    };
    match wait {
        None => work.await,
        Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(Failure::failed(format!(
                "timeout expired ({} seconds)",
                limit.as_secs()
            )))
        }),
    }
}

async fn dispatch(
    conn: &zbus::Connection,
    command: Command,
    format: Format,
) -> Result<u8, Failure> {
    match command {
        Command::Status => {
            let objects = bus::Objects::read(conn).await?;
            print!("{}", status::table(&objects).render(format));
            Ok(code::SUCCESS)
        }
        Command::Link(cmd) => commands::link(conn, cmd).await,
        Command::Roce {
            port,
            setting,
            value,
        } => commands::roce(conn, &port, setting, &value).await,
        Command::Ipoib(cmd) => commands::ipoib(conn, cmd).await,
        Command::Ip {
            name,
            settings,
            timeout,
        } => commands::ip(conn, &name, &settings, timeout).await,
        Command::Naming(cmd) => commands::naming(conn, cmd).await,
        Command::Modules { words } => commands::modules(conn, &words, format).await,
        Command::Memlock { words } => commands::memlock(conn, &words).await,
        Command::Nfs { words } => commands::nfs(conn, &words, format).await,
        Command::Sm { action } => commands::sm(conn, action).await,
        Command::VfGuid(cmd) => commands::vf_guid(conn, cmd).await,
        Command::Confirm { pending: given } => {
            let path = pending::resolve(conn, given.as_deref()).await?;
            pending::confirm(conn, &path).await?;
            println!("Change {path} confirmed.");
            Ok(code::SUCCESS)
        }
        Command::Rollback { pending: given } => {
            let path = pending::resolve(conn, given.as_deref()).await?;
            pending::roll_back(conn, &path).await?;
            println!("Change {path} rolled back.");
            Ok(code::SUCCESS)
        }
        Command::Show { paths, yaml } => state::show(conn, &paths, yaml, format).await,
        Command::Set {
            settings,
            dry_run,
            timeout,
        } => state::set(conn, &settings, dry_run, timeout, format).await,
        Command::Diff { file } => state::diff(conn, &file, format).await,
        Command::Apply { file, timeout } => state::apply(conn, &file, timeout, format).await,
        Command::Health(args) => health::check(conn, &args, format).await,
        Command::TestLink {
            port,
            peer,
            kind,
            duration,
            timeout,
        } => {
            let a = linktest::TestLinkArgs {
                port,
                peer,
                kind,
                duration,
                timeout,
            };
            linktest::test_link(conn, &a, format).await
        }
        Command::Responder { action } => linktest::responder(conn, action, format).await,
        Command::Completions { .. } => Ok(code::SUCCESS),
        Command::PortType { port, value } => commands::port_type(conn, &port, &value).await,
        Command::Qos { port, settings } => qos::qos(conn, &port, &settings, format).await,
    }
}
