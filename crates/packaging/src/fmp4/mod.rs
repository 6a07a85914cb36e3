//! fMP4 delivery on the TS timeline: fMP4 HLS and MPEG-DASH, live and catch-up
//! (OTT-PROT-4, OTT-ARCH-1).
//!
//! ```text
//! pipeline ─► LiveSegment (TS) ─► Package::push ─► StoredSegment in the one window
//!                                                   │ fMP4 view: marker + init (per sequence)
//!                                                   ├─ fmp4.m3u8, index.mpd (rendered with
//!                                                   │  mono.m3u8, from the same window)
//!                                                   └─ segments, inits: packaged on first
//!                                                      request, kept with the segment
//! DVR archive (TS) ─► archive::runs ─► VOD fMP4 HLS / static MPD; dvr-*.m4s packaged per request
//! ```
//!
//! Every fMP4 segment is packaged from the very TS segment the HLS viewers get
//! ([`media::fmp4::package_ts_segment`]): same MSN, same cut points, `tfdt` = the TS
//! DTS, so HLS, fMP4 HLS and DASH describe one timeline and two nodes write the same
//! bytes. What a segment's place on the timeline is comes from its marker packet
//! ([`media::TimelineMarker`]), so a live segment and an archived one are packaged by
//! the same code.
//!
//! # Choices
//!
//! - **No delay at the live edge:** a segment is packaged without the next segment's
//!   first DTS (`next = None`); the last sample's duration is then estimated (exact for
//!   video with a constant reorder delay and for 48 kHz audio; at 44.1 kHz the audio
//!   may overlap the next fragment by a tick). The next fragment's `tfdt` is exact
//!   anyway, and the bytes do not depend on when they were asked for.
//! - **One muxed form per MSN**: the muxed file is cut on the LL-HLS part grid and is
//!   the LL-HLS segment itself (`seg-N.m4s` = `llseg-N.m4s`, taken from the LL-HLS view
//!   when there is one); DASH track files are **packaged on first request**, then kept
//!   with the segment.
//! - **One init per discontinuity sequence** (`init-{d}.mp4`), as the LL-HLS and DASH
//!   writers of `media` name them. A parameter-set change without a discontinuity
//!   keeps the sequence's first init (logged).
//! - **DASH is one track per file** (video and audio adaptation sets, as CMAF and MSE
//!   want); fMP4 HLS is muxed (one file for both tracks, like the TS segments).
//! - **The archive stays MPEG-TS**: fMP4 catch-up is derived on request (~0.1 ms of CPU
//!   per second of media), so the fMP4 archive range equals the TS one.

pub mod mpd;
pub mod package_mpd;
pub mod playlist;

pub use crate::segment::fmp4::{Fmp4Init, Fmp4View};
pub use media::fmp4::{marker_of, package_segment, write_track_init, Track};
