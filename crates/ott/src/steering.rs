//! Content Steering from the mesh (RFC 8216bis §7 for HLS; the same order feeds the
//! DASH `BaseURL` priorities).
//!
//! A switching viewer's master playlist names each node that can serve it as a
//! *pathway* (its own node first, then its balanced backups). Its player asks a
//! steering server, every TTL, in which order to use them; any node answers from its
//! mesh snapshot with [`steer`]: the viewer's pathways in the viewer's order, but every
//! pathway whose node cannot serve now — down, silent (hung), draining, off the
//! timeline, no live window, overloaded for a viewer it would take as a backup — moves
//! to the end. The next request goes to a healthy node other than the one the viewer
//! plays from ([`Steering::reload`]), so a hung node can never hold the decision that
//! it is hung.

use std::collections::HashMap;

use crate::address::{backup_address, ViewerContext};
use crate::eligibility::servable_problems;
use crate::problem::Problem;
use crate::view::{MemberView, NodeId, NodeView, Snapshot};

/// The steering manifest's TTL, seconds: how often a player asks. One second keeps the
/// reaction to a hung node (about [`crate::SILENT_AFTER_MS`] plus one TTL) inside the
/// buffer a live player holds by default (three target durations).
pub const STEERING_TTL_S: u32 = 1;
/// Most pathways one steering request may name.
pub const MAX_PATHWAYS: usize = 8;
/// Longest pathway id.
pub const MAX_PATHWAY_ID_LEN: usize = 64;

/// The pathway id of a node: its name when that is a valid pathway id (RFC 8216bis:
/// `[a-zA-Z0-9._-]`), else `n` and a hash of the name. Stable across the node's
/// restarts, the same on every node.
pub fn pathway_id(node: &NodeId) -> String {
    let name = node.name();
    if is_pathway_id(name) {
        return name.to_owned();
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("n{hash:016x}")
}

/// Whether `text` is a pathway id this server writes and reads.
pub fn is_pathway_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_PATHWAY_ID_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The steering URI of a viewer of `group` whose pathways are `pathways` (its own node
/// first) at the node reached at `url_base`: `{url_base}/steering/{group}?p=a,b,c`.
pub fn steering_uri(url_base: &str, group: &str, pathways: &[String]) -> String {
    format!(
        "{}/steering/{}?p={}",
        url_base.trim_end_matches('/'),
        crate::variants::encode_segment(group),
        pathways.join(",")
    )
}

/// Why a steering request's pathway list is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathwayListError {
    /// No pathway at all.
    #[error("the pathway list is empty")]
    Empty,
    /// More than [`MAX_PATHWAYS`].
    #[error("more than {MAX_PATHWAYS} pathways")]
    TooMany,
    /// An id with characters outside `[a-zA-Z0-9._-]`, or too long.
    #[error("a pathway id is not of [a-zA-Z0-9._-] (at most {MAX_PATHWAY_ID_LEN} characters)")]
    BadId,
    /// The same id twice.
    #[error("a pathway is named twice")]
    Repeated,
}

/// Parses the comma-separated pathway list of a steering request, in the viewer's
/// order.
///
/// # Errors
/// The first problem of the list.
pub fn parse_pathways(text: &str) -> Result<Vec<String>, PathwayListError> {
    if text.is_empty() {
        return Err(PathwayListError::Empty);
    }
    let mut out: Vec<String> = Vec::new();
    for id in text.split(',') {
        if out.len() == MAX_PATHWAYS {
            return Err(PathwayListError::TooMany);
        }
        if !is_pathway_id(id) {
            return Err(PathwayListError::BadId);
        }
        if out.iter().any(|known| known == id) {
            return Err(PathwayListError::Repeated);
        }
        out.push(id.to_owned());
    }
    Ok(out)
}

/// One pathway's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathwayVerdict {
    /// The pathway id.
    pub pathway: String,
    /// Its node, when the mesh knows one of that pathway.
    pub node: Option<NodeId>,
    /// Why it cannot serve this viewer now; empty = healthy.
    pub problems: Vec<Problem>,
}

/// The steering decision for one viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steering {
    /// Every pathway of the request, healthy ones first, each part in the viewer's
    /// order.
    pub verdicts: Vec<PathwayVerdict>,
    /// Where the viewer asks next (an address of a healthy node that is not the one it
    /// will play from, when there is one); `None` = keep asking here.
    pub reload: Option<String>,
}

impl Steering {
    /// The `PATHWAY-PRIORITY` list.
    pub fn priority(&self) -> Vec<&str> {
        self.verdicts.iter().map(|v| v.pathway.as_str()).collect()
    }
}

/// The fingerprint most live members of `group` share, when more than half of those
/// with one do (OTT-GRP-4): a member with another is off the timeline.
fn majority_fingerprint(snapshot: &Snapshot, group: &str) -> Option<u64> {
    let mut counts: HashMap<u64, usize> = HashMap::new();
    let mut total = 0;
    for member in snapshot.members.iter().filter(|m| m.group == group) {
        let alive = snapshot.node(&member.node).is_some_and(|n| n.alive);
        if let (true, Some(fp)) = (alive, member.timeline_fingerprint) {
            *counts.entry(fp).or_default() += 1;
            total += 1;
        }
    }
    counts
        .into_iter()
        .find(|&(_, count)| count * 2 > total)
        .map(|(fp, _)| fp)
}

/// The node of a pathway: an alive one first (a restarted node's former self may
/// still be listed dead).
fn pathway_node<'a>(snapshot: &'a Snapshot, pathway: &str) -> Option<&'a NodeView> {
    std::iter::once(&snapshot.this)
        .chain(&snapshot.nodes)
        .filter(|n| pathway_id(&n.id) == pathway)
        .max_by_key(|n| n.alive)
}

fn member_on<'a>(snapshot: &'a Snapshot, group: &str, node: &NodeId) -> Option<&'a MemberView> {
    snapshot
        .members
        .iter()
        .find(|m| m.group == group && m.node == *node)
}

/// Why `node`'s member can not serve a viewer at `position` of its list now. The first
/// pathway is the viewer's own node: it serves the viewer without a pass, so only
/// what stops it from serving at all counts; the others take the viewer as a backup
/// (overload, "can substitute", view key and clock count too).
fn pathway_problems(
    snapshot: &Snapshot,
    group: &str,
    node: &NodeView,
    position: usize,
    majority: Option<u64>,
    now_ms: i64,
) -> Vec<Problem> {
    let Some(member) = member_on(snapshot, group, &node.id) else {
        return vec![Problem::LiveWindowStale {
            node: node.id.clone(),
        }];
    };
    let mut problems = servable_problems(node, member, now_ms, snapshot.min_version);
    if position == 0 {
        problems.retain(|p| {
            !matches!(
                p,
                Problem::Overloaded { .. }
                    | Problem::CannotSubstitute { .. }
                    | Problem::NoViewKey { .. }
                    | Problem::ClockSkew { .. }
            )
        });
    }
    if let Some(majority) = majority {
        if member.timeline_fingerprint != Some(majority) {
            problems.push(Problem::NotSameTimeline {
                node: node.id.clone(),
            });
        }
    }
    problems
}

/// The steering decision for a viewer of `group` whose master playlist named
/// `pathways` (its own node first), at `now_ms`, for a viewer in `viewer`'s context.
pub fn steer(
    snapshot: &Snapshot,
    group: &str,
    pathways: &[String],
    viewer: ViewerContext,
    now_ms: i64,
) -> Steering {
    let majority = majority_fingerprint(snapshot, group);
    let verdicts: Vec<PathwayVerdict> = pathways
        .iter()
        .enumerate()
        .map(
            |(position, pathway)| match pathway_node(snapshot, pathway) {
                Some(node) => PathwayVerdict {
                    pathway: pathway.clone(),
                    node: Some(node.id.clone()),
                    problems: pathway_problems(snapshot, group, node, position, majority, now_ms),
                },
                None => PathwayVerdict {
                    pathway: pathway.clone(),
                    node: None,
                    problems: vec![Problem::NodeDown {
                        node: NodeId::new(pathway.clone()),
                    }],
                },
            },
        )
        .collect();
    let (mut healthy, unhealthy): (Vec<_>, Vec<_>) =
        verdicts.into_iter().partition(|v| v.problems.is_empty());
    let address = |verdict: &PathwayVerdict| {
        let node = snapshot.node(verdict.node.as_ref()?)?;
        backup_address(node, viewer).ok()
    };
    // Ask next a healthy node the viewer does not play from; else the one it plays from.
    let reload = healthy
        .iter()
        .skip(1)
        .chain(healthy.first())
        .find_map(address);
    healthy.extend(unhealthy);
    Steering {
        verdicts: healthy,
        reload,
    }
}

/// A steering manifest (RFC 8216bis §7.1), written as its JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SteeringManifest<'a> {
    /// Seconds until the player asks again.
    pub ttl_s: u32,
    /// Where it asks next.
    pub reload_uri: Option<&'a str>,
    /// The pathways, most preferred first.
    pub priority: Vec<&'a str>,
}

impl SteeringManifest<'_> {
    /// The manifest as JSON (`VERSION` 1).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(96 + 32 * self.priority.len());
        out.push_str("{\"VERSION\":1,\"TTL\":");
        out.push_str(&self.ttl_s.to_string());
        if let Some(uri) = self.reload_uri {
            out.push_str(",\"RELOAD-URI\":");
            push_json_string(&mut out, uri);
        }
        out.push_str(",\"PATHWAY-PRIORITY\":[");
        for (i, pathway) in self.priority.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_json_string(&mut out, pathway);
        }
        out.push_str("]}");
        out
    }
}

fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathway_ids_are_names_or_hashes() {
        assert_eq!(pathway_id(&NodeId::new("node-a@1700")), "node-a");
        let odd = pathway_id(&NodeId::new("nœud a@1"));
        assert!(odd.starts_with('n') && odd.len() == 17 && is_pathway_id(&odd));
        assert_eq!(odd, pathway_id(&NodeId::new("nœud a@2")));
    }

    #[test]
    fn pathway_lists_are_checked() {
        assert_eq!(
            parse_pathways("a,b.c,d_e-f").unwrap(),
            ["a", "b.c", "d_e-f"]
        );
        assert_eq!(parse_pathways(""), Err(PathwayListError::Empty));
        assert_eq!(parse_pathways("a,,b"), Err(PathwayListError::BadId));
        assert_eq!(parse_pathways("a,b\"c"), Err(PathwayListError::BadId));
        assert_eq!(parse_pathways("a,a"), Err(PathwayListError::Repeated));
        let nine = (0..9)
            .map(|i| format!("p{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(parse_pathways(&nine), Err(PathwayListError::TooMany));
        assert_eq!(
            parse_pathways(&"x".repeat(MAX_PATHWAY_ID_LEN + 1)),
            Err(PathwayListError::BadId)
        );
    }

    #[test]
    fn the_manifest_is_json() {
        let manifest = SteeringManifest {
            ttl_s: 1,
            reload_uri: Some("http://b:8081/steering/g?p=a,b,c"),
            priority: vec!["b", "c", "a"],
        };
        assert_eq!(
            manifest.to_json(),
            r#"{"VERSION":1,"TTL":1,"RELOAD-URI":"http://b:8081/steering/g?p=a,b,c","PATHWAY-PRIORITY":["b","c","a"]}"#
        );
        let mut escaped = String::new();
        push_json_string(&mut escaped, "a\"b\\c\n");
        assert_eq!(escaped, r#""a\"b\\c\u000a""#);
    }
}
