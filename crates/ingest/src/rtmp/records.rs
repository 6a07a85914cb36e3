//! Decoder configuration records from FLV video sequence headers:
//! AVCDecoderConfigurationRecord (ISO/IEC 14496-15, 5.3.3.1) and
//! HEVCDecoderConfigurationRecord (8.3.3.1), read only as far as the NAL length size
//! and the parameter sets. Every count and length is checked against the bytes present.

use media::Codec;
use thiserror::Error;

/// Why a configuration record was refused.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RecordError {
    /// The record ends before a field or parameter set it announces.
    #[error("configuration record truncated")]
    Truncated,
    /// `configurationVersion` is not 1.
    #[error("configuration record version {0} unsupported")]
    Version(u8),
    /// A record with no SPS (or, for HEVC, no VPS/SPS/PPS at all).
    #[error("configuration record has no parameter sets")]
    NoParameterSets,
    /// `lengthSizeMinusOne` of 2 (3-byte lengths) is not allowed.
    #[error("nal length size {0} unsupported")]
    LengthSize(usize),
}

/// What a video sequence header tells the converter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecoderConfig {
    /// H.264 or H.265.
    pub codec: Codec,
    /// Bytes of the big-endian length before each NAL unit (1, 2 or 4).
    pub nal_length_size: usize,
    /// The parameter sets (SPS, PPS; or VPS, SPS, PPS), each behind a 4-byte start code.
    pub annexb_parameter_sets: Vec<u8>,
}

impl DecoderConfig {
    /// True when `nal` is a parameter set of this codec (so an access unit that carries
    /// its own does not get a second copy).
    pub fn is_parameter_set(&self, nal: &[u8]) -> bool {
        let Some(&header) = nal.first() else {
            return false;
        };
        match self.codec {
            Codec::H265 => matches!((header >> 1) & 0x3f, 32..=34),
            _ => matches!(header & 0x1f, 7 | 8),
        }
    }

    /// True when `nal` is an access unit delimiter of this codec (which must stay the
    /// first NAL unit of its access unit, before any parameter sets put in front).
    pub fn is_delimiter(&self, nal: &[u8]) -> bool {
        let Some(&header) = nal.first() else {
            return false;
        };
        match self.codec {
            Codec::H265 => (header >> 1) & 0x3f == media::codec::aud::H265_AUD,
            _ => header & 0x1f == media::codec::aud::H264_AUD,
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let head = self.0.get(..n).ok_or(RecordError::Truncated)?;
        self.0 = &self.0[n..];
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, RecordError> {
        Ok(self.bytes(1)?[0])
    }

    fn u16(&mut self) -> Result<usize, RecordError> {
        let b = self.bytes(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// One `u16 length + NAL` entry.
    fn nal(&mut self) -> Result<&'a [u8], RecordError> {
        let len = self.u16()?;
        self.bytes(len)
    }
}

fn length_size(byte: u8) -> Result<usize, RecordError> {
    match usize::from(byte & 0x03) + 1 {
        3 => Err(RecordError::LengthSize(3)),
        n => Ok(n),
    }
}

fn push_annexb(nal: &[u8], out: &mut Vec<u8>) {
    if !nal.is_empty() {
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(nal);
    }
}

/// Reads an AVCDecoderConfigurationRecord.
///
/// # Errors
/// A [`RecordError`] when the record is truncated, of another version, or has no SPS.
pub fn parse_avcc(record: &[u8]) -> Result<DecoderConfig, RecordError> {
    let mut r = Reader(record);
    let version = r.u8()?;
    if version != 1 {
        return Err(RecordError::Version(version));
    }
    let _profile_compat_level = r.bytes(3)?;
    let nal_length_size = length_size(r.u8()?)?;
    let mut out = Vec::new();
    let num_sps = r.u8()? & 0x1f;
    if num_sps == 0 {
        return Err(RecordError::NoParameterSets);
    }
    for _ in 0..num_sps {
        push_annexb(r.nal()?, &mut out);
    }
    let num_pps = r.u8()?;
    for _ in 0..num_pps {
        push_annexb(r.nal()?, &mut out);
    }
    // High-profile extensions (chroma format, bit depth, SPS extensions) are not needed.
    Ok(DecoderConfig {
        codec: Codec::H264,
        nal_length_size,
        annexb_parameter_sets: out,
    })
}

/// Reads an HEVCDecoderConfigurationRecord; VPS, SPS and PPS arrays are kept in the
/// order VPS, SPS, PPS whatever their order in the record, other arrays (SEI) dropped.
///
/// # Errors
/// A [`RecordError`] when the record is truncated, of another version, or has no
/// parameter sets.
pub fn parse_hvcc(record: &[u8]) -> Result<DecoderConfig, RecordError> {
    let mut r = Reader(record);
    let version = r.u8()?;
    if version != 1 {
        return Err(RecordError::Version(version));
    }
    // profile/tier/level (12), segmentation (2), parallelism, chroma, bit depths (3),
    // frame rate (2): 20 bytes, then the length size byte.
    let _ = r.bytes(20)?;
    let nal_length_size = length_size(r.u8()?)?;
    let num_arrays = r.u8()?;
    let mut sets: [Vec<u8>; 3] = Default::default();
    for _ in 0..num_arrays {
        let nal_type = r.u8()? & 0x3f;
        let count = r.u16()?;
        for _ in 0..count {
            let nal = r.nal()?;
            if let Some(slot) = nal_type
                .checked_sub(32)
                .and_then(|i| sets.get_mut(usize::from(i)))
            {
                push_annexb(nal, slot);
            }
        }
    }
    let out = sets.concat();
    if out.is_empty() {
        return Err(RecordError::NoParameterSets);
    }
    Ok(DecoderConfig {
        codec: Codec::H265,
        nal_length_size,
        annexb_parameter_sets: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avcc_with_lying_counts_is_truncated() {
        // Claims 31 SPS but carries one.
        let record = [1, 0x64, 0, 0x1f, 0xff, 0xff, 0, 2, 0x67, 0x64];
        assert_eq!(parse_avcc(&record), Err(RecordError::Truncated));
        // SPS length 0x0100 with two bytes present.
        let record = [1, 0x64, 0, 0x1f, 0xff, 0xe1, 1, 0, 0x67, 0x64];
        assert_eq!(parse_avcc(&record), Err(RecordError::Truncated));
        assert_eq!(parse_avcc(&[2]), Err(RecordError::Version(2)));
        assert_eq!(parse_avcc(&[]), Err(RecordError::Truncated));
    }

    #[test]
    fn hvcc_orders_parameter_sets() {
        let mut record = vec![1];
        record.extend_from_slice(&[0; 20]);
        record.push(0xf3); // 4-byte lengths
        record.push(3);
        // PPS first, then VPS, then SPS: output must be VPS, SPS, PPS.
        for (ty, nal) in [(34u8, [0x44, 0x01]), (32, [0x40, 0x01]), (33, [0x42, 0x01])] {
            record.extend_from_slice(&[0x80 | ty, 0, 1, 0, 2]);
            record.extend_from_slice(&nal);
        }
        let config = parse_hvcc(&record).unwrap();
        assert_eq!(config.nal_length_size, 4);
        assert_eq!(
            config.annexb_parameter_sets,
            [0, 0, 0, 1, 0x40, 1, 0, 0, 0, 1, 0x42, 1, 0, 0, 0, 1, 0x44, 1]
        );
    }
}
