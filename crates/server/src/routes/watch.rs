//! `GET /watch/{group}[.m3u8|.mpd|.ll.m3u8]`: the way in for viewers that survives the
//! loss of any node (see `docs/ott-redundancy.md`, "The way in"). Any node answers with
//! a 302 to the node that should serve this viewer now ([`ott::entry_target`]): itself
//! when the stream works here, another with a pass, balanced by viewer session. A
//! meeting platform hands out the entry on several nodes (or one name over them, with
//! a load balancer or DNS that checks `/watch`), and a player that reopens after its
//! node died simply lands on a live one.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, OttRefusal};
use crate::http::extract::CodedPath;
use crate::redundancy::door::{query_without_pass, redirect, sign_for, Viewer};
use crate::redundancy::members::stream_working;
use crate::state::AppState;

/// The stream file and protocol an entry name asks for: `{group}` and `{group}.m3u8`
/// the HLS master, `{group}.mpd` the DASH manifest, `{group}.ll.m3u8` the LL-HLS master.
fn entry_file(name: &str) -> Option<(&str, &'static str, ott::Protocol)> {
    let (group, file, protocol) = if let Some(g) = name.strip_suffix(".ll.m3u8") {
        (g, "ll-index.m3u8", ott::Protocol::LlHls)
    } else if let Some(g) = name.strip_suffix(".m3u8") {
        (g, "index.m3u8", ott::Protocol::Hls)
    } else if let Some(g) = name.strip_suffix(".mpd") {
        (g, "index.mpd", ott::Protocol::Dash)
    } else {
        (name, "index.m3u8", ott::Protocol::Hls)
    };
    (!group.is_empty()).then_some((group, file, protocol))
}

/// The redirect.
pub async fn entry(
    State(state): State<AppState>,
    CodedPath(name): CodedPath<String>,
    request: Request,
) -> Response {
    let Some((group, file, protocol)) = entry_file(&name) else {
        return ApiError::StreamNotFound.into_response();
    };
    let now = state.clock().unix_ms();
    let file_with_query = match query_without_pass(request.uri().query()) {
        Some(query) => format!("{file}?{query}"),
        None => file.to_owned(),
    };
    let redundancy = state.redundancy();
    // This node's stream of the group: the member of that group, else a stream of
    // that name outside any group.
    let own = redundancy
        .and_then(|r| {
            r.memberships()
                .into_iter()
                .find(|(_, m)| m.group == group)
                .map(|(stream, _)| stream)
        })
        .unwrap_or_else(|| group.to_owned());
    // Without the mesh, a stream works here when it has fresh segments.
    let here = state
        .channel(&own)
        .is_some_and(|channel| match redundancy {
            Some(r) => r.works_here(&channel, now),
            None => stream_working(&channel, now, i64::MAX),
        })
        .then_some(own.as_str());
    let here_location =
        |stream: &str| format!("/{}/{file_with_query}", ott::encode_segment(stream));
    let Some((redundancy, view)) = redundancy.and_then(|r| r.view().map(|v| (r, v))) else {
        return match here {
            Some(stream) => redirect(&here_location(stream)),
            None => ApiError::StreamNotFound.into_response(),
        };
    };
    if here.is_none() && !view.snapshot.members.iter().any(|m| m.group == group) {
        return ApiError::StreamNotFound.into_response();
    }
    let viewer = Viewer::of_request(&request);
    match ott::entry_target(
        &view.snapshot,
        group,
        protocol,
        here,
        viewer.context,
        viewer.session(),
        now,
    ) {
        Ok(ott::Entry::Here(stream)) => redirect(&here_location(&stream)),
        Ok(ott::Entry::There(target)) => {
            let bound = crate::http::connection::Connection::of(&request).map(|c| c.peer.ip());
            let Some(pass) = sign_for(
                redundancy,
                &view,
                &target.stream,
                bound,
                now,
                ott::REDIRECT_PASS_LIFETIME_MS,
            ) else {
                return ApiError::Ott(OttRefusal::NoBackup).into_response();
            };
            redundancy
                .counters
                .redirects_open
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            redirect(&target.location(&file_with_query, &pass))
        }
        Err(_) => ApiError::Ott(OttRefusal::NoBackup).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::entry_file;

    #[test]
    fn entry_names_pick_the_protocol() {
        use ott::Protocol::{Dash, Hls, LlHls};
        assert_eq!(entry_file("m"), Some(("m", "index.m3u8", Hls)));
        assert_eq!(entry_file("m.m3u8"), Some(("m", "index.m3u8", Hls)));
        assert_eq!(entry_file("m.mpd"), Some(("m", "index.mpd", Dash)));
        assert_eq!(entry_file("m.ll.m3u8"), Some(("m", "ll-index.m3u8", LlHls)));
        assert_eq!(entry_file(".mpd"), None);
    }
}
