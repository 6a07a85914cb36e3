//! The live MPD kept as its typed parts with the one rendering every viewer without a
//! personal copy shares ([`LiveMpd`]), and the names of the live DASH files
//! ([`LiveUris`]). A viewer's own copy (its nodes as service locations) is rendered
//! from the parts, never by editing the shared text.

use std::sync::Arc;

use media::dash::{Mpd, MpdUris, ServiceLocations};
use media::fmp4::Track;
use media::manifest::Manifest;
use media::TrackKind;

/// Names of the live DASH files, relative to the MPD.
#[derive(Debug, Clone, Copy)]
pub struct LiveUris;

impl MpdUris for LiveUris {
    fn init(&self, discontinuity_seq: u64, track: TrackKind) -> String {
        format!(
            "init-{discontinuity_seq}{}.mp4",
            Track::of_kind(track).suffix()
        )
    }

    fn media(&self, _discontinuity_seq: u64, track: TrackKind) -> String {
        format!("seg-$Number${}.m4s", Track::of_kind(track).suffix())
    }
}

/// A live MPD: its parts and their shared rendering (empty before the stream has an
/// fMP4 segment).
#[derive(Debug, Clone, Default)]
pub struct LiveMpd {
    /// The parts; `None` while there is nothing to list.
    pub parts: Option<Arc<Mpd>>,
    /// The shared rendering.
    pub plain: Manifest,
}

impl LiveMpd {
    /// The live MPD of `parts`, rendered once.
    pub fn new(parts: Mpd) -> Self {
        let plain = parts.manifest_for(&LiveUris, None);
        Self {
            parts: Some(Arc::new(parts)),
            plain,
        }
    }

    /// The copy a viewer gets with `service`'s nodes; `None` while there is nothing
    /// to list.
    pub fn render_for(&self, service: &ServiceLocations) -> Option<Manifest> {
        let parts = self.parts.as_ref()?;
        Some(parts.manifest_for(&LiveUris, Some(service)))
    }
}
