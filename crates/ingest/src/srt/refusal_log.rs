//! The log lines of refused SRT handshakes, written off libsrt's receiving thread.
//!
//! The listen callback runs on libsrt's receiving thread: a log line written there
//! (stderr, which may block) would stall every publisher on the port, and a flood of
//! refusals would be a flood of lines. So the callback only counts, and queues a line
//! for the first refusal of each code and then every power of two, without waiting
//! (a full queue drops the line; the count stays); the accepting thread writes them.

use std::net::SocketAddr;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Mutex, PoisonError};

use tracing::warn;

use super::access::Refused;

/// Lines waiting to be written: more than a burst logs at powers of two.
const QUEUE: usize = 256;

/// One refusal to be logged.
struct Line {
    refused: Refused,
    peer: SocketAddr,
    stream: String,
    count: u64,
}

/// The queue between the listen callback and the thread that writes the lines.
pub(crate) struct RefusalLog {
    tx: SyncSender<Line>,
    rx: Mutex<Receiver<Line>>,
}

impl Default for RefusalLog {
    fn default() -> Self {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        Self {
            tx,
            rx: Mutex::new(rx),
        }
    }
}

/// Whether the `count`th refusal of a code is logged: the first and every power of two.
pub(crate) fn logged(count: u64) -> bool {
    count.is_power_of_two()
}

impl RefusalLog {
    /// Queues the line of the `count`th refusal of its code when it is one to log;
    /// never waits.
    pub(crate) fn queue(&self, refused: Refused, peer: SocketAddr, stream: &str, count: u64) {
        if logged(count) {
            let line = Line {
                refused,
                peer,
                stream: stream.to_owned(),
                count,
            };
            // A full queue drops the line: the count in the statistics stays.
            let _ = self.tx.try_send(line);
        }
    }

    /// Writes the queued lines (on the accepting thread).
    pub(crate) fn flush(&self) {
        let rx = self.rx.lock().unwrap_or_else(PoisonError::into_inner);
        while let Ok(line) = rx.try_recv() {
            write(line.refused, line.peer, &line.stream, line.count);
        }
    }
}

/// Writes one refusal's line.
pub(crate) fn write(refused: Refused, peer: SocketAddr, stream: &str, count: u64) {
    let code = refused.code();
    warn!(%peer, %stream, code = code.code(), reason = code.label(), count, "srt publisher refused");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_and_every_power_of_two_are_logged() {
        let logged: Vec<u64> = (1..=20).filter(|n| logged(*n)).collect();
        assert_eq!(logged, [1, 2, 4, 8, 16]);
    }

    #[test]
    fn a_full_queue_drops_lines_without_waiting() {
        let log = RefusalLog::default();
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        for n in 0..64 {
            log.queue(Refused::StreamId, peer, "s", 1u64 << n);
        }
        let queued = log.rx.lock().unwrap().try_iter().count();
        assert_eq!(queued, 64);
        for _ in 0..QUEUE + 10 {
            log.queue(Refused::StreamId, peer, "s", 1);
        }
        assert_eq!(log.rx.lock().unwrap().try_iter().count(), QUEUE);
    }
}
