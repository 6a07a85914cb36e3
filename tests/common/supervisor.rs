//! A small service manager for tests, doing what systemd does for a `Type=notify`
//! unit with `WatchdogSec=`, `Restart=always` and `RestartSec=0`: it binds a unix
//! datagram socket, starts the process with `NOTIFY_SOCKET` and `WATCHDOG_USEC` set,
//! waits for `READY=1`, and when no `WATCHDOG=1` has come for the watchdog period
//! kills the process and starts it again. The kill is SIGKILL: systemd's default
//! watchdog signal is SIGABRT (a core dump for a post-mortem), which a test has no use
//! for; either ends a hung process, since neither can be caught by a stopped one.
//! After `STOPPING=1` the watchdog no longer applies (as systemd stops it when a unit
//! leaves the running state).
//!
//! Every notification and action is recorded with its time ([`Event`]), so a test
//! asserts on what happened and when. `examples/notify_supervisor.rs` runs the same
//! code as a program (the end-to-end tests, in JavaScript, have no unix datagram
//! sockets): what it needs of its parent module is `brdyun_command`, `start_command`
//! and `NodeProcess`.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{brdyun_command, start_command, NodeProcess};

/// Something the supervisor saw or did, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A process was started (its `listening` line read).
    Started,
    /// `READY=1`.
    Ready,
    /// `WATCHDOG=1`.
    Watchdog,
    /// `STOPPING=1`.
    Stopping,
    /// The watchdog period passed without a ping: the process was killed.
    KilledByWatchdog,
    /// The process ended by itself (or by a signal the supervisor did not send).
    Exited,
}

/// One recorded event: what, when, and which process (its pid and HTTP address).
#[derive(Debug, Clone, Copy)]
pub struct Event {
    pub kind: EventKind,
    pub at: Instant,
    pub pid: u32,
    pub http: std::net::SocketAddr,
}

/// What the supervised process is now.
#[derive(Debug, Clone, Copy)]
pub struct Current {
    pub pid: u32,
    pub http: std::net::SocketAddr,
}

struct Shared {
    events: Mutex<Vec<Event>>,
    current: Mutex<Option<Current>>,
    stop: AtomicBool,
}

/// A supervised `brdyun <role>`; stopped (the process killed) when dropped.
pub struct Supervisor {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    socket_path: PathBuf,
}

/// How long a process may take from start to `READY=1`.
const READY_LIMIT: Duration = Duration::from_secs(30);

impl Supervisor {
    /// Writes `config` to `dir/name.toml` and supervises `brdyun role --config` with a
    /// watchdog period of `watchdog`. Returns once the first process is ready.
    pub fn start(dir: &Path, name: &str, role: &str, config: &str, watchdog: Duration) -> Self {
        let socket_path = dir.join(format!("{name}.notify"));
        let _ = std::fs::remove_file(&socket_path);
        let socket = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("socket timeout");
        let shared = Arc::new(Shared {
            events: Mutex::new(Vec::new()),
            current: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let spawn = {
            let (dir, name, role, config) = (
                dir.to_owned(),
                name.to_owned(),
                role.to_owned(),
                config.to_owned(),
            );
            let socket_path = socket_path.clone();
            move || {
                let mut command = brdyun_command();
                command
                    .env("NOTIFY_SOCKET", &socket_path)
                    .env("WATCHDOG_USEC", watchdog.as_micros().to_string());
                start_command(command, &dir, &name, &role, &config)
            }
        };
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || supervise(&shared, &socket, watchdog, spawn))
        };
        let supervisor = Self {
            shared,
            thread: Some(thread),
            socket_path,
        };
        supervisor.wait_for(EventKind::Ready, 1, READY_LIMIT);
        supervisor
    }

    /// The process now (after a restart, the new one), once it has started.
    pub fn current(&self) -> Current {
        self.shared
            .current
            .lock()
            .expect("current")
            .expect("a process has started")
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.shared.events.lock().expect("events").clone()
    }

    /// How many events of `kind` so far.
    pub fn count(&self, kind: EventKind) -> usize {
        self.events().iter().filter(|e| e.kind == kind).count()
    }

    /// Waits until `n` events of `kind` have been recorded (panics after `limit`), and
    /// returns the `n`th.
    pub fn wait_for(&self, kind: EventKind, n: usize, limit: Duration) -> Event {
        let deadline = Instant::now() + limit;
        loop {
            let found = self
                .events()
                .into_iter()
                .filter(|e| e.kind == kind)
                .nth(n - 1);
            if let Some(event) = found {
                return event;
            }
            assert!(
                Instant::now() < deadline,
                "no {kind:?} #{n} within {limit:?}; events: {:?}",
                self.events()
                    .iter()
                    .map(|e| (e.kind, e.pid))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to the current process.
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = i32::try_from(self.current().pid).expect("pid");
        let pid = rustix::process::Pid::from_raw(pid).expect("a process id is positive");
        rustix::process::kill_process(pid, signal).expect("kill(2)");
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

/// The supervisor's loop: start, read notifications, kill on a missed watchdog,
/// start again, until told to stop (then the process is killed with it).
fn supervise(
    shared: &Shared,
    socket: &UnixDatagram,
    watchdog: Duration,
    spawn: impl Fn() -> NodeProcess,
) {
    let record = |kind: EventKind, process: &NodeProcess| {
        shared.events.lock().expect("events").push(Event {
            kind,
            at: Instant::now(),
            pid: process.child.id(),
            http: process.http,
        });
    };
    let mut buf = [0u8; 4096];
    while !shared.stop.load(Ordering::SeqCst) {
        let mut process = spawn();
        let pid = process.child.id();
        *shared.current.lock().expect("current") = Some(Current {
            pid,
            http: process.http,
        });
        record(EventKind::Started, &process);
        // Until READY=1 the start timeout applies, then the watchdog from the last ping
        // (systemd arms it at READY=1).
        let started = Instant::now();
        let mut ready = false;
        let mut stopping = false;
        let mut last_ping = started;
        loop {
            if shared.stop.load(Ordering::SeqCst) {
                process.kill9();
                return;
            }
            if let Ok(n) = socket.recv(&mut buf) {
                for line in String::from_utf8_lossy(&buf[..n]).lines() {
                    match line {
                        "READY=1" => {
                            ready = true;
                            last_ping = Instant::now();
                            record(EventKind::Ready, &process);
                        }
                        "WATCHDOG=1" => {
                            last_ping = Instant::now();
                            record(EventKind::Watchdog, &process);
                        }
                        "STOPPING=1" => {
                            stopping = true;
                            record(EventKind::Stopping, &process);
                        }
                        _ => {}
                    }
                }
            }
            if let Ok(Some(_)) = process.child.try_wait() {
                record(EventKind::Exited, &process);
                break;
            }
            let overdue = if ready {
                last_ping.elapsed() > watchdog
            } else {
                started.elapsed() > READY_LIMIT
            };
            if overdue && !stopping {
                // Recorded when the signal goes, not when the kernel has reaped it.
                record(EventKind::KilledByWatchdog, &process);
                process.kill9();
                break;
            }
        }
        // Restart=always, RestartSec=0 — but a process that stopped by itself after
        // STOPPING=1 is a stop the test asked for: not restarted.
        if stopping {
            return;
        }
    }
}
