//! The player page (`/player?stream=NAME`) and the hls.js build it uses, embedded in the
//! binary so the demo needs no network.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

/// hls.js, from the npm package named in `assets/hls.js-VERSION` (Apache-2.0).
static HLS_JS: &[u8] = include_bytes!("../../assets/hls.min.js");
static PLAYER_HTML: &str = include_str!("../../assets/player.html");

/// `GET /player`: the player page.
pub async fn page() -> Response {
    crate::http::http_util::page(PLAYER_HTML)
}

/// `GET /player/hls.min.js`: the embedded hls.js.
pub async fn hls_js() -> Response {
    let mut response = HLS_JS.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    response
}
