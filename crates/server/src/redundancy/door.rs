//! The door of a stream in an OTT group: what happens to a request before the stream's
//! own routes see it.
//!
//! In order: a pass in the query is checked (403 with its 105xxx code when refused,
//! OTT-GRP-3); a viewer arriving with a pass is refused at once when this node is
//! overloaded (503, OTT-OVL-1..3) and counted as a backup session otherwise; a catch-up
//! request goes to the node holding most of its period (302, OTT-PROT-3, OTT-ARCH-1/2);
//! a new viewer of a stream that does not work here goes to a node that can serve it
//! (302, OTT-PROT-2). A viewer that already came with a pass is never sent on again:
//! two broken nodes cannot bounce a player between them — unless this node drains
//! (it is not broken, and no draining node is ever a redirect target).

use crate::http::request_context::Arrival;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, OttRefusal};
pub use crate::redundancy::viewer::Viewer;
use crate::redundancy::{MeshView, Redundancy};
use crate::stream::streams::Streams;
use crate::url::{period_ms, ArchiveRequest, LlFile, StreamFile};

/// The door's decision.
#[derive(Debug)]
pub enum Door {
    /// Serve the request here.
    Continue,
    /// Answer with this instead (a refusal or a redirect).
    Answer(Response),
}

/// The value of `pass=` in a query, if any.
pub fn pass_param(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(ott::PASS_QUERY_PARAM)?.strip_prefix('='))
}

/// The query without its `pass=` parameter (`None` when nothing is left).
pub fn query_without_pass(query: Option<&str>) -> Option<String> {
    let kept: Vec<&str> = query?
        .split('&')
        .filter(|pair| {
            !pair.is_empty()
                && pair
                    .strip_prefix(ott::PASS_QUERY_PARAM)
                    .is_none_or(|rest| !rest.is_empty() && !rest.starts_with('='))
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// A 302 to `location`, not cached (the next viewer may be sent elsewhere).
pub fn redirect(location: &str) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Signs a pass for `target`'s stream valid `lifetime_ms`, bound to the viewer at
/// `viewer` (none: an in-process call); `None` when it cannot be signed (a stream name
/// over 255 bytes).
pub fn sign_for(
    redundancy: &Redundancy,
    view: &MeshView,
    stream: &str,
    viewer: Option<std::net::IpAddr>,
    now_ms: i64,
    lifetime_ms: i64,
) -> Option<String> {
    let pass = ott::Pass {
        stream: stream.to_owned(),
        expires_at_ms: now_ms.saturating_add(lifetime_ms),
        viewer,
        key_id: 0,
    };
    match view.keys.sign(&pass) {
        Ok(text) => {
            redundancy
                .counters
                .passes_issued
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(text)
        }
        Err(error) => {
            tracing::warn!(stream, %error, "cannot sign a pass");
            None
        }
    }
}

/// The catch-up period `[from, to]` a request asks for, Unix ms.
fn archive_period(request: ArchiveRequest, now_ms: i64) -> Option<(i64, i64)> {
    match request {
        ArchiveRequest::Period {
            from_secs,
            duration_secs,
            ..
        }
        | ArchiveRequest::Download {
            from_secs,
            duration_secs,
        }
        | ArchiveRequest::Mp4Download {
            from_secs,
            duration_secs,
            ..
        } => Some(period_ms(from_secs, duration_secs)),
        ArchiveRequest::FromNow { from_secs, .. } => Some((from_secs.saturating_mul(1000), now_ms)),
        ArchiveRequest::Timeshift { .. }
        | ArchiveRequest::Segment(_)
        | ArchiveRequest::Recording(_)
        | ArchiveRequest::Malformed => None,
    }
}

fn refuse(redundancy: &Redundancy, refusal: OttRefusal) -> Door {
    redundancy.counters.refused(refusal);
    Door::Answer(ApiError::Ott(refusal).into_response())
}

/// Decides a request for `file` of `stream`, or of its ladder rung `rung` (see the
/// module doc); a redirect keeps the rung in the path.
pub fn check(
    streams: &Streams,
    redundancy: &Redundancy,
    stream: &str,
    rung: Option<&str>,
    file: &str,
    arrival: &Arrival,
    now_ms: i64,
) -> Door {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(kind) = arrival.stream_file(file) else {
        return Door::Continue;
    };
    let query = arrival.request.uri().query();
    let pass = pass_param(query);
    let at_the_door = match kind {
        StreamFile::Master | StreamFile::Media | StreamFile::Archive(_) => true,
        StreamFile::Fmp4(file) => file.is_live_manifest() || file.archive_period().is_some(),
        StreamFile::LowLatency(file) => matches!(file, LlFile::Master | LlFile::Playlist),
        _ => false,
    };
    // HLS over TS, or the fMP4 protocol of the file (OTT-PROT-4, OTT-ARCH-1).
    let protocol = match kind {
        StreamFile::Fmp4(file) => file.protocol(),
        StreamFile::LowLatency(_) => ott::Protocol::LlHls,
        _ => ott::Protocol::Hls,
    };
    // The hot path: a segment without a pass needs nothing from the door.
    if !at_the_door && pass.is_none() {
        return Door::Continue;
    }
    // Asked without copying the membership: most requests end before its group is read.
    if redundancy.with_membership(stream, |_| ()).is_none() {
        return Door::Continue;
    }
    let Some(view) = redundancy.view() else {
        return Door::Continue;
    };
    let period = match kind {
        StreamFile::Archive(archive) => Some(archive_period(archive, now_ms)),
        StreamFile::Fmp4(file) if !file.is_live_manifest() => Some(file.archive_period()),
        _ => None,
    };
    // A draining node works for nobody: new viewers, and the reloads of players that
    // do not steer, are sent to a node that serves the stream.
    let draining = redundancy.drain.is_draining();
    let working = period.is_none()
        && streams
            .channel(stream)
            .is_some_and(|channel| redundancy.works_here(&channel, now_ms));
    // The common case: a live playlist of a stream that works here, without a pass.
    if working && pass.is_none() {
        return Door::Continue;
    }
    let viewer = Viewer::of(arrival);
    let with_pass = match pass {
        Some(text) => match view.keys.verify(text, stream, Some(viewer.ip), now_ms) {
            Ok(_) => true,
            Err(error) => {
                tracing::debug!(stream, code = error.code(), "pass refused");
                return refuse(redundancy, crate::error::refusal_for_pass(&error));
            }
        },
        None => false,
    };
    if !at_the_door {
        return Door::Continue;
    }
    let observed = crate::access::viewer_id::ViewerId::of_address(viewer.ip);
    // The address a redirect's pass is bound to: the connection's (none in-process).
    let bound = arrival.connection().map(|c| c.peer.ip());
    if with_pass && !redundancy.sessions.is_known(observed) {
        let mut this = view.snapshot.this.clone();
        this.load.backup_sessions = redundancy.sessions.count();
        if let ott::Admit::Refuse(cause) = ott::admit_backup_viewer(&this, true) {
            return refuse(redundancy, crate::error::refusal_for_overload(cause));
        }
        redundancy
            .counters
            .backup_viewers_admitted
            .fetch_add(1, Relaxed);
    }
    if with_pass {
        redundancy.sessions.touch(observed);
    }
    let Some(membership) = redundancy.membership(stream) else {
        return Door::Continue;
    };
    let group = membership.group.as_str();
    let snapshot = &view.snapshot;
    let rest = query_without_pass(query);
    let path = match rung {
        Some(rung) => format!("{rung}/{file}"),
        None => file.to_owned(),
    };
    let file_with_query = match &rest {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    if let Some(period) = period {
        if with_pass {
            return Door::Continue;
        }
        let Some((from, to)) = period else {
            return Door::Continue;
        };
        let decision =
            ott::archive_target(snapshot, group, protocol, from, to, viewer.context, now_ms);
        if let ott::ArchiveDecision::Redirect(target) = decision {
            if let Some(pass) = sign_for(
                redundancy,
                &view,
                &target.stream,
                bound,
                now_ms,
                ott::REDIRECT_PASS_LIFETIME_MS,
            ) {
                redundancy.counters.redirects_archive.fetch_add(1, Relaxed);
                return Door::Answer(redirect(&target.location(&file_with_query, &pass)));
            }
        }
        return Door::Continue;
    }
    if working {
        return Door::Continue;
    }
    if with_pass && !draining {
        // Sent here as a backup, and the stream does not work here either: refuse at
        // once so the player tries its next backup.
        return refuse(redundancy, OttRefusal::NoBackup);
    }
    match ott::redirect_target(
        snapshot,
        group,
        protocol,
        viewer.context,
        viewer.session(),
        now_ms,
    ) {
        Ok(target) => {
            match sign_for(
                redundancy,
                &view,
                &target.stream,
                bound,
                now_ms,
                ott::REDIRECT_PASS_LIFETIME_MS,
            ) {
                Some(pass) => {
                    redundancy.counters.redirects_open.fetch_add(1, Relaxed);
                    Door::Answer(redirect(&target.location(&file_with_query, &pass)))
                }
                None => Door::Continue,
            }
        }
        Err(no_target) => {
            tracing::debug!(
                stream,
                problems = no_target.problems.len(),
                "no node to redirect to"
            );
            Door::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_parameter_is_found_and_removed() {
        assert_eq!(pass_param(Some("a=1&pass=xyz")), Some("xyz"));
        assert_eq!(pass_param(Some("passport=1")), None);
        assert_eq!(pass_param(None), None);
        assert_eq!(
            query_without_pass(Some("a=1&pass=xyz&b=2")).as_deref(),
            Some("a=1&b=2")
        );
        assert_eq!(query_without_pass(Some("pass=xyz")), None);
        assert_eq!(
            query_without_pass(Some("passport=1")).as_deref(),
            Some("passport=1")
        );
    }

    #[test]
    fn archive_periods() {
        let period = ArchiveRequest::Period {
            from_secs: 100,
            duration_secs: 30,
            mono: false,
        };
        assert_eq!(archive_period(period, 0), Some((100_000, 130_000)));
        let from_now = ArchiveRequest::FromNow {
            from_secs: 100,
            mono: true,
        };
        assert_eq!(archive_period(from_now, 200_000), Some((100_000, 200_000)));
        assert_eq!(archive_period(ArchiveRequest::Segment(3), 0), None);
    }
}
