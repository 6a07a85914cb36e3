//! Pure packaging: what a node serves, rendered from what the segmenter produced. A
//! rendition's live [`window`] of stored segments, the manifests rendered from one
//! window snapshot (HLS over TS, [`fmp4`] HLS and DASH, [`llhls`], subtitle playlists
//! and files, [`captions`]), a package's master playlist and MPD over its renditions
//! ([`render`]), the file-name grammar they write ([`url`]), and the archive's
//! catch-up packaging over a [`archive::SegmentSource`] ([`archive`]). Master playlists
//! and live MPDs are kept as typed parts beside their shared rendering ([`master`],
//! [`live_mpd`]): a viewer's own copy (backups, passes, pathways, a login) is rendered
//! from the parts, never by editing text. No I/O, no clock, no lock held while
//! rendering: the node (`server`) stores windows and answers with these bytes.

pub mod archive;
pub mod captions;
pub mod fmp4;
pub mod languages;
pub mod live_mpd;
pub mod llhls;
pub mod master;
pub mod render;
pub mod segment;
pub mod tracks;
pub mod url;
pub mod window;
