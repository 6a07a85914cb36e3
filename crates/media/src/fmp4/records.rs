//! Decoder configuration records: `avcC` and `hvcC` (ISO/IEC 14496-15) and `esds`
//! (ISO/IEC 14496-1 descriptors around the AudioSpecificConfig).

use bytes::BufMut;

use super::bmff::{close, open, open_full};
use super::config::{AudioTrack, VideoTrack};

/// Parameter-set NAL units longer than a 16-bit length cannot be listed; they do not
/// occur (an SPS is tens of bytes), so such a set is left out of the record.
fn fits(nal: &[u8]) -> bool {
    u16::try_from(nal.len()).is_ok()
}

/// Writes `avcC` (AVCDecoderConfigurationRecord) with 4-byte NAL lengths.
pub(crate) fn avcc(out: &mut Vec<u8>, video: &VideoTrack) {
    let at = open(out, b"avcC");
    let first = video.sps.first().map(|b| &b[..]).unwrap_or_default();
    let field = |i: usize| first.get(i).copied().unwrap_or(0);
    let profile_idc = field(1);
    out.put_u8(1); // configurationVersion
    out.put_u8(profile_idc);
    out.put_u8(field(2)); // profile_compatibility
    out.put_u8(field(3)); // AVCLevelIndication
    out.put_u8(0xfc | 3); // lengthSizeMinusOne = 3
    let sps: Vec<&[u8]> = video
        .sps
        .iter()
        .map(|b| &b[..])
        .filter(|n| fits(n))
        .take(31)
        .collect();
    out.put_u8(0xe0 | sps.len() as u8);
    for n in sps {
        out.put_u16(n.len() as u16);
        out.put_slice(n);
    }
    let pps: Vec<&[u8]> = video
        .pps
        .iter()
        .map(|b| &b[..])
        .filter(|n| fits(n))
        .take(255)
        .collect();
    out.put_u8(pps.len() as u8);
    for n in pps {
        out.put_u16(n.len() as u16);
        out.put_slice(n);
    }
    if matches!(profile_idc, 100 | 110 | 122 | 144) {
        let f = &video.sps_fields;
        out.put_u8(0xfc | f.chroma_format_idc);
        out.put_u8(0xf8 | f.bit_depth_luma_minus8);
        out.put_u8(0xf8 | f.bit_depth_chroma_minus8);
        out.put_u8(0); // numOfSequenceParameterSetExt
    }
    close(out, at);
}

/// Writes `hvcC` (HEVCDecoderConfigurationRecord) with 4-byte NAL lengths and the VPS,
/// SPS and PPS arrays marked complete (`hvc1`: no parameter sets in band).
pub(crate) fn hvcc(out: &mut Vec<u8>, video: &VideoTrack) {
    let at = open(out, b"hvcC");
    let f = &video.sps_fields;
    let ptl = f.ptl.unwrap_or(crate::codec::h265::ProfileTierLevel {
        profile_space: 0,
        high_tier: false,
        profile_idc: 0,
        compatibility_flags: 0,
        constraint_flags: [0; 6],
        level_idc: 0,
    });
    out.put_u8(1); // configurationVersion
    out.put_u8(
        (ptl.profile_space << 6) | (u8::from(ptl.high_tier) << 5) | (ptl.profile_idc & 0x1f),
    );
    out.put_u32(ptl.compatibility_flags);
    out.put_slice(&ptl.constraint_flags);
    out.put_u8(ptl.level_idc);
    out.put_u16(0xf000); // min_spatial_segmentation_idc = 0
    out.put_u8(0xfc); // parallelismType = 0 (unknown)
    out.put_u8(0xfc | f.chroma_format_idc);
    out.put_u8(0xf8 | f.bit_depth_luma_minus8);
    out.put_u8(0xf8 | f.bit_depth_chroma_minus8);
    out.put_u16(0); // avgFrameRate: unspecified
                    // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3.
    out.put_u8(((f.temporal_layers & 0x07) << 3) | (u8::from(f.temporal_id_nested) << 2) | 3);
    let arrays = [(32u8, &video.vps), (33, &video.sps), (34, &video.pps)];
    out.put_u8(arrays.len() as u8);
    for (nal_type, nals) in arrays {
        out.put_u8(0x80 | nal_type); // array_completeness = 1
        let nals: Vec<&[u8]> = nals.iter().map(|b| &b[..]).filter(|n| fits(n)).collect();
        out.put_u16(u16::try_from(nals.len()).unwrap_or(u16::MAX));
        for n in nals.iter().take(usize::from(u16::MAX)) {
            out.put_u16(n.len() as u16);
            out.put_slice(n);
        }
    }
    close(out, at);
}

/// Writes `esds`: ES_Descriptor → DecoderConfigDescriptor (MPEG-4 audio) →
/// DecoderSpecificInfo (the AudioSpecificConfig), and the SLConfigDescriptor.
pub(crate) fn esds(out: &mut Vec<u8>, audio: &AudioTrack) {
    let at = open_full(out, b"esds", 0, 0);
    let asc = audio.audio_specific_config();
    let dsi_len = asc.len() as u8;
    let dcd_len = 13 + 2 + dsi_len;
    let es_len = 3 + 2 + dcd_len + 3;
    out.put_slice(&[0x03, es_len, 0x00, 0x00, 0x00]); // ES_ID 0, no flags
    out.put_slice(&[0x04, dcd_len, 0x40, 0x15]); // MPEG-4 audio, AudioStream
    out.put_slice(&[0x00, 0x00, 0x00]); // bufferSizeDB
    out.put_u32(0); // maxBitrate: unknown
    out.put_u32(0); // avgBitrate: unknown (variable)
    out.put_slice(&[0x05, dsi_len]);
    out.put_slice(&asc);
    out.put_slice(&[0x06, 0x01, 0x02]); // SLConfigDescriptor: predefined MP4
    close(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::aac::AudioSpecificConfig;

    #[test]
    fn esds_nests_the_audio_specific_config() {
        let audio = AudioTrack {
            config: AudioSpecificConfig::parse(&[0x12, 0x10]).unwrap(),
        };
        let mut out = Vec::new();
        esds(&mut out, &audio);
        // 12 header + ES(2+3) + DCD(2+13) + DSI(2+2) + SL(3)
        assert_eq!(out.len(), 39);
        assert_eq!(&out[..4], &39u32.to_be_bytes());
        assert_eq!(&out[4..8], b"esds");
        assert_eq!(out[12..14], [0x03, 25]);
        assert_eq!(out[17..19], [0x04, 17]);
        assert_eq!(&out[32..36], &[0x05, 2, 0x12, 0x10]);
        assert_eq!(&out[36..], &[0x06, 0x01, 0x02]);
    }
}
