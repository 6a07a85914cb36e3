//! The health of SRT links, for operators: per publisher (and per caller input) the
//! round-trip time, packets received, lost, retransmitted and dropped, bytes and
//! bitrate, read from libsrt's own statistics; per listener the handshakes it
//! refused, by code.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codes::InputFault;

use super::ffi::TraceStats;
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
    /// Reads libsrt's statistics (never cleared, so its "local" counters are totals
    /// too); the bitrate is measured against `previous` (the last reading of the same
    /// link), 0 for the first.
    pub fn from_trace(stats: &TraceStats, previous: Option<&LinkStats>) -> Self {
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        let elapsed = Duration::from_millis(count(stats.msTimeStamp));
        let bitrate_bps = previous.map_or(0, |previous| {
            let span = elapsed.saturating_sub(previous.elapsed);
            let bytes = stats.byteRecvTotal.saturating_sub(previous.bytes_received);
            bits_per_second(bytes, span)
        });
        let rtt_us = if stats.msRTT.is_finite() && stats.msRTT > 0.0 {
            // At most an hour: a sane RTT, and a safe cast.
            (stats.msRTT.min(3_600_000.0) * 1000.0) as u64
        } else {
            0
        };
        LinkStats {
            rtt: Duration::from_micros(rtt_us),
            packets_received: count(stats.pktRecvTotal),
            packets_lost: count(stats.pktRcvLossTotal.into()),
            packets_retransmitted: count(stats.pktRcvRetrans.into()),
            packets_dropped: count(stats.pktRcvDropTotal.into()),
            decrypt_errors: count(stats.pktRcvUndecryptTotal.into()),
            bytes_received: stats.byteRecvTotal,
            bitrate_bps,
            elapsed,
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
    /// Times the listening socket failed and a new one was opened (111031).
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

    fn trace(elapsed_ms: i64, rx_bytes: u64) -> TraceStats {
        TraceStats {
            msTimeStamp: elapsed_ms,
            byteRecvTotal: rx_bytes,
            pktRecvTotal: 7,
            pktRcvLossTotal: 3,
            pktRcvRetrans: 2,
            pktRcvDropTotal: 1,
            msRTT: 12.5,
            ..TraceStats::default()
        }
    }

    #[test]
    fn the_bitrate_is_measured_between_two_readings() {
        let first = LinkStats::from_trace(&trace(1000, 1000), None);
        assert_eq!(first.bitrate_bps, 0);
        assert_eq!(first.packets_received, 7);
        assert_eq!(first.packets_lost, 3);
        assert_eq!(first.packets_retransmitted, 2);
        assert_eq!(first.packets_dropped, 1);
        assert_eq!(first.rtt, Duration::from_micros(12_500));
        let second = LinkStats::from_trace(&trace(1500, 376_000), Some(&first));
        // 375 000 bytes in half a second: 6 Mbit/s.
        assert_eq!(second.bitrate_bps, 6_000_000);
        let same_time = LinkStats::from_trace(&trace(1500, 400_000), Some(&second));
        assert_eq!(same_time.bitrate_bps, 0);
        let unmeasured = TraceStats {
            msRTT: f64::NAN,
            ..trace(0, 0)
        };
        assert_eq!(LinkStats::from_trace(&unmeasured, None).rtt, Duration::ZERO);
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
