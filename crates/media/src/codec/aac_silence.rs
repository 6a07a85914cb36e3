//! Silent AAC frames: what a packager writes where a stream's audio track ends before
//! its video (docs/timeline.md, "A track that ends first"), so every segment carries
//! both tracks to its end.
//!
//! A silent frame is a raw_data_block (ISO/IEC 14496-3, 4.4.2.1) holding one element
//! per channel element of the channel configuration (Table 1.19), each an
//! individual_channel_stream with `max_sfb = 0`: no scale-factor bands, so no spectral
//! data, and every decoder outputs 1024 samples of digital silence. It is built from the
//! fields of the stream's own ADTS header, so it decodes with the stream's
//! AudioSpecificConfig and needs no configuration change downstream.

use super::aac::{AudioSpecificConfig, SAMPLES_PER_FRAME};
use crate::CLOCK_HZ;

/// Syntactic element ids (ISO/IEC 14496-3, Table 4.85).
const ID_SCE: u32 = 0;
const ID_CPE: u32 = 1;
const ID_LFE: u32 = 3;
const ID_END: u32 = 7;
/// Any gain will do with no bands; 100 is a usual value for silence.
const GLOBAL_GAIN: u32 = 100;

/// Bits written most significant first.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    used: u32,
}

impl BitWriter {
    fn put(&mut self, value: u32, bits: u32) {
        for i in (0..bits).rev() {
            if self.used.is_multiple_of(8) {
                self.out.push(0);
            }
            let bit = ((value >> i) & 1) as u8;
            if let Some(last) = self.out.last_mut() {
                *last |= bit << (7 - self.used % 8);
            }
            self.used += 1;
        }
    }

    /// Ends the block: the rest of the last byte is zero (byte_alignment()).
    fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// One channel's stream with no bands: global_gain, ics_info (long window, max_sfb 0,
/// no prediction), no section or scale-factor data, no pulse, TNS or gain control.
fn empty_channel_stream(w: &mut BitWriter) {
    w.put(GLOBAL_GAIN, 8);
    w.put(0, 1); // ics_reserved_bit
    w.put(0, 2); // window_sequence: ONLY_LONG_SEQUENCE
    w.put(0, 1); // window_shape
    w.put(0, 6); // max_sfb
    w.put(0, 1); // predictor_data_present
    w.put(0, 1); // pulse_data_present
    w.put(0, 1); // tns_data_present
    w.put(0, 1); // gain_control_data_present
}

/// The elements of a channel configuration, in bitstream order (Table 1.19); `None`
/// for configuration 0 (described by an in-band PCE) and the reserved values.
fn elements(channels: u8) -> Option<&'static [u32]> {
    Some(match channels {
        1 => &[ID_SCE],
        2 => &[ID_CPE],
        3 => &[ID_SCE, ID_CPE],
        4 => &[ID_SCE, ID_CPE, ID_SCE],
        5 => &[ID_SCE, ID_CPE, ID_CPE],
        6 => &[ID_SCE, ID_CPE, ID_CPE, ID_LFE],
        7 => &[ID_SCE, ID_CPE, ID_CPE, ID_CPE, ID_LFE],
        _ => return None,
    })
}

/// A raw AAC frame (no ADTS header) of 1024 samples of silence for `channels` (the
/// channel configuration), or `None` when the configuration has no fixed layout.
pub fn silent_raw_frame(channels: u8) -> Option<Vec<u8>> {
    let mut w = BitWriter::default();
    let mut tags = [0u32; 8];
    for &id in elements(channels)? {
        let tag = &mut tags[id as usize];
        w.put(id, 3);
        w.put(*tag, 4);
        *tag += 1;
        if id == ID_CPE {
            w.put(0, 1); // common_window
            empty_channel_stream(&mut w);
        }
        empty_channel_stream(&mut w);
    }
    w.put(ID_END, 3);
    Some(w.finish())
}

/// A silent ADTS frame with the header fields of `template` (an ADTS frame of the
/// stream), or `None` when `template` is no ADTS frame or its channel configuration
/// has no fixed layout.
pub fn silent_adts_frame(template: &[u8]) -> Option<Vec<u8>> {
    silent_adts_frame_of(&AudioSpecificConfig::from_adts(template).ok()?)
}

/// A silent ADTS frame of the stream `config` describes, or `None` when its channel
/// configuration has no fixed layout or ADTS cannot carry its object type.
pub fn silent_adts_frame_of(config: &AudioSpecificConfig) -> Option<Vec<u8>> {
    let raw = silent_raw_frame(config.channels)?;
    let mut out = Vec::with_capacity(7 + raw.len());
    config.write_adts_header(raw.len(), &mut out).ok()?;
    out.extend_from_slice(&raw);
    Some(out)
}

/// Silent frames over the span `[start, end)` (90 kHz, extended): copies of `silent` (a
/// silent ADTS frame, [`silent_adts_frame`]) on the audio's sample grid from `start`, at
/// most `most`, each with its extended timestamp. What an audio rendition's span that
/// its feed left empty (an interpreter gone) is filled with, so it plays as silence.
pub fn silent_frames(
    silent: &bytes::Bytes,
    sample_rate: u32,
    start: u64,
    end: u64,
    most: usize,
) -> Vec<(u64, crate::Frame)> {
    (0..)
        .map(|i| frames_later(start, i, sample_rate))
        .take_while(|&ts| ts < end)
        .take(most)
        .map(|ts| (ts, silent_frame_at(silent, ts)))
        .collect()
}

/// Silent frames leading up to `end` (90 kHz, extended): whole frames on the audio's
/// sample grid counted back from `end`, none starting before `from`, at most `most`,
/// oldest first. What fills the start of a span a feed came back within, so the silence
/// ends exactly where its frames begin.
pub fn silent_frames_before(
    silent: &bytes::Bytes,
    sample_rate: u32,
    from: u64,
    end: u64,
    most: usize,
) -> Vec<(u64, crate::Frame)> {
    let mut out: Vec<(u64, crate::Frame)> = (1..)
        .map(|k| end.checked_sub(frames_later(0, k, sample_rate)))
        .take_while(|ts| ts.is_some_and(|ts| ts >= from))
        .flatten()
        .take(most)
        .map(|ts| (ts, silent_frame_at(silent, ts)))
        .collect();
    out.reverse();
    out
}

/// The silent frame `silent` at the extended timestamp `ts`.
fn silent_frame_at(silent: &bytes::Bytes, ts: u64) -> crate::Frame {
    crate::Frame {
        codec: crate::Codec::Aac,
        pts: ts & crate::PTS_MASK,
        dts: ts & crate::PTS_MASK,
        keyframe: true,
        data: silent.clone(),
    }
}

/// The 90 kHz timestamp `frames` AAC frames after `start` at `sample_rate`, rounded to
/// the nearest tick from the start (no drift over many frames).
pub fn frames_later(start: u64, frames: u64, sample_rate: u32) -> u64 {
    let rate = u64::from(sample_rate.max(1));
    let ticks = frames
        .saturating_mul(SAMPLES_PER_FRAME)
        .saturating_mul(CLOCK_HZ);
    start.saturating_add(ticks.saturating_add(rate / 2) / rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mono_and_stereo_frames_are_the_empty_elements() {
        // SCE: 000 0000, gain 01100100, 14 zero bits, END 111, padding.
        assert_eq!(silent_raw_frame(1).unwrap(), vec![0x00, 0xc8, 0x00, 0x07]);
        // CPE: 001 0000 0, then two 22-bit channel streams, END 111, padding.
        let stereo = silent_raw_frame(2).unwrap();
        assert_eq!(stereo.len(), 7); // 8 + 44 + 3 bits
        assert_eq!(&stereo[..3], &[0x20, 0x64, 0x00]);
        assert_eq!(silent_raw_frame(0), None);
        assert_eq!(silent_raw_frame(8), None);
        assert!(silent_raw_frame(7).is_some());
    }

    #[test]
    fn adts_frame_keeps_the_stream_config() {
        let asc = AudioSpecificConfig {
            object_type: 2,
            sample_rate_index: 3,
            channels: 2,
        };
        let mut template = Vec::new();
        asc.write_adts_header(100, &mut template).unwrap();
        template.extend_from_slice(&[0; 100]);
        let frame = silent_adts_frame(&template).unwrap();
        assert_eq!(AudioSpecificConfig::from_adts(&frame).unwrap(), asc);
        let len = (usize::from(frame[3] & 0x03) << 11)
            | (usize::from(frame[4]) << 3)
            | usize::from(frame[5] >> 5);
        assert_eq!(len, frame.len());
        assert_eq!(silent_adts_frame(&[0; 7]), None);
    }

    #[test]
    fn timestamps_do_not_drift() {
        assert_eq!(frames_later(10, 1, 48_000), 10 + 1_920);
        // 44.1 kHz: 2089.8 ticks a frame, rounded from the start.
        assert_eq!(frames_later(0, 1, 44_100), 2_090);
        assert_eq!(frames_later(0, 441, 44_100), 921_600);
    }
}
