//! The live MPD of a package (an ABR ladder): one video AdaptationSet whose
//! Representations are the source and every rung, all on one `SegmentTimeline`.
//!
//! A live period's Representations never change: dash.js 5.2 stops loading video for
//! good when an MPD update adds a Representation to the period it plays (measured: a
//! player started before the rungs joined froze when they did). So a rung's
//! membership splits periods instead: a segment's period is keyed by its discontinuity
//! sequence and by the rungs that have the segment, each with the rung's own
//! discontinuity sequence (`d3-240p.0-144p.0`). The key is a function of the segments
//! (every node's rung segments are the MC's bytes), not of when a node started, and a
//! rung that restarts has a new sequence, so a key never comes back once left.
//!
//! At the live edge the newest source segment waits, at most [`HOLD_BACK_MS`], for the
//! rungs to bring theirs (they are cut on it, a few tens of milliseconds later): without
//! the wait every segment would first be listed without the rungs and then, moments
//! later, with them — a period that shrinks under a player.

use std::collections::BTreeMap;
use std::sync::Arc;

use media::dash::{MpdPeriod, MpdRung};

use super::mpd::{bps, dynamic_mpd, periods, representations};
use super::view::Fmp4View;
use crate::window::WindowSnapshot;

/// How long the newest source segment waits for the rungs' segments of its MSN.
pub const HOLD_BACK_MS: i64 = 500;

/// One rung's fMP4 segments by MSN (none while the master playlist does not offer it).
struct RungSegments<'a> {
    name: &'a str,
    segments: BTreeMap<u64, &'a Fmp4View>,
    /// The rung has no segment at all yet (its encoder or publisher has not started).
    unstarted: bool,
}

/// The period key of source segment `msn`: the rungs that have it, in ladder order, with
/// their discontinuity sequences; `None` when none has.
fn key(rungs: &[RungSegments<'_>], msn: u64) -> Option<String> {
    let mut key = String::new();
    for rung in rungs {
        if let Some(view) = rung.segments.get(&msn) {
            key.push('-');
            key.push_str(rung.name);
            key.push('.');
            key.push_str(&view.marker.state.discontinuity_seq.to_string());
        }
    }
    (!key.is_empty()).then_some(key)
}

/// The live MPD of a package: the source's `window` and its `rungs` (name and window,
/// in ladder order: the rungs the master playlist lists, offered or not), rendered at
/// `now_ms`; see the module docs.
pub fn package_mpd(
    window: &WindowSnapshot,
    rungs: &[(&str, Arc<WindowSnapshot>)],
    availability_start_ms: i64,
    target_ms: u64,
    now_ms: i64,
) -> String {
    let rungs: Vec<RungSegments<'_>> = rungs
        .iter()
        .map(|(name, w)| RungSegments {
            name,
            segments: if crate::render::offered(name, w) {
                w.fmp4_segments().map(|(s, v)| (s.msn, v)).collect()
            } else {
                BTreeMap::new()
            },
            unstarted: w.segments.is_empty(),
        })
        .collect();
    let mut views: Vec<&Fmp4View> = window.fmp4_segments().map(|(_, v)| v).collect();
    if let Some(newest) = views.last() {
        // A rung that had the segment before, or has not started yet, is waited for.
        let msn = newest.marker.state.msn;
        let awaited = rungs.iter().any(|r| {
            !r.segments.contains_key(&msn)
                && (r.unstarted || r.segments.contains_key(&msn.wrapping_sub(1)))
        });
        // An MPD without a period is no MPD to a player: the first segment never waits.
        let waits = awaited && views.len() > 1;
        if waits && now_ms.saturating_sub(window.published_ms) < HOLD_BACK_MS {
            views.pop();
        }
    }
    let mut periods = periods(&views, |view| key(&rungs, view.marker.state.msn));
    for period in &mut periods {
        period.rungs = rungs
            .iter()
            .filter_map(|rung| rung_of(rung, period))
            .collect();
    }
    dynamic_mpd(periods, availability_start_ms, target_ms, now_ms)
}

/// A rung's Representation in `period`, when it has the period's segments (its key
/// says so: every segment of the period has the same rungs).
fn rung_of(rung: &RungSegments<'_>, period: &MpdPeriod) -> Option<MpdRung> {
    let views: Vec<&Fmp4View> = period
        .segments
        .iter()
        .map(|s| rung.segments.get(&s.msn).copied())
        .collect::<Option<_>>()?;
    let first = views.first()?;
    let peak = views
        .iter()
        .map(|v| bps(v.media_bytes.0, v.marker.duration_ticks))
        .max()
        .unwrap_or(0);
    let (video, _) = representations(&first.init.config, peak, 0);
    Some(MpdRung {
        name: rung.name.to_owned(),
        video: video?,
        discontinuity_seq: first.marker.state.discontinuity_seq,
        segments: period.segments.clone(),
    })
}
