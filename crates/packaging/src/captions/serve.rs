//! The subtitle renditions of a stream, as views of its segments: each stored segment
//! that carries a caption block keeps its WebVTT files ([`crate::segment::captions::SegmentCaptions`]);
//! each window renders one media playlist per track ([`SubtitlePlaylist`]) listing the same
//! segments as the media playlist (same MSN, duration, date, discontinuities); the
//! master playlists list the tracks ([`master_media`]).

use bytes::Bytes;
use media::captions::webvtt::segment_vtt;
use media::captions::CaptionTrack;
use media::fmp4::wvtt::TextCue;
use media::hls::{ClosedCaptions, MediaPlaylist, SubtitleRendition};

use crate::segment::captions::SubtitlePlaylist;
use crate::url::subtitles::{playlist_uri, segment_uri};
use crate::window::{StoredSegment, WindowSnapshot};

/// The WebVTT file of track `id` for a segment: its own, or an empty one (the header
/// and the timestamp map) when the segment has no cue of the track.
pub fn segment_file(segment: &StoredSegment, id: &str) -> Bytes {
    if let Some(file) = segment.captions().and_then(|c| c.file(id)) {
        return file;
    }
    let start = segment.marker.map_or(0, |m| m.start_ts);
    Bytes::from(segment_vtt(None, id, start))
}

/// The WebVTT-in-fMP4 segment of track `id` for a segment (DASH): its cues of the
/// track, times from the segment's start, `tfdt` the segment's start.
pub fn segment_fmp4(segment: &StoredSegment, id: &str) -> Bytes {
    let start = segment.marker.map_or(0, |m| m.start_ts);
    let block = segment.captions().map(|c| &c.block);
    let cues: Vec<TextCue<'_>> = match block.and_then(|b| b.track(id).map(|(i, _)| (b, i))) {
        Some((block, index)) => block
            .cues
            .iter()
            .filter(|c| c.track == index)
            .map(|c| TextCue {
                start: c.start_ts.saturating_sub(start),
                end: c.end_ts.saturating_sub(start),
                text: &c.text,
            })
            .collect(),
        None => Vec::new(),
    };
    let mut out = Vec::with_capacity(256);
    let sequence = u32::try_from(segment.msn % (1 << 32)).unwrap_or(0);
    media::fmp4::wvtt::write_wvtt_segment(sequence, start, segment.duration_ticks, &cues, &mut out);
    Bytes::from(out)
}

/// The stream's subtitle tracks in a window: those of its newest segment with a block
/// (every block lists all the tracks the stream has).
pub fn tracks(window: &WindowSnapshot) -> &[CaptionTrack] {
    window
        .segments
        .iter()
        .rev()
        .find_map(|s| s.captions())
        .map_or(&[], |c| &c.block.tracks)
}

/// Every subtitle track's media playlist for a window: the window's media playlist
/// (`media`, as rendered for `mono.m3u8`) with each segment's WebVTT as its URI.
pub fn render_playlists(window: &WindowSnapshot, media: &MediaPlaylist) -> Vec<SubtitlePlaylist> {
    tracks(window)
        .iter()
        .map(|track| SubtitlePlaylist {
            track: track.clone(),
            playlist: media.manifest(|msn| segment_uri(&track.id, msn)),
        })
        .collect()
}

/// The tracks in the order players list them: the captioners' first (the first listed
/// is the default), the decoded 608 channel last.
pub fn menu_order(tracks: &[CaptionTrack]) -> impl Iterator<Item = &CaptionTrack> {
    let cc1 = |t: &&CaptionTrack| t.id == media::captions::book::CC1_TRACK;
    tracks
        .iter()
        .filter(move |t| !cc1(t))
        .chain(tracks.iter().filter(cc1))
}

/// What a master playlist lists of the captions: a subtitle rendition per track, and
/// the in-band 608 captions when the source carries them (its decoded track exists).
pub fn master_media(window: &WindowSnapshot) -> (Vec<SubtitleRendition>, Option<ClosedCaptions>) {
    let tracks = tracks(window);
    let subtitles = menu_order(tracks)
        .map(|t| SubtitleRendition {
            name: t.name.clone(),
            language: t.language.clone(),
            uri: playlist_uri(&t.id),
        })
        .collect();
    let closed_captions = tracks
        .iter()
        .find(|t| t.id == media::captions::book::CC1_TRACK)
        .map(|t| ClosedCaptions {
            name: "CC1 (in video)".into(),
            language: t.language.clone(),
            instream_id: "CC1".into(),
        });
    (subtitles, closed_captions)
}
