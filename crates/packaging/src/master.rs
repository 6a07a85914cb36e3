//! A master playlist kept as typed parts with its shared rendering ([`Master`]): what
//! a viewer's own copy is rendered from.

use std::sync::Arc;

use media::hls::{MasterPlaylist, Personalisation};
use media::manifest::Manifest;

/// A master playlist kept as its typed parts, with the one rendering every viewer
/// without a personal copy shares: a viewer's own copy (backups, passes, pathways, a
/// login) is rendered from the parts ([`Master::render_for`]), never by editing the
/// shared text.
#[derive(Debug, Clone, Default)]
pub struct Master {
    /// The parts.
    pub parts: Arc<MasterPlaylist>,
    /// The shared rendering.
    pub plain: Manifest,
}

impl Master {
    /// The master playlist of `parts`, rendered once.
    pub fn new(parts: MasterPlaylist) -> Self {
        let plain = parts.manifest_for(&Personalisation::default());
        Self {
            parts: Arc::new(parts),
            plain,
        }
    }

    /// The copy one viewer gets (see [`Personalisation`]).
    pub fn render_for(&self, personalisation: &Personalisation<'_>) -> Manifest {
        self.parts.manifest_for(personalisation)
    }
}
