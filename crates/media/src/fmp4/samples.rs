//! The samples of a track as ISO BMFF stores them, measured and written by the same
//! code for fragments and for progressive files, so the sizes a `moov` or `trun` lists
//! are the bytes its `mdat` holds: video access units become 4-byte length-prefixed NAL
//! units without the units the sample entry replaces, ADTS frames become raw AAC.

use std::ops::Range;

use bytes::BufMut;

use super::config::InitConfig;
use super::timed::TimedFrame;
use crate::codec::aac::SAMPLES_PER_FRAME;
use crate::codec::nal::{h264_type, h265_type};
use crate::{Codec, TrackKind, CLOCK_HZ};

/// Duration of a lone video sample with nothing to measure it by (1/25 s).
const DEFAULT_VIDEO_DURATION: u64 = CLOCK_HZ / 25;

/// The video and audio samples of `frames` (each track in decode order), frames of a
/// track `config` does not carry left out.
pub(crate) fn collect<'a>(config: &InitConfig, frames: &'a [TimedFrame]) -> (Run<'a>, Run<'a>) {
    let mut video = Run::new(true);
    let mut audio = Run::new(false);
    let sample_rate = audio_rate(config);
    for t in frames {
        match t.frame.kind() {
            TrackKind::Video if config.video.is_some() => video.push_video(t),
            TrackKind::Audio if config.audio.is_some() => audio.push_audio(t, sample_rate),
            _ => {}
        }
    }
    (video, audio)
}

/// The sampling rate the audio samples' times are computed with.
fn audio_rate(config: &InitConfig) -> u32 {
    config.audio.map_or(48_000, |a| a.sample_rate())
}

/// The duration a track's last sample takes when nothing measures it: one frame (1/25 s
/// of video, 1024 samples of audio).
pub(crate) fn default_duration(config: &InitConfig, kind: TrackKind) -> u64 {
    match kind {
        TrackKind::Video => DEFAULT_VIDEO_DURATION,
        TrackKind::Audio => SAMPLES_PER_FRAME * CLOCK_HZ / u64::from(audio_rate(config).max(1)),
    }
}

/// One sample to write: where its bytes are and how to frame them.
pub(crate) struct Sample<'a> {
    /// Extended decode time, 90 kHz.
    pub(crate) dts: u64,
    /// Composition offset: PTS − DTS.
    pub(crate) cto: i64,
    /// A random access point.
    pub(crate) sync: bool,
    src: &'a [u8],
    /// Indices into the run's `pieces`.
    pieces: Range<usize>,
    /// Bytes the sample takes in `mdat`.
    pub(crate) size: usize,
}

/// The samples of one track in one fragment or chunk.
pub(crate) struct Run<'a> {
    /// The samples, in decode order.
    pub(crate) samples: Vec<Sample<'a>>,
    /// Byte ranges in the samples' sources, in order.
    pieces: Vec<Range<usize>>,
    /// Video pieces are NAL units written with a 4-byte length; audio pieces are raw.
    length_prefixed: bool,
    /// Sample durations, once [`Run::finish_durations`] ran.
    pub(crate) durations: Vec<u32>,
    /// Sum of the samples' sizes.
    pub(crate) bytes: usize,
}

impl<'a> Run<'a> {
    pub(crate) fn new(length_prefixed: bool) -> Self {
        Self {
            samples: Vec::new(),
            pieces: Vec::new(),
            length_prefixed,
            durations: Vec::new(),
            bytes: 0,
        }
    }

    /// Adds a video access unit: its NAL units minus those the sample entry replaces.
    pub(crate) fn push_video(&mut self, t: &'a TimedFrame) {
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
    pub(crate) fn push_audio(&mut self, t: &'a TimedFrame, sample_rate: u32) {
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
    pub(crate) fn finish_durations(&mut self, next_dts: Option<u64>, default: u64) {
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

    pub(crate) fn has_cto(&self) -> bool {
        self.samples.iter().any(|s| s.cto != 0)
    }

    pub(crate) fn write_payload(&self, out: &mut Vec<u8>) {
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

pub(crate) fn clamp_u32(v: u64) -> u32 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Frame;
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
}
