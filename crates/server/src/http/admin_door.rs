//! The door of the operator APIs (`/api/*` but the DASH clock, the operator pages and
//! `/metrics`, on a node and on an MC): what a web page on another origin may not do.
//!
//! Media, playlists, the player and its beacons are read by players on any origin and
//! keep `Access-Control-Allow-Origin: *`; an operator route answers without it, so a
//! page elsewhere cannot read what it returns (a meeting's stream key, a host token).
//! Two checks keep such a page from acting through the operator's browser, where it
//! could send a request without reading the answer:
//! - a body on a mutating call must be `application/json` (108012, 415): a browser
//!   sends that content type cross-origin only after a CORS preflight, which an
//!   operator route does not grant;
//! - a request whose `Origin` is not this server's own host is refused (108013, 403):
//!   a same-origin page (the node's backups and experiments screens) and non-browser
//!   clients (no `Origin`) pass. This is what guards an API that runs without a token
//!   (`trust_loopback`); with a token it is a second lock.

use axum::http::{header, HeaderMap, Method, Uri};
use codes::{Code, RequestError};

use crate::url::Route;

/// Whether answers of `route` are for the operator (and other servers) only: no CORS
/// grant, and the checks of [`refusal`]. `None` (no route: a 404) is public.
pub fn is_operator(route: Option<Route>) -> bool {
    let Some(route) = route else {
        return false;
    };
    match route {
        Route::Metrics
        | Route::Healthz
        | Route::Readyz
        | Route::NodeStatus
        | Route::Streams
        | Route::StreamStatus
        | Route::StreamPause
        | Route::StreamResume
        | Route::OttReport
        | Route::BackupsPage
        | Route::Drain
        | Route::FaultRules
        | Route::FaultRule
        | Route::ExperimentsPage
        | Route::Experiments
        | Route::ExperimentsReport
        | Route::Experiment
        | Route::ExperimentStart
        | Route::McOpenApi
        | Route::McMeetings
        | Route::McMeeting
        | Route::McViewerLimit
        | Route::McCaptions
        | Route::McRecordings
        | Route::McViewerTokens
        | Route::McViewer
        | Route::McMeetingAction
        | Route::McNodeSync => true,
        // What players on any origin fetch: the player, its clock and beacons, the way
        // in, steering, and every file of a stream.
        Route::Root
        | Route::Player
        | Route::PlayerScript
        | Route::UtcTiming
        | Route::Steering
        | Route::Watch
        | Route::Telemetry
        | Route::KpiBeacon
        | Route::StreamFile
        | Route::RenditionFile => false,
    }
}

/// Why a request to an operator route is refused at the door, if it is: another
/// origin (108013), or a body that is not JSON on a mutating call (108012). `has_body`:
/// the request carries body bytes (a `POST` without a body needs no content type).
pub fn refusal(method: &Method, uri: &Uri, headers: &HeaderMap, has_body: bool) -> Option<Code> {
    if !same_origin(uri, headers) {
        return Some(Code::Request(RequestError::CrossOrigin));
    }
    let mutating = matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if mutating && has_body && !is_json(headers) {
        return Some(Code::Request(RequestError::NotJson));
    }
    None
}

/// No `Origin` (not a browser, or a same-origin `GET`), or an `Origin` whose host and
/// port are the request's own (`Host`, or the HTTP/2 authority).
fn same_origin(uri: &Uri, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    // `null` (a sandboxed page, a file) and anything without a scheme are not us.
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| headers.get(header::HOST).and_then(|h| h.to_str().ok()));
    host.is_some_and(|host| !host.is_empty() && host.eq_ignore_ascii_case(authority))
}

/// A `Content-Type` of `application/json` (parameters allowed) or `application/*+json`.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some(subtype) = essence
        .get(..12)
        .filter(|t| t.eq_ignore_ascii_case("application/"))
        .and(essence.get(12..))
    else {
        return false;
    };
    subtype.eq_ignore_ascii_case("json")
        || subtype
            .len()
            .checked_sub(5)
            .and_then(|at| subtype.get(at..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().expect("value"));
        }
        map
    }

    fn uri(text: &str) -> Uri {
        text.parse().expect("uri")
    }

    #[test]
    fn only_the_requests_own_origin_or_none_passes() {
        let path = uri("/api/drain");
        let check =
            |h: &[(&'static str, &'static str)]| refusal(&Method::GET, &path, &headers(h), false);
        assert_eq!(
            check(&[("host", "127.0.0.1:8080")]),
            None,
            "no Origin: not a browser"
        );
        assert_eq!(
            check(&[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://127.0.0.1:8080")
            ]),
            None
        );
        assert_eq!(
            check(&[
                ("host", "Node.Example:443"),
                ("origin", "https://node.example:443")
            ]),
            None
        );
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:8081",
            "null",
            "127.0.0.1:8080",
        ] {
            let mut h = headers(&[("host", "127.0.0.1:8080")]);
            h.insert("origin", origin.parse().expect("value"));
            assert_eq!(
                refusal(&Method::GET, &path, &h, false),
                Some(Code::Request(RequestError::CrossOrigin)),
                "{origin}"
            );
        }
        // No Host to compare with: refused when an Origin is given.
        assert!(check(&[("origin", "http://a")]).is_some());
        // HTTP/2: the authority is the host.
        let h2 = uri("https://node.example/api/drain");
        let h = headers(&[("origin", "https://node.example")]);
        assert_eq!(refusal(&Method::POST, &h2, &h, false), None);
    }

    #[test]
    fn a_mutating_call_with_a_body_must_be_json() {
        let path = uri("/api/fault-rules");
        let host = ("host", "n:1");
        let not_json = Some(Code::Request(RequestError::NotJson));
        for (method, content_type, body, expected) in [
            (Method::POST, None, true, not_json),
            (Method::POST, Some("text/plain"), true, not_json),
            (
                Method::PUT,
                Some("application/x-www-form-urlencoded"),
                true,
                not_json,
            ),
            (
                Method::DELETE,
                Some("multipart/form-data; boundary=x"),
                true,
                not_json,
            ),
            (Method::POST, Some("application/jsonx"), true, not_json),
            (Method::POST, Some("application/json"), true, None),
            (
                Method::POST,
                Some("Application/JSON; charset=utf-8"),
                true,
                None,
            ),
            (
                Method::PUT,
                Some("application/merge-patch+json"),
                true,
                None,
            ),
            (Method::POST, None, false, None),
            (Method::GET, Some("text/plain"), true, None),
        ] {
            let mut h = headers(&[host]);
            if let Some(t) = content_type {
                h.insert("content-type", t.parse().expect("value"));
            }
            assert_eq!(
                refusal(&method, &path, &h, body),
                expected,
                "{method} {content_type:?}"
            );
        }
    }

    #[test]
    fn players_routes_are_public_and_the_operators_are_not() {
        assert!(!is_operator(None));
        for route in [
            Route::StreamFile,
            Route::UtcTiming,
            Route::Telemetry,
            Route::Watch,
        ] {
            assert!(!is_operator(Some(route)), "{route:?}");
        }
        for route in [
            Route::McMeetingAction,
            Route::Drain,
            Route::FaultRules,
            Route::McNodeSync,
        ] {
            assert!(is_operator(Some(route)), "{route:?}");
        }
    }
}
