//! The live MPD for a switching DASH player: the shared MPD's parts (the same on
//! every node of the timeline, see `packaging::fmp4::mpd`) rendered with the viewer's
//! three nodes as service locations — this node and its two balanced backups, as the
//! HLS master names them —
//!
//! - a `BaseURL` each, with DVB priority (own first) and equal weight, so a player
//!   whose segment requests fail moves to the next node (dash.js, Shaka, ExoPlayer);
//! - a `Location` each, the backups' with a pass, so the MPD's reloads follow;
//! - a `ContentSteering` element pointing at the mesh's steering server on the first
//!   backup (the same manifests as HLS), so dash.js moves off a hung or draining node
//!   before its requests time out.

use crate::http::request_context::Arrival;
use axum::http::header;

use media::dash::{ServiceLocation, ServiceLocations};
use packaging::live_mpd::LiveMpd;

use crate::redundancy::master::{backups_for, count_backups};
use crate::redundancy::Redundancy;

/// The MPD made for this viewer, or `None` for the shared one (no group, a player that
/// does not switch, no backup, or no `Host` to name this node by). `query` (a login)
/// goes on the MPD locations.
pub fn personalised(
    redundancy: Option<&Redundancy>,
    stream: &str,
    mpd: &LiveMpd,
    arrival: &Arrival,
    query: Option<&str>,
) -> Option<media::manifest::Manifest> {
    let redundancy = redundancy?;
    let backups = backups_for(redundancy, stream, arrival, ott::Protocol::Dash)?;
    let view = &backups.view;
    let host = arrival.request.headers().get(header::HOST)?.to_str().ok()?;
    let viewer = crate::redundancy::door::Viewer::of(arrival);
    let scheme = if viewer.context.https {
        "https"
    } else {
        "http"
    };
    let own_base = format!("{scheme}://{host}");
    let node = |pathway: String, base: String, pass: Option<String>| {
        let params: Vec<String> = query
            .map(str::to_owned)
            .into_iter()
            .chain(pass.map(|p| format!("{}={p}", ott::PASS_QUERY_PARAM)))
            .collect();
        let location = if params.is_empty() {
            format!("{base}index.mpd")
        } else {
            format!("{base}index.mpd?{}", params.join("&"))
        };
        ServiceLocation {
            pathway,
            base,
            location,
        }
    };
    let mut nodes: Vec<ServiceLocation> = vec![node(
        ott::pathway_id(&view.snapshot.this.id),
        format!("{own_base}/{}/", ott::encode_segment(stream)),
        None,
    )];
    let mut steering_base: Option<&str> = None;
    for target in backups.targets() {
        let Some(pass) = view.master_pass(&target.stream, backups.viewer) else {
            continue;
        };
        steering_base.get_or_insert(&target.url_base);
        nodes.push(node(
            ott::pathway_id(&target.node),
            format!(
                "{}/{}/",
                target.url_base.trim_end_matches('/'),
                ott::encode_segment(&target.stream)
            ),
            Some(pass),
        ));
    }
    let pathways: Vec<String> = nodes.iter().map(|n| n.pathway.clone()).collect();
    let steering = ott::steering_uri(steering_base?, &backups.group, &pathways);
    let passes = nodes.len() - 1;
    let out = mpd.render_for(&ServiceLocations { nodes, steering })?;
    count_backups(redundancy, passes);
    Some(out)
}
