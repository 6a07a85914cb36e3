//! What a stranger may hold on an ingest listener (RTMP today; RTMPS and SRT take the
//! same type): connections in total and per address, a deadline to start publishing,
//! and a floor on the bytes a publisher delivers per window.
//!
//! ```text
//! accept ──► Admission::admit (caps) ──► Slot ──► PhaseClock (publish deadline, then
//!              │ refused: Refusal              byte windows) ──► cut: Cut
//!              └► counted in ListenerCounters ◄───────────────────────┘
//! ```
//!
//! Pure: [`admission`] is a table of counts, [`clock`] takes the time as an argument;
//! the listener's async edge only asks them and closes sockets.

pub mod admission;
pub mod clock;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use codes::InputFault;

pub use admission::{AddressKey, Admission, Slot};
pub use clock::PhaseClock;

/// The bounds of one ingest listener. Every field holds for each connection on its
/// own, except the two caps, which hold over the listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Connections open at once, publishing or not; one more is closed at accept
    /// ([`Refusal::ListenerFull`]).
    pub max_connections: usize,
    /// Connections from one address (IPv6: one /64) that have not yet published; one
    /// more is closed at accept ([`Refusal::AddressFull`]). A connection whose publish
    /// is accepted proved a stream key and no longer counts, so a platform publishing
    /// many meetings from one host is not capped by it.
    pub max_pending_per_address: usize,
    /// Time from the TCP accept (or from an unpublish) to an accepted publish; the whole
    /// handshake, `connect` and `publish` must fit, however many bytes arrive meanwhile
    /// ([`Cut::PublishDeadline`]).
    pub publish_deadline: Duration,
    /// A publishing connection must deliver at least this many bytes in each
    /// [`ListenerLimits::byte_window`] ([`Cut::TooSlow`]).
    pub min_bytes_per_window: u64,
    /// The length of the windows [`ListenerLimits::min_bytes_per_window`] is counted in.
    pub byte_window: Duration,
    /// The longest one write to the peer may wait for the socket.
    pub send_timeout: Duration,
}

impl Default for ListenerLimits {
    /// 256 connections, 4 pending per address, 10 s to publish, 1 KiB per 10 s (far
    /// below any live stream: AAC silence alone, 43 frames a second with their FLV and
    /// chunk headers, is about 5 KB per 10 s; a stalled publisher sends nothing), 10 s
    /// per write.
    fn default() -> Self {
        Self {
            max_connections: 256,
            max_pending_per_address: 4,
            publish_deadline: Duration::from_secs(10),
            min_bytes_per_window: 1024,
            byte_window: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
        }
    }
}

/// Why a connection was closed right after accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its address already holds [`ListenerLimits::max_pending_per_address`]
    /// connections that have not published.
    AddressFull,
    /// The listener already holds [`ListenerLimits::max_connections`].
    ListenerFull,
}

impl Refusal {
    /// The code it is logged and counted with (111020, 111021).
    pub fn code(self) -> InputFault {
        match self {
            Refusal::AddressFull => InputFault::ListenerAddressFull,
            Refusal::ListenerFull => InputFault::ListenerFull,
        }
    }
}

/// Why an admitted connection was cut by a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Cut {
    /// No publish was accepted within [`ListenerLimits::publish_deadline`].
    #[error("no publish within {0:?}")]
    PublishDeadline(Duration),
    /// A publisher delivered fewer than [`ListenerLimits::min_bytes_per_window`] bytes
    /// in a window.
    #[error("{bytes} bytes in {window:?}, fewer than {min}")]
    TooSlow {
        /// Bytes received in the window.
        bytes: u64,
        /// The floor.
        min: u64,
        /// The window.
        window: Duration,
    },
    /// A write to the peer waited longer than [`ListenerLimits::send_timeout`].
    #[error("a write waited {0:?}")]
    SendTimeout(Duration),
}

impl Cut {
    /// The code it is logged and counted with (111022, 111023, 111024).
    pub fn code(self) -> InputFault {
        match self {
            Cut::PublishDeadline(_) => InputFault::PublishDeadline,
            Cut::TooSlow { .. } => InputFault::PublisherTooSlow,
            Cut::SendTimeout(_) => InputFault::PublisherNotReading,
        }
    }
}

/// How often each limit closed a connection, for `/metrics` (one counter per code).
#[derive(Debug, Default)]
pub struct ListenerCounters {
    address_full: AtomicU64,
    listener_full: AtomicU64,
    publish_deadline: AtomicU64,
    too_slow: AtomicU64,
    send_timeout: AtomicU64,
}

impl ListenerCounters {
    /// Counts a refusal; returns how many of its kind there were so far (callers log
    /// the first and then every power of two, so a flood does not flood the log).
    pub fn refused(&self, refusal: Refusal) -> u64 {
        let counter = match refusal {
            Refusal::AddressFull => &self.address_full,
            Refusal::ListenerFull => &self.listener_full,
        };
        counter.fetch_add(1, Relaxed) + 1
    }

    /// Counts a cut; returns how many of its kind there were so far.
    pub fn cut(&self, cut: Cut) -> u64 {
        let counter = match cut {
            Cut::PublishDeadline(_) => &self.publish_deadline,
            Cut::TooSlow { .. } => &self.too_slow,
            Cut::SendTimeout(_) => &self.send_timeout,
        };
        counter.fetch_add(1, Relaxed) + 1
    }

    /// Every counter with its code, in code order: what the metrics exporter writes.
    pub fn by_code(&self) -> [(InputFault, u64); 5] {
        [
            (
                InputFault::ListenerAddressFull,
                self.address_full.load(Relaxed),
            ),
            (InputFault::ListenerFull, self.listener_full.load(Relaxed)),
            (
                InputFault::PublishDeadline,
                self.publish_deadline.load(Relaxed),
            ),
            (InputFault::PublisherTooSlow, self.too_slow.load(Relaxed)),
            (
                InputFault::PublisherNotReading,
                self.send_timeout.load(Relaxed),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_count_by_kind_and_report_each_code_once() {
        let counters = ListenerCounters::default();
        assert_eq!(counters.refused(Refusal::AddressFull), 1);
        assert_eq!(counters.refused(Refusal::AddressFull), 2);
        assert_eq!(counters.refused(Refusal::ListenerFull), 1);
        assert_eq!(counters.cut(Cut::PublishDeadline(Duration::ZERO)), 1);
        let codes: Vec<(u32, u64)> = counters
            .by_code()
            .iter()
            .map(|(code, n)| (code.code(), *n))
            .collect();
        assert_eq!(
            codes,
            [
                (111_020, 2),
                (111_021, 1),
                (111_022, 1),
                (111_023, 0),
                (111_024, 0)
            ]
        );
        assert_eq!(Refusal::ListenerFull.code(), InputFault::ListenerFull);
        let slow = Cut::TooSlow {
            bytes: 1,
            min: 2,
            window: Duration::from_secs(1),
        };
        assert_eq!(slow.code(), InputFault::PublisherTooSlow);
    }
}
