//! Fuzzes what a node reads of an upstream's captions: caption blocks (the bytes as a
//! block, and as a block's body framed with a right header and CRC so the body's rules
//! are reached), blocks reassembled from TS payloads in arbitrary pieces, a segment's
//! block, and the caption API's text and language rules.
//!
//! A block that parses must encode back to the same bytes (one spelling per block) and
//! render WebVTT whose every cue ends after it starts; nothing may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use media::captions::block::CaptionBlock;
use media::captions::text::{is_language_tag, normalize_text};
use media::captions::webvtt::{segment_vtt, transcript_cues, transcript_vtt};
use media::ts::captions::BlockAssembler;

fuzz_target!(|data: &[u8]| {
    check_block(&framed(data));
    check_block(data);
    check_payloads(data);
    check_text(data);
});

/// `body` framed as a block of MSN 7: header, length and CRC made right.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = b"BRDYCC\x01\x00".to_vec();
    out.extend_from_slice(&7u64.to_be_bytes());
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(body);
    let crc = media::ts::psi::crc32_mpeg2(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn check_block(data: &[u8]) {
    let Ok(block) = CaptionBlock::parse(data) else {
        return;
    };
    let total = CaptionBlock::stated_len(data).expect("a parsed block states its length");
    assert_eq!(block.encode(), &data[..total], "one spelling per block");
    for track in &block.tracks {
        let vtt = segment_vtt(Some(&block), &track.id, block.msn);
        assert!(vtt.starts_with("WEBVTT\n"));
        let cues = transcript_cues([&block], &track.id, 0, u64::MAX);
        assert!(cues.iter().all(|c| c.end_ts > c.start_ts));
        let _ = transcript_vtt(&cues, 0);
    }
}

/// The bytes as TS payloads: the first byte picks the piece size.
fn check_payloads(data: &[u8]) {
    let Some((&size, rest)) = data.split_first() else {
        return;
    };
    let size = usize::from(size % 184).max(1);
    let mut assembler = BlockAssembler::default();
    for (i, piece) in rest.chunks(size).enumerate() {
        if let Ok(Some(bytes)) = assembler.push(i % 7 == 0, piece) {
            let _ = CaptionBlock::parse(&bytes);
        }
    }
    let _ = media::ts::captions::segment_block(rest);
}

fn check_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(normal) = normalize_text(text) {
        assert_eq!(normalize_text(&normal).as_deref(), Ok(normal.as_str()));
    }
    let _ = is_language_tag(text);
}
