//! The caption files a node keeps with its segments and windows: a segment's WebVTT
//! files per track ([`SegmentCaptions`]) and a window's subtitle media playlists
//! ([`SubtitlePlaylist`]). Written once when a segment or window is stored, so serving
//! them is a clone of bytes. Transcripts of closed periods are kept too
//! ([`TranscriptCache`]): reading one costs a read per archived segment.

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
    /// The caption view of a segment whose block is `block` and whose first frame is
    /// at `start` (extended 90 kHz).
    pub fn new(block: Arc<CaptionBlock>, start: u64) -> Self {
        let files = block
            .tracks
            .iter()
            .map(|t| Bytes::from(segment_vtt(Some(&block), &t.id, start)))
            .collect();
        Self { block, files }
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
    pub playlist: media::manifest::Manifest,
}

/// Most transcripts kept, and most bytes they may hold together.
const MAX_TRANSCRIPTS: usize = 64;
const MAX_TRANSCRIPT_BYTES: usize = 16 * 1024 * 1024;

/// What identifies a transcript: the archive, the track asked for (`None`: the first),
/// the period, and the archived segments it was made from (first and last MSN), so
/// retention trimming the period or a late segment makes it another transcript.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TranscriptKey {
    /// The archive's directory.
    pub archive: std::path::PathBuf,
    /// The track asked for.
    pub track: Option<String>,
    /// The period, Unix ms.
    pub period: (i64, i64),
    /// The first and last MSN of the period's archived segments.
    pub msns: (u64, u64),
}

/// Transcripts of closed periods (recorded past their end), kept so a period asked for
/// again — a transcript link shared with many people — is not read again from the
/// archive. Bounded: past `MAX_TRANSCRIPTS` or 16 MiB it starts again empty.
#[derive(Debug, Default)]
pub struct TranscriptCache {
    kept: std::sync::Mutex<(std::collections::HashMap<TranscriptKey, Bytes>, usize)>,
}

impl TranscriptCache {
    /// The process's cache (keys name their archive, so nodes in one process share it
    /// without mixing).
    pub fn shared() -> &'static TranscriptCache {
        static CACHE: std::sync::OnceLock<TranscriptCache> = std::sync::OnceLock::new();
        CACHE.get_or_init(TranscriptCache::default)
    }

    /// The transcript of `key`, when kept.
    pub fn get(&self, key: &TranscriptKey) -> Option<Bytes> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.get(key).cloned()
    }

    /// Keeps a transcript (not one larger than the whole budget).
    pub fn put(&self, key: TranscriptKey, text: Bytes) {
        if text.len() > MAX_TRANSCRIPT_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let (map, bytes) = &mut *kept;
        if map.len() >= MAX_TRANSCRIPTS || *bytes + text.len() > MAX_TRANSCRIPT_BYTES {
            map.clear();
            *bytes = 0;
        }
        *bytes += text.len();
        if let Some(old) = map.insert(key, text) {
            *bytes -= old.len();
        }
    }
}
