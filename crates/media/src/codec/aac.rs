//! AAC: the AudioSpecificConfig (how RTMP and MP4 describe AAC) and the ADTS header
//! (how MPEG-TS carries it), with the RFC 6381 codec string.

use thiserror::Error;

/// Sampling rates indexed by `sampling_frequency_index` (ISO/IEC 14496-3, 1.6.3.4).
pub const SAMPLE_RATES: [u32; 13] = [
    96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000,
    7_350,
];

/// Why an AAC description could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum AacError {
    /// Fewer bytes than the structure needs.
    #[error("aac config truncated")]
    Truncated,
    /// A sampling-frequency index outside the table (escape value 15 is not supported).
    #[error("aac sampling frequency index {0} unsupported")]
    SampleRate(u8),
    /// ADTS carries only object types 1..=4.
    #[error("aac object type {0} cannot be carried in adts")]
    ObjectType(u8),
    /// The ADTS sync word 0xFFF is missing.
    #[error("adts sync word missing")]
    NoSync,
}

/// The fields of an AudioSpecificConfig that ADTS and the codec string need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioSpecificConfig {
    /// Audio object type: 2 = AAC-LC, 5 = HE-AAC (SBR), 29 = HE-AACv2.
    pub object_type: u8,
    /// Index into [`SAMPLE_RATES`].
    pub sample_rate_index: u8,
    /// Channel configuration (1 = mono, 2 = stereo, …).
    pub channels: u8,
}

impl AudioSpecificConfig {
    /// Parses the first two bytes of an AudioSpecificConfig (as in the FLV AAC sequence header).
    ///
    /// # Errors
    /// [`AacError::Truncated`] on fewer than two bytes, [`AacError::SampleRate`] on an
    /// index outside the table.
    pub fn parse(bytes: &[u8]) -> Result<Self, AacError> {
        let [b0, b1, ..] = *bytes else {
            return Err(AacError::Truncated);
        };
        let object_type = b0 >> 3;
        let sample_rate_index = ((b0 & 0x07) << 1) | (b1 >> 7);
        let channels = (b1 >> 3) & 0x0f;
        if usize::from(sample_rate_index) >= SAMPLE_RATES.len() {
            return Err(AacError::SampleRate(sample_rate_index));
        }
        Ok(Self {
            object_type,
            sample_rate_index,
            channels,
        })
    }

    /// Reads the configuration back from an ADTS header.
    ///
    /// # Errors
    /// [`AacError::Truncated`] or [`AacError::NoSync`] when `frame` does not start with
    /// an ADTS header, [`AacError::SampleRate`] on an index outside the table.
    pub fn from_adts(frame: &[u8]) -> Result<Self, AacError> {
        if frame.len() < 7 {
            return Err(AacError::Truncated);
        }
        if frame[0] != 0xff || frame[1] & 0xf0 != 0xf0 {
            return Err(AacError::NoSync);
        }
        let object_type = (frame[2] >> 6) + 1;
        let sample_rate_index = (frame[2] >> 2) & 0x0f;
        let channels = ((frame[2] & 0x01) << 2) | (frame[3] >> 6);
        if usize::from(sample_rate_index) >= SAMPLE_RATES.len() {
            return Err(AacError::SampleRate(sample_rate_index));
        }
        Ok(Self {
            object_type,
            sample_rate_index,
            channels,
        })
    }

    /// The sampling rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        SAMPLE_RATES[usize::from(self.sample_rate_index)]
    }

    /// The RFC 6381 codec string, e.g. `mp4a.40.2`.
    pub fn codec_string(&self) -> String {
        format!("mp4a.40.{}", self.object_type)
    }

    /// Appends a 7-byte ADTS header (no CRC) for a raw AAC frame of `payload_len` bytes.
    ///
    /// # Errors
    /// [`AacError::ObjectType`] when the object type cannot be signalled in ADTS
    /// (ADTS has two bits for it; HE-AAC is signalled as AAC-LC with implicit SBR).
    pub fn write_adts_header(&self, payload_len: usize, out: &mut Vec<u8>) -> Result<(), AacError> {
        let profile = match self.object_type {
            1..=4 => self.object_type - 1,
            5 | 29 => 1,
            other => return Err(AacError::ObjectType(other)),
        };
        // frame_length is 13 bits and includes the header; larger frames cannot be framed.
        let frame_len = payload_len + 7;
        if frame_len > 0x1fff {
            return Err(AacError::Truncated);
        }
        let frame_len = frame_len as u32;
        out.extend_from_slice(&[
            0xff,
            0xf1, // MPEG-4, layer 0, no CRC
            (profile << 6) | (self.sample_rate_index << 2) | ((self.channels >> 2) & 0x01),
            ((self.channels & 0x03) << 6) | ((frame_len >> 11) & 0x03) as u8,
            ((frame_len >> 3) & 0xff) as u8,
            (((frame_len & 0x07) << 5) as u8) | 0x1f,
            0xfc, // buffer fullness 0x7ff, one raw data block
        ]);
        Ok(())
    }
}

/// Samples per AAC frame (1024 for AAC-LC; HE-AAC's core also runs at 1024).
pub const SAMPLES_PER_FRAME: u64 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asc_round_trips_through_adts() {
        // 0x12 0x10: AAC-LC, 44.1 kHz, stereo: what ffmpeg writes in an FLV sequence header.
        let asc = AudioSpecificConfig::parse(&[0x12, 0x10]).unwrap();
        assert_eq!(
            asc,
            AudioSpecificConfig {
                object_type: 2,
                sample_rate_index: 4,
                channels: 2
            }
        );
        assert_eq!(asc.sample_rate(), 44_100);
        assert_eq!(asc.codec_string(), "mp4a.40.2");
        let mut adts = Vec::new();
        asc.write_adts_header(100, &mut adts).unwrap();
        assert_eq!(adts.len(), 7);
        assert_eq!(AudioSpecificConfig::from_adts(&adts).unwrap(), asc);
        let len = (usize::from(adts[3] & 0x03) << 11)
            | (usize::from(adts[4]) << 3)
            | usize::from(adts[5] >> 5);
        assert_eq!(len, 107);
    }

    #[test]
    fn bad_configs_are_errors() {
        assert_eq!(
            AudioSpecificConfig::parse(&[0x12]),
            Err(AacError::Truncated)
        );
        assert_eq!(
            AudioSpecificConfig::parse(&[0x17, 0x90]),
            Err(AacError::SampleRate(15))
        );
        assert_eq!(
            AudioSpecificConfig::from_adts(&[0; 7]),
            Err(AacError::NoSync)
        );
    }
}

/// Splits a run of ADTS frames (as one PES often carries) into the byte ranges of the
/// individual frames. Stops at the first header that does not parse or overruns `data`.
pub fn adts_frame_ranges(data: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut at = 0;
    while let Some(header) = data.get(at..at + 7) {
        if header[0] != 0xff || header[1] & 0xf0 != 0xf0 {
            break;
        }
        let len = (usize::from(header[3] & 0x03) << 11)
            | (usize::from(header[4]) << 3)
            | usize::from(header[5] >> 5);
        if len < 7 || at + len > data.len() {
            break;
        }
        ranges.push(at..at + len);
        at += len;
    }
    ranges
}

#[cfg(test)]
mod split_tests {
    use super::*;

    #[test]
    fn splits_runs_of_adts_frames_and_stops_at_garbage() {
        let asc = AudioSpecificConfig {
            object_type: 2,
            sample_rate_index: 3,
            channels: 2,
        };
        let mut data = Vec::new();
        for len in [10usize, 0, 300] {
            asc.write_adts_header(len, &mut data).unwrap();
            data.extend(std::iter::repeat_n(0xaa, len));
        }
        assert_eq!(adts_frame_ranges(&data), vec![0..17, 17..24, 24..331]);
        data.extend_from_slice(&[0xff, 0xf1, 0x4c, 0x80, 0xff]);
        assert_eq!(
            adts_frame_ranges(&data).len(),
            3,
            "a truncated header ends the run"
        );
        assert!(adts_frame_ranges(&[0u8; 20]).is_empty());
    }
}
