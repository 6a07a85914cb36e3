//! What the MC's own stream of a meeting has now, as nodes learn it with the meeting: a
//! node pulls only the rungs the MC has, and pulls nothing while the meeting waits for
//! its publisher (so a live meeting without media is one line in each log, not a
//! failing pull a second per rung and node).

use std::sync::atomic::Ordering;

use server::state::AppState;
use server::stream::ladder::SOURCE;
use server::stream::package::Package;

/// Source segments after which a node stops waiting for an encoder that has produced
/// nothing: the meeting is then delivered with the rungs that exist (the source alone).
const RUNG_GRACE_SEGMENTS: usize = 4;

/// A meeting's media on the MC now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaNow {
    /// No node should pull the meeting yet: its source has no segment (the publisher
    /// has not started), or its encoder is starting and has cut no rung yet.
    pub waiting: bool,
    /// The configured ladder's rungs that have media here, in master-playlist order
    /// (empty when the source alone is served).
    pub ladder: Vec<String>,
}

/// The media of `meeting`'s stream on this MC, for a meeting configured with `ladder`.
/// A meeting the MC runs no stream for waits.
pub fn of(node: &AppState, meeting: &str, ladder: &[String]) -> MediaNow {
    match node.channel(meeting) {
        Some(channel) => of_channel(&channel, ladder),
        None => MediaNow {
            waiting: true,
            ladder: Vec::new(),
        },
    }
}

fn has_media(channel: &Package, rung: &str) -> bool {
    let rendition = if rung == SOURCE {
        Some(channel.main())
    } else {
        channel.rendition(rung)
    };
    rendition.is_some_and(|r| !r.snapshot().segments.is_empty())
}

fn of_channel(channel: &Package, ladder: &[String]) -> MediaNow {
    let source_segments = channel.main().snapshot().segments.len();
    let rungs: Vec<String> = ladder
        .iter()
        .filter(|rung| rung.as_str() != SOURCE)
        .filter(|rung| has_media(channel, rung))
        .cloned()
        .collect();
    let expects_rungs = ladder.iter().any(|rung| rung != SOURCE);
    // An encoder that failed (ffmpeg missing or crashing) is not waited for; one that is
    // starting is, for a few source segments.
    let encoder_failed = channel
        .ladder()
        .is_some_and(|status| status.failures.load(Ordering::Relaxed) > 0);
    let encoder_starting = expects_rungs
        && rungs.is_empty()
        && !encoder_failed
        && source_segments < RUNG_GRACE_SEGMENTS;
    let ladder_now = if rungs.is_empty() {
        Vec::new()
    } else {
        ladder
            .iter()
            .filter(|rung| rung.as_str() == SOURCE || rungs.contains(rung))
            .cloned()
            .collect()
    };
    MediaNow {
        waiting: source_segments == 0 || encoder_starting,
        ladder: ladder_now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use server::stream::package::{LiveSegment, TrackSummary};

    fn ladder() -> Vec<String> {
        vec!["240p".into(), SOURCE.into(), "144p".into()]
    }

    fn channel() -> Package {
        Package::with_rungs("m", 10, packaging::render::renderer(2000), &ladder())
    }

    fn push(channel: &Package, rung: Option<&str>, msn: u64) {
        let segment = LiveSegment {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            duration_ticks: 180_000,
            program_date_time_ms: 1_700_000_000_000 + msn as i64 * 2000,
            data: Bytes::from(vec![0u8; 188]),
            ..LiveSegment::default()
        };
        let rendition = match rung {
            Some(name) => channel.rendition(name).expect("a rung"),
            None => channel.main(),
        };
        channel.push_to(rendition, segment, TrackSummary::default(), None);
    }

    #[test]
    fn a_meeting_whose_source_has_no_segment_waits() {
        let now = of_channel(&channel(), &ladder());
        assert!(now.waiting);
        assert!(now.ladder.is_empty());
    }

    #[test]
    fn a_starting_encoder_is_waited_for_a_few_source_segments() {
        let channel = channel();
        for msn in 0..RUNG_GRACE_SEGMENTS as u64 {
            assert!(of_channel(&channel, &ladder()).waiting, "segment {msn}");
            push(&channel, None, msn);
        }
        // The encoder never cut a rung: the source alone is delivered.
        let now = of_channel(&channel, &ladder());
        assert!(!now.waiting);
        assert!(now.ladder.is_empty());
    }

    #[test]
    fn nodes_learn_only_the_rungs_that_have_media_in_ladder_order() {
        let channel = channel();
        push(&channel, None, 0);
        push(&channel, Some("144p"), 0);
        let now = of_channel(&channel, &ladder());
        assert!(!now.waiting);
        assert_eq!(now.ladder, vec![SOURCE.to_string(), "144p".into()]);
        push(&channel, Some("240p"), 0);
        assert_eq!(of_channel(&channel, &ladder()).ladder, ladder());
    }

    #[test]
    fn a_meeting_without_a_ladder_waits_for_its_source_only() {
        let channel = Package::new("m", 10, packaging::render::renderer(2000));
        assert!(of_channel(&channel, &[]).waiting);
        push(&channel, None, 0);
        assert_eq!(
            of_channel(&channel, &[]),
            MediaNow {
                waiting: false,
                ladder: Vec::new()
            }
        );
    }
}
