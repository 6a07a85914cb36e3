//! What both ladder sources share, the MC's encoder ([`super::encoder`]) and a
//! publisher's own rungs ([`super::published`]): each new source segment announced to
//! the rung cutters, and each finished rung segment counted and pushed into its
//! rendition.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use codes::LadderFault;
use media::segmenter::RungSegment;

use super::status::LadderStatus;
use crate::stream::package::{LiveSegment, Package, StoredSegment, TrackSummary};
use crate::stream::rendition::Rendition;

/// The source's segments cut since `announced` (the newest MSN announced so far, which
/// moves on), oldest first: each is a span every rung cuts a segment for.
pub(super) fn new_source_segments(
    source: &Rendition,
    announced: &mut Option<u64>,
) -> Vec<Arc<StoredSegment>> {
    let window = source.snapshot();
    let mut fresh = Vec::new();
    for segment in &window.segments {
        if announced.is_some_and(|a| segment.msn <= a) {
            continue;
        }
        *announced = Some(segment.msn);
        fresh.push(Arc::clone(segment));
    }
    fresh
}

/// Counts the finished segments of rung `index` (and the source segments it skipped so
/// far, `skipped`), logs a misaligned one with 110004 (the first, then at powers of
/// two), and pushes each into the rung's rendition with the rung's `tracks`.
pub(super) fn publish(
    channel: &Package,
    rendition: &Rendition,
    status: &LadderStatus,
    index: usize,
    skipped: u64,
    tracks: &TrackSummary,
    done: Vec<RungSegment>,
) {
    let counters = &status.counters[index];
    counters.skipped.store(skipped, Ordering::Relaxed);
    for rung in done {
        counters.segments.fetch_add(1, Ordering::Relaxed);
        if !rung.aligned {
            let misaligned = counters.misaligned.fetch_add(1, Ordering::Relaxed);
            if misaligned == 0 || misaligned.is_power_of_two() {
                let code = LadderFault::RungMisaligned;
                tracing::warn!(
                    stream = %channel.name(),
                    rung = %rendition.name(),
                    msn = rung.segment.msn,
                    code = code.code(),
                    "{}", code.message()
                );
            }
        }
        channel.push_to(
            rendition,
            LiveSegment::from(rung.segment),
            tracks.clone(),
            None,
        );
    }
}
