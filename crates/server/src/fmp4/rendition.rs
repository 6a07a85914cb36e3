//! The live fMP4 rendition of one stream: a window of fMP4 segments aligned 1:1 with
//! the TS window (same MSNs), their init segments per discontinuity sequence, and the
//! fMP4 HLS playlist and DASH MPD rendered once per segment.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use bytes::Bytes;
use media::fmp4::{frames_from_ts, InitConfig};
use media::hls::{MediaPlaylist, PlaylistSegment, PlaylistType};
use media::{TimelineMarker, TrackKind};

use crate::channel::LiveSegment;
use media::fmp4::{marker_of, package_segment, write_track_init, Track, TrackCache};

/// The init segment(s) of one discontinuity sequence.
#[derive(Debug)]
pub struct Fmp4Init {
    /// The discontinuity sequence it belongs to (`init-{d}.mp4`).
    pub discontinuity_seq: u64,
    /// The tracks, read from the sequence's first segment.
    pub config: InitConfig,
    cache: TrackCache,
}

impl Fmp4Init {
    /// An init for `config`.
    pub fn new(discontinuity_seq: u64, config: InitConfig) -> Self {
        Self {
            discontinuity_seq,
            config,
            cache: TrackCache::default(),
        }
    }

    /// The init segment of `track`; `None` when this sequence has no such track.
    pub fn bytes(&self, track: Track) -> Option<Bytes> {
        self.cache
            .get_or_make(track, || write_track_init(&self.config, track))
            .map_err(|error| tracing::debug!(?track, %error, "fmp4 init not written"))
            .ok()
    }
}

/// One segment of the fMP4 window: the TS segment it is packaged from, packaged on
/// first request.
#[derive(Debug)]
pub struct Fmp4Segment {
    /// The TS segment's marker: MSN, discontinuity, start, duration, date, anchor.
    pub marker: TimelineMarker,
    /// The TS bytes (shared with the TS window).
    pub ts: Bytes,
    /// Bytes of video and of audio frames in the segment (for `@bandwidth`).
    pub media_bytes: (u64, u64),
    /// The init segment this one decodes with.
    pub init: Arc<Fmp4Init>,
    cache: TrackCache,
}

impl Fmp4Segment {
    /// Media sequence number.
    pub fn msn(&self) -> u64 {
        self.marker.state.msn
    }

    /// The fMP4 segment of `track`; `None` when it cannot be packaged (no such track).
    pub fn bytes(&self, track: Track) -> Option<Bytes> {
        self.cache
            .get_or_make(track, || {
                package_segment(&self.marker, &self.ts, &self.init.config, track)
            })
            .map_err(|error| tracing::debug!(?track, %error, "fmp4 segment not packaged"))
            .ok()
    }

    /// Bytes of fMP4 held for this segment so far.
    pub fn packaged_bytes(&self) -> usize {
        self.cache.held_bytes()
    }

    /// The segment as a playlist lists it.
    pub fn playlist_segment(&self) -> PlaylistSegment {
        PlaylistSegment {
            msn: self.msn(),
            discontinuity_seq: self.marker.state.discontinuity_seq,
            discontinuous: self.marker.discontinuous,
            duration_ticks: self.marker.duration_ticks,
            program_date_time_ms: self.marker.program_date_time_ms,
            gap: false,
        }
    }
}

/// The fMP4 window at one instant, with its manifests already rendered.
#[derive(Debug, Default)]
pub struct Fmp4Window {
    /// Segments, oldest first, consecutive by MSN (as the TS window).
    pub segments: VecDeque<Arc<Fmp4Segment>>,
    /// `fmp4.m3u8`.
    pub playlist: Bytes,
    /// `index.mpd`.
    pub mpd: Bytes,
}

impl Fmp4Window {
    /// The segment with this MSN, if it is in the window.
    pub fn segment(&self, msn: u64) -> Option<&Arc<Fmp4Segment>> {
        let first = self.segments.front()?.msn();
        let index = usize::try_from(msn.checked_sub(first)?).ok()?;
        self.segments.get(index).filter(|s| s.msn() == msn)
    }

    /// The init of discontinuity sequence `seq`, if a segment of the window uses it.
    pub fn init(&self, seq: u64) -> Option<&Arc<Fmp4Init>> {
        self.segments
            .iter()
            .rev()
            .map(|s| &s.init)
            .find(|i| i.discontinuity_seq == seq)
    }
}

/// One stream's live fMP4 rendition; see the module docs.
#[derive(Debug)]
pub struct Fmp4Rendition {
    window_len: usize,
    current: RwLock<Arc<Fmp4Window>>,
    /// `availabilityStartTime`: the timeline anchor of the first segment published here,
    /// fixed for the life of the rendition as DASH requires.
    availability_start_ms: OnceLock<i64>,
    /// The largest EXT-X-TARGETDURATION announced (it must never decrease).
    announced_target_secs: AtomicU64,
}

impl Fmp4Rendition {
    /// A rendition keeping `window_len` segments (the TS window's length).
    pub fn new(window_len: usize) -> Self {
        Self {
            window_len: window_len.max(1),
            current: RwLock::new(Arc::new(Fmp4Window::default())),
            availability_start_ms: OnceLock::new(),
            announced_target_secs: AtomicU64::new(1),
        }
    }

    /// The current window; cheap (one `Arc` clone under a short read lock).
    pub fn window(&self) -> Arc<Fmp4Window> {
        match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// `availabilityStartTime` of the live MPD, once a segment was published.
    pub fn availability_start_ms(&self) -> Option<i64> {
        self.availability_start_ms.get().copied()
    }

    /// Adds the TS segment the pipeline is about to publish (call it before
    /// [`crate::channel::Channel::push`], so an fMP4 segment exists as soon as its TS
    /// twin is listed). `now_ms` is the MPD's `publishTime`. A segment without a
    /// timeline marker, or without parameter sets at the start of a sequence, is left
    /// out (logged); it cannot be packaged.
    pub fn publish(&self, segment: &LiveSegment, now_ms: i64) {
        let Some(marker) = marker_of(&segment.data) else {
            tracing::debug!(
                msn = segment.msn,
                "segment without a timeline marker: no fmp4"
            );
            return;
        };
        let previous = self.window();
        let mut segments = previous.segments.clone();
        if segments
            .back()
            .is_some_and(|last| marker.state.msn <= last.msn())
        {
            segments.clear();
        }
        let frames = frames_from_ts(&segment.data, marker.start_ts);
        let mut media_bytes = (0u64, 0u64);
        for t in &frames {
            match t.frame.kind() {
                TrackKind::Video => media_bytes.0 += t.frame.data.len() as u64,
                TrackKind::Audio => media_bytes.1 += t.frame.data.len() as u64,
            }
        }
        let seq = marker.state.discontinuity_seq;
        let same_sequence = segments
            .back()
            .map(|s| &s.init)
            .filter(|i| i.discontinuity_seq == seq)
            .cloned();
        let config = InitConfig::from_frames(frames.iter().map(|t| &t.frame));
        let init = match (same_sequence, config) {
            (Some(init), Ok(config)) => {
                if config != init.config {
                    tracing::warn!(
                        msn = marker.state.msn,
                        discontinuity_seq = seq,
                        "parameter sets changed without a discontinuity: fmp4 keeps the first init"
                    );
                }
                init
            }
            (Some(init), Err(_)) => init,
            (None, Ok(config)) => Arc::new(Fmp4Init::new(seq, config)),
            (None, Err(error)) => {
                tracing::warn!(msn = marker.state.msn, %error, "no fmp4 init for this segment");
                return;
            }
        };
        let _ = self.availability_start_ms.set(marker.state.anchor_unix_ms);
        segments.push_back(Arc::new(Fmp4Segment {
            marker,
            ts: segment.data.clone(),
            media_bytes,
            init,
            cache: TrackCache::default(),
        }));
        while segments.len() > self.window_len {
            segments.pop_front();
        }
        let target_secs = u64::from(marker.target_duration_ms).div_ceil(1000).max(1);
        let mut window = Fmp4Window {
            segments,
            playlist: Bytes::new(),
            mpd: Bytes::new(),
        };
        window.playlist = Bytes::from(self.render_playlist(&window, target_secs));
        let ast = self
            .availability_start_ms()
            .unwrap_or(marker.state.anchor_unix_ms);
        window.mpd = Bytes::from(super::mpd::live_mpd(
            &window,
            ast,
            u64::from(marker.target_duration_ms),
            now_ms,
        ));
        let next = Arc::new(window);
        match self.current.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }

    fn render_playlist(&self, window: &Fmp4Window, target_secs: u64) -> String {
        let mut playlist = MediaPlaylist {
            playlist_type: PlaylistType::Live,
            target_duration_secs: self.announced_target_secs.load(Ordering::Relaxed),
            segments: window
                .segments
                .iter()
                .map(|s| s.playlist_segment())
                .collect(),
            ended: false,
        };
        playlist.target_duration_secs = playlist.target_duration_secs.max(target_secs);
        let target = playlist.target_duration();
        self.announced_target_secs
            .fetch_max(target, Ordering::Relaxed);
        playlist.target_duration_secs = target;
        let text = playlist.render(|msn| format!("seg-{msn}.m4s"));
        let maps: Vec<String> = window
            .segments
            .iter()
            .map(|s| format!("init-{}.mp4", s.init.discontinuity_seq))
            .collect();
        super::playlist::with_maps(&text, &maps)
    }
}
