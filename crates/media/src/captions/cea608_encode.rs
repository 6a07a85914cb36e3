//! Writing CEA-608 channel 1 (the inverse of [`super::cea608`]): the byte pairs of a
//! pop-on caption and of its erasure, and an access unit with them in an SEI. Used by
//! the demo's built-in source, which carries 608 captions as an encoder would, and by
//! tests.

use super::cea608::with_parity;
use super::sei::h264_cc_sei;

/// The longest caption row.
pub const ROW_CHARS: usize = 32;

/// A control code of channel 1, sent twice as the standard asks (a receiver that lost
/// one still acts; one that got both acts once).
fn control(second: u8) -> [[u8; 2]; 2] {
    let pair = [with_parity(0x14), with_parity(second)];
    [pair, pair]
}

/// The pairs that show `text` as a pop-on caption on the bottom row: resume caption
/// loading, erase the hidden memory, place the cursor on row 15, the characters (plain
/// ASCII letters, digits and punctuation; anything else becomes a space; at most
/// [`ROW_CHARS`]), then end of caption, which shows it.
pub fn pop_on(text: &str) -> Vec<[u8; 2]> {
    let mut pairs = Vec::with_capacity(10 + ROW_CHARS / 2);
    pairs.extend(control(0x20)); // RCL
    pairs.extend(control(0x2e)); // ENM
    let pac = [with_parity(0x14), with_parity(0x60)]; // row 15, white, column 0
    pairs.extend([pac, pac]);
    let chars: Vec<u8> = text
        .chars()
        .take(ROW_CHARS)
        .map(|c| match c {
            ' '..='~' if !matches!(c, '*' | '\\' | '^' | '_' | '`' | '{' | '|' | '}' | '~') => {
                c as u8
            }
            _ => b' ',
        })
        .collect();
    for chunk in chars.chunks(2) {
        let second = chunk.get(1).copied().unwrap_or(0);
        pairs.push([with_parity(chunk[0]), with_parity(second)]);
    }
    pairs.extend(control(0x2f)); // EOC
    pairs
}

/// The pairs that take the caption on screen down (erase displayed memory).
pub fn erase_displayed() -> Vec<[u8; 2]> {
    control(0x2c).to_vec()
}

/// An H.264 access unit (Annex B) with an SEI carrying `pairs` inserted before its
/// first slice, where an encoder puts it.
pub fn h264_with_cc(access_unit: &[u8], pairs: &[[u8; 2]]) -> Vec<u8> {
    let sei = h264_cc_sei(pairs);
    let mut out = Vec::with_capacity(access_unit.len() + sei.len());
    let slice = first_slice(access_unit).unwrap_or(access_unit.len());
    out.extend_from_slice(&access_unit[..slice]);
    out.extend_from_slice(&sei);
    out.extend_from_slice(&access_unit[slice..]);
    out
}

/// Where the start code of the first slice NAL unit (types 1–5) begins.
fn first_slice(data: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 3 < data.len() {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
            let kind = data[i + 3] & 0x1f;
            if (1..=5).contains(&kind) {
                let start = if i > 0 && data[i - 1] == 0 { i - 1 } else { i };
                return Some(start);
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captions::cea608::Cea608Decoder;
    use crate::captions::sei::{cc_pairs, CcCodec};

    #[test]
    fn a_pop_on_caption_is_shown_then_erased_through_the_decoder() {
        let au = [0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x65, 0x88, 0x84];
        let shown = h264_with_cc(&au, &pop_on("Hello, 608 world!"));
        assert_eq!(
            &shown[..6],
            &au[..6],
            "the access unit delimiter stays first"
        );
        assert!(shown.ends_with(&au[6..]), "the slice stays last");
        let mut decoder = Cea608Decoder::new();
        let mut screens = Vec::new();
        for au in [shown, h264_with_cc(&au, &erase_displayed())] {
            for pair in cc_pairs(CcCodec::H264, &au) {
                screens.extend(decoder.push(pair));
            }
        }
        assert_eq!(screens, ["Hello, 608 world!".to_owned(), String::new()]);
    }
}
