//! Eligibility of a member as a backup or redirect target (OTT-ELIG-1..5, OTT-GRP-5).
//!
//! Two levels:
//! - [`servable_problems`]: the member can take a new viewer with a pass at all (node
//!   up, version, can substitute, fresh live window, clock, view key, not overloaded):
//!   enough for a redirect on open (OTT-PROT-2), where the player starts afresh;
//! - [`eligibility_problems`]: additionally the same timeline and a matching HLS over
//!   MPEG-TS ladder, so a player can switch to it mid-stream (OTT-PROT-1).

use crate::overload::overload;
use crate::problem::Problem;
use crate::view::{MemberView, NodeView, Rung, Transport, Version};

/// A node that is up but whose heartbeat has not been heard for longer than this is
/// treated as hung (OTT-PROT-1 under SIGSTOP): 2.5 s, ten gossip rounds of 250 ms.
pub const SILENT_AFTER_MS: i64 = 2_500;

/// A member's live window must be younger than this (OTT-ELIG-1): 10 minutes.
pub const LIVE_WINDOW_MAX_AGE_MS: i64 = 10 * 60 * 1000;
/// Node clocks may differ by at most this (OTT-ELIG-4, OTT-GRP-3): 240 s.
pub const MAX_CLOCK_SKEW_MS: i64 = 240 * 1000;
/// An adaptive package's rung may carry at most 1.25× our bitrate (OTT-ELIG-3),
/// as a ratio in thousandths.
pub const MAX_BITRATE_RATIO_PERMILLE: u64 = 1250;

/// Age of a member's live window in this node's clock, ms; `None` = never delivered.
/// The member's time is on its node's clock, corrected by `clock_offset_ms`.
pub fn live_window_age_ms(node: &NodeView, member: &MemberView, now_ms: i64) -> Option<i64> {
    let at = member.live_window_at_ms?;
    Some(now_ms.saturating_sub(at.saturating_sub(node.clock_offset_ms)))
}

/// Every reason `member` on `node` cannot take a viewer with a pass now, in a fixed
/// order (node, silence, drain, version, member, clock, key, load); empty = servable.
pub fn servable_problems(
    node: &NodeView,
    member: &MemberView,
    now_ms: i64,
    min_version: Version,
) -> Vec<Problem> {
    let id = || node.id.clone();
    let mut problems = Vec::new();
    if !node.alive {
        problems.push(Problem::NodeDown { node: id() });
    } else if node.silent_ms > SILENT_AFTER_MS {
        problems.push(Problem::Unresponsive {
            node: id(),
            silent_ms: node.silent_ms,
        });
    }
    if node.draining {
        problems.push(Problem::Draining { node: id() });
    }
    if node.version < min_version {
        problems.push(Problem::VersionTooOld {
            node: id(),
            version: node.version,
            minimum: min_version,
        });
    }
    if !member.can_substitute {
        problems.push(Problem::CannotSubstitute { node: id() });
    }
    match live_window_age_ms(node, member, now_ms) {
        Some(age) if age <= LIVE_WINDOW_MAX_AGE_MS => {}
        _ => problems.push(Problem::LiveWindowStale { node: id() }),
    }
    if node.clock_offset_ms.unsigned_abs() > MAX_CLOCK_SKEW_MS.unsigned_abs() {
        problems.push(Problem::ClockSkew {
            node: id(),
            offset_ms: node.clock_offset_ms,
        });
    }
    if !node.has_view_key {
        problems.push(Problem::NoViewKey { node: id() });
    }
    if overload(node).is_some() {
        problems.push(Problem::Overloaded { node: id() });
    }
    problems
}

/// Every reason `member` on `candidate` is not an eligible backup for `own` (this
/// node's member of the same group) now; empty = eligible. `this` is this node.
pub fn eligibility_problems(
    this: &NodeView,
    candidate: &NodeView,
    member: &MemberView,
    own: &MemberView,
    now_ms: i64,
    min_version: Version,
) -> Vec<Problem> {
    debug_assert_eq!(own.node, this.id, "own is this node's member");
    let mut problems = servable_problems(candidate, member, now_ms, min_version);
    let node = || candidate.id.clone();
    let same = matches!(
        (own.timeline_fingerprint, member.timeline_fingerprint),
        (Some(a), Some(b)) if a == b
    );
    if !same {
        problems.push(Problem::NotSameTimeline { node: node() });
    }
    if let Some(p) = ladder_problem(&own.ladder, &member.ladder) {
        problems.push(match p {
            LadderProblem::NotHlsTs => Problem::NotHlsTs { node: node() },
            LadderProblem::Count => Problem::LadderMismatch { node: node() },
            LadderProblem::Codec => Problem::CodecMismatch { node: node() },
            LadderProblem::Bitrate => Problem::BitrateTooHigh { node: node() },
        });
    }
    if let Some(language) = missing_language(&own.languages, &member.languages) {
        problems.push(Problem::LanguageMissing {
            node: node(),
            language: language.to_owned(),
        });
    }
    problems
}

/// The first of `own` languages that `theirs` lacks (OTT-ELIG-3): a backup may carry
/// more languages, never fewer, and its floor may be another (each is a rendition).
pub(crate) fn missing_language<'a>(own: &'a [String], theirs: &[String]) -> Option<&'a str> {
    // A member with one audio (`theirs` empty) has only its floor, of no named
    // language: taken as ours, so only our other languages can be missing there.
    let needed = if theirs.is_empty() {
        own.get(1..).unwrap_or_default()
    } else {
        own
    };
    needed
        .iter()
        .find(|code| !theirs.iter().any(|t| t.eq_ignore_ascii_case(code)))
        .map(String::as_str)
}

/// Whether `member` on `candidate` may back up `own` now (OTT-ELIG-1..5, OTT-GRP-5).
///
/// # Errors
/// The first problem found, in the order of [`eligibility_problems`].
pub fn eligible(
    this: &NodeView,
    candidate: &NodeView,
    member: &MemberView,
    own: &MemberView,
    now_ms: i64,
    min_version: Version,
) -> Result<(), Problem> {
    match eligibility_problems(this, candidate, member, own, now_ms, min_version)
        .into_iter()
        .next()
    {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

pub(crate) enum LadderProblem {
    NotHlsTs,
    Count,
    Codec,
    Bitrate,
}

/// Whether `theirs` is the same package as `own`: as many MPEG-TS rungs, of the same
/// codecs (bit rates aside). Where a package's catch-up is sent first.
pub(crate) fn same_package(own: &[Rung], theirs: &[Rung]) -> bool {
    !matches!(
        ladder_problem(own, theirs),
        Some(LadderProblem::Count | LadderProblem::Codec)
    )
}

/// OTT-ELIG-3 over the MPEG-TS rungs, paired in order of bitrate.
pub(crate) fn ladder_problem(own: &[Rung], theirs: &[Rung]) -> Option<LadderProblem> {
    let ts = |ladder: &[Rung]| {
        let mut rungs: Vec<Rung> = ladder
            .iter()
            .filter(|r| r.transport == Transport::Ts)
            .cloned()
            .collect();
        rungs.sort_by_key(|r| r.bitrate_bps);
        rungs
    };
    let (own, theirs) = (ts(own), ts(theirs));
    if theirs.is_empty() || own.is_empty() {
        return Some(LadderProblem::NotHlsTs);
    }
    if own.len() != theirs.len() {
        return Some(LadderProblem::Count);
    }
    // A rung announced without an audio codec (a node of an earlier version, or video
    // only) is not told apart: only two announced codecs that differ are a mismatch.
    let same_audio = |a: &Option<String>, b: &Option<String>| match (a, b) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        _ => true,
    };
    if own.iter().zip(&theirs).any(|(a, b)| {
        !a.codec.eq_ignore_ascii_case(&b.codec) || !same_audio(&a.audio_codec, &b.audio_codec)
    }) {
        return Some(LadderProblem::Codec);
    }
    // The 1.25× rule is the adaptive package's (OTT-ELIG-3); a single stream from the
    // same source has the same bitrate by construction.
    let package = own.len() > 1;
    if package
        && own.iter().zip(&theirs).any(|(a, b)| {
            u128::from(b.bitrate_bps) * 1000
                > u128::from(a.bitrate_bps) * u128::from(MAX_BITRATE_RATIO_PERMILLE)
        })
    {
        return Some(LadderProblem::Bitrate);
    }
    None
}
