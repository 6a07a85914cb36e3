//! MPEG-TS (ISO/IEC 13818-1): packets, the demuxer and the muxer.

pub mod captions;
pub mod demux;
pub mod mux;
pub mod packet;
pub mod pcr;
pub mod pes;
pub mod psi;
pub mod restamp;

pub use demux::{
    demux_frames, AudioTrack, DemuxEvent, DemuxStats, Demuxer, DiscontinuityReason, ProgramView,
};
pub use mux::FrameMuxer;

/// Size of one transport stream packet.
pub const PACKET_SIZE: usize = 188;

/// The sync byte that starts every packet.
pub const SYNC_BYTE: u8 = 0x47;

/// PID of the PMT in every TS that brdyun writes.
pub const PMT_PID: u16 = 0x1000;

/// PID of the video elementary stream in every TS that brdyun writes.
pub const VIDEO_PID: u16 = 0x0100;

/// PID of the audio elementary stream in every TS that brdyun writes.
pub const AUDIO_PID: u16 = 0x0101;

/// PID of the timeline marker: one packet at the start of every segment brdyun writes,
/// carrying the segment's place on the timeline (see `crate::timeline`). It is not
/// listed in the PMT, so players ignore it; a downstream brdyun node reads it to adopt
/// the upstream's segment boundaries, numbers and dates.
pub const MARKER_PID: u16 = 0x1ff0;
