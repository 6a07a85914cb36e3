//! The `brdyun` binary: the command line, the config and the wiring of a node.
//!
//! - `brdyun demo` starts a local cluster fed by a built-in meeting source;
//! - `brdyun node --config FILE` runs one delivery node;
//! - `brdyun mc --config FILE` runs the meeting controller (MC).

mod admin_token;
mod config;
mod demo;
mod descriptors;
mod inputs;
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
    init_logging();
    // Before any listener: the connection caps are derived from what this leaves.
    descriptors::raise_and_log();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Demo { port } => runtime.block_on(demo::run(port)),
        Command::Node { config } => {
            let config = config::Config::load(&config)?;
            runtime.block_on(node::run_until_signal(config))
        }
        Command::Mc { config } => {
            let config = mc::config::McConfig::load(&config)?;
            runtime.block_on(mc::run_until_signal(config))
        }
        Command::CheckConfig { mc, config } => {
            if mc {
                mc::config::McConfig::load(&config)?;
            } else {
                config::Config::load(&config)?;
            }
            println!("{}: ok", config.display());
            Ok(())
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        // Logs go to stderr: stdout carries the machine-readable `listening` line and
        // the demo's URLs.
        .with_writer(std::io::stderr)
        .init();
}
