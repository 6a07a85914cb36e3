//! The `brdyun` binary: the command line, the config and the wiring of a node.
//!
//! - `brdyun demo` starts a local cluster fed by a built-in meeting source;
//! - `brdyun node --config FILE` runs one delivery node;
//! - `brdyun mc --config FILE` runs the meeting controller (MC).

mod admin_token;
mod config;
mod demo;
mod descriptors;
mod logging;
mod mc;
mod node;
mod ott;
mod service;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Live meeting broadcasts as HLS, kept watchable when nodes fail.
#[derive(Debug, Parser)]
#[command(name = "brdyun", version, about)]
struct Cli {
    /// Log line format (default: the config's `[log] format`, else text).
    #[arg(long, global = true, value_enum)]
    log_format: Option<logging::LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Starts a local cluster on loopback with a built-in meeting source and prints the URLs.
    Demo {
        /// First HTTP port; the nodes use this and the following ports.
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Logs at info (default: warnings only, so the URLs stay in view); `RUST_LOG`
        /// wins over both.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Runs a delivery node.
    Node {
        /// The TOML config file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Runs the MC (meeting controller): the meeting API, publishing, and the origin
    /// every node pulls meeting streams from.
    Mc {
        /// The MC's TOML config file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Checks a config file and exits.
    CheckConfig {
        /// The file is an MC's (`brdyun mc`), not a node's.
        #[arg(long)]
        mc: bool,
        /// The TOML config file.
        config: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The config is read before logging starts: its `[log]` chooses the format. An
    // error in it is returned from here, printed plainly on stderr.
    let run = match cli.command {
        Command::Demo { port, verbose } => {
            if !verbose && std::env::var_os("RUST_LOG").is_none() {
                // Still one thread: nothing reads the environment concurrently.
                std::env::set_var("RUST_LOG", "warn");
            }
            Run::Demo(port)
        }
        Command::Node { config } => Run::Node(Box::new(config::Config::load(&config)?)),
        Command::Mc { config } => Run::Mc(Box::new(mc::config::McConfig::load(&config)?)),
        Command::CheckConfig { mc, config } => {
            if mc {
                mc::config::McConfig::load(&config)?;
            } else {
                config::Config::load(&config)?;
            }
            println!("{}: ok", config.display());
            return Ok(());
        }
    };
    let log = match &run {
        Run::Demo(_) => None,
        Run::Node(config) => Some(&config.log),
        Run::Mc(config) => Some(&config.log),
    };
    logging::init(cli.log_format, log);
    // Before any listener: the connection caps are derived from what this leaves.
    descriptors::raise_and_log();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match run {
        Run::Demo(port) => runtime.block_on(demo::run(port)),
        Run::Node(config) => runtime.block_on(node::run_until_signal(*config)),
        Run::Mc(config) => runtime.block_on(mc::run_until_signal(*config)),
    }
}

/// What runs, its config loaded (before logging starts).
enum Run {
    Demo(u16),
    Node(Box<config::Config>),
    Mc(Box<mc::config::McConfig>),
}
