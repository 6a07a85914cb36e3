//! Media segments as runs of parts, and packaging a TS segment the segmenter wrote.
//!
//! # The part cut rule
//!
//! Parts are cut on a grid of `part_ticks` of the primary track's DTS (video when the
//! config carries video, else audio; a segment without frames of it is one part), with
//! its origin at the segment's first primary DTS: a new part starts at the first
//! primary frame whose grid index exceeds that of the current part's first primary
//! frame; the frames before it (in segment order: DTS, video first) belong to the
//! current part. The rule reads the frames in order and never looks back, so a live
//! packager that closes part k when the frame crossing the next grid line arrives gets
//! exactly the parts written here, on every node ([`super::PartBuilder`]).

use std::ops::Range;

use super::config::InitConfig;
use super::fragment::{write_fragment, FragmentOptions, ProducerTime};
use super::timed::TimedFrame;
use super::Fmp4Error;
use crate::codec::aac_silence::{silent_adts_frame_of, silent_frames};
use crate::segmenter::Segment;
use crate::ts::{DemuxEvent, Demuxer};
use crate::TrackKind;

/// How to write one media segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentOptions {
    /// The segment's media sequence number: the fragments' `mfhd` numbers derive from it.
    pub msn: u64,
    /// LL-HLS part length in 90 kHz ticks; `None` writes the segment as one fragment.
    pub part_ticks: Option<u64>,
    /// Extended DTS of the next segment's first video frame, when known.
    pub next_video_dts: Option<u64>,
    /// Extended DTS of the next segment's first audio frame, when known.
    pub next_audio_dts: Option<u64>,
    /// `prft` before the first fragment.
    pub producer_time: Option<ProducerTime>,
}

/// One part (fragment) of a written segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Where the part's bytes are in the output (the segment is their concatenation).
    pub bytes: Range<usize>,
    /// Extended DTS of the primary track's first sample.
    pub first_dts: u64,
    /// The primary track's duration in this part, 90 kHz (EXT-X-PART DURATION).
    pub duration_ticks: u64,
    /// Starts with a sync sample (EXT-X-PART INDEPENDENT=YES).
    pub independent: bool,
}

/// The `mfhd` sequence number of part `part` of segment `msn`: `msn × 256 + part + 1`
/// modulo 2³² (parts past 255 share the last number), so it only depends on the timeline.
pub fn sequence_number(msn: u64, part: usize) -> u32 {
    (msn.wrapping_mul(256).wrapping_add(part.min(255) as u64 + 1)) as u32
}

/// Where each part starts: indices into `frames` (the first is always 0), by the part
/// cut rule of the module docs. Frames of tracks `config` does not carry are ignored
/// for the rule (and left out when written).
pub fn part_starts(config: &InitConfig, frames: &[TimedFrame], part_ticks: u64) -> Vec<usize> {
    let part_ticks = part_ticks.max(1);
    let primary = if config.video.is_some() {
        TrackKind::Video
    } else {
        TrackKind::Audio
    };
    let mut starts = vec![0];
    let mut origin = None;
    let mut current = 0u64;
    for (i, t) in frames.iter().enumerate() {
        if t.frame.kind() != primary || !config.carries(primary) {
            continue;
        }
        let Some(o) = origin else {
            origin = Some(t.ext_dts);
            continue;
        };
        let index = t.ext_dts.saturating_sub(o) / part_ticks;
        if index > current {
            current = index;
            starts.push(i);
        }
    }
    starts
}

/// Writes a media segment as the concatenation of its parts (one part when
/// `options.part_ticks` is `None`): `styp` and the optional `prft` open the first part.
///
/// `frames` are in segment order (DTS, video first), as [`frames_from_ts`] returns
/// them; other orders are sorted first.
///
/// # Errors
/// [`Fmp4Error::Empty`] when no frame belongs to a configured track,
/// [`Fmp4Error::TooLarge`] when a part exceeds the 32-bit box sizes.
pub fn write_segment(
    config: &InitConfig,
    frames: &[TimedFrame],
    options: &SegmentOptions,
    out: &mut Vec<u8>,
) -> Result<Vec<Part>, Fmp4Error> {
    let order = |t: &TimedFrame| (t.ext_dts, t.frame.kind() == TrackKind::Audio);
    let sorted;
    let frames = if frames.is_sorted_by_key(order) {
        frames
    } else {
        let mut v = frames.to_vec();
        v.sort_by_key(order);
        sorted = v;
        &sorted[..]
    };
    let starts = match options.part_ticks {
        Some(ticks) => part_starts(config, frames, ticks),
        None => vec![0],
    };
    let mut parts = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(frames.len());
        let rest = &frames[end..];
        let next = |kind: TrackKind, fallback: Option<u64>| {
            rest.iter()
                .find(|t| t.frame.kind() == kind)
                .map(|t| t.ext_dts)
                .or(fallback)
        };
        let fragment = FragmentOptions {
            sequence_number: sequence_number(options.msn, k),
            styp: k == 0,
            producer_time: if k == 0 { options.producer_time } else { None },
            next_video_dts: next(TrackKind::Video, options.next_video_dts),
            next_audio_dts: next(TrackKind::Audio, options.next_audio_dts),
        };
        let at = out.len();
        let info = write_fragment(config, &frames[start..end], &fragment, out)?;
        parts.push(Part {
            bytes: at..out.len(),
            first_dts: info.first_dts,
            duration_ticks: info.duration_ticks,
            independent: info.independent,
        });
    }
    Ok(parts)
}

/// The frames of MPEG-TS bytes (a segment brdyun wrote, or any run of them) with
/// extended timestamps unwrapped around `reference_ts`, in the order the TS holds them.
pub fn frames_from_ts(ts: &[u8], reference_ts: u64) -> Vec<TimedFrame> {
    TimedFrame::unwrap_all(crate::ts::demux_frames(ts), reference_ts)
}

/// The frames of `segment` with their extended timestamps: those the segmenter wrote it
/// from, or (for a segment made from bytes alone) read back from its bytes.
pub fn segment_frames(segment: &Segment) -> Vec<TimedFrame> {
    if segment.frames.is_empty() {
        return frames_from_ts(&segment.data, segment.start_ts);
    }
    TimedFrame::unwrap_all(segment.frames.iter().cloned(), segment.start_ts)
}

/// The extended DTS of the first video and first audio frame of a segment: what the
/// previous segment needs to end its last samples exactly. Reads only as far as it must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NextDts {
    /// First video DTS, if the segment has video.
    pub video: Option<u64>,
    /// First audio DTS, if the segment has audio.
    pub audio: Option<u64>,
}

impl NextDts {
    /// What the live edge ends `segment` with when the next segment is not waited for:
    /// its last video sample ends at `start_ts + duration_ticks` minus the reorder delay
    /// of its first video frame (exact for a constant delay), the last audio sample
    /// lasts as long as the one before it (no audio DTS). `frames` are the segment's.
    /// Known as soon as the segment is, the same on every node and at every request.
    pub fn estimated(segment: &Segment, frames: &[TimedFrame]) -> Self {
        let end = segment.start_ts.saturating_add(segment.duration_ticks);
        let video = frames
            .iter()
            .find(|t| t.frame.kind() == TrackKind::Video)
            .map(|t| end.saturating_sub(t.ext_pts.saturating_sub(t.ext_dts)))
            .filter(|_| segment.duration_ticks > 0);
        Self { video, audio: None }
    }

    /// Reads the first frames of `segment` (its TS bytes), stopping once it has seen a
    /// frame of each kind the segment's marker says it holds.
    pub fn of_segment(segment: &Segment) -> Self {
        let mut demuxer = Demuxer::new();
        let mut events = Vec::new();
        let mut next = Self::default();
        let mut reference = segment.start_ts;
        // 64 packets at a time: a segment's first frames are near its start.
        let mut chunks = segment.data.chunks(64 * crate::ts::PACKET_SIZE).peekable();
        while let Some(chunk) = chunks.next() {
            demuxer.push(chunk, &mut events);
            if chunks.peek().is_none() {
                demuxer.flush(&mut events);
            }
            for e in events.drain(..) {
                let DemuxEvent::Frame(f) = e else { continue };
                let dts = crate::segmenter::unwrap_ts(f.dts, Some(reference));
                reference = dts;
                let slot = match f.kind() {
                    TrackKind::Video => &mut next.video,
                    TrackKind::Audio => &mut next.audio,
                };
                slot.get_or_insert(dts);
            }
            if next.video.is_some() && next.audio.is_some() {
                break;
            }
        }
        next
    }
}

/// Packages a segment the segmenter wrote as fMP4 on the same timeline: the same
/// frames, `tfdt` = their extended DTS, and the `prft` mapping the segment's start to
/// its EXT-X-PROGRAM-DATE-TIME.
///
/// The last samples end where `next` (the next segment's first DTS, see
/// [`NextDts::of_segment`]) says; without it (what every brdyun file is packaged with),
/// as [`NextDts::estimated`] says: exact for a constant reorder delay and at 48 kHz; at
/// 44.1 kHz the next fragment's `tfdt` may be one tick off.
///
/// # Errors
/// As [`write_segment`].
pub fn package_ts_segment(
    config: &InitConfig,
    segment: &Segment,
    next: Option<NextDts>,
    part_ticks: Option<u64>,
    out: &mut Vec<u8>,
) -> Result<Vec<Part>, Fmp4Error> {
    let mut frames = segment_frames(segment);
    // Silence ends exactly at the segment's end: the next one's starts there.
    let mut silence_end = None;
    if frames.is_empty() {
        frames = silence(config, segment);
        silence_end =
            (!frames.is_empty()).then(|| segment.start_ts.saturating_add(segment.duration_ticks));
    }
    let estimate = NextDts::estimated(segment, &frames);
    let next = next.unwrap_or_default();
    let options = SegmentOptions {
        msn: segment.msn,
        part_ticks,
        next_video_dts: next.video.or(estimate.video),
        next_audio_dts: next.audio.or(silence_end),
        producer_time: Some(ProducerTime {
            unix_ms: segment.program_date_time_ms,
            media_time: segment.start_ts,
        }),
    };
    write_segment(config, &frames, &options, out)
}

/// The most silent frames one segment gets (85 s at 48 kHz): a segment's span comes
/// from its marker, which a damaged archive could make huge.
const MAX_SILENT_FRAMES: usize = 4096;

/// Silent AAC frames over `segment`'s span, on the audio's sample grid from its start,
/// when `config` is audio alone: an audio rendition's segment without frames (a span
/// its feed left empty, from a cutter that did not fill it with silence, or an archive
/// that holds such a segment) is silence in the fMP4 files, where DASH has no gap mark.
/// Empty for a config with video, or whose channel layout has no silent frame; at most
/// [`MAX_SILENT_FRAMES`].
fn silence(config: &InitConfig, segment: &Segment) -> Vec<TimedFrame> {
    let (None, Some(audio)) = (&config.video, &config.audio) else {
        return Vec::new();
    };
    let Some(data) = silent_adts_frame_of(&audio.config).map(bytes::Bytes::from) else {
        return Vec::new();
    };
    let end = segment.start_ts.saturating_add(segment.duration_ticks);
    silent_frames(
        &data,
        audio.config.sample_rate(),
        segment.start_ts,
        end,
        MAX_SILENT_FRAMES,
    )
    .into_iter()
    .map(|(ts, frame)| TimedFrame {
        ext_pts: ts,
        ext_dts: ts,
        frame,
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::aac::AudioSpecificConfig;
    use crate::fmp4::config::AudioTrack;
    use crate::{Codec, Frame};
    use bytes::Bytes;

    fn audio(dts: u64) -> TimedFrame {
        TimedFrame {
            ext_pts: dts,
            ext_dts: dts,
            frame: Frame {
                codec: Codec::Aac,
                pts: dts,
                dts,
                keyframe: true,
                data: Bytes::from_static(&[0xff, 0xf1, 0x4c, 0x80, 0x01, 0x3f, 0xfc, 0xaa, 0xbb]),
            },
        }
    }

    fn audio_config() -> InitConfig {
        InitConfig {
            video: None,
            audio: Some(AudioTrack {
                config: AudioSpecificConfig::parse(&[0x11, 0x90]).unwrap(),
            }),
        }
    }

    #[test]
    fn parts_follow_the_grid_from_the_first_frame() {
        // 1920-tick frames from 1000; 4000-tick parts: grid lines at 5000, 9000, 13000.
        let frames: Vec<TimedFrame> = (0..8).map(|i| audio(1000 + i * 1920)).collect();
        let starts = part_starts(&audio_config(), &frames, 4000);
        // dts: 1000 2920 4840 | 6760 8680 | 10600 12520 | 14440
        assert_eq!(starts, [0, 3, 5, 7]);
        let video_only = InitConfig {
            video: None,
            audio: None,
        };
        assert_eq!(part_starts(&video_only, &frames, 4000), [0]);
    }

    #[test]
    fn a_segment_is_its_parts_concatenated() {
        let frames: Vec<TimedFrame> = (0..8).map(|i| audio(1000 + i * 1920)).collect();
        let config = audio_config();
        let mut whole = Vec::new();
        let parts = write_segment(
            &config,
            &frames,
            &SegmentOptions {
                msn: 3,
                part_ticks: Some(4000),
                ..SegmentOptions::default()
            },
            &mut whole,
        )
        .unwrap();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0].bytes.start, 0);
        for w in parts.windows(2) {
            assert_eq!(w[0].bytes.end, w[1].bytes.start);
            assert_eq!(w[0].first_dts + w[0].duration_ticks, w[1].first_dts);
        }
        assert_eq!(parts[3].bytes.end, whole.len());
        assert_eq!(&whole[4..8], b"styp");
        assert_eq!(
            &whole[parts[1].bytes.start + 4..parts[1].bytes.start + 8],
            b"moof"
        );
        let total: u64 = parts.iter().map(|p| p.duration_ticks).sum();
        assert_eq!(total, 8 * 1920);
        assert!(parts.iter().all(|p| p.independent));
    }

    #[test]
    fn an_empty_audio_segment_is_silence_over_its_span() {
        let marker = crate::TimelineMarker {
            start_ts: (1 << 33) - 1_000,
            duration_ticks: 180_000,
            ..crate::TimelineMarker::default()
        };
        let empty = Segment::from_marker(&marker, Bytes::new());
        // 48 kHz mono: 1920 ticks a frame, 94 frames start within 2 s.
        let config = InitConfig {
            video: None,
            audio: Some(AudioTrack {
                config: AudioSpecificConfig::parse(&[0x11, 0x88]).unwrap(),
            }),
        };
        let frames = silence(&config, &empty);
        assert_eq!(frames.len(), 94);
        assert_eq!(frames[0].ext_dts, (1 << 33) - 1_000);
        assert_eq!(frames[1].ext_dts - frames[0].ext_dts, 1_920);
        assert!(frames[93].ext_dts < marker.start_ts + 180_000);
        assert_eq!(frames[1].frame.dts, 920, "33-bit timestamps wrap");
        assert_eq!(&frames[0].frame.data[7..], &[0x00, 0xc8, 0x00, 0x07]);
        let mut out = Vec::new();
        let parts = package_ts_segment(&config, &empty, None, None, &mut out).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].first_dts, (1 << 33) - 1_000);
        // The last frame is cut at the segment's end.
        assert_eq!(parts[0].duration_ticks, 180_000);
        let huge = Segment::from_marker(
            &crate::TimelineMarker {
                duration_ticks: u64::MAX,
                ..marker
            },
            Bytes::new(),
        );
        assert_eq!(silence(&config, &huge).len(), MAX_SILENT_FRAMES);
        // A segment of a stream with video is never filled: it has no audio of its own.
        let muxed = InitConfig {
            video: Some(crate::fmp4::config::VideoTrack {
                codec: Codec::H264,
                width: 640,
                height: 360,
                codec_string: "avc1.42c01e".into(),
                vps: Vec::new(),
                sps: Vec::new(),
                pps: Vec::new(),
                sps_fields: crate::fmp4::config::SpsFields::default(),
            }),
            ..config
        };
        assert!(silence(&muxed, &empty).is_empty());
    }

    #[test]
    fn sequence_numbers_increase_with_msn_and_part() {
        assert_eq!(sequence_number(0, 0), 1);
        assert_eq!(sequence_number(2, 3), 516);
        assert!(sequence_number(2, 300) < sequence_number(3, 0));
    }
}
