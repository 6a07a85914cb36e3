//! The fMP4 view of a stored segment: its timeline marker, the init it decodes with
//! (one per discontinuity sequence), the bytes of its frames per track (for
//! `@bandwidth`), both taken from the frames the segmenter wrote, and its fMP4 files,
//! packaged from the segment's TS bytes on first request and kept with it — but for the
//! muxed file, which is the LL-HLS segment of the same MSN when that was cut.

use std::sync::Arc;

use bytes::Bytes;
use media::fmp4::{
    frames_from_ts, package_segment, write_track_init, InitConfig, Track, TrackCache,
};
use media::llhls::SegmentOut;
use media::{Frame, TimelineMarker, TrackKind};

/// The init segment(s) of one discontinuity sequence.
#[derive(Debug)]
pub struct Fmp4Init {
    /// The discontinuity sequence it belongs to (`init-{d}.mp4`).
    pub discontinuity_seq: u64,
    /// The tracks, read from the sequence's first segment.
    pub config: InitConfig,
    cache: TrackCache,
}

impl Fmp4Init {
    /// An init for `config`.
    pub fn new(discontinuity_seq: u64, config: InitConfig) -> Self {
        Self {
            discontinuity_seq,
            config,
            cache: TrackCache::default(),
        }
    }

    /// The init segment of `track`; `None` when this sequence has no such track.
    pub fn bytes(&self, track: Track) -> Option<Bytes> {
        self.cache
            .get_or_make(track, || write_track_init(&self.config, track))
            .map_err(|error| tracing::debug!(?track, %error, "fmp4 init not written"))
            .ok()
    }
}

/// What a stored segment needs to be served as fMP4 (see the module docs).
#[derive(Debug)]
pub struct Fmp4View {
    /// The segment's marker: MSN, discontinuity, start, duration, date, anchor.
    pub marker: TimelineMarker,
    /// Bytes of video and of audio frames in the segment (for `@bandwidth`).
    pub media_bytes: (u64, u64),
    /// The init segment this one decodes with.
    pub init: Arc<Fmp4Init>,
    /// The LL-HLS part grid the muxed file is cut at (90 kHz), when the stream has one.
    part_ticks: Option<u64>,
    cache: TrackCache,
}

impl Fmp4View {
    /// The view of the segment `marker` places, decoding with `previous`'s init when
    /// that is of the same discontinuity sequence. Its init and per-track sizes come from
    /// `frames`, the frames the segmenter wrote (read from `ts`, its bytes, only when the
    /// segment came without them). `None` when its sequence has no init yet and its
    /// frames give none (logged). A parameter-set change without a discontinuity keeps
    /// the sequence's first init (logged). The muxed file is cut at `part_ticks`, the
    /// stream's LL-HLS part grid (see [`media::fmp4::package_segment`]).
    pub fn of(
        marker: &TimelineMarker,
        frames: &[Frame],
        ts: &Bytes,
        previous: Option<&Fmp4View>,
        part_ticks: Option<u64>,
    ) -> Option<Self> {
        let marker = *marker;
        let read_back;
        let frames: &[Frame] = if frames.is_empty() {
            read_back = frames_from_ts(ts, marker.start_ts)
                .into_iter()
                .map(|t| t.frame)
                .collect::<Vec<_>>();
            &read_back
        } else {
            frames
        };
        let mut media_bytes = (0u64, 0u64);
        for frame in frames {
            match frame.kind() {
                TrackKind::Video => media_bytes.0 += frame.data.len() as u64,
                TrackKind::Audio => media_bytes.1 += frame.data.len() as u64,
            }
        }
        let seq = marker.state.discontinuity_seq;
        let same_sequence = previous
            .map(|v| &v.init)
            .filter(|i| i.discontinuity_seq == seq)
            .cloned();
        let config = InitConfig::from_frames(frames);
        let init = match (same_sequence, config) {
            (Some(init), Ok(config)) => {
                if config != init.config {
                    tracing::warn!(
                        msn = marker.state.msn,
                        discontinuity_seq = seq,
                        "parameter sets changed without a discontinuity: fmp4 keeps the first init"
                    );
                }
                init
            }
            (Some(init), Err(_)) => init,
            (None, Ok(config)) => Arc::new(Fmp4Init::new(seq, config)),
            (None, Err(error)) => {
                tracing::warn!(msn = marker.state.msn, %error, "no fmp4 init for this segment");
                return None;
            }
        };
        Some(Self {
            marker,
            media_bytes,
            init,
            part_ticks,
            cache: TrackCache::default(),
        })
    }

    /// Takes the LL-HLS segment of this MSN as the muxed file when it was written for
    /// this view's init (its bytes are then what packaging would write: same frames,
    /// part grid and ending), so `seg-N.m4s` and `llseg-N.m4s` are one allocation and
    /// nothing is packaged again. `false` (logged) when it was written for another
    /// init: the muxed file is then packaged on request.
    pub fn share_ll(&self, ll: &SegmentOut) -> bool {
        if self.part_ticks.is_none() || ll.config != self.init.config {
            tracing::debug!(
                msn = self.marker.state.msn,
                "ll-hls segment written for another init: fmp4 packages its own"
            );
            return false;
        }
        self.cache.set(Track::Muxed, ll.bytes.clone())
    }

    /// The fMP4 segment of `track`, packaged from `ts` (the stored segment's bytes);
    /// `None` when it cannot be packaged (no such track).
    pub fn bytes(&self, ts: &Bytes, track: Track) -> Option<Bytes> {
        self.cache
            .get_or_make(track, || {
                package_segment(&self.marker, ts, &self.init.config, track, self.part_ticks)
            })
            .map_err(|error| tracing::debug!(?track, %error, "fmp4 segment not packaged"))
            .ok()
    }

    /// Bytes of fMP4 held for this segment so far.
    pub fn packaged_bytes(&self) -> usize {
        self.cache.held_bytes()
    }
}
