//! The health of SRT links, for operators: per publisher (and per caller input) the
//! round-trip time, packets received, lost, retransmitted and dropped, bytes and
//! bitrate, read from srt-tokio's own statistics; per listener the handshakes it
//! refused, by code.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codes::InputFault;
use srt_tokio::SocketStatistics;

use crate::listener_limits::ListenerCounters;

/// One SRT link's health at one moment (the receiving side's counters, totals since
/// the connection began).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Data packets received, retransmissions included.
    pub packets_received: u64,
    /// Data packets found missing at the receiver (each gap counted once, whether or
    /// not a retransmission filled it later).
    pub packets_lost: u64,
    /// Retransmitted data packets received.
    pub packets_retransmitted: u64,
    /// Data packets given up on: they came too late for the latency window (or could
    /// not be decrypted), so the TS has a hole there.
    pub packets_dropped: u64,
    /// Data packets that could not be decrypted.
    pub decrypt_errors: u64,
    /// Bytes received (payload and headers of data packets).
    pub bytes_received: u64,
    /// The receive rate over the last statistics interval, in bits per second.
    pub bitrate_bps: u64,
    /// Time since the connection began, when these counters were read.
    pub elapsed: Duration,
}

impl LinkStats {
    /// Reads srt-tokio's statistics; the bitrate is measured against `previous` (the
    /// last reading of the same link), 0 for the first.
    pub fn from_socket(stats: &SocketStatistics, previous: Option<&LinkStats>) -> Self {
        let bitrate_bps = previous.map_or(0, |previous| {
            let span = stats.elapsed_time.saturating_sub(previous.elapsed);
            let bytes = stats.rx_bytes.saturating_sub(previous.bytes_received);
            bits_per_second(bytes, span)
        });
        LinkStats {
            rtt: stats.rx_average_rtt,
            packets_received: stats.rx_data,
            // srt-tokio 0.4.4 never counts rx_loss_data: each gap its receiver found
            // was either filled by a retransmission or given up on, so those two count it.
            packets_lost: stats
                .rx_loss_data
                .max(stats.rx_retransmit_data + stats.rx_dropped_data),
            packets_retransmitted: stats.rx_retransmit_data,
            packets_dropped: stats.rx_dropped_data,
            decrypt_errors: stats.rx_decrypt_errors,
            bytes_received: stats.rx_bytes,
            bitrate_bps,
            elapsed: stats.elapsed_time,
        }
    }
}

/// `bytes` over `span` in bits per second (0 for an empty span).
fn bits_per_second(bytes: u64, span: Duration) -> u64 {
    let micros = span.as_micros();
    if micros == 0 {
        return 0;
    }
    let bps = u128::from(bytes) * 8 * 1_000_000 / micros;
    u64::try_from(bps).unwrap_or(u64::MAX)
}

/// The codes an SRT listener refuses a handshake with, in code order: what
/// [`SrtStats::refusals`] reports.
pub const REFUSAL_CODES: [InputFault; 7] = [
    InputFault::ListenerAddressFull,
    InputFault::ListenerFull,
    InputFault::BadStreamId,
    InputFault::UnknownStream,
    InputFault::WrongKey,
    InputFault::StreamBusy,
    InputFault::BadPassphrase,
];

/// An SRT listener's counters and its publishers' links, shared between the listener
/// and whoever exports them (status API, `/metrics`).
#[derive(Debug, Default)]
pub struct SrtStats {
    /// Connections accepted (handshake done, publisher authorized).
    pub connections: AtomicU64,
    /// Connections open right now.
    pub active_connections: AtomicU64,
    /// Payload bytes received and handed to the demuxer.
    pub bytes: AtomicU64,
    /// Frames handed to streams.
    pub frames: AtomicU64,
    /// Times srt-tokio's listener task ended and a new one was started (111031).
    pub restarts: AtomicU64,
    /// Handshakes refused, by code (the order of [`REFUSAL_CODES`]).
    refusals: [AtomicU64; REFUSAL_CODES.len()],
    /// Cuts by the listener's deadlines and byte floor, by code (the refusals at the
    /// caps are counted in [`SrtStats::refusals`] instead).
    pub limits: ListenerCounters,
    /// The latest link statistics of each publishing stream, by publish name.
    links: Mutex<HashMap<String, LinkStats>>,
}

impl SrtStats {
    /// Counts a refused handshake; returns how many of its code there were so far
    /// (callers log the first and then every power of two). A code outside
    /// [`REFUSAL_CODES`] is not counted and returns 0.
    pub fn refused(&self, code: InputFault) -> u64 {
        match REFUSAL_CODES.iter().position(|c| *c == code) {
            Some(i) => self.refusals[i].fetch_add(1, Relaxed) + 1,
            None => 0,
        }
    }

    /// Every refusal code with its count, in code order.
    pub fn refusals(&self) -> [(InputFault, u64); REFUSAL_CODES.len()] {
        std::array::from_fn(|i| (REFUSAL_CODES[i], self.refusals[i].load(Relaxed)))
    }

    /// The latest link statistics of the publisher of `stream` (its publish name), if
    /// one is connected.
    pub fn link(&self, stream: &str) -> Option<LinkStats> {
        self.lock_links().get(stream).copied()
    }

    /// The latest link statistics of every connected publisher, by publish name,
    /// sorted by name.
    pub fn links(&self) -> Vec<(String, LinkStats)> {
        let mut links: Vec<_> = self
            .lock_links()
            .iter()
            .map(|(name, link)| (name.clone(), *link))
            .collect();
        links.sort_by(|a, b| a.0.cmp(&b.0));
        links
    }

    /// Records the latest statistics of `stream`'s publisher.
    pub fn set_link(&self, stream: &str, link: LinkStats) {
        self.lock_links().insert(stream.to_owned(), link);
    }

    /// Forgets `stream`'s publisher (it left).
    pub fn remove_link(&self, stream: &str) {
        self.lock_links().remove(stream);
    }

    fn lock_links(&self) -> MutexGuard<'_, HashMap<String, LinkStats>> {
        // Each update is one insert or remove: the map is consistent after a panic.
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(elapsed_ms: u64, rx_bytes: u64) -> SocketStatistics {
        let mut stats = SocketStatistics::default();
        stats.elapsed_time = Duration::from_millis(elapsed_ms);
        stats.rx_bytes = rx_bytes;
        stats.rx_data = 7;
        stats.rx_loss_data = 3;
        stats.rx_retransmit_data = 2;
        stats.rx_dropped_data = 1;
        stats.rx_average_rtt = Duration::from_millis(12);
        stats
    }

    #[test]
    fn the_bitrate_is_measured_between_two_readings() {
        let first = LinkStats::from_socket(&socket(1000, 1000), None);
        assert_eq!(first.bitrate_bps, 0);
        assert_eq!(first.packets_lost, 3);
        assert_eq!(first.packets_retransmitted, 2);
        assert_eq!(first.packets_dropped, 1);
        assert_eq!(first.rtt, Duration::from_millis(12));
        let second = LinkStats::from_socket(&socket(1500, 376_000), Some(&first));
        // 375 000 bytes in half a second: 6 Mbit/s.
        assert_eq!(second.bitrate_bps, 6_000_000);
        let same_time = LinkStats::from_socket(&socket(1500, 400_000), Some(&second));
        assert_eq!(same_time.bitrate_bps, 0);
    }

    #[test]
    fn refusals_are_counted_by_code_and_links_by_name() {
        let stats = SrtStats::default();
        assert_eq!(stats.refused(InputFault::WrongKey), 1);
        assert_eq!(stats.refused(InputFault::WrongKey), 2);
        assert_eq!(stats.refused(InputFault::BadStreamId), 1);
        assert_eq!(stats.refused(InputFault::Stalled), 0);
        let counted: Vec<(u32, u64)> = stats
            .refusals()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(code, n)| (code.code(), *n))
            .collect();
        assert_eq!(counted, [(111_026, 1), (111_028, 2)]);
        stats.set_link("b", LinkStats::default());
        stats.set_link("a", LinkStats::default());
        let names: Vec<String> = stats.links().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b"]);
        stats.remove_link("a");
        assert!(stats.link("a").is_none());
        assert!(stats.link("b").is_some());
    }
}
