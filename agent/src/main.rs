//! `headroom`: the command line of Headroom — estimates, catalogs and (with
//! the agent) the GPU-host server.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One clear line: the error and its causes.
            eprintln!("headroom: {e:#}");
            ExitCode::FAILURE
        }
    }
}
