//! The shedding settings the runs compare, as a node's `[shedding]` TOML.

/// The route table re-ranked so each class is what it is named: media playlists
/// DEGRADED (45, +5 for the browser), the player's script (a playback start by
/// default) NON_CRITICAL (10). A macro, so each settings text below can end with it.
macro_rules! reranked {
    () => {
        r#"
[classifier.routes.live_playlist]
bucket = "degraded"
score = 45
[classifier.routes.playback_start]
bucket = "non_critical"
score = 10
"#
    };
}

/// The `pressure` level source, no lane and no pause (the defaults before the cut and
/// the lane became them). No connection is paused (`violator_pause_ms = 0`): each generator connection stands
/// for a stream of distinct devices sending once each; the `+ pause` runs turn the
/// pause on, for the same flood from persistent connections that ignore the answer.
pub(crate) const SETTINGS: &str = concat!(
    r#"
level_source = "pressure"
priority_lane = "off"
cpu_source = "runtime"
cpu_sample_ms = 100
tick_ms = 100
violator_pause_ms = 0
"#,
    reranked!()
);

/// The same, with the level from the feedback controller (ticks every 20 ms).
pub(crate) const CONTROLLED: &str = concat!(
    r#"
priority_lane = "off"
cpu_source = "runtime"
cpu_sample_ms = 100
violator_pause_ms = 0
level_source = "feedback"
tick_ms = 20
"#,
    reranked!()
);

/// The same, with the cut controller (`level_source = "cut"`) judging by the queueing
/// delay alone (`cpu_target = 1`: a saturated core whose admitted requests wait less
/// than 30 ms is used fully, and the excess waits in the devices' sockets), falling
/// when its core (`host` on a pinned node: worker, lane and the kernel's work there)
/// is below 96 % busy, every 200 ms.
pub(crate) const CUT: &str = concat!(
    r#"
priority_lane = "off"
cpu_source = "host"
cpu_sample_ms = 200
violator_pause_ms = 0
level_source = "cut"
tick_ms = 20
[cut]
cpu_target = 1.0
cpu_low = 0.96
target_ms = 30.0
interval_ms = 200
"#,
    reranked!()
);

/// The tighter delay target of [`CUT_TIGHT`].
pub(crate) const TIGHT_TARGET_MS: f64 = 15.0;
