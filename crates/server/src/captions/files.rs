//! The caption files a node keeps with its segments and windows: a segment's WebVTT
//! files per track ([`SegmentCaptions`]) and a window's subtitle media playlists
//! ([`SubtitlePlaylist`]). Written once when a segment or window is stored, so serving
//! them is a clone of bytes.

use std::sync::Arc;

use bytes::Bytes;
use media::captions::webvtt::segment_vtt;
use media::captions::{CaptionBlock, CaptionTrack};

/// A segment's caption block with its WebVTT file per track, written once.
#[derive(Debug)]
pub struct SegmentCaptions {
    /// The block, as the segment carries it.
    pub block: Arc<CaptionBlock>,
    files: Vec<Bytes>,
}

impl SegmentCaptions {
    /// The caption view of a segment's TS bytes; `None` without a block (or with a
    /// damaged one: its segment then has empty subtitle files).
    pub fn of(data: &Bytes) -> Option<Self> {
        let block = media::captions::segment_block(data).ok().flatten()?;
        let start = media::fmp4::marker_of(data)?.start_ts;
        let files = block
            .tracks
            .iter()
            .map(|t| Bytes::from(segment_vtt(Some(&block), &t.id, start)))
            .collect();
        Some(Self {
            block: Arc::new(block),
            files,
        })
    }

    /// The WebVTT file of track `id`, if the block has the track.
    pub fn file(&self, id: &str) -> Option<Bytes> {
        let (index, _) = self.block.track(id)?;
        self.files.get(usize::from(index)).cloned()
    }
}

/// One subtitle track of a window with its rendered media playlist.
#[derive(Debug, Clone)]
pub struct SubtitlePlaylist {
    /// The track.
    pub track: CaptionTrack,
    /// Its media playlist (`sub-{id}.m3u8`).
    pub playlist: Bytes,
}
