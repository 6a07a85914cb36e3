//! The tests' service manager (`tests/common/supervisor.rs`) as a program, for the
//! end-to-end tests (JavaScript has no unix datagram sockets): it supervises one
//! `brdyun` process as systemd does a `Type=notify` unit with `WatchdogSec=`,
//! `Restart=always` and `RestartSec=0`, and prints every event as a JSON line on
//! stdout. It stops (killing the process) when its stdin closes.
//!
//! ```text
//! cargo run --example notify_supervisor -- BRDYUN ROLE CONFIG WATCHDOG_MS
//! {"event":"started","pid":4242,"http":"127.0.0.1:8080","at_ms":12}
//! {"event":"ready","pid":4242,"http":"127.0.0.1:8080","at_ms":15}
//! {"event":"watchdog","pid":4242,"http":"127.0.0.1:8080","at_ms":1016}
//! ```
//!
//! `BRDYUN` is the binary, `ROLE` `node` or `mc`, `CONFIG` its TOML file (copied beside
//! the process's log in a temporary directory), `WATCHDOG_MS` the period. Events:
//! `started`, `ready`, `watchdog`, `stopping`, `killed_by_watchdog` (SIGKILL), `exited`.
//! Not part of the shipped binary.

// The tests use all of it; this program, the events.
#[allow(dead_code)]
#[path = "../tests/common/supervisor.rs"]
mod supervisor;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use supervisor::{EventKind, Supervisor};

/// The binary given on the command line.
static BRDYUN: OnceLock<PathBuf> = OnceLock::new();

/// What the supervisor starts: the given binary.
fn brdyun_command() -> Command {
    Command::new(BRDYUN.get().expect("set in main"))
}

/// A started process and the HTTP address of its `listening` line.
pub struct NodeProcess {
    pub child: Child,
    pub http: SocketAddr,
}

impl NodeProcess {
    /// SIGKILL, and reaped.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Runs `command role --config dir/name.toml` (the config as given) and waits for its
/// `listening` line; its log goes to `dir/name.log`.
fn start_command(
    mut command: Command,
    dir: &Path,
    name: &str,
    role: &str,
    config: &str,
) -> NodeProcess {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).expect("write the config");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .expect("open the log");
    let mut child = command
        .args([role, "--config"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn brdyun");
    let stdout = child.stdout.take().expect("stdout");
    let mut process = NodeProcess {
        child,
        http: SocketAddr::from(([0, 0, 0, 0], 0)),
    };
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.strip_prefix("listening ") {
            process.http = rest
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("http="))
                .and_then(|v| v.parse().ok())
                .expect("the listening line names the http address");
            std::thread::spawn(move || for _ in lines {});
            return process;
        }
    }
    panic!(
        "{role} did not print its listening line; see {}",
        dir.display()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [binary, role, config, watchdog_ms] = &args[..] else {
        eprintln!("usage: notify_supervisor BRDYUN ROLE CONFIG WATCHDOG_MS");
        std::process::exit(2);
    };
    BRDYUN.set(PathBuf::from(binary)).expect("set once");
    let config = std::fs::read_to_string(config).expect("read the config");
    let watchdog = Duration::from_millis(watchdog_ms.parse().expect("WATCHDOG_MS"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let started = Instant::now();
    let supervisor = Supervisor::start(dir.path(), "supervised", role, &config, watchdog);
    // Stdin closing is the signal to stop.
    let (closed_tx, closed) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        let _ = closed_tx.send(());
    });
    let mut printed = 0;
    loop {
        let events = supervisor.events();
        for event in &events[printed..] {
            let kind = match event.kind {
                EventKind::Started => "started",
                EventKind::Ready => "ready",
                EventKind::Watchdog => "watchdog",
                EventKind::Stopping => "stopping",
                EventKind::KilledByWatchdog => "killed_by_watchdog",
                EventKind::Exited => "exited",
            };
            println!(
                "{}",
                serde_json::json!({
                    "event": kind,
                    "pid": event.pid,
                    "http": event.http.to_string(),
                    "at_ms": event.at.duration_since(started).as_millis() as u64,
                })
            );
        }
        printed = events.len();
        if closed.recv_timeout(Duration::from_millis(20)).is_ok() {
            break;
        }
    }
}
