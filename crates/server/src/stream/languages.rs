//! Cutting a stream's other audio languages in its pipeline: each alternate audio
//! stream of the source (an MPEG-TS source's further audio PIDs) is matched to one of
//! the stream's languages and cut on the source's segments by an audio rendition cutter
//! ([`RungCutter::audio_rendition`]): the same MSNs, spans and dates as the muxed
//! segments, so every node cutting the same source cuts the same language segments.
//!
//! A stream is matched by the language its PMT names (`ISO_639_language_descriptor`),
//! else by the PID the stream's configuration gives the language. The first PID matched
//! to a language keeps it until the input changes; frames no language takes are counted
//! ([`LanguageCutters::unlisted_frames`]). No I/O: the pipeline applies what comes out.

use media::segmenter::{RungCutter, RungSegment, RungStats, Segment};
use media::{Frame, Language, TimelineMarker};
use std::sync::Arc;

use packaging::languages::AudioLanguage;
use packaging::tracks::TrackProbe;
use packaging::window::TrackSummary;

use crate::stream::interpreter::{FeedPlacer, FeedStats, FloorClock};

/// The largest ADTS frame (13-bit `frame_length`).
const MAX_AUDIO_FRAME: usize = 8191;

/// An interpreter's feed that has sent nothing for this long (ms) is away: the spans
/// its language waits on are written at once (silence), not a few segments later, so
/// the language stays as close to the video as when it speaks. A feed's frames are
/// placed by their arrival, so nothing that comes later can fall in a span already cut.
const FEED_AWAY_MS: i64 = 1_000;

/// One language the stream offers beside the floor: its code and, for a source that
/// names no language on its audio streams, the PID it is carried on — or, for a
/// language an interpreter publishes on its own, how its feed is placed.
#[derive(Debug, Clone)]
pub struct LanguageSource {
    /// The language.
    pub language: Language,
    /// The source's PID for it, when the source does not name its languages.
    pub pid: Option<u16>,
    /// An interpreter's own feed carries it (never the source's audio streams).
    pub interpreter: Option<InterpreterFeed>,
}

/// How an interpreter's feed of a language is placed, and where its placement is
/// counted.
#[derive(Debug, Clone)]
pub struct InterpreterFeed {
    /// Placement against the feed's arrival, ms.
    pub offset_ms: i32,
    /// Shared with the status API.
    pub stats: Arc<FeedStats>,
}

/// A meeting's or a stream's configured languages as its package lists them, the
/// floor first (entries are checked by [`meeting::languages::check`]; one without a
/// language is skipped).
pub fn audio_languages(languages: &[meeting::MeetingLanguage]) -> Vec<AudioLanguage> {
    languages
        .iter()
        .filter_map(|l| {
            Some(AudioLanguage {
                language: l.language()?,
                name: l.menu_name(),
            })
        })
        .collect()
}

/// A finished segment of one language.
#[derive(Debug)]
pub struct LanguageSegment {
    /// Whose segment it is.
    pub language: Language,
    /// The segment, on the source segment's MSN, span and date.
    pub cut: RungSegment,
    /// What the language's audio is (for its rendition's playlists).
    pub tracks: TrackSummary,
}

#[derive(Debug)]
struct LanguageCut {
    source: LanguageSource,
    /// The PID this language was matched to on the current input.
    bound: Option<u16>,
    /// Places the interpreter's feed, for a language published on its own.
    placer: Option<FeedPlacer>,
    cutter: RungCutter,
    probe: TrackProbe,
    frames: u64,
    /// When the interpreter's feed last sent a frame (the pipeline's clock, ms).
    last_arrival_ms: Option<i64>,
}

impl LanguageCut {
    /// The language is an interpreter's whose feed has been away [`FEED_AWAY_MS`] at
    /// `now_ms` (or never came).
    fn feed_away(&self, now_ms: i64) -> bool {
        self.placer.is_some()
            && self
                .last_arrival_ms
                .is_none_or(|at| now_ms.saturating_sub(at) >= FEED_AWAY_MS)
    }
}

impl LanguageCut {
    fn tag(&self, segments: Vec<RungSegment>) -> Vec<LanguageSegment> {
        segments
            .into_iter()
            .map(|cut| LanguageSegment {
                language: self.source.language,
                cut,
                tracks: self.probe.summary(),
            })
            .collect()
    }
}

/// The cutters of a stream's other languages; see the module docs.
#[derive(Debug, Default)]
pub struct LanguageCutters {
    cuts: Vec<LanguageCut>,
    unlisted_frames: u64,
    /// The floor's clock, read only when an interpreter's feed is to be placed.
    floor: Option<FloorClock>,
}

impl LanguageCutters {
    /// Cutters for these languages (none: every alternate frame is unlisted).
    pub fn new(languages: &[LanguageSource]) -> Self {
        Self {
            cuts: languages
                .iter()
                .map(|source| LanguageCut {
                    placer: source
                        .interpreter
                        .as_ref()
                        .map(|feed| FeedPlacer::new(feed.offset_ms, Arc::clone(&feed.stats))),
                    source: source.clone(),
                    bound: None,
                    cutter: RungCutter::audio_rendition(),
                    probe: TrackProbe::default(),
                    frames: 0,
                    last_arrival_ms: None,
                })
                .collect(),
            unlisted_frames: 0,
            floor: languages
                .iter()
                .any(|l| l.interpreter.is_some())
                .then(FloorClock::default),
        }
    }

    /// A floor frame arrived at `now_ms`: where an interpreter's feed is placed from.
    pub fn floor_frame(&mut self, frame: &Frame, now_ms: i64) {
        if let Some(floor) = &mut self.floor {
            floor.observe(frame, now_ms);
        }
    }

    /// One event of the interpreter's feed of `language`, arrived at `now_ms`: a frame
    /// placed on the floor's timeline and cut, or (`None`) the feed started again.
    pub fn interpreter_frame(
        &mut self,
        language: Language,
        frame: Option<Frame>,
        now_ms: i64,
    ) -> Vec<LanguageSegment> {
        let Some(floor) = &self.floor else {
            return Vec::new();
        };
        let Some(cut) = self
            .cuts
            .iter_mut()
            .find(|c| c.source.language == language && c.placer.is_some())
        else {
            self.unlisted_frames += 1;
            return Vec::new();
        };
        let Some(placer) = &mut cut.placer else {
            return Vec::new();
        };
        let Some(frame) = frame else {
            placer.restart();
            return Vec::new();
        };
        cut.last_arrival_ms = Some(now_ms);
        if frame.data.len() > MAX_AUDIO_FRAME || frame.kind() != media::TrackKind::Audio {
            self.unlisted_frames += 1;
            return Vec::new();
        }
        let Some(placed) = placer.place(frame, floor, now_ms) else {
            return Vec::new();
        };
        cut.frames += 1;
        cut.probe.observe(&placed);
        let done = cut.cutter.frame(placed);
        cut.tag(done)
    }

    /// Whether the stream has languages to cut.
    pub fn is_empty(&self) -> bool {
        self.cuts.is_empty()
    }

    /// One frame of the alternate audio on `pid`, which the source names `named`.
    pub fn frame(
        &mut self,
        pid: u16,
        named: Option<Language>,
        frame: Frame,
    ) -> Vec<LanguageSegment> {
        // An ADTS frame is at most 8,191 bytes: anything larger is no audio frame (bytes
        // that did not parse as ADTS), and is never held.
        if frame.data.len() > MAX_AUDIO_FRAME {
            self.unlisted_frames += 1;
            return Vec::new();
        }
        let Some(cut) = self.matching(pid, named) else {
            self.unlisted_frames += 1;
            return Vec::new();
        };
        cut.bound = Some(pid);
        cut.frames += 1;
        cut.probe.observe(&frame);
        let done = cut.cutter.frame(frame);
        cut.tag(done)
    }

    /// The language `pid` belongs to: the one it is bound to, else the one its name
    /// says, else the one configured on it — unless that language is bound elsewhere.
    fn matching(&mut self, pid: u16, named: Option<Language>) -> Option<&mut LanguageCut> {
        if let Some(i) = self.cuts.iter().position(|c| c.bound == Some(pid)) {
            return self.cuts.get_mut(i);
        }
        // A language an interpreter publishes is never taken from the source's streams.
        let free = |c: &LanguageCut| c.bound.is_none() && c.placer.is_none();
        let by_name = named.and_then(|n| {
            self.cuts
                .iter()
                .position(|c| free(c) && c.source.language == n)
        });
        let by_pid = || {
            self.cuts
                .iter()
                .position(|c| free(c) && c.source.pid == Some(pid))
        };
        let i = by_name.or_else(by_pid)?;
        self.cuts.get_mut(i)
    }

    /// The source cut `segment` at `now_ms` (the pipeline's clock, as the frames'
    /// arrivals): every language cuts the same span; an interpreter's language whose
    /// feed is away writes every span it waits on at once.
    pub fn source_segment(&mut self, segment: &Segment, now_ms: i64) -> Vec<LanguageSegment> {
        let Some(marker) = segment
            .data
            .get(4..media::ts::PACKET_SIZE)
            .and_then(|payload| TimelineMarker::parse(payload).ok())
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for cut in &mut self.cuts {
            let mut done = cut.cutter.source_segment(marker);
            if cut.feed_away(now_ms) {
                done.extend(cut.cutter.flush());
            }
            out.extend(cut.tag(done));
        }
        out
    }

    /// The input changed under the stream: what each language collected is dropped,
    /// its next segment follows a discontinuity, and PIDs are matched afresh.
    pub fn input_changed(&mut self) {
        for cut in &mut self.cuts {
            cut.cutter.restart();
            cut.bound = None;
            if let Some(placer) = &mut cut.placer {
                placer.restart();
            }
        }
        if let Some(floor) = &mut self.floor {
            floor.reset();
        }
    }

    /// End of the stream: every segment still waiting, written.
    pub fn flush(&mut self) -> Vec<LanguageSegment> {
        let mut out = Vec::new();
        for cut in &mut self.cuts {
            let done = cut.cutter.flush();
            out.extend(cut.tag(done));
        }
        out
    }

    /// Alternate audio frames no language of the stream takes (or too large to be one).
    pub fn unlisted_frames(&self) -> u64 {
        self.unlisted_frames
    }

    /// Each language's frames taken and cutter counters, with the PID it is matched to.
    pub fn stats(&self) -> Vec<(Language, Option<u16>, u64, RungStats)> {
        self.cuts
            .iter()
            .map(|c| (c.source.language, c.bound, c.frames, c.cutter.stats()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use media::Codec;

    fn lang(code: &str) -> Language {
        Language::parse(code).expect("a code")
    }

    fn aac(pts: u64) -> Frame {
        Frame {
            codec: Codec::Aac,
            pts,
            dts: pts,
            keyframe: true,
            data: Bytes::from_static(&[0xff, 0xf1, 0x50, 0x80, 0x01, 0x7f, 0xfc, 0x21]),
        }
    }

    #[test]
    fn the_source_names_the_language_and_the_config_pid_is_the_fallback() {
        let mut cutters = LanguageCutters::new(&[
            LanguageSource {
                language: lang("spa"),
                pid: None,
                interpreter: None,
            },
            LanguageSource {
                language: lang("fra"),
                pid: Some(0x103),
                interpreter: None,
            },
        ]);
        cutters.frame(0x102, Some(lang("spa")), aac(0));
        cutters.frame(0x103, None, aac(0));
        // A PID the source names "deu": the stream does not offer German.
        cutters.frame(0x104, Some(lang("deu")), aac(0));
        // A second PID named "spa" does not mix into the first.
        cutters.frame(0x105, Some(lang("spa")), aac(0));
        let stats = cutters.stats();
        assert_eq!(stats[0].1, Some(0x102));
        assert_eq!(stats[1].1, Some(0x103));
        assert_eq!((stats[0].2, stats[1].2), (1, 1));
        assert_eq!(cutters.unlisted_frames(), 2);
        cutters.input_changed();
        assert!(cutters.stats().iter().all(|s| s.1.is_none()));
    }

    #[test]
    fn an_interpreters_language_comes_from_its_feed_only_placed_on_the_floor() {
        let stats = Arc::new(FeedStats::default());
        let mut cutters = LanguageCutters::new(&[LanguageSource {
            language: lang("spa"),
            pid: None,
            interpreter: Some(InterpreterFeed {
                offset_ms: -100,
                stats: Arc::clone(&stats),
            }),
        }]);
        // The source's own Spanish stream is not the interpreter's.
        cutters.frame(0x102, Some(lang("spa")), aac(0));
        assert_eq!(cutters.unlisted_frames(), 1);
        // Before the floor is heard, the feed waits.
        cutters.interpreter_frame(lang("spa"), Some(aac(0)), 1_000);
        assert_eq!(stats.waiting.load(std::sync::atomic::Ordering::Relaxed), 1);
        let floor = Frame {
            codec: Codec::Aac,
            ..aac(900_000)
        };
        cutters.floor_frame(&floor, 1_000);
        cutters.interpreter_frame(lang("spa"), Some(aac(42)), 1_000);
        assert_eq!(stats.frames.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(cutters.stats()[0].2, 1);
        // A feed of a language the stream has no interpreter for is not taken.
        cutters.interpreter_frame(lang("fra"), Some(aac(42)), 1_000);
        assert_eq!(cutters.unlisted_frames(), 2);
    }
}
