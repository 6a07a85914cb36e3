//! Fuzzes the CEA-608 path with arbitrary bytes: SEI extraction from an access unit
//! (H.264 and H.265), then the decoder on every pair found and on the raw bytes taken
//! as pairs. The decoder's screen is 15 rows of 32 characters: no output may exceed it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use media::captions::cea608::Cea608Decoder;
use media::captions::sei::{cc_pairs, CcCodec};

fuzz_target!(|data: &[u8]| {
    let mut decoder = Cea608Decoder::new();
    let check = |text: Option<String>| {
        if let Some(text) = text {
            assert!(text.lines().count() <= 15, "{text:?}");
            assert!(text.lines().all(|l| l.chars().count() <= 32), "{text:?}");
        }
    };
    for codec in [CcCodec::H264, CcCodec::H265] {
        for pair in cc_pairs(codec, data) {
            check(decoder.push(pair));
        }
    }
    for pair in data.chunks_exact(2) {
        check(decoder.push([pair[0], pair[1]]));
    }
});
