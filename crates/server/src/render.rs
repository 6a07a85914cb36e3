//! Renders a channel's playlists from its window with the pure writers of `media::hls`,
//! once per new segment.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use media::hls::{MasterPlaylist, MediaPlaylist, PlaylistSegment, PlaylistType, Variant};

use crate::channel::{Renderer, WindowSnapshot};
use crate::url::segment_uri;

/// A renderer for a channel with this target segment duration.
///
/// EXT-X-TARGETDURATION must not change during a live playlist's life, so the renderer
/// remembers the largest value it has announced and never goes below it.
pub fn renderer(target_duration_ms: u64) -> Arc<Renderer> {
    let announced = AtomicU64::new(target_duration_ms.div_ceil(1000).max(1));
    Arc::new(move |_name: &str, window: &WindowSnapshot| {
        let mut playlist = MediaPlaylist {
            playlist_type: PlaylistType::Live,
            target_duration_secs: announced.load(Ordering::Relaxed),
            segments: window
                .segments
                .iter()
                .map(|s| PlaylistSegment {
                    msn: s.msn,
                    discontinuity_seq: s.discontinuity_seq,
                    discontinuous: s.discontinuous,
                    duration_ticks: s.duration_ticks,
                    program_date_time_ms: s.program_date_time_ms,
                    gap: false,
                })
                .collect(),
            ended: false,
        };
        let target = playlist.target_duration();
        announced.fetch_max(target, Ordering::Relaxed);
        playlist.target_duration_secs = target;
        let media = playlist.render(segment_uri);
        let master = master_playlist(window).render();
        (Bytes::from(media), Bytes::from(master))
    })
}

/// The master playlist of one stream: one variant, this node's media playlist.
pub fn master_playlist(window: &WindowSnapshot) -> MasterPlaylist {
    let (peak, average) = window.bandwidth;
    MasterPlaylist {
        independent_segments: true,
        variants: vec![Variant {
            uri: "mono.m3u8".into(),
            bandwidth: peak.max(1),
            average_bandwidth: (average > 0).then_some(average),
            codecs: window.tracks.codecs.clone(),
            resolution: window.tracks.resolution,
            frame_rate_milli: window.tracks.frame_rate_milli,
        }],
    }
}
