//! A rendition's live window: the one list of segments every container is served from.
//!
//! A [`StoredSegment`] keeps what the segmenter produced, once: the MPEG-TS bytes
//! (marker packet, caption block, PAT, PMT, the frames' PES), the marker and caption
//! block they were written with, and their place on the timeline. The other containers
//! are views of it, derived once from what the segmenter handed over (never by reading
//! the bytes back) and kept with it: the fMP4 view
//! ([`crate::segment::fmp4::Fmp4View`]: init and per-track sizes from the segment's
//! frames, per-track files packaged on first request), the WebVTT view
//! ([`crate::segment::captions::SegmentCaptions`]) and the LL-HLS view ([`media::llhls::SegmentOut`]: the parts cut as the
//! frames arrived, checked against this segment's frames by the packager). Playlists and MPDs of every protocol are rendered from one
//! [`WindowSnapshot`], so they list the same segments with the same MSN, duration and
//! PDT; one trim, one swap, one MSN rule and one target-duration rule
//! ([`TargetDuration`]) serve them all (the node's `Rendition::push`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use media::hls::PlaylistSegment;

use crate::segment::fmp4::{Fmp4Init, Fmp4View};
use media::llhls::SegmentOut;

/// One segment as the segmenter published it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveSegment {
    /// Media sequence number.
    pub msn: u64,
    /// Discontinuity sequence number of this segment.
    pub discontinuity_seq: u64,
    /// True when a discontinuity precedes this segment.
    pub discontinuous: bool,
    /// Duration in 90 kHz ticks.
    pub duration_ticks: u64,
    /// Wall-clock time of the first frame, Unix milliseconds.
    pub program_date_time_ms: i64,
    /// The MPEG-TS bytes, shared with every viewer without copying.
    pub data: Bytes,
    /// The timeline marker the bytes start with, as the segmenter wrote it; `None` for
    /// bytes from elsewhere (then read from them once, when the segment is stored).
    pub marker: Option<media::TimelineMarker>,
    /// The caption block the bytes carry after the marker, as it was written.
    pub captions: Option<Arc<media::captions::CaptionBlock>>,
    /// The frames the bytes were written from (the fMP4 view is derived from them
    /// without reading the bytes back); dropped once the segment is stored. Empty for
    /// bytes from elsewhere.
    pub frames: Arc<[media::Frame]>,
}

impl From<media::Segment> for LiveSegment {
    fn from(segment: media::Segment) -> Self {
        Self {
            msn: segment.msn,
            discontinuity_seq: segment.discontinuity_seq,
            discontinuous: segment.discontinuous,
            duration_ticks: segment.duration_ticks,
            program_date_time_ms: segment.program_date_time_ms,
            data: segment.data,
            marker: Some(segment.marker),
            captions: segment.captions,
            frames: segment.frames,
        }
    }
}

impl LiveSegment {
    /// Duration in seconds.
    pub fn duration_secs(&self) -> f64 {
        self.duration_ticks as f64 / media::CLOCK_HZ as f64
    }

    /// The segment as a media playlist lists it (every protocol alike).
    pub fn playlist_segment(&self) -> PlaylistSegment {
        PlaylistSegment {
            msn: self.msn,
            discontinuity_seq: self.discontinuity_seq,
            discontinuous: self.discontinuous,
            duration_ticks: self.duration_ticks,
            program_date_time_ms: self.program_date_time_ms,
            // A segment whose marker counts no frame is a span its rendition had nothing
            // for (an audio language's feed lost): listed, for the numbers, as a gap.
            gap: self
                .marker
                .is_some_and(|m| m.video_frames == 0 && m.audio_frames == 0),
        }
    }
}

/// A segment of the window with its derived views; dereferences to the segment.
#[derive(Debug)]
pub struct StoredSegment {
    segment: LiveSegment,
    fmp4: Option<Fmp4View>,
    ll: Option<Arc<SegmentOut>>,
    captions: Option<crate::segment::captions::SegmentCaptions>,
}

impl std::ops::Deref for StoredSegment {
    type Target = LiveSegment;

    fn deref(&self) -> &LiveSegment {
        &self.segment
    }
}

impl StoredSegment {
    /// Stores `segment` with its LL-HLS view `ll` (the parts cut as its frames
    /// arrived, when LL-HLS is on, on a grid of `part_ticks`), deriving its fMP4 view
    /// (decoding with `previous`'s init when it is of the same discontinuity sequence).
    /// The LL-HLS view is kept only when it is of this very segment (same MSN, duration
    /// and date); it is then also the fMP4 view's muxed file (one form per MSN).
    pub fn new(
        mut segment: LiveSegment,
        previous: Option<&StoredSegment>,
        ll: Option<SegmentOut>,
        part_ticks: Option<u64>,
    ) -> Self {
        if segment.marker.is_none() {
            segment.marker = media::fmp4::marker_of(&segment.data);
            segment.captions = media::ts::captions::segment_block(&segment.data)
                .ok()
                .flatten()
                .map(Arc::new);
        }
        let frames = std::mem::replace(&mut segment.frames, Arc::from(Vec::new()));
        let fmp4 = segment.marker.and_then(|marker| {
            Fmp4View::of(
                &marker,
                &frames,
                &segment.data,
                previous.and_then(StoredSegment::fmp4),
                part_ticks,
            )
        });
        let ll = ll
            .filter(|ll| {
                (ll.msn, ll.duration_ticks, ll.program_date_time_ms)
                    == (
                        segment.msn,
                        segment.duration_ticks,
                        segment.program_date_time_ms,
                    )
            })
            .map(Arc::new);
        if let (Some(view), Some(ll)) = (&fmp4, &ll) {
            view.share_ll(ll);
        }
        let captions = segment
            .captions
            .clone()
            .zip(segment.marker)
            .map(|(block, marker)| {
                crate::segment::captions::SegmentCaptions::new(block, marker.start_ts)
            });
        Self {
            segment,
            fmp4,
            ll,
            captions,
        }
    }

    /// The WebVTT view: the segment's caption block and its files, when the segment
    /// carries a block.
    pub fn captions(&self) -> Option<&crate::segment::captions::SegmentCaptions> {
        self.captions.as_ref()
    }

    /// The LL-HLS view: the segment's parts as they were cut live, concatenated.
    pub fn ll(&self) -> Option<&Arc<SegmentOut>> {
        self.ll.as_ref()
    }

    /// The fMP4 view; `None` for bytes that carry no timeline marker or no init.
    pub fn fmp4(&self) -> Option<&Fmp4View> {
        self.fmp4.as_ref()
    }

    /// The fMP4 file of `track`, packaged from this segment's TS bytes (once).
    pub fn fmp4_bytes(&self, track: media::fmp4::Track) -> Option<Bytes> {
        self.fmp4.as_ref()?.bytes(&self.segment.data, track)
    }
}

/// What the stream is made of, probed from its frames (for the master playlist and status).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrackSummary {
    /// RFC 6381 codec strings, video first.
    pub codecs: Vec<String>,
    /// Video resolution, when there is video.
    pub resolution: Option<(u32, u32)>,
    /// Frame rate in frames per 1000 seconds (e.g. 25000), when known.
    pub frame_rate_milli: Option<u32>,
}

/// The live window at one instant, with its playlists already rendered. Readers hold
/// an `Arc` of it and no lock.
#[derive(Debug, Default)]
pub struct WindowSnapshot {
    /// Segments, oldest first.
    pub segments: VecDeque<Arc<StoredSegment>>,
    /// The media playlist (`mono.m3u8`).
    pub media_playlist: media::manifest::Manifest,
    /// The master playlist (`index.m3u8`).
    pub master_playlist: crate::master::Master,
    /// The fMP4 HLS media playlist (`fmp4.m3u8`).
    pub fmp4_playlist: media::manifest::Manifest,
    /// The fMP4 HLS media playlists of the video alone and the audio alone
    /// (`fmp4-v.m3u8`, `fmp4-a.m3u8`), rendered when first asked for: only a stream with
    /// audio languages lists them ([`crate::fmp4::playlist::of_track`]).
    pub fmp4_track_playlists: [std::sync::OnceLock<media::manifest::Manifest>; 2],
    /// The live DASH MPD (`index.mpd`).
    pub mpd: crate::live_mpd::LiveMpd,
    /// Codecs and resolution.
    pub tracks: TrackSummary,
    /// Peak and average bandwidth over the window, bits per second.
    pub bandwidth: (u64, u64),
    /// Every segment of the window starts on a keyframe at its marker's start (see
    /// [`switchable`]): a ladder rung a player can switch into at any boundary.
    pub switchable: bool,
    /// EXT-X-TARGETDURATION of every playlist of this window, seconds.
    pub target_secs: u64,
    /// When this window was published, Unix ms.
    pub published_ms: i64,
    /// The stream's subtitle tracks (those of the newest segment with a caption block)
    /// with their rendered media playlists, in the order players list them.
    pub subtitles: Vec<crate::segment::captions::SubtitlePlaylist>,
}

impl WindowSnapshot {
    /// The segment with this media sequence number, if it is in the window.
    pub fn segment(&self, msn: u64) -> Option<&Arc<StoredSegment>> {
        let first = self.segments.front()?.msn;
        let index = usize::try_from(msn.checked_sub(first)?).ok()?;
        self.segments.get(index).filter(|s| s.msn == msn)
    }

    /// The subtitle track with this id, with its playlist.
    pub fn subtitle(&self, id: &str) -> Option<&crate::segment::captions::SubtitlePlaylist> {
        self.subtitles.iter().find(|s| s.track.id == id)
    }

    /// The newest segment, if any.
    pub fn newest(&self) -> Option<&Arc<StoredSegment>> {
        self.segments.back()
    }

    /// The timeline marker of the newest segment (its first packet): where the
    /// window's timeline stands, for the mesh's fingerprint and the MC's ownership.
    pub fn newest_marker(&self) -> Option<media::timeline::TimelineMarker> {
        self.newest()?.marker
    }

    /// The segments that have an fMP4 view, oldest first.
    pub fn fmp4_segments(&self) -> impl Iterator<Item = (&StoredSegment, &Fmp4View)> + '_ {
        self.segments
            .iter()
            .filter_map(|s| s.fmp4().map(|view| (&**s, view)))
    }

    /// The fMP4 init of discontinuity sequence `seq`, if a segment of the window uses it.
    pub fn fmp4_init(&self, seq: u64) -> Option<&Arc<Fmp4Init>> {
        self.segments
            .iter()
            .rev()
            .filter_map(|s| s.fmp4())
            .map(|v| &v.init)
            .find(|i| i.discontinuity_seq == seq)
    }
}

/// Peak and average bit rate of the segments, in bits per second.
pub fn bandwidth(segments: &VecDeque<Arc<StoredSegment>>) -> (u64, u64) {
    peak_and_average(
        segments
            .iter()
            .map(|s| (s.data.len() as u64, s.duration_ticks)),
    )
}

/// Peak and average bit rate, bits per second, of segments given as (bytes, 90-kHz
/// duration): the live window's and an archived period's alike. A segment of no
/// duration counts in the average's bytes only.
pub fn peak_and_average(segments: impl Iterator<Item = (u64, u64)>) -> (u64, u64) {
    let mut peak = 0u64;
    let (mut bytes, mut ticks) = (0u64, 0u64);
    for (len, duration_ticks) in segments {
        if let Some(rate) = (len * 8 * media::CLOCK_HZ).checked_div(duration_ticks) {
            peak = peak.max(rate);
        }
        bytes += len;
        ticks += duration_ticks;
    }
    let average = (bytes * 8 * media::CLOCK_HZ)
        .checked_div(ticks)
        .unwrap_or(0);
    (peak, average)
}

/// Whether a player can switch into these segments at every boundary: each one that
/// carries a timeline marker starts with a random access point (a ladder rung's marker
/// says so only for a keyframe exactly at the source segment's start, see
/// `media::segmenter::RungCutter`). A window without markers counts as switchable.
pub fn switchable(segments: &VecDeque<Arc<StoredSegment>>) -> bool {
    segments
        .iter()
        .filter_map(|s| s.fmp4())
        .all(|view| view.marker.keyframe_start)
}

/// EXT-X-TARGETDURATION of a stream's playlists, one rule for every protocol: at least
/// the configured target, the target the timeline markers state, and every listed
/// segment rounded to the nearest second (rfc8216bis 4.4.3.1); and since it must not
/// change during a live playlist's life, never less than what was announced before.
#[derive(Debug)]
pub struct TargetDuration {
    announced: AtomicU64,
}

impl TargetDuration {
    /// Starts at the configured target, in whole seconds (at least 1).
    pub fn new(target_ms: u64) -> Self {
        Self {
            announced: AtomicU64::new(target_ms.div_ceil(1000).max(1)),
        }
    }

    /// The target for a window of `segments`, remembered as announced.
    pub fn announce(&self, segments: &VecDeque<Arc<StoredSegment>>) -> u64 {
        let needed = segments
            .iter()
            .map(|s| {
                let marker = s
                    .fmp4()
                    .map_or(0, |v| u64::from(v.marker.target_duration_ms).div_ceil(1000));
                s.playlist_segment().rounded_secs().max(marker)
            })
            .max()
            .unwrap_or(0);
        self.announced
            .fetch_max(needed, Ordering::Relaxed)
            .max(needed)
    }
}

/// Whether a rendition named `name` with this window can be offered to players: it has
/// segments and, for a rung, every one of them is switchable (the source is the
/// timeline the rungs are cut on, always offered once it has segments).
pub fn offered(name: &str, window: &WindowSnapshot) -> bool {
    !window.segments.is_empty() && (name == MAIN || window.switchable)
}

/// The name of a stream's muxed rendition (the source); the node's
/// renditions use this name.
pub const MAIN: &str = "main";
