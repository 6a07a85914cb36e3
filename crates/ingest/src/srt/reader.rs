//! One connected SRT socket read on an OS thread of its own (libsrt's receive is
//! blocking), its payloads and statistics handed to tokio through a bounded channel.
//! The thread ends when the connection does or when the reading side goes away (it
//! looks every [`POLL`]), and closes the socket on its way out.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::ffi::{Opt, Socket, SrtError, ERR_CONNECTION_LOST};
use super::stats::LinkStats;

/// How long one receive waits before the thread looks whether it is still wanted.
const POLL: Duration = Duration::from_millis(100);

/// How often the link's statistics are read.
const STATS_EVERY: Duration = Duration::from_secs(1);

/// Payloads in flight to tokio (each at most one SRT payload, 1316 bytes in live mode).
const CHANNEL: usize = 1024;

/// How long [`Reader::finish`] waits for the thread to close its socket.
const FINISH: Duration = Duration::from_secs(2);

/// What the reading thread hands over.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// One message (in live mode: up to seven TS packets).
    Payload(Vec<u8>),
    /// The link's statistics, every [`STATS_EVERY`].
    Stats(LinkStats),
    /// The connection ended: `None` when the peer closed it or went silent past the
    /// peer idle timeout, else libsrt's error.
    Ended(Option<SrtError>),
}

/// The tokio side of a reading thread.
#[derive(Debug)]
pub(crate) struct Reader {
    /// What the thread read, in order.
    pub(crate) incoming: mpsc::Receiver<Incoming>,
    done: oneshot::Receiver<()>,
}

impl Reader {
    /// Reads `socket` on a new thread named `name`.
    ///
    /// # Errors
    /// libsrt's, setting the socket to blocking reads, or the system's, starting the
    /// thread.
    pub(crate) fn spawn(socket: Socket, name: &str) -> std::io::Result<Self> {
        let other = |e: SrtError| std::io::Error::other(e.to_string());
        socket.set_bool(Opt::RcvSyn, true).map_err(other)?;
        let poll_ms = i32::try_from(POLL.as_millis()).unwrap_or(i32::MAX);
        socket.set_int(Opt::RcvTimeout, poll_ms).map_err(other)?;
        let (tx, incoming) = mpsc::channel(CHANNEL);
        let (done_tx, done) = oneshot::channel();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                read(&socket, &tx);
                drop(socket);
                drop(done_tx);
            })?;
        Ok(Self { incoming, done })
    }

    /// Stops reading and waits (bounded) for the thread to close the socket.
    pub(crate) async fn finish(self) {
        let Self { incoming, done } = self;
        drop(incoming);
        // Either way the thread is ending: its sender dropped, or it is slow to.
        let _ = tokio::time::timeout(FINISH, done).await;
    }
}

fn read(socket: &Socket, tx: &mpsc::Sender<Incoming>) {
    let mut buf = vec![0u8; 1500];
    let mut stats_at = Instant::now() + STATS_EVERY;
    let mut link: Option<LinkStats> = None;
    while !tx.is_closed() {
        let sent = match socket.recv(&mut buf) {
            Ok(Some(n)) => tx.blocking_send(Incoming::Payload(buf[..n].to_vec())),
            Ok(None) => Ok(()),
            Err(e) => {
                let error = (e.code != ERR_CONNECTION_LOST).then_some(e);
                let _ = tx.blocking_send(Incoming::Ended(error));
                return;
            }
        };
        if sent.is_err() {
            return;
        }
        let now = Instant::now();
        if now >= stats_at {
            stats_at = now + STATS_EVERY;
            if let Ok(stats) = socket.stats() {
                let reading = LinkStats::from_trace(&stats, link.as_ref());
                link = Some(reading);
                if tx.blocking_send(Incoming::Stats(reading)).is_err() {
                    return;
                }
            }
        }
    }
}
