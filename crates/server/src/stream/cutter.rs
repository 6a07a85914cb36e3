//! The pipeline's decisions, without I/O or a runtime: one ingest event and the time
//! in, what it finished and what the live relay, the LL-HLS packager and the frame tap
//! are to be shown out ([`Cutter::on_event`]). The async loop around it
//! ([`crate::stream::pipeline`]) only receives events, applies the [`Step`] and stores
//! what was finished, so every rule here is tested without tokio.

use ingest::IngestEvent;
use media::segmenter::{CaptionSource, Placed, Segment, Segmenter, SegmenterStats};
use media::{Frame, TimelineState};
use packaging::tracks::TrackProbe;
use packaging::window::TrackSummary;

use crate::stream::languages::{LanguageCutters, LanguageSegment};

/// What the world looks like to the cutter at one event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// The operator has paused the input (OTT-OPS-2): its events are dropped, and what
    /// comes after the pause follows a discontinuity.
    pub paused: bool,
    /// A live relay was asked for: from then on, what the segmenter places is kept.
    pub relay_wanted: bool,
    /// A monotonic clock, ms: when the event arrived, as interpreters' feeds are placed
    /// by (never stepped like the wall clock).
    pub arrived_ms: i64,
}

/// What the LL-HLS packager is to be shown, in order (it cuts parts in step with the
/// segmenter, from the same events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlInput {
    /// A frame, with the segmenter's state before and after it took it.
    Frame(Frame, Option<TimelineState>, Option<TimelineState>),
    /// An upstream's timeline marker (its payload).
    Marker(bytes::Bytes),
    /// The input changed under the stream.
    Discontinuity,
}

/// What one event gives, to be applied in this order: the frame to the tap, the LL-HLS
/// inputs, the placements to the live relay, then each finished segment published.
#[derive(Debug, Default)]
pub struct Step {
    /// The frame for the frame tap (a ladder encoder's input).
    pub tap: Option<Frame>,
    /// What the LL-HLS packager is to be shown (only when LL-HLS is on).
    pub ll: Vec<LlInput>,
    /// What the segmenter placed, for the live relay (only once it was wanted).
    pub placed: Vec<Placed>,
    /// The segments finished, oldest first.
    pub finished: Vec<Segment>,
    /// The other languages' segments finished, each language's oldest first.
    pub languages: Vec<LanguageSegment>,
    /// What the stream is made of (for the master playlist and status), when a segment
    /// was finished.
    pub tracks: Option<TrackSummary>,
    /// A timeline marker that could not be read (logged by the caller).
    pub bad_marker: Option<media::timeline::MarkerError>,
}

/// The per-rendition cutting state; see the module docs.
#[derive(Debug)]
pub struct Cutter {
    segmenter: Segmenter,
    tracks: TrackProbe,
    ll: bool,
    placing: bool,
    was_paused: bool,
    languages: LanguageCutters,
}

impl Cutter {
    /// A cutter around `segmenter`; `ll` says whether LL-HLS inputs are wanted.
    pub fn new(segmenter: Segmenter, ll: bool) -> Self {
        Self {
            segmenter,
            tracks: TrackProbe::default(),
            ll,
            placing: false,
            was_paused: false,
            languages: LanguageCutters::default(),
        }
    }

    /// Cuts the source's other audio languages too (see [`LanguageCutters`]).
    pub fn set_languages(&mut self, languages: LanguageCutters) {
        self.languages = languages;
    }

    /// Has the segmenter write every segment with the caption block `source` gives.
    pub fn set_captions(&mut self, source: Box<dyn CaptionSource>) {
        self.segmenter.set_captions(source);
    }

    /// Takes one event at `now_unix_ms` (the wall clock, used only to anchor a fresh
    /// timeline).
    pub fn on_event(&mut self, event: IngestEvent, now_unix_ms: i64, context: Context) -> Step {
        let mut step = Step::default();
        if context.paused {
            self.was_paused = true;
            return step;
        }
        if std::mem::take(&mut self.was_paused) {
            self.discontinuity(&mut step, false);
        }
        if !self.placing && context.relay_wanted {
            self.placing = true;
            self.segmenter.keep_placements(true);
        }
        let finished = match event {
            IngestEvent::Frame(frame) => {
                self.tracks.observe(&frame);
                self.languages.floor_frame(&frame, context.arrived_ms);
                step.tap = Some(frame.clone());
                if self.ll {
                    let before = self.segmenter.state();
                    let segment = self.segmenter.push(frame.clone(), now_unix_ms);
                    step.ll
                        .push(LlInput::Frame(frame, before, self.segmenter.state()));
                    segment
                } else {
                    self.segmenter.push(frame, now_unix_ms)
                }
            }
            IngestEvent::Marker(payload) => {
                let pushed = self.segmenter.push_marker(&payload);
                if self.ll {
                    step.ll.push(LlInput::Marker(payload));
                }
                pushed.unwrap_or_else(|error| {
                    step.bad_marker = Some(error);
                    None
                })
            }
            IngestEvent::AlternateAudio {
                pid,
                language,
                frame,
            } => {
                step.languages
                    .extend(self.languages.frame(pid, language, frame));
                None
            }
            IngestEvent::InterpreterFeed { language, frame } => {
                step.languages.extend(self.languages.interpreter_frame(
                    language,
                    frame,
                    context.arrived_ms,
                ));
                None
            }
            IngestEvent::Captions(block) => {
                self.segmenter.push_captions(&block);
                None
            }
            IngestEvent::Discontinuity => {
                self.discontinuity(&mut step, false);
                None
            }
            IngestEvent::Takeover => {
                self.discontinuity(&mut step, true);
                None
            }
        };
        step.placed = self.segmenter.take_placed();
        // One event can finish several segments (a marker that cuts while a segment was
        // being cut locally, a discontinuity).
        step.finished.extend(finished);
        step.finished
            .extend(std::iter::from_fn(|| self.segmenter.pop_ready()));
        self.cut_languages(&mut step, context.arrived_ms);
        self.note_tracks(&mut step);
        step
    }

    /// Every language cuts the spans of the segments this step finished, at `now_ms`
    /// (the clock of the frames' arrivals).
    fn cut_languages(&mut self, step: &mut Step, now_ms: i64) {
        if self.languages.is_empty() {
            return;
        }
        for segment in &step.finished {
            step.languages
                .extend(self.languages.source_segment(segment, now_ms));
        }
    }

    /// Ends the stream: every segment still open, written.
    pub fn finish(&mut self) -> Step {
        let mut step = Step::default();
        step.finished
            .extend(std::iter::from_fn(|| self.segmenter.flush()));
        step.placed = self.segmenter.take_placed();
        // Every language writes all it waits on now: nothing more comes.
        self.cut_languages(&mut step, i64::MAX);
        step.languages.extend(self.languages.flush());
        self.note_tracks(&mut step);
        step
    }

    fn note_tracks(&self, step: &mut Step) {
        if !step.finished.is_empty() {
            step.tracks = Some(self.tracks.summary());
        }
    }

    /// What the segmenter dropped or forced so far.
    pub fn stats(&self) -> &SegmenterStats {
        self.segmenter.stats()
    }

    fn discontinuity(&mut self, step: &mut Step, takeover: bool) {
        if takeover {
            self.segmenter.takeover();
        } else {
            self.segmenter.discontinuity();
        }
        self.tracks.reset();
        // A takeover replays the standby's recent media on the same clock: the languages
        // keep what they collected (a discontinuity starts them afresh).
        if !takeover {
            self.languages.input_changed();
        }
        if self.ll {
            step.ll.push(LlInput::Discontinuity);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use media::segmenter::{SegmenterConfig, StartPoint};
    use media::Codec;

    const T0_MS: i64 = 1_800_000_000_000;

    fn cutter(ll: bool) -> Cutter {
        let segmenter = Segmenter::new(
            SegmenterConfig::default(),
            StartPoint::Fresh {
                min_msn: 0,
                min_discontinuity_seq: 0,
            },
        );
        Cutter::new(segmenter, ll)
    }

    /// Video frame `i` of a 25-fps source with a keyframe every 2 s.
    fn frame(i: u64) -> Frame {
        let ts = 90_000 + i * 3_600;
        Frame {
            codec: Codec::H264,
            pts: ts,
            dts: ts,
            keyframe: i.is_multiple_of(50),
            data: bytes::Bytes::from(vec![0x11; 200]),
        }
    }

    fn at(i: u64) -> i64 {
        T0_MS + (i * 40) as i64
    }

    /// Feeds frames `range` with `context`; returns every step.
    fn feed(c: &mut Cutter, range: std::ops::Range<u64>, context: Context) -> Vec<Step> {
        range
            .map(|i| c.on_event(IngestEvent::Frame(frame(i)), at(i), context))
            .collect()
    }

    fn finished(steps: &[Step]) -> Vec<&Segment> {
        steps.iter().flat_map(|s| &s.finished).collect()
    }

    /// A cutter whose stream has Spanish from an interpreter's feed, its stats `stats`.
    fn interpreted(stats: &std::sync::Arc<crate::stream::interpreter::FeedStats>) -> Cutter {
        use crate::stream::languages::{InterpreterFeed, LanguageSource};
        let mut c = cutter(false);
        c.set_languages(LanguageCutters::new(&[LanguageSource {
            language: media::Language::parse("spa").expect("a code"),
            pid: None,
            interpreter: Some(InterpreterFeed {
                offset_ms: 0,
                stats: std::sync::Arc::clone(stats),
            }),
        }]));
        c
    }

    #[test]
    fn an_interpreters_feed_is_cut_on_the_floors_segments() {
        let spa = media::Language::parse("spa").expect("a code");
        let stats = std::sync::Arc::default();
        let mut c = interpreted(&stats);
        let mut cut = Vec::new();
        for i in 0..400u64 {
            let context = Context {
                arrived_ms: (i * 40) as i64,
                ..Context::default()
            };
            cut.extend(
                c.on_event(IngestEvent::Frame(frame(i)), at(i), context)
                    .languages,
            );
            // The interpreter's own clock, far from the floor's; the wall clock (`at`) is
            // not the one it is placed by.
            let feed = Frame {
                codec: Codec::Aac,
                pts: 7 + i * 3_600,
                dts: 7 + i * 3_600,
                keyframe: true,
                data: bytes::Bytes::from_static(&[0xff, 0xf1, 0x50, 0x80, 0x01, 0x7f, 0xfc, 0x21]),
            };
            let event = IngestEvent::InterpreterFeed {
                language: spa,
                frame: Some(feed),
            };
            cut.extend(c.on_event(event, at(i), context).languages);
        }
        assert!(stats.frames.load(std::sync::atomic::Ordering::Relaxed) > 390);
        assert!(cut.len() >= 4, "{} language segments", cut.len());
        assert!(cut.iter().all(|s| s.language == spa));
    }

    #[test]
    fn an_interpreter_away_a_second_has_each_span_written_with_its_video_as_silence() {
        let spa = media::Language::parse("spa").expect("a code");
        let mut c = interpreted(&std::sync::Arc::default());
        let data = bytes::Bytes::from_static(&[0xff, 0xf1, 0x50, 0x80, 0x01, 0x7f, 0xfc, 0x21]);
        let silent = media::codec::aac_silence::silent_adts_frame(&data).expect("silence");
        let mut while_away = Vec::new();
        for i in 0..600u64 {
            let context = Context {
                arrived_ms: (i * 40) as i64,
                ..Context::default()
            };
            let step = c.on_event(IngestEvent::Frame(frame(i)), at(i), context);
            // The interpreter leaves at 10 s. The first video segment cut once they
            // have been away a second (12 s) writes the span that waited for them too;
            // from then on every span is cut as the video's is, in the same step.
            if i == 300 {
                let language: Vec<u64> = step.languages.iter().map(|s| s.cut.segment.msn).collect();
                assert_eq!(language, vec![4, 5]);
            }
            if i > 300 {
                let video: Vec<u64> = step.finished.iter().map(|s| s.msn).collect();
                let language: Vec<u64> = step.languages.iter().map(|s| s.cut.segment.msn).collect();
                assert_eq!(language, video, "at frame {i}");
                while_away.extend(step.languages);
            }
            if i < 250 {
                let feed = Frame {
                    codec: Codec::Aac,
                    pts: 7 + i * 3_600,
                    dts: 7 + i * 3_600,
                    keyframe: true,
                    data: data.clone(),
                };
                let event = IngestEvent::InterpreterFeed {
                    language: spa,
                    frame: Some(feed),
                };
                c.on_event(event, at(i), context);
            }
        }
        assert!(
            while_away.len() >= 4,
            "{} spans while away",
            while_away.len()
        );
        for s in &while_away {
            let frames = media::ts::demux_frames(&s.cut.segment.data);
            assert!(s.cut.marker.audio_frames > 0);
            assert!(frames.iter().all(|f| f.data[..] == silent[..]));
        }
    }

    #[test]
    fn frames_in_consecutive_segments_out_each_frame_tapped() {
        let mut c = cutter(false);
        let steps = feed(&mut c, 0..250, Context::default());
        let segments = finished(&steps);
        assert_eq!(segments.len(), 4, "10 s in 2-s GOPs, the last still open");
        for (n, s) in segments.iter().enumerate() {
            assert_eq!(s.msn, n as u64);
            assert_eq!(s.duration_ticks, 180_000);
            assert!(!s.discontinuous);
        }
        assert!(steps.iter().all(|s| s.tap.is_some()));
        assert!(steps.iter().all(|s| s.ll.is_empty() && s.placed.is_empty()));
        let last = c.finish();
        assert_eq!(last.finished.len(), 1);
        assert_eq!(last.finished[0].msn, 4);
        assert!(c.finish().finished.is_empty());
    }

    #[test]
    fn a_paused_input_is_dropped_and_resumes_after_a_discontinuity() {
        let mut c = cutter(true);
        let before = feed(&mut c, 0..120, Context::default());
        let paused = feed(
            &mut c,
            120..200,
            Context {
                paused: true,
                ..Context::default()
            },
        );
        assert!(paused
            .iter()
            .all(|s| s.tap.is_none() && s.ll.is_empty() && s.finished.is_empty()));
        let after = feed(&mut c, 200..400, Context::default());
        assert_eq!(after[0].ll.first(), Some(&LlInput::Discontinuity));
        assert!(matches!(after[0].ll.get(1), Some(LlInput::Frame(..))));
        let resumed: Vec<&Segment> = finished(&after);
        let first_new = resumed
            .iter()
            .find(|s| s.start_ts >= 90_000 + 200 * 3_600)
            .expect("a segment after the pause");
        assert!(first_new.discontinuous, "{first_new:?}");
        assert_eq!(
            resumed.iter().filter(|s| s.discontinuous).count(),
            1,
            "exactly one discontinuity"
        );
        assert!(!finished(&before).is_empty());
    }

    #[test]
    fn placements_are_kept_from_when_a_relay_is_wanted() {
        let mut c = cutter(false);
        let quiet = feed(&mut c, 0..60, Context::default());
        assert!(quiet.iter().all(|s| s.placed.is_empty()));
        let wanted = Context {
            relay_wanted: true,
            ..Context::default()
        };
        let steps = feed(&mut c, 60..160, wanted);
        let placed: Vec<&Placed> = steps.iter().flat_map(|s| &s.placed).collect();
        assert_eq!(
            placed
                .iter()
                .filter(|p| matches!(p, Placed::Frame(..)))
                .count(),
            100,
            "every frame from then on"
        );
        assert_eq!(
            placed
                .iter()
                .filter(|p| matches!(p, Placed::Opened(_)))
                .count(),
            2,
            "the segments opened at 4 s and 6 s"
        );
    }

    #[test]
    fn a_bad_marker_is_reported_and_cuts_nothing() {
        let mut c = cutter(true);
        feed(&mut c, 0..30, Context::default());
        let step = c.on_event(
            IngestEvent::Marker(bytes::Bytes::from_static(&[0u8; 184])),
            at(30),
            Context::default(),
        );
        assert!(step.bad_marker.is_some());
        assert!(step.finished.is_empty());
        assert!(matches!(step.ll.as_slice(), [LlInput::Marker(_)]));
        let steps = feed(&mut c, 30..110, Context::default());
        assert_eq!(finished(&steps).len(), 2, "the source's own cuts go on");
    }
}
