//! The read-only status API: `/api/node` (with the recordings uploader's state), `/api/streams`, `/api/streams/{name}`.
//!
//! When the node has an admin token, every `/api` call needs
//! `Authorization: Bearer <token>`.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::extract::CodedPath;
use crate::routes::auth::Admin;
use crate::state::{AppState, StreamEntry};

/// `GET /api/node`: who this node is, and what its ingest listeners refused.
pub async fn node(State(state): State<AppState>, _admin: Admin) -> Response {
    let node = state.node();
    Json(json!({
        "name": node.name,
        "hostname": node.hostname,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": state.uptime().as_secs(),
        "streams": state.streams().len(),
        "ingest": state.ingest_listeners().to_json(),
        "recordings": state.recordings().map(|uploader| uploader.status()),
    }))
    .into_response()
}

/// `GET /api/streams`: every stream's status.
pub async fn streams(State(state): State<AppState>, _admin: Admin) -> Response {
    let now = state.clock().unix_ms();
    let list: Vec<Value> = state
        .streams()
        .iter()
        .map(|s| stream_status(s, now))
        .collect();
    Json(json!({ "streams": list })).into_response()
}

/// `GET /api/streams/{name}`: one stream's status.
pub async fn stream(
    State(state): State<AppState>,
    _admin: Admin,
    CodedPath(name): CodedPath<String>,
) -> Response {
    match state.stream(&name) {
        Some(entry) => Json(stream_status(&entry, state.clock().unix_ms())).into_response(),
        None => ApiError::StreamNotFound.into_response(),
    }
}

/// The status document of one stream: live window, codecs, bitrate, inputs.
pub fn stream_status(entry: &StreamEntry, now_unix_ms: i64) -> Value {
    let channel = &entry.channel;
    let snapshot = channel.snapshot();
    let newest = snapshot.newest();
    let live_window_age_ms = newest.map(|s| {
        let end = s.program_date_time_ms + (s.duration_ticks * 1000 / media::CLOCK_HZ) as i64;
        (now_unix_ms - end).max(0)
    });
    let counters = &channel.counters;
    json!({
        "name": channel.name(),
        "live": !snapshot.segments.is_empty(),
        "first_msn": snapshot.segments.front().map(|s| s.msn),
        "last_msn": newest.map(|s| s.msn),
        "discontinuity_sequence": newest.map(|s| s.discontinuity_seq),
        "segments_in_window": snapshot.segments.len(),
        "live_window_age_ms": live_window_age_ms,
        "codecs": snapshot.tracks.codecs,
        "resolution": snapshot.tracks.resolution.map(|(w, h)| format!("{w}x{h}")),
        "bitrate_bps": { "peak": snapshot.bandwidth.0, "average": snapshot.bandwidth.1 },
        "counters": {
            "segments": counters.segments.load(Ordering::Relaxed),
            "segment_bytes": counters.segment_bytes.load(Ordering::Relaxed),
            "discontinuities": counters.discontinuities.load(Ordering::Relaxed),
            "segments_served": counters.segments_served.load(Ordering::Relaxed),
            "playlists_served": counters.playlists_served.load(Ordering::Relaxed),
            "bad_pts_frames": counters.bad_pts_frames.load(Ordering::Relaxed),
            "timestamp_jumps": counters.timestamp_jumps.load(Ordering::Relaxed),
            "untimed": counters.untimed.load(Ordering::Relaxed),
        },
        "inputs": entry.inputs.as_ref().map(|source| source()),
        "renditions": renditions(channel),
        "ladder": channel.ladder().map(|ladder| ladder.json()),
        "languages": languages(channel),
        "captions": crate::stream::captions::status::json(&channel.caption_counters, &channel.snapshot()),
        "dvr": channel.archive().map(|recorder| recorder.status()),
    })
}

/// The stream's audio languages, the floor first (`null` with one audio): each other
/// one's rendition, newest segment and how far it is behind the video.
fn languages(channel: &crate::stream::package::Package) -> Value {
    let Some((floor, _)) = channel.languages() else {
        return Value::Null;
    };
    let mut list = vec![json!({
        "code": floor.language.as_str(),
        "name": floor.name,
        "floor": true,
    })];
    for state in channel.language_states() {
        list.push(json!({
            "code": state.language.as_str(),
            "name": state.name,
            "rendition": packaging::languages::rendition_name(state.language),
            "last_msn": state.last_msn,
            "segments_in_window": state.segments_in_window,
            "behind_segments": state.behind_segments,
            "interpreter": channel.interpreter(state.language).map(|feed| feed.json(channel.name())),
        }));
    }
    Value::Array(list)
}

/// Each rendition of the stream's package: whether the master playlist offers it now
/// (a rung only while switchable), its window, its measured bit rate and its archive.
fn renditions(channel: &crate::stream::package::Package) -> Vec<Value> {
    channel
        .renditions()
        .iter()
        .map(|rendition| {
            let window = rendition.snapshot();
            let source = rendition.name() == crate::stream::rendition::MAIN;
            let offered =
                channel.lists(rendition) && packaging::render::offered(rendition.name(), &window);
            json!({
                "name": if source { crate::stream::ladder::SOURCE } else { rendition.name() },
                "listed": offered,
                "switchable": window.switchable,
                "last_msn": window.newest().map(|s| s.msn),
                "segments_in_window": window.segments.len(),
                "resolution": window.tracks.resolution.map(|(w, h)| format!("{w}x{h}")),
                "bitrate_bps": { "peak": window.bandwidth.0, "average": window.bandwidth.1 },
                "dvr": rendition.archive().map(|recorder| recorder.status()),
            })
        })
        .collect()
}
