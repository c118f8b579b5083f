//! rdma-cli: the command-line client of rdma-managerd (see `rdma-cli --help` and rdma-cli(1)).

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;
use rdma_cli::args::Cli;
use rdma_cli::failure::code;

fn main() -> ExitCode {
    // Output into a closed pipe (`rdma-cli show --yaml | head`) ends the program quietly, as
    // it ends nmcli and ibstat, instead of a panic of `println!`: the default action of
    // SIGPIPE, which Rust's runtime sets to ignore.
    // SAFETY: before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and the version go to stdout with 0; a bad command line to stderr with
            // 2, its first word "Error:" as the daemon's refusals are printed.
            let exit = if e.use_stderr() { code::USAGE } else { 0 };
            let text = e.render().to_string();
            let text = match text.strip_prefix("error: ") {
                Some(rest) => format!("Error: {rest}"),
                None => text,
            };
            if e.use_stderr() {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            return ExitCode::from(exit);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return ExitCode::from(code::FAILED);
        }
    };
    let result = runtime.block_on(rdma_cli::run::run(cli));
    let _ = std::io::stdout().flush();
    match result {
        Ok(c) => ExitCode::from(c),
        Err(f) => {
            eprintln!("Error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
