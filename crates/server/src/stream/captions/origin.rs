//! The pipeline's part in captions ([`Captioner`]): on the origin, it decodes CEA-608
//! from the source's video, stamps the caption API's cues on the timeline and cuts
//! them with every segment into the segment's caption block; on a node that follows an
//! upstream, it hands each segment the block the upstream cut. Either way the segmenter
//! writes the block into the segment's bytes after the timeline marker, so the relay,
//! the archive and every node downstream carry the same captions.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use media::captions::cea608::Cea608Decoder;
use media::captions::sei::{cc_pairs, CcCodec};
use media::captions::{BookError, CaptionBlock, CaptionBook, MAX_CUE_AHEAD_TICKS};
use media::{Codec, Frame, TimelineMarker, TimelineState, TrackKind};

use super::inbox::{CaptionInbox, CueRefusal, CueRequest, CueTiming, StampedCue};
use super::CaptionCounters;

/// How many upstream blocks wait for their segment at most (a segment is written a
/// few markers after its own at worst).
const MAX_UPSTREAM_BLOCKS: usize = 16;

/// See the module docs.
#[derive(Debug)]
pub struct Captioner {
    book: CaptionBook,
    decoder: Cea608Decoder,
    cc_language: String,
    last_ext: Option<u64>,
    upstream: VecDeque<CaptionBlock>,
}

impl Captioner {
    /// A captioner whose decoded 608 track is labelled `cc_language`.
    pub fn new(cc_language: impl Into<String>) -> Self {
        Self {
            book: CaptionBook::new(),
            decoder: Cea608Decoder::new(),
            cc_language: cc_language.into(),
            last_ext: None,
            upstream: VecDeque::new(),
        }
    }

    /// Takes one frame in: on the origin (`state` is the open segment's, `following`
    /// false) its 608 captions are decoded and the inbox's cues are stamped at its time.
    pub fn frame(
        &mut self,
        frame: &Frame,
        state: Option<TimelineState>,
        following: bool,
        inbox: &CaptionInbox,
        counters: &CaptionCounters,
    ) {
        let reference = self
            .last_ext
            .or_else(|| state.map(|s| (s.wraps << 33) | (frame.pts & media::PTS_MASK)));
        let ext = media::segmenter::unwrap_ts(frame.pts, reference);
        self.last_ext = Some(ext);
        let requests = inbox.take();
        if following {
            for request in requests {
                refuse(request, CueRefusal::NotOrigin, counters);
            }
            return;
        }
        if frame.kind() == TrackKind::Video {
            self.decode_608(frame, ext, counters);
        }
        for request in requests {
            self.stamp(request, ext, state, counters);
        }
    }

    fn decode_608(&mut self, frame: &Frame, ext: u64, counters: &CaptionCounters) {
        let codec = match frame.codec {
            Codec::H264 => CcCodec::H264,
            Codec::H265 => CcCodec::H265,
            _ => return,
        };
        for pair in cc_pairs(codec, &frame.data) {
            counters.cc_pairs.fetch_add(1, Ordering::Relaxed);
            if let Some(text) = self.decoder.push(pair) {
                self.book.show_608(ext, text, &self.cc_language);
            }
        }
    }

    fn stamp(
        &mut self,
        request: CueRequest,
        live_ext: u64,
        state: Option<TimelineState>,
        counters: &CaptionCounters,
    ) {
        let Some(state) = state else {
            return refuse(request, CueRefusal::Past, counters);
        };
        let start = match request.timing {
            CueTiming::Now { offset_ticks } => live_ext.saturating_sub(offset_ticks),
            CueTiming::At { unix_ms } => {
                let delta = (i128::from(unix_ms) - i128::from(state.anchor_unix_ms)) * 90;
                match u64::try_from(i128::from(state.anchor_ts) + delta) {
                    Ok(ts) => ts,
                    Err(_) => return refuse(request, CueRefusal::Past, counters),
                }
            }
        };
        if start > live_ext.saturating_add(MAX_CUE_AHEAD_TICKS) {
            return refuse(request, CueRefusal::Future, counters);
        }
        let end = start.saturating_add(request.duration_ticks);
        // Checked before the track is added: a refused cue leaves no empty rendition.
        if let Err(e) = self.book.room_for(end) {
            return refuse(request, refusal_of(e), counters);
        }
        let track = match self.book.track(request.track.clone()) {
            Ok(track) => track,
            Err(e) => return refuse(request, refusal_of(e), counters),
        };
        let CueRequest { text, reply, .. } = request;
        let answer = match self.book.add(track, start, end, text) {
            Ok(start) => {
                counters.cues.fetch_add(1, Ordering::Relaxed);
                Ok(StampedCue {
                    start_ts: start,
                    end_ts: end,
                    start_unix_ms: state.unix_ms_at(start),
                    end_unix_ms: state.unix_ms_at(end),
                })
            }
            Err(e) => {
                counters.refused.fetch_add(1, Ordering::Relaxed);
                Err(refusal_of(e))
            }
        };
        let _ = reply.send(answer);
    }

    /// An upstream's caption block (from its relay), kept for its segment.
    pub fn upstream_block(&mut self, bytes: &Bytes, counters: &CaptionCounters) {
        match CaptionBlock::parse(bytes) {
            Ok(block) => {
                if self.upstream.len() >= MAX_UPSTREAM_BLOCKS {
                    self.upstream.pop_front();
                }
                self.upstream.push_back(block);
            }
            Err(error) => {
                counters.bad_blocks.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%error, "an upstream caption block was damaged: its captions are lost");
            }
        }
    }

    /// The caption block of a finished segment: the upstream's for a followed segment,
    /// else (on the origin) the book's cut. `None` while the stream has no captions.
    pub fn block_for(&mut self, marker: &TimelineMarker, following: bool) -> Option<CaptionBlock> {
        let msn = marker.state.msn;
        if let Some(i) = self.upstream.iter().position(|b| b.msn == msn) {
            let block = self.upstream.remove(i);
            self.upstream.retain(|b| b.msn > msn);
            return block;
        }
        if following {
            return None;
        }
        let end = marker.start_ts.saturating_add(marker.duration_ticks);
        if self.last_ext.is_some_and(|ext| ext.abs_diff(end) > 1 << 32) {
            // Unwrapped on another turn of the 33-bit clock than the segmenter: follow it.
            self.last_ext = Some(end);
        }
        self.book.cut(msn, marker.start_ts, end)
    }
}

fn refusal_of(e: BookError) -> CueRefusal {
    match e {
        BookError::Past => CueRefusal::Past,
        BookError::TooManyTracks => CueRefusal::TooManyTracks,
        BookError::Full => CueRefusal::Full,
    }
}

fn refuse(request: CueRequest, why: CueRefusal, counters: &CaptionCounters) {
    counters.refused.fetch_add(1, Ordering::Relaxed);
    let _ = request.reply.send(Err(why));
}
