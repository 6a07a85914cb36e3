//! An MC of a group keeps each live meeting on the group's one timeline
//! ([`super::timeline`]): every heartbeat it looks at what the meeting's stream does
//! (starting, following another MC's relay, cutting its own segments), decides whom its
//! relay is served to, and claims or renews the timeline ownership.

use std::collections::HashSet;
use std::time::Duration;

use meeting::{MeetingId, MeetingState};
use tokio::sync::watch;

use super::timeline::{self, decide, Mode, TimelineRecord};
use super::McState;
use media::timeline::TimelineState;
use server::AppState;

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
            let stream = node.channel(id).map(|channel| {
                let marker = channel.snapshot().newest_marker();
                (channel.active_input(), marker.map(|m| m.state))
            });
            let mode = mode_of(stream, peers, followed.contains(id));
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

/// What a meeting's stream on this MC does, from its active input and the state of its
/// newest timeline marker (`None` for the stream: not started here): starting (no
/// marker yet), following another MC (its active input is one of the `peers`' relays,
/// which come first), carrying on a timeline it `was_following`, or cutting its own.
fn mode_of(
    stream: Option<(Option<usize>, Option<TimelineState>)>,
    peers: usize,
    was_following: bool,
) -> Mode {
    match stream {
        None | Some((_, None)) => Mode::Starting,
        Some((Some(active), Some(_))) if active < peers => Mode::Following,
        Some((_, Some(state))) if was_following => Mode::CarryingOn(state),
        Some((_, Some(state))) => Mode::Cutting(state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(msn: u64) -> TimelineState {
        TimelineState {
            msn,
            ..TimelineState::default()
        }
    }

    #[test]
    fn a_stream_without_a_marker_is_starting() {
        assert_eq!(mode_of(None, 1, false), Mode::Starting);
        assert_eq!(mode_of(Some((Some(0), None)), 1, true), Mode::Starting);
    }

    #[test]
    fn a_peers_relay_as_the_active_input_is_following() {
        // Inputs 0 and 1 are the two peers' relays; 2 is the meeting's own input.
        assert_eq!(
            mode_of(Some((Some(1), Some(at(5)))), 2, false),
            Mode::Following
        );
        assert_eq!(
            mode_of(Some((Some(2), Some(at(5)))), 2, false),
            Mode::Cutting(at(5))
        );
    }

    #[test]
    fn cutting_right_after_following_carries_the_followed_timeline_on() {
        assert_eq!(
            mode_of(Some((Some(1), Some(at(7)))), 1, true),
            Mode::CarryingOn(at(7))
        );
        assert_eq!(
            mode_of(Some((None, Some(at(7)))), 1, true),
            Mode::CarryingOn(at(7))
        );
        assert_eq!(
            mode_of(Some((None, Some(at(7)))), 1, false),
            Mode::Cutting(at(7))
        );
    }
}
