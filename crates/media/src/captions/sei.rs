//! CEA-608 byte pairs carried in video: the ATSC A/53 `cc_data` ("GA94") inside
//! `user_data_registered_itu_t_t35` SEI messages of H.264 and H.265 access units.
//!
//! Only NTSC field 1 pairs (cc_type 0: data channels CC1/CC2) are returned; CEA-708
//! packets and field 2 are skipped. Parsing is total: damaged input yields the pairs
//! read before the damage, and the work per access unit is bounded.

use crate::codec::bits::rbsp;
use crate::codec::nal::{annexb_nals, h264_type, h265_type};

/// The video codec of an access unit, which decides how SEI NAL units are recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcCodec {
    /// H.264: SEI is nal_unit_type 6, behind a 1-byte NAL header.
    H264,
    /// H.265: PREFIX_SEI is nal_unit_type 39, behind a 2-byte NAL header.
    H265,
}

/// The most pairs taken from one access unit: a frame carries at most a handful
/// (A/53 allots 2 field-1 pairs per frame at 29.97 Hz), so more is junk or an attack.
pub const MAX_PAIRS_PER_AU: usize = 64;

const H264_SEI: u8 = 6;
const H265_PREFIX_SEI: u8 = 39;
const PAYLOAD_USER_DATA_REGISTERED: usize = 4;
/// itu_t_t35_country_code (USA), provider code (ATSC), user_identifier, type (cc_data).
const GA94_HEADER: [u8; 8] = [0xb5, 0x00, 0x31, b'G', b'A', b'9', b'4', 0x03];
/// cc_count is a 5-bit field.
const MAX_CC_COUNT: usize = 31;

/// The field-1 (CC1/CC2) byte pairs of every GA94 cc_data message in `access_unit`
/// (Annex B), in stream order, with parity bits as carried.
///
/// Only triplets with cc_valid = 1 and cc_type = 0 are returned. Malformed input gives
/// the pairs read before the damage; never more than [`MAX_PAIRS_PER_AU`].
pub fn cc_pairs(codec: CcCodec, access_unit: &[u8]) -> Vec<[u8; 2]> {
    let mut out = Vec::new();
    for nal in annexb_nals(access_unit) {
        let header_len = match codec {
            CcCodec::H264 if h264_type(nal) == Some(H264_SEI) => 1,
            CcCodec::H265 if h265_type(nal) == Some(H265_PREFIX_SEI) => 2,
            _ => continue,
        };
        let Some(body) = nal.get(header_len..) else {
            continue;
        };
        sei_messages(&rbsp(body), &mut out);
        if out.len() >= MAX_PAIRS_PER_AU {
            break;
        }
    }
    out.truncate(MAX_PAIRS_PER_AU);
    out
}

/// Walks the sei_message()s of an SEI RBSP, adding the pairs of each GA94 message.
fn sei_messages(rbsp: &[u8], out: &mut Vec<[u8; 2]>) {
    let mut pos = 0;
    // A message needs at least a type and a size byte; a lone last byte is the
    // rbsp_trailing_bits (0x80).
    while pos + 1 < rbsp.len() && out.len() < MAX_PAIRS_PER_AU {
        let Some(payload_type) = read_ff_coded(rbsp, &mut pos) else {
            return;
        };
        let Some(payload_size) = read_ff_coded(rbsp, &mut pos) else {
            return;
        };
        let end = pos.saturating_add(payload_size);
        // A truncated payload is still read for its complete triplets.
        let payload = rbsp.get(pos..end.min(rbsp.len())).unwrap_or_default();
        if payload_type == PAYLOAD_USER_DATA_REGISTERED {
            ga94_pairs(payload, out);
        }
        if end > rbsp.len() {
            return;
        }
        pos = end;
    }
}

/// Reads a payload type or size: 0xFF bytes each add 255, the first other byte ends it.
fn read_ff_coded(data: &[u8], pos: &mut usize) -> Option<usize> {
    let mut value = 0usize;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value = value.saturating_add(usize::from(byte));
        if byte != 0xff {
            return Some(value);
        }
    }
}

/// Adds the valid field-1 pairs of a user_data_registered_itu_t_t35 payload, if it is
/// ATSC cc_data (country 0xB5, provider 0x0031, "GA94", type 0x03).
fn ga94_pairs(payload: &[u8], out: &mut Vec<[u8; 2]>) {
    let Some(cc_data) = payload.strip_prefix(&GA94_HEADER[..]) else {
        return;
    };
    // reserved(1) process_cc_data_flag(1) zero_bit(1) cc_count(5), then em_data (8).
    let Some(&flags) = cc_data.first() else {
        return;
    };
    if flags & 0x40 == 0 {
        return;
    }
    let cc_count = usize::from(flags & 0x1f);
    let triplets = cc_data.get(2..).unwrap_or_default();
    for t in triplets.chunks_exact(3).take(cc_count) {
        if out.len() >= MAX_PAIRS_PER_AU {
            return;
        }
        // marker_bits(5) cc_valid(1) cc_type(2), cc_data_1, cc_data_2.
        let cc_valid = t[0] & 0x04 != 0;
        let cc_type = t[0] & 0x03;
        if cc_valid && cc_type == 0 {
            out.push([t[1], t[2]]);
        }
    }
}

/// One H.264 SEI NAL unit (with a 4-byte start code) carrying `pairs` as valid field-1
/// triplets of GA94 cc_data: the inverse of [`cc_pairs`], for tests and tools.
///
/// cc_count is 5 bits, so more than 31 pairs are split over several cc_data messages
/// in the same NAL unit. Emulation prevention is applied and the RBSP trailing bits end it.
pub fn h264_cc_sei(pairs: &[[u8; 2]]) -> Vec<u8> {
    let mut sei = Vec::new();
    let mut chunks = pairs.chunks(MAX_CC_COUNT).peekable();
    if chunks.peek().is_none() {
        ga94_message(&[], &mut sei);
    }
    for chunk in chunks {
        ga94_message(chunk, &mut sei);
    }
    sei.push(0x80); // rbsp_stop_one_bit and alignment zero bits
    let mut nal = vec![0, 0, 0, 1, H264_SEI];
    escape(&sei, &mut nal);
    nal
}

/// Appends one sei_message() of payload type 4 holding `pairs` (at most 31) as cc_data.
fn ga94_message(pairs: &[[u8; 2]], sei: &mut Vec<u8>) {
    debug_assert!(pairs.len() <= MAX_CC_COUNT, "cc_count is 5 bits");
    let mut payload = GA94_HEADER.to_vec();
    // reserved 1, process_cc_data_flag 1, zero_bit 0, cc_count; em_data 0xFF.
    payload.push(0xc0 | (pairs.len() as u8 & 0x1f));
    payload.push(0xff);
    for pair in pairs {
        // marker_bits 11111, cc_valid 1, cc_type 00.
        payload.extend([0xfc, pair[0], pair[1]]);
    }
    payload.push(0xff); // marker_bits
    write_ff_coded(PAYLOAD_USER_DATA_REGISTERED, sei);
    write_ff_coded(payload.len(), sei);
    sei.extend(payload);
}

/// Writes a payload type or size as 0xFF bytes plus a final byte.
fn write_ff_coded(mut value: usize, out: &mut Vec<u8>) {
    while value >= 0xff {
        out.push(0xff);
        value -= 0xff;
    }
    out.push(value as u8);
}

/// Appends `rbsp` with an emulation-prevention 0x03 after every `00 00` that is
/// followed by a byte of 0x03 or less, so no start code appears inside the NAL unit.
fn escape(rbsp: &[u8], out: &mut Vec<u8>) {
    let mut zeros = 0;
    for &b in rbsp {
        if zeros >= 2 && b <= 0x03 {
            out.push(0x03);
            zeros = 0;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        out.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SEI NAL unit (start code included) from a raw RBSP, escaped.
    fn sei_nal(header: &[u8], rbsp: &[u8]) -> Vec<u8> {
        let mut nal = vec![0, 0, 0, 1];
        nal.extend(header);
        escape(rbsp, &mut nal);
        nal
    }

    /// A GA94 payload with explicit triplets (byte 0 of each given whole).
    fn ga94_payload(triplets: &[[u8; 3]]) -> Vec<u8> {
        let mut p = GA94_HEADER.to_vec();
        p.push(0xc0 | triplets.len() as u8);
        p.push(0xff);
        for t in triplets {
            p.extend(t);
        }
        p.push(0xff);
        p
    }

    fn message(payload_type: u8, payload: &[u8]) -> Vec<u8> {
        let mut m = vec![payload_type, payload.len() as u8];
        m.extend(payload);
        m
    }

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn round_trip_h264_and_h265() {
        let pairs = [[0x94, 0x20], [0x94, 0x20], [0xc8, 0xe9], [0x80, 0x80]];
        let sei = h264_cc_sei(&pairs);
        assert_eq!(&sei[..5], &[0, 0, 0, 1, 6]);
        assert_eq!(sei.last(), Some(&0x80));
        // Inside an access unit, next to a slice.
        let mut au = vec![0, 0, 0, 1, 0x09, 0xf0];
        au.extend(&sei);
        au.extend([0, 0, 1, 0x65, 0x88, 0x84]);
        assert_eq!(cc_pairs(CcCodec::H264, &au), pairs);
        assert!(cc_pairs(CcCodec::H265, &au).is_empty());

        // The same SEI behind an H.265 PREFIX_SEI header (type 39: 0x4E 0x01).
        let mut h265 = vec![0, 0, 0, 1, 0x4e, 0x01];
        h265.extend(&sei[5..]);
        assert_eq!(cc_pairs(CcCodec::H265, &h265), pairs);
        assert!(cc_pairs(CcCodec::H264, &h265).is_empty());

        assert!(cc_pairs(CcCodec::H264, &h264_cc_sei(&[])).is_empty());
    }

    #[test]
    fn many_pairs_split_over_messages_and_bounded() {
        let pairs: Vec<[u8; 2]> = (0..40u8).map(|i| [0x80 | i, i]).collect();
        assert_eq!(cc_pairs(CcCodec::H264, &h264_cc_sei(&pairs)), pairs);
        let many: Vec<[u8; 2]> = (0..100u8).map(|i| [i, i]).collect();
        let got = cc_pairs(CcCodec::H264, &h264_cc_sei(&many));
        assert_eq!(got, &many[..MAX_PAIRS_PER_AU]);
    }

    #[test]
    fn escape_inserts_and_rbsp_removes_prevention_bytes() {
        let mut out = Vec::new();
        escape(&[0, 0, 0, 0, 0, 1, 0, 0, 4, 0, 0, 3], &mut out);
        assert_eq!(out, [0, 0, 3, 0, 0, 3, 0, 1, 0, 0, 4, 0, 0, 3, 3]);
        let mut state = 0x1234_5678_9abc_def0;
        for _ in 0..2000 {
            let len = (xorshift(&mut state) % 40) as usize;
            let data: Vec<u8> = (0..len).map(|_| (xorshift(&mut state) % 4) as u8).collect();
            let mut escaped = Vec::new();
            escape(&data, &mut escaped);
            assert!(!escaped
                .windows(3)
                .any(|w| w[0] == 0 && w[1] == 0 && w[2] <= 2));
            assert_eq!(rbsp(&escaped), data);
        }
    }

    #[test]
    fn emulation_prevention_is_removed_before_walking_messages() {
        // A zero-filled user_data_unregistered message before the captions: escaped
        // on the wire, its 00 00 03 would shift the next message if not removed.
        let mut rbsp = message(5, &[0; 3]);
        rbsp.extend(message(4, &ga94_payload(&[[0xfc, 0x94, 0x2c]])));
        rbsp.push(0x80);
        let nal = sei_nal(&[6], &rbsp);
        assert!(nal.windows(3).any(|w| w == [0, 0, 3]));
        assert_eq!(cc_pairs(CcCodec::H264, &nal), [[0x94, 0x2c]]);
    }

    #[test]
    fn payload_type_and_size_with_ff_extension() {
        // A 300-byte unregistered message: size coded as FF 2D.
        let mut rbsp = vec![5, 0xff, 45];
        rbsp.extend([0x11; 300]);
        rbsp.extend(message(4, &ga94_payload(&[[0xfc, 0x97, 0x21]])));
        // Payload type 4 + 255 (259: not user data registered) is skipped.
        rbsp.extend([0xff, 4]);
        let other = ga94_payload(&[[0xfc, 1, 1]]);
        rbsp.push(other.len() as u8);
        rbsp.extend(other);
        rbsp.push(0x80);
        assert_eq!(
            cc_pairs(CcCodec::H264, &sei_nal(&[6], &rbsp)),
            [[0x97, 0x21]]
        );
    }

    #[test]
    fn ignores_other_payloads_providers_types_and_invalid_triplets() {
        let wanted = [0xfc, 0xc1, 0xc2];
        let mut rbsp = Vec::new();
        // Not cc_data: AFD ("DTG1"), another provider, another country, user type 4.
        for header in [
            [0xb5, 0x00, 0x31, b'D', b'T', b'G', b'1', 0x03],
            [0xb5, 0x00, 0x2f, b'G', b'A', b'9', b'4', 0x03],
            [0xb4, 0x00, 0x31, b'G', b'A', b'9', b'4', 0x03],
            [0xb5, 0x00, 0x31, b'G', b'A', b'9', b'4', 0x04],
        ] {
            let mut p = ga94_payload(&[wanted]);
            p[..8].copy_from_slice(&header);
            rbsp.extend(message(4, &p));
        }
        // cc_data in a payload type other than 4.
        rbsp.extend(message(5, &ga94_payload(&[wanted])));
        // process_cc_data_flag 0.
        let mut p = ga94_payload(&[wanted]);
        p[8] = 0x81;
        rbsp.extend(message(4, &p));
        // Field 2, DTVCC packets, invalid field 1, then one valid triplet.
        let mixed = [
            [0xfd, 1, 2],
            [0xfe, 3, 4],
            [0xff, 5, 6],
            [0xf8, 7, 8],
            [0xf9, 9, 9],
            wanted,
        ];
        rbsp.extend(message(4, &ga94_payload(&mixed)));
        rbsp.push(0x80);
        assert_eq!(
            cc_pairs(CcCodec::H264, &sei_nal(&[6], &rbsp)),
            [[0xc1, 0xc2]]
        );
        // cc_count smaller than the triplets present: only cc_count are read.
        let mut p = ga94_payload(&[wanted, [0xfc, 0xc3, 0xc4]]);
        p[8] = 0xc1;
        let nal = sei_nal(&[6], &[message(4, &p), vec![0x80]].concat());
        assert_eq!(cc_pairs(CcCodec::H264, &nal), [[0xc1, 0xc2]]);
        // Non-SEI NAL units carrying the same bytes are not looked at.
        let nal = sei_nal(
            &[1],
            &[message(4, &ga94_payload(&[wanted])), vec![0x80]].concat(),
        );
        assert!(cc_pairs(CcCodec::H264, &nal).is_empty());
    }

    #[test]
    fn truncation_at_every_length_gives_a_prefix() {
        let pairs: Vec<[u8; 2]> = (1..=12u8).map(|i| [0x80 | i, i]).collect();
        let mut au = h264_cc_sei(&pairs[..6]);
        au.extend(h264_cc_sei(&pairs[6..]));
        assert_eq!(cc_pairs(CcCodec::H264, &au), pairs);
        for len in 0..au.len() {
            let got = cc_pairs(CcCodec::H264, &au[..len]);
            assert!(pairs.starts_with(&got), "length {len}: {got:?}");
            let h265 = cc_pairs(CcCodec::H265, &au[..len]);
            assert!(h265.is_empty());
        }
    }

    #[test]
    fn random_input_never_panics() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        let base = h264_cc_sei(&[[0x94, 0x20], [0xc1, 0xc2]]);
        for _ in 0..20_000 {
            let mut data = base.clone();
            let flips = xorshift(&mut state) % 6;
            for _ in 0..flips {
                let i = (xorshift(&mut state) as usize) % data.len();
                data[i] = xorshift(&mut state) as u8;
            }
            if xorshift(&mut state).is_multiple_of(4) {
                let len = (xorshift(&mut state) % 64) as usize;
                data = (0..len)
                    .map(|_| xorshift(&mut state) as u8 & 0x87)
                    .collect();
                data.splice(0..0, [0, 0, 1, 6]);
            }
            for codec in [CcCodec::H264, CcCodec::H265] {
                assert!(cc_pairs(codec, &data).len() <= MAX_PAIRS_PER_AU);
            }
        }
    }
}
