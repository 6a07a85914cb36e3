//! One rendition of a stream: its one live window of stored segments, swapped
//! atomically as segments arrive, with every manifest (TS and fMP4 HLS, DASH, the
//! subtitle playlists) rendered once per segment, and the watch its relays and
//! blocking reloads wait on. It also holds what belongs to the one rendition: its
//! LL-HLS state, its DVR recorder, the live relay log of what its segmenter places, and
//! the tap of its frames that a ladder encoder reads.
//!
//! A stream is a package of renditions on one timeline ([`crate::stream::package::Package`]):
//! the muxed audio+video source ([`MAIN`]) and, for an ABR ladder, one video rendition
//! per rung, each with a window of its own and the same MSNs. Subtitles are not
//! renditions: their playlists are rendered from the caption blocks the muxed
//! rendition's segments carry.

use std::sync::{Arc, OnceLock, RwLock};

use tokio::sync::watch;

use packaging::render::Renderer;
use packaging::window::{
    bandwidth, switchable, LiveSegment, StoredSegment, TargetDuration, TrackSummary, WindowSnapshot,
};

/// The name of a stream's muxed audio+video rendition.
pub const MAIN: &str = packaging::render::MAIN;

/// One rendition's live window; see the module docs.
#[derive(Debug)]
pub struct Rendition {
    name: String,
    window_len: usize,
    snapshot: RwLock<Arc<WindowSnapshot>>,
    newest_msn: watch::Sender<Option<u64>>,
    renderer: Renderer,
    target: TargetDuration,
    llhls: OnceLock<Arc<crate::stream::llhls::LlChannel>>,
    frames: OnceLock<tokio::sync::broadcast::Sender<media::Frame>>,
    archive: OnceLock<Arc<crate::stream::recorder::Recorder>>,
    live: crate::stream::live_relay::LiveLog,
}

/// How many frames a rendition's frame tap holds for a slow reader (about 25 s of
/// 25-fps video with its audio).
const FRAME_TAP_CAPACITY: usize = 2048;

impl Rendition {
    /// A rendition keeping `window_len` segments, rendering manifests with `renderer`.
    pub fn new(name: impl Into<String>, window_len: usize, renderer: Renderer) -> Self {
        Self {
            name: name.into(),
            window_len: window_len.max(1),
            snapshot: RwLock::new(Arc::new(WindowSnapshot::default())),
            newest_msn: watch::channel(None).0,
            target: TargetDuration::new(renderer.target_duration_ms()),
            renderer,
            llhls: OnceLock::new(),
            frames: OnceLock::new(),
            archive: OnceLock::new(),
            live: crate::stream::live_relay::LiveLog::default(),
        }
    }

    /// The live relay log: what the rendition's segmenter places, as it places it
    /// (what a `live=1` relay sends).
    pub fn live_log(&self) -> &crate::stream::live_relay::LiveLog {
        &self.live
    }

    /// Attaches the rendition's DVR recorder (once): each rendition of a package is
    /// archived on its own, on the package's timeline. False if one was already attached.
    pub fn set_archive(&self, recorder: Arc<crate::stream::recorder::Recorder>) -> bool {
        self.archive.set(recorder).is_ok()
    }

    /// The rendition's DVR recorder and archive, when it is recorded.
    pub fn archive(&self) -> Option<&Arc<crate::stream::recorder::Recorder>> {
        self.archive.get()
    }

    /// Every frame the rendition's pipeline takes in, from now on, as it arrives (before
    /// its segment is cut): what a ladder encoder is fed. A reader that falls behind by
    /// more than the tap holds misses frames (`RecvError::Lagged`).
    pub fn tap_frames(&self) -> tokio::sync::broadcast::Receiver<media::Frame> {
        self.frames
            .get_or_init(|| tokio::sync::broadcast::channel(FRAME_TAP_CAPACITY).0)
            .subscribe()
    }

    /// Hands a frame to the tap's readers, if anyone ever tapped (the pipeline's call).
    pub fn tap(&self, frame: &media::Frame) {
        if let Some(tap) = self.frames.get() {
            if tap.receiver_count() > 0 {
                let _ = tap.send(frame.clone());
            }
        }
    }

    /// The rendition's name ([`MAIN`] for the muxed one).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current window; cheap (one `Arc` clone under a short read lock).
    pub fn snapshot(&self) -> Arc<WindowSnapshot> {
        match self.snapshot.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Watches the newest media sequence number (for relays and blocking reloads).
    pub fn subscribe(&self) -> watch::Receiver<Option<u64>> {
        self.newest_msn.subscribe()
    }

    /// Turns on LL-HLS for the rendition (once, before its pipeline starts); false if
    /// it was already on.
    pub fn set_llhls(&self, ll: Arc<crate::stream::llhls::LlChannel>) -> bool {
        self.llhls.set(ll).is_ok()
    }

    /// The rendition's LL-HLS state, when LL-HLS is on.
    pub fn llhls(&self) -> Option<&Arc<crate::stream::llhls::LlChannel>> {
        self.llhls.get()
    }

    /// The part grid (90 kHz) the rendition's muxed fMP4 files are cut at: its LL-HLS
    /// parts, so that `seg-N.m4s` is `llseg-N.m4s`; `None` without LL-HLS.
    pub fn fmp4_part_ticks(&self) -> Option<u64> {
        self.llhls().map(|ll| ll.settings().part_ticks())
    }

    /// Appends a segment with its views (the LL-HLS one given, see
    /// [`StoredSegment::new`]), drops what falls out of the window, renders every
    /// manifest and publishes the new snapshot: one trim, one swap, one MSN rule and one
    /// target duration for every protocol. `now_ms` dates the MPD.
    pub fn push(
        &self,
        segment: LiveSegment,
        tracks: TrackSummary,
        ll: Option<media::llhls::SegmentOut>,
        now_ms: i64,
    ) {
        let previous = self.snapshot();
        let mut segments = previous.segments.clone();
        if segments
            .back()
            .is_some_and(|last| segment.msn <= last.msn || segment.msn > last.msn + 1)
        {
            // A segment that does not move the timeline forward, or skips numbers (a
            // ladder rung whose encoder was down), would break every player's sequence
            // arithmetic: start the window afresh instead.
            segments.clear();
        }
        let msn = segment.msn;
        let stored = StoredSegment::new(
            segment,
            segments.back().map(|s| &**s),
            ll,
            self.fmp4_part_ticks(),
        );
        segments.push_back(Arc::new(stored));
        while segments.len() > self.window_len {
            segments.pop_front();
        }
        let mut next = WindowSnapshot {
            bandwidth: bandwidth(&segments),
            switchable: switchable(&segments),
            target_secs: self.target.announce(&segments),
            segments,
            tracks,
            published_ms: now_ms,
            ..WindowSnapshot::default()
        };
        let manifests = self.renderer.render(&next);
        next.media_playlist = manifests.media;
        next.master_playlist = manifests.master;
        next.fmp4_playlist = manifests.fmp4;
        next.mpd = manifests.mpd;
        next.subtitles = manifests.subtitles;
        let next = Arc::new(next);
        match self.snapshot.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        self.newest_msn.send_replace(Some(msn));
    }
}
