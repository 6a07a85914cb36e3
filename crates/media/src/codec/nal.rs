//! Annex B byte streams: splitting at start codes, and NAL unit types.

/// The NAL units of an Annex B byte stream, without their start codes.
///
/// Accepts 3- and 4-byte start codes; bytes before the first start code are skipped,
/// and trailing zero bytes of a NAL unit (trailing_zero_8bits) are trimmed.
pub fn annexb_nals(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = match find_start_code(data) {
        Some((_, end)) => data.get(end..).unwrap_or_default(),
        None => &[],
    };
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let (nal, next) = match find_start_code(rest) {
            Some((start, end)) => (&rest[..start], &rest[end..]),
            None => (rest, &[][..]),
        };
        rest = next;
        let len = nal.len() - nal.iter().rev().take_while(|&&b| b == 0).count();
        if len > 0 {
            return Some(&nal[..len]);
        }
    })
}

/// Finds the first `00 00 01`; returns where it starts and where the NAL after it starts.
fn find_start_code(data: &[u8]) -> Option<(usize, usize)> {
    let pos = data.windows(3).position(|w| w == [0, 0, 1])?;
    Some((pos, pos + 3))
}

/// The nal_unit_type of an H.264 NAL unit (5 bits of the first byte).
pub fn h264_type(nal: &[u8]) -> Option<u8> {
    nal.first().map(|b| b & 0x1f)
}

/// The nal_unit_type of an H.265 NAL unit (6 bits of the first byte).
pub fn h265_type(nal: &[u8]) -> Option<u8> {
    nal.first().map(|b| (b >> 1) & 0x3f)
}

/// H.264 nal_unit_type of an IDR slice.
pub const H264_IDR: u8 = 5;
/// H.264 nal_unit_type of a sequence parameter set.
pub const H264_SPS: u8 = 7;
/// H.265 nal_unit_types of IRAP pictures (BLA, IDR, CRA and reserved IRAP).
pub const H265_IRAP: std::ops::RangeInclusive<u8> = 16..=23;
/// H.265 nal_unit_type of a sequence parameter set.
pub const H265_SPS: u8 = 33;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_three_and_four_byte_start_codes() {
        let data = [
            9, 0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 0, 0,
        ];
        let nals: Vec<&[u8]> = annexb_nals(&data).collect();
        assert_eq!(nals, vec![&[0x67, 1, 2][..], &[0x68, 3][..], &[0x65][..]]);
        assert_eq!(annexb_nals(&[1, 2, 3]).count(), 0);
    }

    proptest! {
        #[test]
        fn nals_round_trip(nals in proptest::collection::vec(
            proptest::collection::vec(1u8..=255, 1..50), 0..8)) {
            let mut data = Vec::new();
            for n in &nals {
                data.extend([0, 0, 0, 1]);
                data.extend(n);
            }
            let got: Vec<Vec<u8>> = annexb_nals(&data).map(<[u8]>::to_vec).collect();
            prop_assert_eq!(got, nals);
        }
    }
}
