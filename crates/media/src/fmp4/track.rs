//! Which tracks one fMP4 file carries, packaging one brdyun TS segment (live or
//! archived) as the fMP4 file of a track, and a once-only cache of those bytes.
//!
//! A brdyun TS segment starts with its timeline marker, so its place on the timeline
//! (MSN, start, duration, date) is read from its own bytes: a live segment and an
//! archived one are packaged by the same code and give the same bytes on every node.

use std::sync::OnceLock;

use bytes::Bytes;

use super::{package_ts_segment, write_init, Fmp4Error, InitConfig};
use crate::ts::PACKET_SIZE;
use crate::{Segment, TimelineMarker, TrackKind};

/// Which tracks one fMP4 file carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Track {
    /// Video and audio in one file (fMP4 HLS).
    Muxed,
    /// The video track alone (a DASH adaptation set).
    Video,
    /// The audio track alone (a DASH adaptation set).
    Audio,
}

impl Track {
    /// The file-name suffix: `""`, `"-v"` or `"-a"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Track::Muxed => "",
            Track::Video => "-v",
            Track::Audio => "-a",
        }
    }

    /// The track of a DASH adaptation set.
    pub fn of_kind(kind: TrackKind) -> Self {
        match kind {
            TrackKind::Video => Track::Video,
            TrackKind::Audio => Track::Audio,
        }
    }

    /// Index into a per-track cache.
    fn index(self) -> usize {
        match self {
            Track::Muxed => 0,
            Track::Video => 1,
            Track::Audio => 2,
        }
    }

    /// The part of `config` this file carries; `None` when that track does not exist.
    pub fn select(self, config: &InitConfig) -> Option<InitConfig> {
        match self {
            Track::Muxed => Some(config.clone()),
            Track::Video => config.video.is_some().then(|| config.video_only()),
            Track::Audio => config.audio.is_some().then(|| config.audio_only()),
        }
    }
}

/// The timeline marker a brdyun TS segment starts with (its first packet's payload);
/// `None` for bytes that do not start with one.
pub fn marker_of(ts: &[u8]) -> Option<TimelineMarker> {
    TimelineMarker::parse(ts.get(4..PACKET_SIZE)?).ok()
}

/// Packages the TS segment `ts`, whose marker is `marker`, as the fMP4 segment of
/// `track`. The next segment's first DTS is not waited for (no delay at the live
/// edge): the last sample's duration is estimated, and the bytes do not depend on when
/// they were asked for.
///
/// The muxed file is cut into fragments at the LL-HLS part grid (`part_ticks`, when
/// the stream has one): it is then, byte for byte, the LL-HLS segment of the same MSN
/// (`llseg-`), one form for both names. A track's file (DASH) is one fragment.
///
/// # Errors
/// [`Fmp4Error::Empty`] when `config` has no such track or the segment no frame of it;
/// other [`Fmp4Error`]s as [`package_ts_segment`].
pub fn package_segment(
    marker: &TimelineMarker,
    ts: &Bytes,
    config: &InitConfig,
    track: Track,
    part_ticks: Option<u64>,
) -> Result<Bytes, Fmp4Error> {
    let config = track.select(config).ok_or(Fmp4Error::Empty)?;
    let segment = Segment::from_marker(marker, ts.clone());
    let part_ticks = part_ticks.filter(|_| track == Track::Muxed);
    let mut out = Vec::with_capacity(ts.len());
    package_ts_segment(&config, &segment, None, part_ticks, &mut out)?;
    Ok(Bytes::from(out))
}

/// The init segment of `track` for `config`.
///
/// # Errors
/// [`Fmp4Error::Empty`] when `config` has no such track; other [`Fmp4Error`]s as
/// [`write_init`].
pub fn write_track_init(config: &InitConfig, track: Track) -> Result<Bytes, Fmp4Error> {
    let config = track.select(config).ok_or(Fmp4Error::Empty)?;
    let mut out = Vec::with_capacity(1024);
    write_init(&config, &mut out)?;
    Ok(Bytes::from(out))
}

/// The bytes of each [`Track`] of one file, made at most once (the first request
/// pays, later ones share). A failure is kept too: the same input fails the same way.
#[derive(Debug, Default)]
pub struct TrackCache {
    cells: [OnceLock<Result<Bytes, Fmp4Error>>; 3],
}

impl TrackCache {
    /// The bytes of `track`, made by `make` the first time.
    ///
    /// # Errors
    /// What `make` returned the first time.
    pub fn get_or_make(
        &self,
        track: Track,
        make: impl FnOnce() -> Result<Bytes, Fmp4Error>,
    ) -> Result<Bytes, Fmp4Error> {
        self.cells[track.index()].get_or_init(make).clone()
    }

    /// Makes `bytes` the file of `track` (made elsewhere, e.g. the LL-HLS segment that
    /// is this view's muxed file); `false` when the file was already made.
    pub fn set(&self, track: Track, bytes: Bytes) -> bool {
        self.cells[track.index()].set(Ok(bytes)).is_ok()
    }

    /// Bytes held by this cache (what packaging has cost in memory so far).
    pub fn held_bytes(&self) -> usize {
        self.cells
            .iter()
            .filter_map(|c| c.get())
            .filter_map(|r| r.as_ref().ok())
            .map(Bytes::len)
            .sum()
    }
}
