//! What inputs report to whoever runs them, and the status the supervisor publishes.
//!
//! Each input task sends [`InputEvent`]s (connection state, demuxed media, failures)
//! and bumps its shared [`InputCounters`]; the supervisor folds these into one
//! [`StreamInputStatus`] per stream, published through a `tokio::sync::watch`.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use codes::InputFault;
use media::ts::demux::{DemuxEvent, DemuxStats, Demuxer, DiscontinuityReason, ProgramView};
use media::TrackKind;
use thiserror::Error;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::input_errors::{HttpPullError, UdpError};
use crate::IngestEvent;

/// What one input task tells the supervisor, in order.
#[derive(Debug)]
pub enum InputEvent {
    /// The input is (re)trying to reach its source.
    Connecting,
    /// A new connection or publishing session began; the media that follows may not
    /// continue the timeline of what came before.
    Connected,
    /// Demuxed media from the current connection.
    Media(IngestEvent),
    /// The current connection or session ended, and why; the input retries on its own
    /// when its kind allows it.
    Failed(InputError),
}

/// Why an input lost (or never reached) its source.
#[derive(Debug, Error)]
pub enum InputError {
    /// An HTTP(S) pull failed; see [`HttpPullError`] for the distinct causes.
    #[error(transparent)]
    Http(#[from] HttpPullError),
    /// A UDP socket could not be set up.
    #[error(transparent)]
    Udp(#[from] UdpError),
    /// The RTMP publisher disconnected.
    #[error("publisher disconnected")]
    PublisherGone,
    /// An RTMP(S) pull failed; see [`crate::input_errors::RtmpPullError`] for the causes.
    #[error(transparent)]
    RtmpPull(#[from] crate::input_errors::RtmpPullError),
    /// An SRT pull failed; see [`crate::input_errors::SrtPullError`] for the causes.
    #[error(transparent)]
    SrtPull(#[from] crate::input_errors::SrtPullError),
    /// The in-process channel feeding a custom input was closed.
    #[error("input channel closed")]
    ChannelClosed,
}

/// Live counters of one input, shared with metrics without locking.
#[derive(Debug, Default)]
pub struct InputCounters {
    /// Bytes received from the source (TS bytes, after any RTP header is removed).
    pub bytes: AtomicU64,
    /// Frames demuxed (or received from a publisher).
    pub frames: AtomicU64,
    /// Of those, video frames (a program whose video yields none is a fault).
    pub video_frames: AtomicU64,
    /// MPEG-TS packets read (0 while bytes flow means the bytes are not MPEG-TS).
    pub packets: AtomicU64,
    /// What the current connection's demuxer knows of its program, as
    /// [`InputCounters::program`] reads it.
    program: AtomicU8,
    /// Connection or session failures.
    pub errors: AtomicU64,
    /// Datagrams dropped because the demuxer could not keep up (UDP only).
    pub dropped: AtomicU64,
    /// Connections or sessions started.
    pub connects: AtomicU64,
    /// Damage the demuxer found in the source: sync losses, continuity-counter
    /// breaks, bad and oversize PES, bad PSI sections, packets flagged as errored (the
    /// sum of [`InputCounters::damage`] but for unknown streams, which are not damage
    /// to what is delivered, and damaged frames, which are its consequence).
    pub demux_errors: AtomicU64,
    /// The same damage by kind, in the order of [`DAMAGE_KINDS`].
    pub damage: [AtomicU64; DAMAGE_KINDS.len()],
}

/// The kinds of damage the demuxer tells apart, as operators read them (status JSON
/// keys and the `kind` label of `brdyun_input_damage_total`).
/// `damaged_frames` counts the frames dropped because damage reached them (a
/// picture up to the next keyframe, an audio PES).
pub const DAMAGE_KINDS: [&str; 9] = [
    "sync_losses",
    "cc_errors",
    "transport_errors",
    "bad_pes",
    "oversize_pes",
    "bad_psi",
    "unknown_streams",
    "damaged_frames",
    "bad_captions",
];

/// The index of `damaged_frames` in [`DAMAGE_KINDS`].
pub const DAMAGED_FRAMES: usize = 7;

/// The kinds of [`DAMAGE_KINDS`] left out of `demux_errors`: `unknown_streams` and
/// `damaged_frames`.
const NOT_ERRORS: [usize; 2] = [6, DAMAGED_FRAMES];

/// The demuxer's counters in the order of [`DAMAGE_KINDS`].
fn damage_of(stats: &DemuxStats) -> [u64; DAMAGE_KINDS.len()] {
    [
        stats.sync_losses,
        stats.cc_errors,
        stats.dropped_packets,
        stats.pes_errors,
        stats.oversize_pes,
        stats.crc_errors,
        stats.unknown_stream_types,
        stats.damaged_frames,
        stats.caption_errors,
    ]
}

impl InputCounters {
    /// Adds `n` to one counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads one counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// What the input's demuxer last knew of its program (all false for inputs that
    /// are not MPEG-TS).
    pub fn program(&self) -> ProgramView {
        let bits = self.program.load(Ordering::Relaxed);
        ProgramView {
            found: bits & 1 != 0,
            video: bits & 2 != 0,
            audio: bits & 4 != 0,
        }
    }

    fn set_program(&self, view: ProgramView) {
        let bits = u8::from(view.found) | u8::from(view.video) << 1 | u8::from(view.audio) << 2;
        self.program.store(bits, Ordering::Relaxed);
    }

    /// The damage errors by kind, read now.
    pub fn damage_now(&self) -> [u64; DAMAGE_KINDS.len()] {
        std::array::from_fn(|i| Self::get(&self.damage[i]))
    }

    /// Counts a frame received.
    pub(crate) fn count_frame(&self, kind: TrackKind) {
        Self::add(&self.frames, 1);
        if kind == TrackKind::Video {
            Self::add(&self.video_frames, 1);
        }
    }
}

/// Whether a damage kind (an index of [`DAMAGE_KINDS`]) is an error of the source
/// (not unknown streams, not the frames dropped as a consequence).
pub fn is_damage_error(kind: usize) -> bool {
    !NOT_ERRORS.contains(&kind)
}

/// Where an input stands, as the supervisor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputState {
    /// Trying to reach the source; nothing received yet on this connection.
    Connecting,
    /// Delivering media.
    Live,
    /// Connected, but no media for longer than the source timeout.
    Stalled,
    /// Bytes arrive but no frame came out of them for the source timeout; a backup
    /// takes over until frames come.
    Rejected {
        /// Why no frame comes, in words for operators.
        reason: String,
    },
    /// The connection failed or the publisher left.
    Down {
        /// The failure, as text for operators.
        error: String,
    },
}

/// The status of one input of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputStatus {
    /// What the input is, for operators (URLs without credentials).
    pub description: String,
    /// Where it stands.
    pub state: InputState,
    /// Bytes received so far.
    pub bytes: u64,
    /// Frames received so far.
    pub frames: u64,
    /// When media last arrived, if ever.
    pub last_data_at: Option<Instant>,
    /// Failures so far.
    pub errors: u64,
    /// Datagrams dropped under overload (UDP only).
    pub dropped: u64,
    /// Each kind of fault the input has had, its latest episode: the ongoing ones
    /// first, gravest first, then those that ended, latest first.
    pub faults: Vec<FaultReport>,
}

impl InputStatus {
    /// The fault to show: the gravest ongoing one, else the latest to end.
    pub fn fault(&self) -> Option<&FaultReport> {
        self.faults.first()
    }
}

/// One fault of an input, for operators: its code, what it is in words, since when,
/// and whether it is still going on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultReport {
    /// The code (111xxx) naming the kind of fault.
    pub code: InputFault,
    /// The fault in words: the code's message and what was seen.
    pub detail: String,
    /// When it started.
    pub since: Instant,
    /// When it ended; `None` while it goes on.
    pub ended: Option<Instant>,
}

/// The status of all inputs of one stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamInputStatus {
    /// The index (in configuration order) of the input whose media is forwarded.
    pub active: Option<usize>,
    /// One entry per configured input, in priority order.
    pub inputs: Vec<InputStatus>,
    /// How many times the active input changed.
    pub switches: u64,
}

/// Resolves when `shutdown` says stop (`true`) or its sender is gone.
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // An Err means the sender was dropped: that is a stop too.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Feeds `data` (or, with `None`, the end of the stream) to `demuxer` and sends what
/// comes out to `events`. Returns how many media events were sent, or `None` when
/// `events` is closed.
pub(crate) async fn demux_into(
    demuxer: &mut Demuxer,
    data: Option<&[u8]>,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
) -> Option<usize> {
    let mut out = Vec::new();
    let sent = demux_events(demuxer, data, counters, &mut out);
    for event in out {
        events.send(InputEvent::Media(event)).await.ok()?;
    }
    Some(sent)
}

/// The one way MPEG-TS becomes [`IngestEvent`]s, whatever carried it (HTTP, UDP, SRT),
/// so the same bytes give the same events over every transport: feeds `data` (or,
/// with `None`, the end of the stream) to `demuxer`, counts what it found in
/// `counters` and appends the events to `out`. Returns how many events the demuxer
/// gave (damage reports included, which are counted but not forwarded).
pub(crate) fn demux_events(
    demuxer: &mut Demuxer,
    data: Option<&[u8]>,
    counters: &InputCounters,
    out: &mut Vec<IngestEvent>,
) -> usize {
    let mut demuxed = Vec::new();
    let damage_before = damage_of(demuxer.stats());
    let packets_before = demuxer.stats().packets;
    match data {
        Some(data) => demuxer.push(data, &mut demuxed),
        None => demuxer.flush(&mut demuxed),
    }
    let damage_after = damage_of(demuxer.stats());
    let mut errors = 0;
    for (kind, ((counter, after), before)) in counters
        .damage
        .iter()
        .zip(damage_after)
        .zip(damage_before)
        .enumerate()
    {
        let new = after.saturating_sub(before);
        InputCounters::add(counter, new);
        if is_damage_error(kind) {
            errors += new;
        }
    }
    InputCounters::add(&counters.demux_errors, errors);
    InputCounters::add(
        &counters.packets,
        demuxer.stats().packets.saturating_sub(packets_before),
    );
    counters.set_program(demuxer.program());
    let given = demuxed.len();
    for event in demuxed {
        let event = match event {
            DemuxEvent::Frame(frame) => {
                counters.count_frame(frame.kind());
                IngestEvent::Frame(frame)
            }
            DemuxEvent::AlternateAudio { pid, frame } => {
                let language = demuxer
                    .audio_tracks()
                    .into_iter()
                    .find(|t| t.pid == pid)
                    .and_then(|t| t.language);
                IngestEvent::AlternateAudio {
                    pid,
                    language,
                    frame,
                }
            }
            DemuxEvent::Marker(payload) => IngestEvent::Marker(payload),
            DemuxEvent::Captions(block) => IngestEvent::Captions(block),
            // A new program or codec is a new source: the timeline restarts.
            DemuxEvent::Discontinuity(DiscontinuityReason::ProgramChange) => {
                IngestEvent::Discontinuity
            }
            // Lost or damaged packets are counted and what they reached was dropped;
            // the timestamps still say where the media belongs, and the segmenter
            // marks a discontinuity if they jump.
            DemuxEvent::Discontinuity(_) => continue,
        };
        out.push(event);
    }
    given
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_left_out_of_demux_errors_are_unknown_streams_and_damaged_frames() {
        let names = NOT_ERRORS.map(|i| DAMAGE_KINDS[i]);
        assert_eq!(names, ["unknown_streams", "damaged_frames"]);
    }
}
