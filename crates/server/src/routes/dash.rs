//! MPEG-DASH: the live MPD of a stream (`/{stream}/index.mpd`), the static MPD of an
//! archive period (`/{stream}/index-{from}-{duration}.mpd`, built in
//! [`packaging::archive::fmp4`]) and the node's clock for `UTCTiming` (`/api/time`).
//!
//! The MPDs are written by [`media::dash::Mpd`] from the fMP4 window: one Period per
//! discontinuity sequence, anchored like EXT-X-PROGRAM-DATE-TIME, `$Number$` = MSN,
//! `SegmentTimeline` on the TS timeline, one adaptation set per track.

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;

use crate::http::http_util::{self, Cache};
use crate::state::AppState;

/// Content type of MPDs.
pub const DASH_MPD: &str = "application/dash+xml";

/// Where `UTCTiming` points (path-absolute, resolved against the MPD's URL).
pub const UTC_TIMING_PATH: &str = crate::url::Route::UtcTiming.pattern();

/// An MPD response.
pub fn mpd_response(cache: Cache, mpd: media::manifest::Manifest) -> Response {
    http_util::manifest(DASH_MPD, cache, mpd)
}

/// `GET /api/time`: the node's clock as ISO 8601 with milliseconds, for DASH
/// `UTCTiming` (`urn:mpeg:dash:utc:http-iso:2014`). Open even with an admin token:
/// players call it.
pub async fn time(State(state): State<AppState>) -> Response {
    let mut text = String::with_capacity(32);
    // Writing to a String cannot fail.
    let _ = media::hls::format_rfc3339_ms(&mut text, state.clock().unix_ms());
    http_util::ok("text/plain; charset=utf-8", Cache::None, Bytes::from(text))
}
