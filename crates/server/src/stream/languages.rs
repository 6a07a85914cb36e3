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
use packaging::languages::AudioLanguage;
use packaging::tracks::TrackProbe;
use packaging::window::TrackSummary;

/// The largest ADTS frame (13-bit `frame_length`).
const MAX_AUDIO_FRAME: usize = 8191;

/// One language the stream offers beside the floor: its code and, for a source that
/// names no language on its audio streams, the PID it is carried on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LanguageSource {
    /// The language.
    pub language: Language,
    /// The source's PID for it, when the source does not name its languages.
    pub pid: Option<u16>,
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
    cutter: RungCutter,
    probe: TrackProbe,
    frames: u64,
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
}

impl LanguageCutters {
    /// Cutters for these languages (none: every alternate frame is unlisted).
    pub fn new(languages: &[LanguageSource]) -> Self {
        Self {
            cuts: languages
                .iter()
                .map(|&source| LanguageCut {
                    source,
                    bound: None,
                    cutter: RungCutter::audio_rendition(),
                    probe: TrackProbe::default(),
                    frames: 0,
                })
                .collect(),
            unlisted_frames: 0,
        }
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
        let free = |c: &LanguageCut| c.bound.is_none();
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

    /// The source cut `segment`: every language cuts the same span.
    pub fn source_segment(&mut self, segment: &Segment) -> Vec<LanguageSegment> {
        let Some(marker) = segment
            .data
            .get(4..media::ts::PACKET_SIZE)
            .and_then(|payload| TimelineMarker::parse(payload).ok())
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for cut in &mut self.cuts {
            let done = cut.cutter.source_segment(marker);
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
            },
            LanguageSource {
                language: lang("fra"),
                pid: Some(0x103),
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
}
