//! A live channel: the in-memory live window of one stream, swapped atomically as
//! segments arrive, with its playlists rendered once per segment.
//!
//! Readers take an `Arc<WindowSnapshot>` and never hold a lock while they answer,
//! so one slow viewer cannot delay the pipeline or another viewer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use tokio::sync::watch;

/// One segment as the node serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

impl LiveSegment {
    /// Duration in seconds.
    pub fn duration_secs(&self) -> f64 {
        self.duration_ticks as f64 / media::CLOCK_HZ as f64
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

/// The live window at one instant, with its playlists already rendered.
#[derive(Debug, Default)]
pub struct WindowSnapshot {
    /// Segments, oldest first.
    pub segments: VecDeque<Arc<LiveSegment>>,
    /// The media playlist (`mono.m3u8`).
    pub media_playlist: Bytes,
    /// The master playlist (`index.m3u8`).
    pub master_playlist: Bytes,
    /// Codecs and resolution.
    pub tracks: TrackSummary,
    /// Peak and average bandwidth over the window, bits per second.
    pub bandwidth: (u64, u64),
}

impl WindowSnapshot {
    /// The segment with this media sequence number, if it is in the window.
    pub fn segment(&self, msn: u64) -> Option<&Arc<LiveSegment>> {
        let first = self.segments.front()?.msn;
        let index = usize::try_from(msn.checked_sub(first)?).ok()?;
        self.segments.get(index).filter(|s| s.msn == msn)
    }

    /// The newest segment, if any.
    pub fn newest(&self) -> Option<&Arc<LiveSegment>> {
        self.segments.back()
    }
}

/// Counters of one channel that metrics and the status API read.
#[derive(Debug, Default)]
pub struct ChannelCounters {
    /// Segments cut since start.
    pub segments: AtomicU64,
    /// Bytes of segments cut since start.
    pub segment_bytes: AtomicU64,
    /// Discontinuities since start.
    pub discontinuities: AtomicU64,
    /// Segments served to viewers.
    pub segments_served: AtomicU64,
    /// Playlists served to viewers.
    pub playlists_served: AtomicU64,
}

/// Renders the playlists of a window; the channel calls it once per new segment.
pub type Renderer = dyn Fn(&str, &WindowSnapshot) -> (Bytes, Bytes) + Send + Sync;

/// One stream's live window.
pub struct Channel {
    name: String,
    window_len: usize,
    snapshot: RwLock<Arc<WindowSnapshot>>,
    newest_msn: watch::Sender<Option<u64>>,
    renderer: Arc<Renderer>,
    /// Counters for metrics and status.
    pub counters: ChannelCounters,
    archive: std::sync::OnceLock<Arc<crate::recorder::Recorder>>,
    llhls: std::sync::OnceLock<Arc<crate::llhls::LlChannel>>,
    pushed_at_ms: std::sync::atomic::AtomicI64,
    input_paused: std::sync::atomic::AtomicBool,
    fmp4: crate::fmp4::Fmp4Rendition,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// A channel that keeps `window_len` segments and renders playlists with `renderer`.
    pub fn new(name: impl Into<String>, window_len: usize, renderer: Arc<Renderer>) -> Self {
        let (newest_msn, _) = watch::channel(None);
        Self {
            name: name.into(),
            window_len: window_len.max(1),
            snapshot: RwLock::new(Arc::new(WindowSnapshot::default())),
            newest_msn,
            renderer,
            counters: ChannelCounters::default(),
            archive: std::sync::OnceLock::new(),
            llhls: std::sync::OnceLock::new(),
            pushed_at_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
            input_paused: std::sync::atomic::AtomicBool::new(false),
            fmp4: crate::fmp4::Fmp4Rendition::new(window_len),
        }
    }

    /// The stream's live fMP4 rendition (fMP4 HLS and DASH on the TS timeline), fed
    /// by the pipeline just before [`Channel::push`].
    pub fn fmp4(&self) -> &crate::fmp4::Fmp4Rendition {
        &self.fmp4
    }

    /// When the newest segment was published here, Unix ms on this node's clock.
    pub fn pushed_at_ms(&self) -> Option<i64> {
        let at = self.pushed_at_ms.load(Ordering::Relaxed);
        (at != i64::MIN).then_some(at)
    }

    /// Pauses (or resumes) the stream's input: the pipeline drops what the input
    /// delivers while paused. The operator's test failure of OTT-OPS-2.
    pub fn set_input_paused(&self, paused: bool) {
        self.input_paused.store(paused, Ordering::Relaxed);
    }

    /// Whether the input is paused by the operator.
    pub fn input_paused(&self) -> bool {
        self.input_paused.load(Ordering::Relaxed)
    }

    /// Attaches the stream's DVR recorder (once); false if one was already attached.
    pub fn set_archive(&self, recorder: Arc<crate::recorder::Recorder>) -> bool {
        self.archive.set(recorder).is_ok()
    }

    /// The stream's DVR recorder and archive, when the stream is recorded.
    pub fn archive(&self) -> Option<&Arc<crate::recorder::Recorder>> {
        self.archive.get()
    }

    /// Turns on LL-HLS for the stream (once, before its pipeline starts); false if it
    /// was already on.
    pub fn set_llhls(&self, ll: Arc<crate::llhls::LlChannel>) -> bool {
        self.llhls.set(ll).is_ok()
    }

    /// The stream's LL-HLS state, when LL-HLS is on.
    pub fn llhls(&self) -> Option<&Arc<crate::llhls::LlChannel>> {
        self.llhls.get()
    }

    /// The stream name.
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

    /// Appends a segment, drops what falls out of the window, renders the playlists
    /// and publishes the new snapshot.
    pub fn push(&self, segment: LiveSegment, tracks: TrackSummary) {
        let previous = self.snapshot();
        let mut segments = previous.segments.clone();
        if segments.back().is_some_and(|last| segment.msn <= last.msn) {
            // A segment that does not move the timeline forward would break every
            // player's sequence arithmetic: start the window afresh instead.
            segments.clear();
        }
        self.counters.segments.fetch_add(1, Ordering::Relaxed);
        self.counters
            .segment_bytes
            .fetch_add(segment.data.len() as u64, Ordering::Relaxed);
        if segment.discontinuous {
            self.counters
                .discontinuities
                .fetch_add(1, Ordering::Relaxed);
        }
        let msn = segment.msn;
        segments.push_back(Arc::new(segment));
        while segments.len() > self.window_len {
            segments.pop_front();
        }
        let bandwidth = bandwidth(&segments);
        let mut next = WindowSnapshot {
            segments,
            media_playlist: Bytes::new(),
            master_playlist: Bytes::new(),
            tracks,
            bandwidth,
        };
        let (media, master) = (self.renderer)(&self.name, &next);
        next.media_playlist = media;
        next.master_playlist = master;
        let next = Arc::new(next);
        match self.snapshot.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        self.pushed_at_ms
            .store(crate::clock::unix_ms(), Ordering::Relaxed);
        self.newest_msn.send_replace(Some(msn));
    }
}

/// Peak and average bit rate of the segments, in bits per second.
fn bandwidth(segments: &VecDeque<Arc<LiveSegment>>) -> (u64, u64) {
    let mut peak = 0u64;
    let (mut bytes, mut ticks) = (0u64, 0u64);
    for segment in segments {
        let len = segment.data.len() as u64;
        if let Some(rate) = (len * 8 * media::CLOCK_HZ).checked_div(segment.duration_ticks) {
            peak = peak.max(rate);
        }
        bytes += len;
        ticks += segment.duration_ticks;
    }
    let average = (bytes * 8 * media::CLOCK_HZ)
        .checked_div(ticks)
        .unwrap_or(0);
    (peak, average)
}

/// Registers a channel's counters and live-window state with the metrics registry.
pub fn register_metrics(channel: &Arc<Channel>, metrics: &crate::metrics::Metrics) {
    let channel = Arc::clone(channel);
    let stream = crate::metrics::label(channel.name());
    metrics.register(Box::new(move |out: &mut String| {
        use std::fmt::Write as _;
        let c = &channel.counters;
        for (name, value) in [
            ("segments_total", c.segments.load(Ordering::Relaxed)),
            (
                "segment_bytes_total",
                c.segment_bytes.load(Ordering::Relaxed),
            ),
            (
                "discontinuities_total",
                c.discontinuities.load(Ordering::Relaxed),
            ),
            (
                "segments_served_total",
                c.segments_served.load(Ordering::Relaxed),
            ),
            (
                "playlists_served_total",
                c.playlists_served.load(Ordering::Relaxed),
            ),
        ] {
            let _ = writeln!(out, "brdyun_stream_{name}{{stream=\"{stream}\"}} {value}");
        }
        let snapshot = channel.snapshot();
        if let Some(newest) = snapshot.newest() {
            let _ = writeln!(
                out,
                "brdyun_stream_last_msn{{stream=\"{stream}\"}} {}",
                newest.msn
            );
            let end_ms = newest.program_date_time_ms
                + (newest.duration_ticks * 1000 / media::CLOCK_HZ) as i64;
            let _ = writeln!(
                out,
                "brdyun_stream_last_segment_end_unix_ms{{stream=\"{stream}\"}} {end_ms}"
            );
        }
        let _ = writeln!(
            out,
            "brdyun_stream_bitrate_bps{{stream=\"{stream}\"}} {}",
            snapshot.bandwidth.1
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(msn: u64) -> LiveSegment {
        LiveSegment {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            duration_ticks: 180_000,
            program_date_time_ms: 1_700_000_000_000 + msn as i64 * 2000,
            data: Bytes::from(vec![0u8; 1000]),
        }
    }

    fn renderer() -> Arc<Renderer> {
        Arc::new(|_, w: &WindowSnapshot| {
            (Bytes::from(format!("{}", w.segments.len())), Bytes::new())
        })
    }

    #[test]
    fn window_slides_and_finds_segments() {
        let channel = Channel::new("s", 3, renderer());
        for msn in 10..15 {
            channel.push(segment(msn), TrackSummary::default());
        }
        let snap = channel.snapshot();
        assert_eq!(
            snap.segments.iter().map(|s| s.msn).collect::<Vec<_>>(),
            vec![12, 13, 14]
        );
        assert!(snap.segment(11).is_none());
        assert_eq!(snap.segment(13).map(|s| s.msn), Some(13));
        assert!(snap.segment(15).is_none());
        assert_eq!(&snap.media_playlist[..], b"3");
        assert_eq!(*channel.subscribe().borrow(), Some(14));
        // 1000 bytes per 2 s = 4000 bit/s.
        assert_eq!(snap.bandwidth, (4000, 4000));
    }

    #[test]
    fn a_backwards_msn_restarts_the_window() {
        let channel = Channel::new("s", 5, renderer());
        channel.push(segment(10), TrackSummary::default());
        channel.push(segment(11), TrackSummary::default());
        channel.push(segment(3), TrackSummary::default());
        let snap = channel.snapshot();
        assert_eq!(
            snap.segments.iter().map(|s| s.msn).collect::<Vec<_>>(),
            vec![3]
        );
    }
}
