//! `GET /steering/{group}?p=a,b,c`: the steering manifest of a switching viewer
//! (RFC 8216bis §7; see `docs/ott-redundancy.md`, "Steering").
//!
//! `p` lists the viewer's pathways as its master playlist named them, its own node
//! first; the player adds `_HLS_pathway` and `_HLS_throughput`, which change nothing.
//! Any node of the mesh answers from its snapshot ([`ott::steer`]), so the answer never
//! depends on the node the viewer plays from; `RELOAD-URI` sends the next request to a
//! healthy node other than that one.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, OttRefusal};
use crate::http::extract::CodedPath;
use crate::redundancy::door::Viewer;
use crate::state::AppState;

/// The `p` parameter of a query, percent-decoded: a player that rebuilds the URL to add
/// its own parameters (video.js's VHS) sends the commas as `%2C`.
fn pathway_param(query: Option<&str>) -> Option<String> {
    let raw = query?.split('&').find_map(|pair| pair.strip_prefix("p="))?;
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()
        .map(|text| text.into_owned())
}

/// The manifest.
pub async fn manifest(
    State(state): State<AppState>,
    CodedPath(group): CodedPath<String>,
    request: Request,
) -> Response {
    let refuse = |refusal| ApiError::Ott(refusal).into_response();
    let Some(pathways) =
        pathway_param(request.uri().query()).and_then(|text| ott::parse_pathways(&text).ok())
    else {
        return refuse(OttRefusal::BadSteering);
    };
    let Some(view) = state.redundancy().and_then(|r| r.view()) else {
        return refuse(OttRefusal::SteeringUnknownGroup);
    };
    if !view.snapshot.members.iter().any(|m| m.group == group) {
        return refuse(OttRefusal::SteeringUnknownGroup);
    }
    let viewer = Viewer::of_request(&request);
    let now = state.clock().unix_ms();
    let steering = ott::steer(&view.snapshot, &group, &pathways, viewer.context, now);
    let reload = steering
        .reload
        .as_deref()
        .map(|base| ott::steering_uri(base, &group, &pathways));
    let body = ott::SteeringManifest {
        ttl_s: ott::STEERING_TTL_S,
        reload_uri: reload.as_deref(),
        priority: steering.priority(),
    }
    .to_json();
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::pathway_param;

    #[test]
    fn the_pathway_list_is_found_among_the_players_parameters() {
        assert_eq!(
            pathway_param(Some("p=a,b&_HLS_pathway=a&_HLS_throughput=9")),
            Some("a,b".to_owned())
        );
        assert_eq!(
            pathway_param(Some("p=node-a%2Cnode-b%2cnode-c&_HLS_pathway=node-a")),
            Some("node-a,node-b,node-c".to_owned())
        );
        assert_eq!(
            pathway_param(Some("_HLS_pathway=a&p=c")),
            Some("c".to_owned())
        );
        assert_eq!(pathway_param(Some("pp=a")), None);
        assert_eq!(pathway_param(None), None);
    }
}
