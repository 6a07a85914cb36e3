//! The service manager's notification protocol (`sd_notify(3)`), written here: one
//! datagram of `KEY=VALUE` lines on the unix socket named by `$NOTIFY_SOCKET` (a path,
//! or an abstract name written `@name`). A process under `Type=notify` says `READY=1`
//! once its listeners serve and `STOPPING=1` when it begins to stop; under
//! `WatchdogSec=` it says `WATCHDOG=1` at least every `$WATCHDOG_USEC`, which
//! [`watchdog`] does only while the process answers its own `/healthz`.
//!
//! Without `$NOTIFY_SOCKET` (not under a service manager) nothing is sent.

pub mod watchdog;

use std::io;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// The environment variable naming the service manager's socket.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";
/// The watchdog period the service manager expects pings within, microseconds.
pub const WATCHDOG_USEC: &str = "WATCHDOG_USEC";
/// The process the watchdog period is meant for (absent: this one).
pub const WATCHDOG_PID: &str = "WATCHDOG_PID";

/// Where notifications go: the service manager's datagram socket.
#[derive(Debug)]
pub struct Notifier {
    socket: UnixDatagram,
    target: std::os::unix::net::SocketAddr,
}

impl Notifier {
    /// The notifier of `$NOTIFY_SOCKET`; `None` when it is unset or empty (not under a
    /// service manager) or names no usable address (logged).
    pub fn from_env() -> Option<Self> {
        let name = std::env::var_os(NOTIFY_SOCKET)?;
        match Self::to(&name.to_string_lossy()) {
            Ok(notifier) => notifier,
            Err(error) => {
                tracing::warn!(%error, "NOTIFY_SOCKET is unusable: no notifications");
                None
            }
        }
    }

    /// The notifier of the socket `name`: a path, or `@abstract`; `None` for "".
    ///
    /// # Errors
    /// The name is not an address, or no datagram socket can be made.
    pub fn to(name: &str) -> io::Result<Option<Self>> {
        if name.is_empty() {
            return Ok(None);
        }
        let target = match name.strip_prefix('@') {
            Some(abstract_name) => {
                use std::os::linux::net::SocketAddrExt;
                std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())?
            }
            None => std::os::unix::net::SocketAddr::from_pathname(name)?,
        };
        Ok(Some(Self {
            socket: UnixDatagram::unbound()?,
            target,
        }))
    }

    /// Sends `state` (newline-separated `KEY=VALUE` assignments) in one datagram.
    ///
    /// # Errors
    /// The socket refused the datagram (the manager is gone, its buffer is full).
    pub fn notify(&self, state: &str) -> io::Result<()> {
        self.socket
            .send_to_addr(state.as_bytes(), &self.target)
            .map(|_| ())
    }

    /// `READY=1`: the listeners serve. Failures are logged, never fatal.
    pub fn ready(&self) {
        self.send_logged("READY=1");
    }

    /// `STOPPING=1`: the process begins to stop.
    pub fn stopping(&self) {
        self.send_logged("STOPPING=1");
    }

    /// `WATCHDOG=1`: the process is alive.
    pub fn watchdog(&self) {
        self.send_logged("WATCHDOG=1");
    }

    fn send_logged(&self, state: &str) {
        if let Err(error) = self.notify(state) {
            tracing::warn!(%error, state, "service manager notification failed");
        }
    }
}

/// The watchdog period `$WATCHDOG_USEC` asks for, when it is meant for this process
/// (`$WATCHDOG_PID` unset or this process's id) and is a positive number.
pub fn watchdog_period_from_env() -> Option<Duration> {
    let usec = std::env::var(WATCHDOG_USEC).ok();
    let pid = std::env::var(WATCHDOG_PID).ok();
    watchdog_period(usec.as_deref(), pid.as_deref(), std::process::id())
}

/// [`watchdog_period_from_env`] from the variables' values and this process's id.
fn watchdog_period(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok() != Some(me) {
            return None;
        }
    }
    let usec: u64 = usec?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_for_this_process_only() {
        let two_s = Some(Duration::from_secs(2));
        assert_eq!(watchdog_period(Some("2000000"), None, 7), two_s);
        assert_eq!(watchdog_period(Some("2000000"), Some("7"), 7), two_s);
        assert_eq!(watchdog_period(Some("2000000"), Some("8"), 7), None);
        assert_eq!(watchdog_period(Some("0"), None, 7), None);
        assert_eq!(watchdog_period(Some("soon"), None, 7), None);
        assert_eq!(watchdog_period(None, None, 7), None);
    }

    #[test]
    fn datagrams_reach_a_path_and_an_abstract_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).expect("bind");
        let notifier = Notifier::to(path.to_str().expect("utf-8"))
            .expect("notifier")
            .expect("some");
        notifier.ready();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"READY=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("brdyun-notify-test-{}", std::process::id());
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract");
        let listener = UnixDatagram::bind_addr(&addr).expect("bind abstract");
        let notifier = Notifier::to(&format!("@{name}"))
            .expect("notifier")
            .expect("some");
        notifier.stopping();
        let n = listener.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"STOPPING=1");
        assert!(Notifier::to("").expect("empty").is_none());
    }
}
