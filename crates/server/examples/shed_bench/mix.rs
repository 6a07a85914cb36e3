//! The traffic of a run: the three classes of a mix and their shares.

use crate::shed_load::{Class, SEGMENT_PATH};

/// The NON_CRITICAL traffic of a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mix {
    /// Telemetry beacons (`POST /telemetry`, 204): cheap to serve, about as cheap as
    /// a shed answer.
    Beacons,
    /// Downloads of the player's `hls.min.js` (~610 KB; re-ranked NON_CRITICAL here):
    /// low priority and expensive, like prefetch or archive downloads.
    Assets,
}

pub(crate) fn classes(mix: Mix, shares: [f64; 3]) -> Vec<Class> {
    let member = [
        ("X-Brdyun-Device", "browser"),
        ("X-Brdyun-Member", "viewer-1"),
        ("X-Brdyun-Playback", "1"),
    ];
    let browser = [("X-Brdyun-Device", "browser")];
    let non_critical = match mix {
        Mix::Beacons => Class::post(
            "non_critical",
            "/telemetry",
            &browser,
            br#"{"event":"heartbeat","bufferSeconds":8.1}"#,
            shares[2],
        ),
        Mix::Assets => Class::get("non_critical", "/player/hls.min.js", &browser, shares[2]),
    };
    // Viewers send one request at a time, each connection standing for many
    // independent players; the flood's devices write PIPELINE at once.
    vec![
        Class::get("critical", SEGMENT_PATH, &member, shares[0]).independent(),
        Class::get("degraded", "/s/mono.m3u8", &browser, shares[1]).pipelined(PIPELINE),
        // Large downloads are cheaper to serve one at a time, and few enough to offer
        // 4x of without batching.
        non_critical.pipelined(match mix {
            Mix::Beacons => PIPELINE,
            Mix::Assets => 1,
        }),
    ]
}

pub(crate) const MIX_SHARES: [f64; 3] = [0.1, 0.3, 0.6];

/// Requests a DEGRADED or NON_CRITICAL (beacon) connection of the generator writes
/// together (HTTP/1.1 pipelining), so one core can offer the node 4× what it serves;
/// CRITICAL connections, like the viewer probe and like players, and the large
/// NON_CRITICAL downloads send one at a time.
pub(crate) const PIPELINE: usize = 8;
