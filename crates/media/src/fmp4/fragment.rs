//! One movie fragment: [`styp`], [`prft`], `moof` (`mfhd`, a `traf` per track with
//! `tfhd`, `tfdt`, `trun`) and `mdat` (video samples, then audio samples).

use std::ops::Range;

use bytes::BufMut;

use super::bmff::{close, file_type, open, open_full, MAX_BOX_BODY};
use super::config::InitConfig;
use super::{Fmp4Error, AUDIO_TRACK_ID, VIDEO_TRACK_ID};
use crate::codec::aac::SAMPLES_PER_FRAME;
use crate::codec::nal::{h264_type, h265_type};
use crate::segmenter::unwrap_ts;
use crate::{Codec, Frame, TrackKind, CLOCK_HZ};

/// Sample flags (ISO/IEC 14496-12 8.8.3.1) of a sync sample: depends on no other.
const SYNC: u32 = 0x0200_0000;
/// Sample flags of a non-sync sample: depends on others, is_non_sync_sample.
const NON_SYNC: u32 = 0x0101_0000;
/// Duration of a lone video sample with nothing to measure it by (1/25 s).
const DEFAULT_VIDEO_DURATION: u64 = CLOCK_HZ / 25;

/// A frame with its extended (unwrapped) 90 kHz timestamps, as the segmenter sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedFrame {
    /// Extended presentation timestamp.
    pub ext_pts: u64,
    /// Extended decoding timestamp (`tfdt` and sample durations come from it).
    pub ext_dts: u64,
    /// The frame, with its 33-bit timestamps and elementary-stream bytes.
    pub frame: Frame,
}

impl TimedFrame {
    /// Unwraps the 33-bit timestamps of consecutive frames to extended values, the first
    /// nearest to `reference` (e.g. [`crate::Segment::start_ts`]) and each next one
    /// nearest to the previous, as the segmenter does.
    pub fn unwrap_all(frames: impl IntoIterator<Item = Frame>, reference: u64) -> Vec<Self> {
        let mut last = reference;
        frames
            .into_iter()
            .map(|frame| {
                let ext_dts = unwrap_ts(frame.dts, Some(last));
                let ext_pts = unwrap_ts(frame.pts, Some(ext_dts));
                last = ext_dts;
                Self {
                    ext_pts,
                    ext_dts,
                    frame,
                }
            })
            .collect()
    }
}

/// The wall-clock time of a media time, written as a `prft` box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerTime {
    /// Wall-clock time, Unix milliseconds (EXT-X-PROGRAM-DATE-TIME of `media_time`).
    pub unix_ms: i64,
    /// The media time it belongs to, 90 kHz, on the reference (first) track's timeline.
    pub media_time: u64,
}

/// How to write one fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FragmentOptions {
    /// `mfhd` sequence number (see [`super::sequence_number`]).
    pub sequence_number: u32,
    /// Start with a `styp` (the first fragment of a segment).
    pub styp: bool,
    /// Write a `prft` before the `moof`.
    pub producer_time: Option<ProducerTime>,
    /// Extended DTS of the video sample after this fragment, when known: it gives the
    /// last video sample's duration.
    pub next_video_dts: Option<u64>,
    /// Extended DTS of the audio sample after this fragment, when known.
    pub next_audio_dts: Option<u64>,
}

/// What a fragment holds, measured on its primary track (video when it has video).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentInfo {
    /// Extended DTS of the primary track's first sample (its `tfdt`).
    pub first_dts: u64,
    /// Sum of the primary track's sample durations, 90 kHz.
    pub duration_ticks: u64,
    /// The primary track starts with a sync sample (LL-HLS INDEPENDENT=YES).
    pub independent: bool,
    /// Video samples written.
    pub video_samples: u32,
    /// Audio samples written.
    pub audio_samples: u32,
}

/// One sample to write: where its bytes are and how to frame them.
struct Sample<'a> {
    dts: u64,
    cto: i64,
    sync: bool,
    src: &'a [u8],
    /// Indices into the run's `pieces`.
    pieces: Range<usize>,
    size: usize,
}

/// The samples of one track in this fragment.
struct Run<'a> {
    samples: Vec<Sample<'a>>,
    /// Byte ranges in the samples' sources, in order.
    pieces: Vec<Range<usize>>,
    /// Video pieces are NAL units written with a 4-byte length; audio pieces are raw.
    length_prefixed: bool,
    durations: Vec<u32>,
    bytes: usize,
}

impl<'a> Run<'a> {
    fn new(length_prefixed: bool) -> Self {
        Self {
            samples: Vec::new(),
            pieces: Vec::new(),
            length_prefixed,
            durations: Vec::new(),
            bytes: 0,
        }
    }

    /// Adds a video access unit: its NAL units minus those the sample entry replaces.
    fn push_video(&mut self, t: &'a TimedFrame) {
        let data: &'a [u8] = &t.frame.data;
        let first = self.pieces.len();
        let mut size = 0;
        for nal in nal_ranges(data) {
            if in_band_dropped(t.frame.codec, &data[nal.clone()]) {
                continue;
            }
            size += 4 + nal.len();
            self.pieces.push(nal);
        }
        self.push(t, data, first, size);
    }

    /// Adds an AAC frame without its ADTS header; one sample per ADTS frame when a
    /// frame carries several. Bytes that are not ADTS are written as one raw sample.
    fn push_audio(&mut self, t: &'a TimedFrame, sample_rate: u32) {
        let data: &'a [u8] = &t.frame.data;
        let ranges = crate::codec::aac::adts_frame_ranges(data);
        if ranges.is_empty() {
            let first = self.pieces.len();
            self.pieces.push(0..data.len());
            self.push(t, data, first, data.len());
            return;
        }
        for (i, r) in ranges.into_iter().enumerate() {
            let header = if data[r.start + 1] & 0x01 == 1 { 7 } else { 9 };
            let body = (r.start + header).min(r.end)..r.end;
            let first = self.pieces.len();
            let size = body.len();
            self.pieces.push(body);
            let offset = i as u64 * SAMPLES_PER_FRAME * CLOCK_HZ / u64::from(sample_rate.max(1));
            self.samples.push(Sample {
                dts: t.ext_dts.saturating_add(offset),
                cto: 0,
                sync: true,
                src: data,
                pieces: first..first + 1,
                size,
            });
            self.bytes += size;
        }
    }

    fn push(&mut self, t: &'a TimedFrame, src: &'a [u8], first: usize, size: usize) {
        self.samples.push(Sample {
            dts: t.ext_dts,
            cto: i64::try_from(i128::from(t.ext_pts) - i128::from(t.ext_dts)).unwrap_or(
                if t.ext_pts > t.ext_dts {
                    i64::MAX
                } else {
                    i64::MIN
                },
            ),
            sync: t.frame.keyframe,
            src,
            pieces: first..self.pieces.len(),
            size,
        });
        self.bytes += size;
    }

    /// Sample durations from DTS differences; the last from `next_dts` when it lies
    /// after it, else the previous duration, else `default`.
    fn finish_durations(&mut self, next_dts: Option<u64>, default: u64) {
        let n = self.samples.len();
        self.durations = Vec::with_capacity(n);
        for w in self.samples.windows(2) {
            self.durations
                .push(clamp_u32(w[1].dts.saturating_sub(w[0].dts)));
        }
        if let Some(last) = self.samples.last() {
            let d = match next_dts {
                Some(next) if next > last.dts => clamp_u32(next - last.dts),
                _ => self.durations.last().copied().unwrap_or(clamp_u32(default)),
            };
            self.durations.push(d);
        }
    }

    fn has_cto(&self) -> bool {
        self.samples.iter().any(|s| s.cto != 0)
    }

    fn write_payload(&self, out: &mut Vec<u8>) {
        for s in &self.samples {
            for piece in &self.pieces[s.pieces.clone()] {
                if self.length_prefixed {
                    out.put_u32(piece.len() as u32);
                }
                out.put_slice(&s.src[piece.clone()]);
            }
        }
    }
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The byte ranges of the NAL units of an Annex B access unit, as
/// [`crate::codec::nal::annexb_nals`] splits them (bytes before the first start code
/// skipped, trailing zero bytes trimmed, empty units left out).
///
/// Packaging scans every video byte once, so this skips ahead the way start-code
/// searches usually do: a byte above 1 cannot be part of the `00 00 01` ending at it or
/// at either of the next two bytes.
fn nal_ranges(data: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    /// The start of the next start code at or after `from`, and where its NAL begins.
    fn next_start_code(data: &[u8], from: usize) -> Option<(usize, usize)> {
        let mut i = from + 2;
        while let Some(&b) = data.get(i) {
            if b > 1 {
                i += 3;
            } else if b == 0 {
                i += 1;
            } else if data[i - 1] == 0 && data[i - 2] == 0 {
                return Some((i - 2, i + 1));
            } else {
                i += 3;
            }
        }
        None
    }
    let mut next = next_start_code(data, 0).map(|(_, nal)| nal);
    std::iter::from_fn(move || loop {
        let start = next?;
        let end = match next_start_code(data, start) {
            Some((code, nal)) => {
                next = Some(nal);
                code
            }
            None => {
                next = None;
                data.len()
            }
        };
        let trimmed = data[start..end]
            .iter()
            .rev()
            .take_while(|&&b| b == 0)
            .count();
        if end - trimmed > start {
            return Some(start..end - trimmed);
        }
    })
}

/// NAL units not copied into samples: access unit delimiters, filler data and the
/// parameter sets (the sample entry carries them).
fn in_band_dropped(codec: Codec, nal: &[u8]) -> bool {
    match codec {
        Codec::H264 => matches!(h264_type(nal), Some(7 | 8 | 9 | 12)),
        Codec::H265 => matches!(h265_type(nal), Some(32..=35 | 38)),
        Codec::Aac => false,
    }
}

/// Writes one fragment of `frames` (in decode order per track) into `out`.
///
/// Frames of a track `config` does not carry are left out. Each track's `tfdt` is the
/// extended DTS of its first sample in this fragment.
///
/// # Errors
/// [`Fmp4Error::Empty`] when no frame belongs to a configured track,
/// [`Fmp4Error::TooLarge`] when the samples exceed what a 32-bit `mdat` holds.
pub fn write_fragment(
    config: &InitConfig,
    frames: &[TimedFrame],
    options: &FragmentOptions,
    out: &mut Vec<u8>,
) -> Result<FragmentInfo, Fmp4Error> {
    let mut video = Run::new(true);
    let mut audio = Run::new(false);
    let sample_rate = config.audio.map_or(48_000, |a| a.sample_rate());
    for t in frames {
        match t.frame.kind() {
            TrackKind::Video if config.video.is_some() => video.push_video(t),
            TrackKind::Audio if config.audio.is_some() => audio.push_audio(t, sample_rate),
            _ => {}
        }
    }
    if video.samples.is_empty() && audio.samples.is_empty() {
        return Err(Fmp4Error::Empty);
    }
    if video.bytes + audio.bytes > MAX_BOX_BODY {
        return Err(Fmp4Error::TooLarge);
    }
    video.finish_durations(options.next_video_dts, DEFAULT_VIDEO_DURATION);
    let audio_frame = SAMPLES_PER_FRAME * CLOCK_HZ / u64::from(sample_rate.max(1));
    audio.finish_durations(options.next_audio_dts, audio_frame);

    let tracks = usize::from(!video.samples.is_empty()) + usize::from(!audio.samples.is_empty());
    if options.styp {
        if tracks == 1 {
            file_type(out, b"styp", b"msdh", &[b"msdh", b"cmfs"]);
        } else {
            file_type(out, b"styp", b"msdh", &[b"msdh"]);
        }
    }
    let primary_id = if video.samples.is_empty() {
        AUDIO_TRACK_ID
    } else {
        VIDEO_TRACK_ID
    };
    if let Some(p) = options.producer_time {
        prft(out, primary_id, p);
    }

    let moof = open(out, b"moof");
    let mfhd = open_full(out, b"mfhd", 0, 0);
    out.put_u32(options.sequence_number);
    close(out, mfhd);
    let mut patches = Vec::with_capacity(2);
    let mut offset_in_mdat = 0usize;
    for (id, run) in [(VIDEO_TRACK_ID, &video), (AUDIO_TRACK_ID, &audio)] {
        if run.samples.is_empty() {
            continue;
        }
        let at = traf(out, id, run);
        patches.push((at, offset_in_mdat));
        offset_in_mdat += run.bytes;
    }
    close(out, moof);
    let moof_size = out.len() - moof;
    for (at, offset) in patches {
        let data_offset = i32::try_from(moof_size + 8 + offset).map_err(|_| Fmp4Error::TooLarge)?;
        out[at..at + 4].copy_from_slice(&data_offset.to_be_bytes());
    }
    out.reserve(8 + video.bytes + audio.bytes);
    let mdat = open(out, b"mdat");
    video.write_payload(out);
    audio.write_payload(out);
    close(out, mdat);

    let primary = if video.samples.is_empty() {
        &audio
    } else {
        &video
    };
    Ok(FragmentInfo {
        first_dts: primary.samples.first().map_or(0, |s| s.dts),
        duration_ticks: primary
            .durations
            .iter()
            .fold(0u64, |sum, &d| sum.saturating_add(u64::from(d))),
        independent: primary.samples.first().is_some_and(|s| s.sync),
        video_samples: video.samples.len() as u32,
        audio_samples: audio.samples.len() as u32,
    })
}

/// Writes a `traf`; returns where its `trun` data_offset is, to patch once the `moof`
/// size is known.
fn traf(out: &mut Vec<u8>, id: u32, run: &Run<'_>) -> usize {
    let at = open(out, b"traf");
    let video = id == VIDEO_TRACK_ID;
    // default-base-is-moof; audio also sets default_sample_flags (every sample is sync).
    let tfhd = open_full(out, b"tfhd", 0, if video { 0x02_0000 } else { 0x02_0020 });
    out.put_u32(id);
    if !video {
        out.put_u32(SYNC);
    }
    close(out, tfhd);
    let tfdt = open_full(out, b"tfdt", 1, 0);
    out.put_u64(run.samples.first().map_or(0, |s| s.dts));
    close(out, tfdt);
    let cto = video && run.has_cto();
    // data-offset, sample-duration, sample-size (+ sample-flags, + composition offsets).
    let mut flags = 0x00_0001 | 0x00_0100 | 0x00_0200;
    if video {
        flags |= 0x00_0400;
    }
    if cto {
        flags |= 0x00_0800;
    }
    let trun = open_full(out, b"trun", 1, flags);
    out.put_u32(run.samples.len() as u32);
    let data_offset_at = out.len();
    out.put_i32(0);
    for (s, &d) in run.samples.iter().zip(&run.durations) {
        out.put_u32(d);
        out.put_u32(s.size as u32);
        if video {
            out.put_u32(if s.sync { SYNC } else { NON_SYNC });
        }
        if cto {
            out.put_i32(s.cto.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
        }
    }
    close(out, trun);
    close(out, at);
    data_offset_at
}

/// Writes `prft` version 1: the NTP time of `media_time` on track `track_id`.
fn prft(out: &mut Vec<u8>, track_id: u32, p: ProducerTime) {
    /// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
    const NTP_UNIX_OFFSET: i64 = 2_208_988_800;
    let secs = (p.unix_ms.div_euclid(1000))
        .saturating_add(NTP_UNIX_OFFSET)
        .max(0) as u64;
    let frac = ((p.unix_ms.rem_euclid(1000) as u64) << 32) / 1000;
    let at = open_full(out, b"prft", 1, 0);
    out.put_u32(track_id);
    out.put_u64((secs << 32) | frac);
    out.put_u64(p.media_time);
    close(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn video(dts: u64, pts: u64, key: bool, body: &[u8]) -> TimedFrame {
        let mut d = vec![0, 0, 0, 1, 0x09, 0xf0];
        if key {
            d.extend_from_slice(&[0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 1, 0x68, 0xce]);
        }
        d.extend_from_slice(&[0, 0, 1]);
        d.extend_from_slice(body);
        TimedFrame {
            ext_pts: pts,
            ext_dts: dts,
            frame: Frame {
                codec: Codec::H264,
                pts,
                dts,
                keyframe: key,
                data: Bytes::from(d),
            },
        }
    }

    proptest::proptest! {
        #[test]
        fn nal_ranges_split_like_the_codec_module(
            data in proptest::collection::vec(proptest::prop_oneof![
                3 => proptest::strategy::Just(0u8),
                2 => proptest::strategy::Just(1u8),
                2 => proptest::prelude::any::<u8>(),
            ], 0..200)
        ) {
            let fast: Vec<&[u8]> = nal_ranges(&data).map(|r| &data[r]).collect();
            let reference: Vec<&[u8]> = crate::codec::nal::annexb_nals(&data).collect();
            proptest::prop_assert_eq!(fast, reference);
        }
    }

    #[test]
    fn annexb_becomes_length_prefixed_without_parameter_sets() {
        let mut run = Run::new(true);
        let f = video(0, 0, true, &[0x65, 0xaa, 0xbb]);
        run.push_video(&f);
        let mut out = Vec::new();
        run.write_payload(&mut out);
        assert_eq!(out, [0, 0, 0, 3, 0x65, 0xaa, 0xbb]);
        assert_eq!(run.bytes, 7);
    }

    #[test]
    fn last_duration_comes_from_the_next_dts_or_the_previous_one() {
        let frames = [
            video(100, 100, true, &[0x65]),
            video(3700, 3700, false, &[0x41]),
        ];
        let mut run = Run::new(true);
        for f in &frames {
            run.push_video(f);
        }
        run.finish_durations(Some(7000), 3600);
        assert_eq!(run.durations, [3600, 3300]);
        run.finish_durations(None, 1);
        assert_eq!(run.durations, [3600, 3600]);
        run.finish_durations(Some(50), 1);
        assert_eq!(
            run.durations,
            [3600, 3600],
            "a next dts before the last is ignored"
        );
    }

    #[test]
    fn prft_carries_ntp_time() {
        let mut out = Vec::new();
        prft(
            &mut out,
            1,
            ProducerTime {
                unix_ms: 1_500,
                media_time: 42,
            },
        );
        assert_eq!(out.len(), 32);
        assert_eq!(&out[16..20], &(2_208_988_801u32).to_be_bytes());
        assert_eq!(&out[20..24], &(1u32 << 31).to_be_bytes());
        assert_eq!(&out[24..], &42u64.to_be_bytes());
    }
}
