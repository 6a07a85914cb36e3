//! A stream's package: one stream, its renditions on one timeline
//! ([`crate::stream::rendition::Rendition`], one live window each: the muxed source,
//! [`crate::stream::rendition::MAIN`], for an ABR ladder one rendition per rung, and one
//! audio-only rendition per language beside the floor's), with
//! what the stream has as a whole: its name, counters and metrics, the package's
//! master playlist and MPD (rendered again at every push when there are several
//! renditions), the operator's input pause, the status of its inputs and of its ladder
//! encoder, the caption inbox, and whether the source's segments are arriving in a
//! burst that live manifests wait out ([`Package::catching_up`]). The muxed
//! rendition's archive and LL-HLS state are reached through it.
//!
//! Readers take an `Arc<WindowSnapshot>` (or a clone of the package's rendered
//! `Bytes`) and never hold a lock while they answer, so one slow viewer cannot delay
//! the pipeline or another viewer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use crate::stream::rendition::{Rendition, MAIN};
use packaging::languages::AudioLanguage;
use packaging::live_mpd::LiveMpd;
use packaging::render::{Master, Renderer};
pub use packaging::window::{LiveSegment, StoredSegment, TrackSummary, WindowSnapshot};

/// A language beside the floor as the status API and metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageState {
    /// The language.
    pub language: media::Language,
    /// Its menu name.
    pub name: String,
    /// Its newest segment's MSN.
    pub last_msn: Option<u64>,
    /// Segments in its live window.
    pub segments_in_window: usize,
    /// How many segments its newest is behind the video's newest (0: in step).
    pub behind_segments: u64,
}

/// One language beside the floor and its audio-only rendition.
pub type LanguageRendition<'a> = (&'a AudioLanguage, &'a Arc<Rendition>);

/// Counters of one channel that metrics and the status API read.
#[derive(Debug, Default)]
pub struct PackageCounters {
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
    /// Source frames dropped for a PTS that cannot be right (damaged timestamps), as
    /// the source's segmenter counts them ([`media::SegmenterStats::dropped_bad_pts`]).
    pub bad_pts_frames: AtomicU64,
    /// Timestamp jumps of the source turned into discontinuities
    /// ([`media::SegmenterStats::jumps`]).
    pub timestamp_jumps: AtomicU64,
    /// Places where the source could not be timed and the timeline broke
    /// ([`media::SegmenterStats::untimed`]).
    pub untimed: AtomicU64,
}

impl PackageCounters {
    /// Takes the source segmenter's timestamp-fault counts; true when one grew.
    pub fn note_timestamp_faults(&self, stats: &media::SegmenterStats) -> bool {
        let mut grew = false;
        for (counter, value) in [
            (&self.bad_pts_frames, stats.dropped_bad_pts),
            (&self.timestamp_jumps, stats.jumps),
            (&self.untimed, stats.untimed),
        ] {
            grew |= counter.swap(value, Ordering::Relaxed) < value;
        }
        grew
    }
}

/// One stream: its renditions on one timeline, and what they share.
pub struct Package {
    name: String,
    /// The renditions, the muxed one first.
    renditions: Vec<Arc<Rendition>>,
    /// Counters for metrics and status.
    pub counters: PackageCounters,
    pushed_at_ms: std::sync::atomic::AtomicI64,
    /// Until when (Unix ms) the source's segments arrive in a burst — a relay's window
    /// replayed at a (re)join, a backup's takeover — and live manifests wait it out
    /// ([`Package::catching_up`]).
    burst_until_ms: std::sync::atomic::AtomicI64,
    input_paused: std::sync::atomic::AtomicBool,
    /// The master playlist listing every rendition, when there are several.
    package_master: RwLock<Master>,
    /// The live MPD with a video Representation per rung that shares the source's
    /// timeline, when there are several renditions.
    package_mpd: RwLock<LiveMpd>,
    /// Held while the package's master playlist and MPD are rendered and published, so
    /// renditions pushed at once (one pipeline each) never publish an older render over
    /// a newer one; it holds the rungs each listed MPD segment was first listed with.
    package_render: std::sync::Mutex<packaging::fmp4::package_mpd::Membership>,
    /// Indices into `renditions` in the order the master playlist lists them.
    listing: Vec<usize>,
    /// The language of the audio muxed with the video, when the stream has languages.
    floor: Option<AudioLanguage>,
    /// The other languages, each with its index into `renditions`.
    languages: Vec<(AudioLanguage, usize)>,
    ladder: std::sync::OnceLock<Arc<crate::stream::ladder::status::LadderStatus>>,
    /// The status of the stream's inputs, when a supervisor runs them.
    inputs: std::sync::OnceLock<watch::Receiver<ingest::status::StreamInputStatus>>,
    /// The feeds of the languages interpreters publish on their own.
    interpreters: std::sync::OnceLock<Vec<crate::stream::interpreter::InterpreterView>>,
    /// Cues on their way to the pipeline (the caption API's).
    pub captions: crate::stream::captions::CaptionInbox,
    /// What the captions did.
    pub caption_counters: crate::stream::captions::CaptionCounters,
}

impl std::fmt::Debug for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Package {
    /// A stream with one muxed rendition that keeps `window_len` segments and renders
    /// manifests with `renderer`.
    pub fn new(name: impl Into<String>, window_len: usize, renderer: Renderer) -> Self {
        Self::with_rungs(name, window_len, renderer, &[])
    }

    /// [`Package::with_rungs`] with audio languages: `languages[0]` is the floor (the
    /// audio muxed with the video), every other one gets an audio-only rendition
    /// (`audio-{code}`) that the master playlists list as an audio group, never as a
    /// variant. Fewer than two languages are no languages.
    pub fn with_languages(
        name: impl Into<String>,
        window_len: usize,
        renderer: Renderer,
        ladder: &[String],
        languages: &[AudioLanguage],
    ) -> Self {
        let mut package = Self::with_rungs(name, window_len, renderer, ladder);
        if let [floor, others @ ..] = languages {
            if !others.is_empty() {
                package.floor = Some(floor.clone());
                for language in others.iter().take(packaging::languages::MAX_LANGUAGES - 1) {
                    let index = package.renditions.len();
                    package.renditions.push(Arc::new(Rendition::new(
                        language.rendition_name(),
                        window_len,
                        renderer,
                    )));
                    package.languages.push((language.clone(), index));
                }
            }
        }
        package
    }

    /// A stream whose package is an ABR ladder: `ladder` names its rungs in the order
    /// the master playlist lists them, [`crate::stream::ladder::SOURCE`] for the muxed source
    /// rendition (which every stream has; left out of the master playlist when the
    /// ladder does not name it). Each rendition keeps a window of `window_len`
    /// segments. An empty ladder is the one muxed rendition, as [`Package::new`].
    pub fn with_rungs(
        name: impl Into<String>,
        window_len: usize,
        renderer: Renderer,
        ladder: &[String],
    ) -> Self {
        let mut renditions = vec![Arc::new(Rendition::new(MAIN, window_len, renderer))];
        let mut listing = Vec::with_capacity(ladder.len().max(1));
        for rung in ladder {
            if rung == crate::stream::ladder::SOURCE {
                listing.push(0);
            } else {
                listing.push(renditions.len());
                renditions.push(Arc::new(Rendition::new(rung.clone(), window_len, renderer)));
            }
        }
        if ladder.is_empty() {
            listing.push(0);
        }
        Self {
            listing,
            floor: None,
            languages: Vec::new(),
            ladder: std::sync::OnceLock::new(),
            inputs: std::sync::OnceLock::new(),
            interpreters: std::sync::OnceLock::new(),
            captions: crate::stream::captions::CaptionInbox::default(),
            caption_counters: crate::stream::captions::CaptionCounters::default(),
            name: name.into(),
            renditions,
            counters: PackageCounters::default(),
            pushed_at_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
            burst_until_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
            input_paused: std::sync::atomic::AtomicBool::new(false),
            package_master: RwLock::new(Master::default()),
            package_mpd: RwLock::new(LiveMpd::default()),
            package_render: std::sync::Mutex::new(Default::default()),
        }
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

    /// Attaches the DVR recorder of the stream's muxed rendition (once); false if one
    /// was already attached. A ladder rung's recorder is its rendition's
    /// ([`Rendition::set_archive`]).
    pub fn set_archive(&self, recorder: Arc<crate::stream::recorder::Recorder>) -> bool {
        self.main().set_archive(recorder)
    }

    /// Attaches the status of the stream's ladder encoder (once, on the MC); false if
    /// one was already attached.
    pub fn set_ladder(&self, status: Arc<crate::stream::ladder::status::LadderStatus>) -> bool {
        self.ladder.set(status).is_ok()
    }

    /// The ladder encoder's status, when this process encodes the stream's ladder.
    pub fn ladder(&self) -> Option<&Arc<crate::stream::ladder::status::LadderStatus>> {
        self.ladder.get()
    }

    /// Gives the channel its inputs' status, so a viewer of a stream without media hears
    /// whether it is down or not started; false when it was already given.
    pub fn set_inputs(&self, status: watch::Receiver<ingest::status::StreamInputStatus>) -> bool {
        self.inputs.set(status).is_ok()
    }

    /// Hands the package its interpreters' feeds, for the status API and metrics; only
    /// the first call counts.
    pub fn set_interpreters(
        &self,
        feeds: Vec<crate::stream::interpreter::InterpreterView>,
    ) -> bool {
        self.interpreters.set(feeds).is_ok()
    }

    /// The feed of `language`, when an interpreter publishes it on its own.
    pub fn interpreter(
        &self,
        language: media::Language,
    ) -> Option<&crate::stream::interpreter::InterpreterView> {
        self.interpreters
            .get()?
            .iter()
            .find(|feed| feed.language == language)
    }

    /// The index (in configuration order) of the input whose media reaches the stream
    /// now, when a supervisor runs its inputs.
    pub fn active_input(&self) -> Option<usize> {
        self.inputs.get().and_then(|status| status.borrow().active)
    }

    /// The answer to a viewer when the stream has no media yet: 111010 when its inputs
    /// receive bytes that give nothing usable, else 103002 (not started).
    pub fn no_media_error(&self) -> crate::error::ApiError {
        let down = self
            .inputs
            .get()
            .is_some_and(|status| crate::ingest_view::inputs_unusable(&status.borrow()));
        if down {
            crate::error::ApiError::StreamDown
        } else {
            crate::error::ApiError::NotStarted
        }
    }

    /// Whether the master playlist lists `rendition` when it can be offered (a rung of
    /// the ladder, or the source when the ladder names it).
    pub fn lists(&self, rendition: &Rendition) -> bool {
        self.listing
            .iter()
            .any(|&i| std::ptr::eq(&*self.renditions[i], rendition))
    }

    /// The renditions the master playlist offers now, in its order, with their windows:
    /// listed, with segments, and for a rung, switchable (see
    /// [`packaging::render::package_master`]). What the mesh announces as the ladder.
    pub fn offered(&self) -> Vec<(&str, Arc<WindowSnapshot>)> {
        self.listing
            .iter()
            .map(|&i| &self.renditions[i])
            .map(|r| (r.name(), r.snapshot()))
            .filter(|(name, window)| packaging::render::offered(name, window))
            .collect()
    }

    /// The DVR recorder and archive of the stream's muxed rendition, when the stream is
    /// recorded.
    pub fn archive(&self) -> Option<&Arc<crate::stream::recorder::Recorder>> {
        self.main().archive()
    }

    /// Whether the stream is a package of several renditions (an ABR ladder): its master
    /// playlists, live and catch-up, list variants rather than one media playlist.
    pub fn is_package(&self) -> bool {
        self.renditions.len() - self.languages.len() > 1
    }

    /// The floor's language and the stream's other languages with their renditions;
    /// `None` when the stream has one audio.
    pub fn languages(&self) -> Option<(&AudioLanguage, Vec<LanguageRendition<'_>>)> {
        let floor = self.floor.as_ref()?;
        let others = self
            .languages
            .iter()
            .map(|(language, i)| (language, &self.renditions[*i]))
            .collect();
        Some((floor, others))
    }

    /// The rendition of `language`'s audio, when the stream offers it beside the floor.
    pub fn language_rendition(&self, language: media::Language) -> Option<&Arc<Rendition>> {
        self.languages
            .iter()
            .find(|(l, _)| l.language == language)
            .map(|(_, i)| &self.renditions[*i])
    }

    /// The master playlists' audio group for media playlists named `playlist` (see
    /// [`packaging::languages::audio_group`]); empty without languages.
    fn audio_group(&self, playlist: &str) -> Vec<media::hls::AudioRendition> {
        let Some((floor, others)) = self.languages() else {
            return Vec::new();
        };
        let windows: Vec<(&AudioLanguage, Arc<WindowSnapshot>)> = others
            .into_iter()
            .map(|(language, rendition)| (language, rendition.snapshot()))
            .collect();
        packaging::languages::audio_group(floor, &windows, playlist)
    }

    /// Each language beside the floor as an operator checks it: its newest segment and
    /// how many segments it is behind the video's (the whole window when it has none:
    /// its feed is lost).
    pub fn language_states(&self) -> Vec<LanguageState> {
        let Some((_, others)) = self.languages() else {
            return Vec::new();
        };
        let video = self.main().snapshot();
        let video_msn = video.newest().map(|s| s.msn);
        others
            .into_iter()
            .map(|(language, rendition)| {
                let window = rendition.snapshot();
                let last_msn = window.newest().map(|s| s.msn);
                let behind = match (video_msn, last_msn) {
                    (Some(v), Some(l)) => v.saturating_sub(l),
                    (Some(_), None) => video.segments.len() as u64,
                    (None, _) => 0,
                };
                LanguageState {
                    language: language.language,
                    name: language.name.clone(),
                    last_msn,
                    segments_in_window: window.segments.len(),
                    behind_segments: behind,
                }
            })
            .collect()
    }

    /// Whether the master playlists are the package's (several variants, or languages)
    /// rather than the muxed rendition's own.
    fn renders_package_master(&self) -> bool {
        self.is_package() || self.floor.is_some()
    }

    /// The renditions the master playlist lists, in its order, whether or not they
    /// can be offered now (catch-up lists what was recorded, whatever is live).
    pub fn listed(&self) -> impl Iterator<Item = &Arc<Rendition>> + '_ {
        self.listing.iter().map(|&i| &self.renditions[i])
    }

    /// The renditions, the muxed one first.
    pub fn renditions(&self) -> &[Arc<Rendition>] {
        &self.renditions
    }

    /// The muxed audio+video rendition: the source, the stream's timeline.
    pub fn main(&self) -> &Arc<Rendition> {
        &self.renditions[0]
    }

    /// The rendition named `name` (a ladder rung, or [`MAIN`]).
    pub fn rendition(&self, name: &str) -> Option<&Arc<Rendition>> {
        self.renditions.iter().find(|r| r.name() == name)
    }

    /// The master playlist (`index.m3u8`): the muxed rendition's, or, for a ladder,
    /// one variant per rendition a player can switch into (see
    /// [`packaging::render::package_master`]).
    pub fn master_playlist(&self) -> Master {
        if !self.renders_package_master() {
            return self.main().snapshot().master_playlist.clone();
        }
        read(&self.package_master)
    }

    /// The fMP4 HLS master playlist (`fmp4-index.m3u8`): the offered renditions' `fmp4.m3u8`
    /// in ladder order (one for a plain stream), with the attributes of `index.m3u8`; with
    /// audio languages, their `fmp4-v.m3u8` and an audio group of every language.
    pub fn fmp4_master(&self) -> Master {
        // A muxed fMP4 variant cannot be played beside another audio rendition (hls.js
        // plays silence), so with languages the variants are the video alone
        // (`fmp4-v.m3u8`) and every language, the floor too, is an audio rendition.
        // Every language's own audio files (`fmp4-a.m3u8`), the DASH ones: packaged once.
        let mut audio = self.audio_group("fmp4-a.m3u8");
        let playlist = match audio.first_mut() {
            Some(floor) => {
                floor.uri = Some("fmp4-a.m3u8".to_owned());
                "fmp4-v.m3u8"
            }
            None => "fmp4.m3u8",
        };
        packaging::render::package_master(&self.offered(), audio, playlist)
    }

    /// The live MPD (`index.mpd`): the muxed rendition's, or, for a ladder, with a video
    /// Representation per offered rung on the same timeline (see
    /// [`packaging::fmp4::package_mpd::package_mpd`]).
    pub fn mpd(&self) -> LiveMpd {
        if !self.renders_package_master() {
            return self.main().snapshot().mpd.clone();
        }
        read(&self.package_mpd)
    }

    /// Turns on LL-HLS for the muxed rendition (once, before its pipeline starts);
    /// false if it was already on.
    pub fn set_llhls(&self, ll: Arc<crate::stream::llhls::LlChannel>) -> bool {
        self.main().set_llhls(ll)
    }

    /// The muxed rendition's LL-HLS state, when LL-HLS is on.
    pub fn llhls(&self) -> Option<&Arc<crate::stream::llhls::LlChannel>> {
        self.main().llhls()
    }

    /// The stream name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The muxed rendition's current window; cheap (one `Arc` clone under a short
    /// read lock).
    pub fn snapshot(&self) -> Arc<WindowSnapshot> {
        self.main().snapshot()
    }

    /// Watches the muxed rendition's newest media sequence number (for relays and
    /// blocking reloads).
    pub fn subscribe(&self) -> watch::Receiver<Option<u64>> {
        self.main().subscribe()
    }

    /// Appends a segment to the muxed rendition (see [`Rendition::push`]) and counts it.
    pub fn push(&self, segment: LiveSegment, tracks: TrackSummary) {
        self.push_with(segment, tracks, None);
    }

    /// [`Package::push`] with the segment's LL-HLS view (see [`StoredSegment::new`]).
    pub fn push_with(
        &self,
        segment: LiveSegment,
        tracks: TrackSummary,
        ll: Option<media::llhls::SegmentOut>,
    ) {
        self.push_to(self.main(), segment, tracks, ll);
    }

    /// Appends a segment to one of the stream's renditions (see [`Rendition::push`]),
    /// counts it, and renders the package's master playlist again when there are
    /// several renditions.
    pub fn push_to(
        &self,
        rendition: &Rendition,
        segment: LiveSegment,
        tracks: TrackSummary,
        ll: Option<media::llhls::SegmentOut>,
    ) {
        self.counters.segments.fetch_add(1, Ordering::Relaxed);
        self.counters
            .segment_bytes
            .fetch_add(segment.data.len() as u64, Ordering::Relaxed);
        if segment.discontinuous {
            self.counters
                .discontinuities
                .fetch_add(1, Ordering::Relaxed);
        }
        let now_ms = crate::clock::unix_ms();
        rendition.push(segment, tracks, ll, now_ms);
        if self.renders_package_master() {
            let mut membership = match self.package_render.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            let offered = self.offered();
            replace(
                &self.package_master,
                packaging::render::package_master(
                    &offered,
                    self.audio_group("mono.m3u8"),
                    "mono.m3u8",
                ),
            );
            // The package's MPD is served for a ladder or languages (`Package::mpd`).
            replace(
                &self.package_mpd,
                self.render_package_mpd(&mut membership, now_ms),
            );
        }
        if rendition.name() == MAIN {
            let previous = self.pushed_at_ms.swap(now_ms, Ordering::Relaxed);
            if previous == i64::MIN || now_ms - previous < BURST_GAP_MS {
                self.burst_until_ms
                    .store(now_ms + BURST_SETTLE_MS, Ordering::Relaxed);
            }
        }
    }

    /// Whether the source's segments are arriving in a burst at `now_ms` (its first
    /// segment, or one less than [`BURST_GAP_MS`] after the one before, within the last
    /// [`BURST_SETTLE_MS`]): a node that has just (re)joined replays its origin's window
    /// in a fraction of a second, and a manifest rendered in the middle of it ends up to
    /// a window behind live — a player that reads it (dash.js after a restart) jumps back
    /// and stalls. Live manifests wait such a burst out.
    pub fn catching_up(&self, now_ms: i64) -> bool {
        now_ms < self.burst_until_ms.load(Ordering::Relaxed)
    }
}

/// Segments of the source pushed closer than this (ms) are a burst, not live pace.
pub const BURST_GAP_MS: i64 = 200;
/// How long (ms) after a burst's last segment live manifests still wait.
pub const BURST_SETTLE_MS: i64 = 300;

impl Package {
    /// The package's live MPD from its renditions' windows (empty until the source has
    /// an fMP4 segment).
    fn render_package_mpd(
        &self,
        membership: &mut packaging::fmp4::package_mpd::Membership,
        now_ms: i64,
    ) -> LiveMpd {
        let main = self.main().snapshot();
        let rungs: Vec<(&str, Arc<WindowSnapshot>)> = self
            .listed()
            .filter(|r| r.name() != MAIN)
            .map(|r| (r.name(), r.snapshot()))
            .collect();
        let languages = self.languages();
        let others: Vec<(&AudioLanguage, Arc<WindowSnapshot>)> = languages
            .iter()
            .flat_map(|(_, others)| others.iter())
            .map(|(language, rendition)| (*language, rendition.snapshot()))
            .collect();
        let languages = languages.map(|(floor, _)| packaging::fmp4::package_mpd::MpdLanguages {
            floor,
            others: &others,
        });
        match main.fmp4_segments().last() {
            Some((_, newest)) => packaging::fmp4::package_mpd::package_mpd(
                &main,
                &rungs,
                languages,
                membership,
                u64::from(newest.marker.target_duration_ms),
                now_ms,
            ),
            None => LiveMpd::default(),
        }
    }
}

/// What a lock holds now (a poisoned lock still holds a whole value: every write is
/// one assignment).
fn read<T: Clone>(lock: &RwLock<T>) -> T {
    match lock.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Publishes a newly rendered value.
fn replace<T>(lock: &RwLock<T>, value: T) {
    match lock.write() {
        Ok(mut guard) => *guard = value,
        Err(poisoned) => *poisoned.into_inner() = value,
    }
}

/// Registers a channel's counters and live-window state with the metrics registry.
pub fn register_metrics(channel: &Arc<Package>, metrics: &crate::metrics::Metrics) {
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
            (
                "bad_pts_frames_total",
                c.bad_pts_frames.load(Ordering::Relaxed),
            ),
            (
                "timestamp_jumps_total",
                c.timestamp_jumps.load(Ordering::Relaxed),
            ),
            ("untimed_total", c.untimed.load(Ordering::Relaxed)),
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
        for state in channel.language_states() {
            let language = state.language;
            let _ = writeln!(
                out,
                "brdyun_stream_language_behind_segments{{stream=\"{stream}\",language=\"{language}\"}} {}",
                state.behind_segments
            );
            if let Some(feed) = channel.interpreter(language) {
                let labels = format!("stream=\"{stream}\",language=\"{language}\"");
                let stats = &feed.stats;
                let _ = writeln!(
                    out,
                    "brdyun_stream_interpreter_error_ms{{{labels}}} {}\nbrdyun_stream_interpreter_corrections_total{{{labels}}} {}",
                    stats.error_ms.load(Ordering::Relaxed),
                    stats.corrections.load(Ordering::Relaxed)
                );
            }
        }
        crate::stream::captions::status::metrics(
            &channel.caption_counters,
            &snapshot,
            &stream,
            out,
        );
    }));
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn segment(msn: u64) -> LiveSegment {
        LiveSegment {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            duration_ticks: 180_000,
            program_date_time_ms: 1_700_000_000_000 + msn as i64 * 2000,
            data: Bytes::from(vec![0u8; 1000]),
            ..LiveSegment::default()
        }
    }

    fn renderer() -> Renderer {
        packaging::render::renderer(2000)
    }

    #[test]
    fn window_slides_and_finds_segments() {
        let channel = Package::new("s", 3, renderer());
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
        let playlist = std::str::from_utf8(&snap.media_playlist.bytes).expect("utf-8");
        assert!(
            playlist.contains("#EXT-X-MEDIA-SEQUENCE:12\n"),
            "{playlist}"
        );
        assert_eq!(playlist.matches("#EXTINF:").count(), 3, "{playlist}");
        // Test bytes carry no timeline marker: no fMP4 view, no fMP4 manifests.
        assert!(snap.fmp4_playlist.bytes.is_empty() && snap.mpd.plain.bytes.is_empty());
        assert_eq!(*channel.subscribe().borrow(), Some(14));
        // 1000 bytes per 2 s = 4000 bit/s.
        assert_eq!(snap.bandwidth, (4000, 4000));
    }

    #[test]
    fn a_stream_is_a_package_whose_muxed_rendition_is_served() {
        let channel = Package::new("s", 3, renderer());
        assert_eq!(channel.renditions().len(), 1);
        assert_eq!(channel.main().name(), crate::stream::rendition::MAIN);
        channel.push(segment(7), TrackSummary::default());
        // The stream's window is its muxed rendition's window, and the stream counts it.
        assert!(Arc::ptr_eq(&channel.snapshot(), &channel.main().snapshot()));
        assert_eq!(channel.counters.segments.load(Ordering::Relaxed), 1);
        assert_eq!(*channel.main().subscribe().borrow(), Some(7));
        assert!(channel.pushed_at_ms().is_some());
    }

    #[test]
    fn a_burst_of_segments_is_caught_up_on_until_it_settles() {
        let channel = Package::new("s", 5, renderer());
        let before = crate::clock::unix_ms();
        assert!(
            !channel.catching_up(before),
            "nothing pushed, nothing to wait for"
        );
        for msn in 0..4 {
            channel.push(segment(msn), TrackSummary::default());
        }
        let after = crate::clock::unix_ms();
        assert!(channel.catching_up(after), "a replayed window is a burst");
        assert!(
            !channel.catching_up(after + BURST_SETTLE_MS + 1),
            "then it settles"
        );
    }

    #[test]
    fn a_backwards_msn_restarts_the_window() {
        let channel = Package::new("s", 5, renderer());
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
