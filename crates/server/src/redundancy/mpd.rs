//! The live MPD for a switching DASH player: the shared MPD (the same on
//! every node of the timeline, see `fmp4::mpd`) with the viewer's three nodes as
//! service locations — this node and its two balanced backups, as the HLS master
//! names them —
//!
//! - a `BaseURL` each, with DVB priority (own first) and equal weight, so a player
//!   whose segment requests fail moves to the next node (dash.js, Shaka, ExoPlayer);
//! - a `Location` each, the backups' with a pass, so the MPD's reloads follow;
//! - a `ContentSteering` element pointing at the mesh's steering server on the first
//!   backup (the same manifests as HLS), so dash.js moves off a hung or draining node
//!   before its requests time out.

use crate::http::request_context::Arrival;
use axum::http::header;
use bytes::Bytes;

use crate::redundancy::master::{backups_for, count_backups};
use crate::redundancy::Redundancy;

/// The root element's opening, as `media::dash` writes it.
const MPD_OPEN: &str = "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\"";
/// The DVB namespace of `dvb:priority` and `dvb:weight`.
const DVB_NS: &str = " xmlns:dvb=\"urn:dvb:dash-extensions:2014-1\"";

/// The MPD made for this viewer, or `None` for the shared one (no group, a player that
/// does not switch, no backup, or no `Host` to name this node by). `query` (a login)
/// goes on the MPD locations.
pub fn personalised(
    redundancy: Option<&Redundancy>,
    stream: &str,
    plain: &[u8],
    arrival: &Arrival,
    query: Option<&str>,
) -> Option<Bytes> {
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
    let mut nodes: Vec<ServiceLocation> = vec![ServiceLocation {
        pathway: ott::pathway_id(&view.snapshot.this.id),
        base: format!("{own_base}/{}/", ott::encode_segment(stream)),
        pass: None,
    }];
    let mut steering_base: Option<&str> = None;
    for target in backups.targets() {
        let Some(pass) = view.master_pass(&target.stream, backups.viewer) else {
            continue;
        };
        steering_base.get_or_insert(&target.url_base);
        nodes.push(ServiceLocation {
            pathway: ott::pathway_id(&target.node),
            base: format!(
                "{}/{}/",
                target.url_base.trim_end_matches('/'),
                ott::encode_segment(&target.stream)
            ),
            pass: Some(pass),
        });
    }
    let pathways: Vec<String> = nodes.iter().map(|n| n.pathway.clone()).collect();
    let steering = ott::steering_uri(steering_base?, &backups.group, &pathways);
    let out = with_service_locations(std::str::from_utf8(plain).ok()?, &nodes, &steering, query)?;
    count_backups(redundancy, nodes.len() - 1);
    Some(Bytes::from(out))
}

/// One node of a viewer's MPD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceLocation {
    /// Its pathway id (`serviceLocation`).
    pub pathway: String,
    /// Where its files of the stream are: `{url_base}/{stream}/`.
    pub base: String,
    /// The pass its MPD needs (a backup), if any.
    pub pass: Option<String>,
}

/// `plain` (an MPD as `media::dash` writes it) with a `BaseURL` and a `Location` per
/// node (DVB priority in their order) and a `ContentSteering` element naming `steering`,
/// the first node the default; `query` goes on every location. `None` if `plain` is no
/// such MPD.
pub fn with_service_locations(
    plain: &str,
    nodes: &[ServiceLocation],
    steering: &str,
    query: Option<&str>,
) -> Option<String> {
    let open_at = plain.find(MPD_OPEN)?;
    let after_open = open_at + MPD_OPEN.len();
    let tag_end = after_open + plain[after_open..].find(">\n")? + 2;
    let first = nodes.first()?;
    let mut elements = String::with_capacity(256 * nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        elements.push_str(&format!(
            "  <BaseURL serviceLocation=\"{}\" dvb:priority=\"{}\" dvb:weight=\"1\">{}</BaseURL>\n",
            node.pathway,
            i + 1,
            xml_text(&node.base)
        ));
    }
    for node in nodes {
        let params: Vec<String> = query
            .map(str::to_owned)
            .into_iter()
            .chain(
                node.pass
                    .as_ref()
                    .map(|p| format!("{}={p}", ott::PASS_QUERY_PARAM)),
            )
            .collect();
        let location = if params.is_empty() {
            format!("{}index.mpd", node.base)
        } else {
            format!("{}index.mpd?{}", node.base, params.join("&"))
        };
        elements.push_str(&format!(
            "  <Location serviceLocation=\"{}\">{}</Location>\n",
            node.pathway,
            xml_text(&location)
        ));
    }
    elements.push_str(&format!(
        "  <ContentSteering defaultServiceLocation=\"{}\" queryBeforeStart=\"false\">{}</ContentSteering>\n",
        first.pathway,
        xml_text(steering)
    ));
    let mut out = String::with_capacity(plain.len() + DVB_NS.len() + elements.len());
    out.push_str(&plain[..after_open]);
    out.push_str(DVB_NS);
    out.push_str(&plain[after_open..tag_end]);
    out.push_str(&elements);
    out.push_str(&plain[tag_end..]);
    Some(out)
}

/// `text` escaped for XML character data.
fn xml_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['&', '<', '>']) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\" type=\"dynamic\" availabilityStartTime=\"1970-01-01T00:00:00.000Z\" minBufferTime=\"PT2.000S\">\n  <Period id=\"d1\" start=\"PT1796272880.222S\">\n  </Period>\n</MPD>\n";

    #[test]
    fn every_node_is_a_base_url_and_a_location_with_steering() {
        let nodes = [
            ServiceLocation {
                pathway: "a".into(),
                base: "http://a:1/s/".into(),
                pass: None,
            },
            ServiceLocation {
                pathway: "b".into(),
                base: "http://b:1/s-b/".into(),
                pass: Some("P&Q".into()),
            },
        ];
        let out = with_service_locations(
            PLAIN,
            &nodes,
            "http://b:1/steering/g?p=a,b",
            Some("login=l&token=t"),
        )
        .unwrap();
        let mpd = dash_mpd_core::parse(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(mpd.base_url.len(), 2);
        assert_eq!(mpd.base_url[0].base, "http://a:1/s/");
        assert_eq!(mpd.base_url[0].serviceLocation.as_deref(), Some("a"));
        assert_eq!(mpd.base_url[1].serviceLocation.as_deref(), Some("b"));
        assert_eq!(mpd.locations.len(), 2);
        assert_eq!(
            mpd.locations[0].url,
            "http://a:1/s/index.mpd?login=l&token=t"
        );
        assert_eq!(
            mpd.locations[1].url,
            "http://b:1/s-b/index.mpd?login=l&token=t&pass=P&Q"
        );
        assert!(
            out.contains(" xmlns:dvb=\"urn:dvb:dash-extensions:2014-1\" profiles="),
            "{out}"
        );
        assert!(
            out.contains("<BaseURL serviceLocation=\"b\" dvb:priority=\"2\" dvb:weight=\"1\">"),
            "{out}"
        );
        assert!(out.contains("<ContentSteering defaultServiceLocation=\"a\" queryBeforeStart=\"false\">http://b:1/steering/g?p=a,b</ContentSteering>\n  <Period"), "{out}");
        assert_eq!(with_service_locations("<MPD>", &nodes, "x", None), None);
    }
}
