//! Renders a window's playlists and MPD with the pure writers of `media`, once per new
//! segment: the TS media and master playlists, the fMP4 HLS playlist, the live MPD and
//! the subtitle playlists, all from the one [`WindowSnapshot`] and its one target
//! duration; and a package's master playlist over its renditions' windows
//! ([`package_master`]).

use std::sync::Arc;

use media::hls::{MasterPlaylist, MediaPlaylist, PlaylistType, Variant};
use media::manifest::Manifest;

pub use crate::master::Master;

use crate::fmp4::{mpd, playlist};
use crate::url::segment_uri;
use crate::window::WindowSnapshot;

/// The rendered manifests of one window.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    /// `mono.m3u8`.
    pub media: Manifest,
    /// `index.m3u8`.
    pub master: Master,
    /// `fmp4.m3u8`.
    pub fmp4: Manifest,
    /// `index.mpd`.
    pub mpd: crate::live_mpd::LiveMpd,
    /// `sub-{track}.m3u8`, per subtitle track.
    pub subtitles: Vec<crate::segment::captions::SubtitlePlaylist>,
}

/// How a stream's manifests are rendered: its configured segment target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renderer {
    target_duration_ms: u64,
}

/// A renderer for a stream with this target segment duration, milliseconds.
pub fn renderer(target_duration_ms: u64) -> Renderer {
    Renderer { target_duration_ms }
}

impl Renderer {
    /// The configured segment target, milliseconds.
    pub fn target_duration_ms(&self) -> u64 {
        self.target_duration_ms
    }

    /// Every manifest of `window` (whose `target_secs` the channel has announced).
    pub fn render(&self, window: &WindowSnapshot) -> Manifests {
        let playlist = MediaPlaylist {
            playlist_type: PlaylistType::Live,
            target_duration_secs: window.target_secs,
            segments: window
                .segments
                .iter()
                .map(|s| s.playlist_segment())
                .collect(),
            ended: false,
        };
        let media = playlist.manifest(segment_uri);
        let master = Master::new(master_playlist(window));
        // The MPD updates every target duration the newest segment's marker states.
        let (fmp4, mpd) = match window.fmp4_segments().last() {
            Some((_, newest)) => {
                let target_ms = u64::from(newest.marker.target_duration_ms);
                (
                    playlist::live(window),
                    mpd::live_mpd(window, target_ms, window.published_ms),
                )
            }
            None => (Manifest::default(), Default::default()),
        };
        Manifests {
            subtitles: crate::captions::serve::render_playlists(window, &playlist),
            media,
            master,
            fmp4,
            mpd,
        }
    }
}

/// The master playlist of one stream: one variant, this node's media playlist.
pub fn master_playlist(window: &WindowSnapshot) -> MasterPlaylist {
    let (subtitles, closed_captions) = crate::captions::serve::master_media(window);
    MasterPlaylist {
        audio: Vec::new(),
        independent_segments: true,
        subtitles,
        closed_captions,
        variants: vec![variant(window, "mono.m3u8".into())],
    }
}

/// The variant of one rendition's window at `uri`.
fn variant(window: &WindowSnapshot, uri: String) -> Variant {
    let (peak, average) = window.bandwidth;
    Variant {
        uri,
        bandwidth: peak.max(1),
        average_bandwidth: (average > 0).then_some(average),
        codecs: window.tracks.codecs.clone(),
        resolution: window.tracks.resolution,
        frame_rate_milli: window.tracks.frame_rate_milli,
    }
}

pub use crate::window::{offered, MAIN};

/// The master playlist of a package (an ABR ladder): its renditions (name and window)
/// in ladder order, each at its own media playlist `playlist` (`mono.m3u8` for HLS,
/// `ll.m3u8` for LL-HLS: the file itself for the muxed source, `{rung}/{playlist}` for
/// a rung). A rung is listed once it has segments and while every segment of its
/// window is switchable ([`WindowSnapshot::switchable`]): a player must be able to move
/// between the variants at any segment boundary. The source is the timeline every rung
/// is cut on, so it is listed whenever it has segments.
///
/// `audio` is the stream's audio group (see [`crate::languages::audio_group`]): every
/// variant names it, and languages are never variants.
pub fn package_master(
    renditions: &[(&str, Arc<WindowSnapshot>)],
    audio: Vec<media::hls::AudioRendition>,
    playlist: &str,
) -> Master {
    let mut variants = Vec::with_capacity(renditions.len());
    // The stream's captions travel in its muxed rendition (the source).
    let (subtitles, closed_captions) = renditions
        .iter()
        .find(|(name, _)| *name == MAIN)
        .map(|(_, window)| crate::captions::serve::master_media(window))
        .unwrap_or_default();
    for (name, window) in renditions {
        if !offered(name, window) {
            continue;
        }
        let uri = if *name == MAIN {
            playlist.to_owned()
        } else {
            format!("{name}/{playlist}")
        };
        variants.push(variant(window, uri));
    }
    Master::new(MasterPlaylist {
        audio,
        independent_segments: true,
        subtitles,
        closed_captions,
        variants,
    })
}
