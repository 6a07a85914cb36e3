//! RTMP publish server: a meeting platform (or ffmpeg, OBS) pushes a live stream to
//! `rtmp://host/app/stream?key=...` and its FLV tags become [`media::Frame`]s on the
//! stream's [`crate::IngestSender`].
//!
//! ```text
//! socket ──► handshake ──► chunk::ChunkDecoder ──► session::Session ──► flv::FlvConverter ──► Frame
//!                                 (messages)        (commands, publish)     (Annex B / ADTS)
//! ```
//!
//! Everything left of the socket is sans-I/O (plain state machines over byte slices),
//! so tests and the `rtmp_chunks` fuzz target drive it without a network; `server`
//! is the thin async edge: timeouts, connection limits, the authorizer, back-pressure.
//! RTMPS is the same server with a TLS handshake first ([`serve_tls_with_stats`]).
//!
//! The other direction, a pull input that plays `rtmp[s]://host/app/stream` from a
//! remote server: [`pull_url`] parses the URL, [`player`] is the client's sans-I/O
//! session (`connect`, `createStream`, `play`, then the same FLV conversion), [`pull`]
//! its async edge (deadlines, TLS, reconnects); the `rtmp_pull` fuzz target drives the
//! first two.

pub mod amf0;
pub mod chunk;
pub mod commands;
pub mod flv;
pub mod handshake;
pub mod player;
pub mod pull;
pub mod pull_url;
pub mod records;
mod server;
pub mod session;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub use server::{serve, serve_tls_with_stats, serve_with_stats};
pub use session::{Session, SessionError, SessionEvent};

use crate::listener_limits::{ListenerCounters, ListenerLimits};

/// Bounds that keep one hostile or broken peer from costing more than its share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtmpLimits {
    /// Largest RTMP message accepted (a video keyframe at a high bitrate fits easily);
    /// a longer one closes the connection. Default 8 MiB.
    pub max_message_size: u32,
    /// The caps, the publish deadline and the byte windows every ingest listener has.
    pub listener: ListenerLimits,
}

impl Default for RtmpLimits {
    fn default() -> Self {
        Self::with_listener(ListenerLimits::default())
    }
}

impl RtmpLimits {
    /// The default message size with the given listener bounds.
    pub fn with_listener(listener: ListenerLimits) -> Self {
        Self {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            listener,
        }
    }
}

/// See [`RtmpLimits::max_message_size`].
pub const DEFAULT_MAX_MESSAGE_SIZE: u32 = 8 * 1024 * 1024;

/// Counters for metrics, shared between the server and whoever exports them.
#[derive(Debug, Default)]
pub struct RtmpStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open right now.
    pub active_connections: AtomicU64,
    /// Connections closed at once by a cap of [`RtmpLimits::listener`] (either one;
    /// [`RtmpStats::limits`] tells them apart).
    pub refused_connections: AtomicU64,
    /// Publishes the authorizer accepted.
    pub publishes: AtomicU64,
    /// Publishes the authorizer refused.
    pub rejections: AtomicU64,
    /// Those refusals by code (the order of [`REJECTION_CODES`]).
    rejections_by_code: [AtomicU64; REJECTION_CODES.len()],
    /// Bytes received, handshake included.
    pub bytes: AtomicU64,
    /// Frames handed to streams.
    pub frames: AtomicU64,
    /// Protocol violations: bad handshakes, malformed chunks or commands, undecodable
    /// media tags.
    pub protocol_errors: AtomicU64,
    /// TLS handshakes completed (RTMPS only).
    pub tls_handshakes: AtomicU64,
    /// TLS handshakes that failed or did not finish within the publish deadline
    /// (RTMPS only; the latter are also counted as publish-deadline cuts).
    pub tls_handshake_failures: AtomicU64,
    /// Refusals and cuts by the listener's limits, by code.
    pub limits: ListenerCounters,
}

/// A point-in-time copy of [`RtmpStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtmpStatsSnapshot {
    /// See [`RtmpStats::connections`].
    pub connections: u64,
    /// See [`RtmpStats::active_connections`].
    pub active_connections: u64,
    /// See [`RtmpStats::refused_connections`].
    pub refused_connections: u64,
    /// See [`RtmpStats::publishes`].
    pub publishes: u64,
    /// See [`RtmpStats::rejections`].
    pub rejections: u64,
    /// See [`RtmpStats::bytes`].
    pub bytes: u64,
    /// See [`RtmpStats::frames`].
    pub frames: u64,
    /// See [`RtmpStats::protocol_errors`].
    pub protocol_errors: u64,
    /// See [`RtmpStats::tls_handshakes`].
    pub tls_handshakes: u64,
    /// See [`RtmpStats::tls_handshake_failures`].
    pub tls_handshake_failures: u64,
}

/// The codes a publish is refused with after the RTMP handshake, in code order: what
/// [`RtmpStats::rejections_by_code`] reports.
pub const REJECTION_CODES: [codes::InputFault; 3] = [
    codes::InputFault::UnknownStream,
    codes::InputFault::WrongKey,
    codes::InputFault::StreamBusy,
];

impl RtmpStats {
    /// Counts a publish the authorizer refused, by its code.
    pub fn rejected(&self, rejection: &crate::publish::PublishRejection) {
        self.rejections.fetch_add(1, Relaxed);
        let code = rejection.code();
        if let Some(i) = REJECTION_CODES.iter().position(|c| *c == code) {
            self.rejections_by_code[i].fetch_add(1, Relaxed);
        }
    }

    /// Every rejection code with its count, in code order.
    pub fn rejections_by_code(&self) -> [(codes::InputFault, u64); REJECTION_CODES.len()] {
        std::array::from_fn(|i| (REJECTION_CODES[i], self.rejections_by_code[i].load(Relaxed)))
    }

    /// Reads every counter (each individually atomic; the set is not a transaction).
    pub fn snapshot(&self) -> RtmpStatsSnapshot {
        RtmpStatsSnapshot {
            connections: self.connections.load(Relaxed),
            active_connections: self.active_connections.load(Relaxed),
            refused_connections: self.refused_connections.load(Relaxed),
            publishes: self.publishes.load(Relaxed),
            rejections: self.rejections.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            frames: self.frames.load(Relaxed),
            protocol_errors: self.protocol_errors.load(Relaxed),
            tls_handshakes: self.tls_handshakes.load(Relaxed),
            tls_handshake_failures: self.tls_handshake_failures.load(Relaxed),
        }
    }
}
