//! An MC of a group keeps each live meeting on the group's one timeline
//! ([`server::mc::timeline`]): every heartbeat it looks at what the meeting's stream
//! does (starting, following another MC's relay, cutting its own segments), decides
//! whom its relay is served to, and claims or renews the timeline ownership.

use std::collections::HashSet;
use std::time::Duration;

use meeting::{MeetingId, MeetingState};
use server::mc::timeline::{self, decide, Mode, TimelineRecord};
use server::mc::McState;
use server::AppState;
use tokio::sync::watch;

/// Runs until `shutdown`. `peers` is how many other MCs' relays come first among
/// every meeting stream's inputs.
pub async fn run(
    mc: McState,
    node: AppState,
    me: String,
    peers: usize,
    mut shutdown: watch::Receiver<bool>,
) {
    let heartbeat = Duration::from_millis(timeline::HEARTBEAT_MS.unsigned_abs());
    let mut ticks = tokio::time::interval(heartbeat);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut decided: HashSet<String> = HashSet::new();
    // The meetings this MC followed (or carried on) at the last heartbeat.
    let mut followed: HashSet<String> = HashSet::new();
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        let now = mc.clock().unix_ms();
        let meetings = mc.meetings();
        let mut seen = HashSet::new();
        for meeting in meetings.iter().filter(|m| m.state == MeetingState::Live) {
            let id = meeting.id.as_str();
            seen.insert(id.to_owned());
            let mode = match node.channel(id) {
                None => Mode::Starting,
                Some(channel) => {
                    let marker = server::redundancy::members::newest_marker(&channel.snapshot());
                    match (channel.active_input(), marker) {
                        (_, None) => Mode::Starting,
                        (Some(active), Some(_)) if active < peers => Mode::Following,
                        (_, Some(marker)) if followed.contains(id) => {
                            Mode::CarryingOn(marker.state)
                        }
                        (_, Some(marker)) => Mode::Cutting(marker.state),
                    }
                }
            };
            if matches!(mode, Mode::Following | Mode::CarryingOn(_)) {
                followed.insert(id.to_owned());
            } else {
                followed.remove(id);
            }
            let record = mc.timeline_owner(&meeting.id);
            let decision = decide(&me, mode, record.as_ref(), now);
            mc.set_relay(id, Some(decision));
            if let (true, Mode::Cutting(state) | Mode::CarryingOn(state)) = (decision.claim, mode) {
                let taking_over = record.as_ref().is_some_and(|r| r.mc != me);
                let claim = TimelineRecord::of(&me, &state, now);
                match mc.claim_timeline(&meeting.id, claim).await {
                    Ok(()) if taking_over || record.is_none() => {
                        tracing::info!(meeting = %id, mc = %me, "this mc owns the meeting's timeline");
                    }
                    Ok(()) => {}
                    Err(error) => {
                        tracing::debug!(meeting = %id, error = %error, "timeline ownership not written");
                    }
                }
            }
        }
        // Once this MC owns the timeline it no longer carries another's on.
        followed.retain(|id| {
            MeetingId::parse(id)
                .ok()
                .and_then(|m| mc.timeline_owner(&m))
                .is_none_or(|r| r.mc != me)
        });
        for gone in decided.difference(&seen) {
            mc.set_relay(gone, None);
        }
        decided = seen;
    }
}
