//! Live inputs for brdyun: MPEG-TS pulled over HTTP(S), MPEG-TS over UDP (unicast and
//! multicast), RTMP publish, and the supervisor that switches between backup inputs.
//!
//! Every input turns what it receives into [`IngestEvent`]s on one channel per stream;
//! the server's channel pipeline feeds them to the segmenter. A push listener (RTMP)
//! first bounds what a stranger may hold on it with [`listener_limits`]: connections
//! per address and in total, a deadline to publish, a byte floor per window.

pub mod http_pull;
pub mod input_errors;
pub mod input_url;
pub mod listener_limits;
pub mod mc_client;
pub mod publish;
pub mod rtmp;
pub mod srt;
pub mod status;
pub mod supervisor;
pub mod tls;
pub mod udp;

use bytes::Bytes;
use media::Frame;

/// What an input hands to the stream's pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestEvent {
    /// One access unit from the active input.
    Frame(Frame),
    /// One frame of another audio language the active input carries (an MPEG-TS
    /// source's further audio stream): its PID and the language its PMT names.
    AlternateAudio {
        /// The PID the language is carried on.
        pid: u16,
        /// The language the source names for it, if any.
        language: Option<media::Language>,
        /// The frame, with the source's timestamps.
        frame: Frame,
    },
    /// One event of an interpreter's own feed of `language` (a publish to
    /// `<stream>@audio-<code>`), on the feed's clock: an audio frame, or `None` when
    /// the feed started again (a new publish), so its clock is placed afresh.
    InterpreterFeed {
        /// The language the feed speaks.
        language: media::Language,
        /// The frame, with the feed's timestamps; `None`: the feed restarted.
        frame: Option<Frame>,
    },
    /// The payload (184 bytes after the TS header) of a packet on
    /// [`media::ts::MARKER_PID`]: an upstream brdyun's timeline marker.
    Marker(Bytes),
    /// A caption block of an upstream brdyun (packets on [`media::ts::captions::CAPTION_PID`]
    /// right after a marker): the captions of the marker's segment.
    Captions(Bytes),
    /// The source changed under the stream (backup switch, reconnect, publisher
    /// restart): the segmenter starts a new segment at the next keyframe and marks a
    /// discontinuity.
    Discontinuity,
    /// A standby input that was delivering while the active one still was took over (a
    /// hot standby, typically the same source published twice): a
    /// [`IngestEvent::Discontinuity`] whose new input first replays its recent GOPs;
    /// media the stream already has is dropped by timestamp, so nothing between is lost.
    Takeover,
}

/// The sending half every input writes to.
pub type IngestSender = tokio::sync::mpsc::Sender<IngestEvent>;
