//! Archive playlists: a slice of the index as an HLS media playlist (pure text).
//!
//! Media sequence numbers in these playlists are the index's ordinals, not the live
//! MSNs: ordinals are consecutive even where the archive has holes, which is what HLS
//! requires of a playlist, while the segment URIs keep the live MSN. A hole (missing
//! MSNs, or missing time) is marked EXT-X-DISCONTINUITY before the segment after it, so
//! a player resets its timestamps there; EXT-X-PROGRAM-DATE-TIME on every segment
//! tells it the wall-clock time it jumped to.

use media::hls::{MediaPlaylist, PlaylistSegment, PlaylistType};
use media::manifest::Manifest;

use crate::index::{is_gap, Entry, Slice};

/// Renders `slice` as a media playlist of type `kind`, with at least
/// `target_duration_secs` as EXT-X-TARGETDURATION. `ended` adds EXT-X-ENDLIST (always
/// present for VOD); `uri` names an archived segment.
pub fn render(
    slice: Slice<'_>,
    kind: PlaylistType,
    target_duration_secs: u64,
    ended: bool,
    uri: impl Fn(&Entry) -> String,
) -> Manifest {
    render_with_maps(slice, kind, target_duration_secs, ended, uri, &[])
}

/// [`render`] for fMP4 segments: `maps[i]` is the init segment of the i-th entry
/// (see [`MediaPlaylist::write_with_maps`]).
pub fn render_with_maps(
    slice: Slice<'_>,
    kind: PlaylistType,
    target_duration_secs: u64,
    ended: bool,
    uri: impl Fn(&Entry) -> String,
    maps: &[String],
) -> Manifest {
    let mut segments = Vec::with_capacity(slice.entries.len());
    let mut disc = slice.first_discontinuity;
    let mut previous: Option<&Entry> = None;
    for (i, entry) in slice.entries.iter().enumerate() {
        let discontinuous = match previous {
            None => false,
            Some(prev) => entry.discontinuous || is_gap(prev, entry),
        };
        disc += u64::from(discontinuous);
        segments.push(PlaylistSegment {
            msn: slice.first_ordinal + i as u64,
            discontinuity_seq: disc,
            discontinuous,
            duration_ticks: entry.duration_ticks,
            program_date_time_ms: entry.start_ms,
            gap: false,
        });
        previous = Some(entry);
    }
    let playlist = MediaPlaylist {
        playlist_type: kind,
        target_duration_secs,
        segments,
        ended,
    };
    let first = slice.first_ordinal;
    playlist.manifest_with_maps(
        |ordinal| {
            usize::try_from(ordinal - first)
                .ok()
                .and_then(|i| slice.entries.get(i))
                .map_or_else(String::new, &uri)
        },
        maps,
    )
}
