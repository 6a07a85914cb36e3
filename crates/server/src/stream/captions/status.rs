//! What a stream's captions show operators: the `captions` object of
//! `/api/streams/{name}` and the `brdyun_caption_*` metrics.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::CaptionCounters;
use packaging::window::WindowSnapshot;

/// The `captions` object of a stream's status: its tracks (those of the live window)
/// and the counters.
pub fn json(counters: &CaptionCounters, window: &WindowSnapshot) -> Value {
    let tracks: Vec<Value> =
        packaging::captions::serve::menu_order(packaging::captions::serve::tracks(window))
            .map(|t| json!({"id": t.id, "language": t.language, "name": t.name}))
            .collect();
    let c = counters;
    json!({
        "tracks": tracks,
        "cues": c.cues.load(Ordering::Relaxed),
        "refused": c.refused.load(Ordering::Relaxed),
        "cc_pairs": c.cc_pairs.load(Ordering::Relaxed),
        "bad_blocks": c.bad_blocks.load(Ordering::Relaxed),
    })
}

/// Writes the stream's caption metrics (label `stream`, already escaped).
pub fn metrics(
    counters: &CaptionCounters,
    window: &WindowSnapshot,
    stream: &str,
    out: &mut String,
) {
    let c = counters;
    for (name, value) in [
        ("cues_total", c.cues.load(Ordering::Relaxed)),
        ("refused_total", c.refused.load(Ordering::Relaxed)),
        ("cc_pairs_total", c.cc_pairs.load(Ordering::Relaxed)),
        ("bad_blocks_total", c.bad_blocks.load(Ordering::Relaxed)),
    ] {
        let _ = writeln!(out, "brdyun_caption_{name}{{stream=\"{stream}\"}} {value}");
    }
    let tracks = packaging::captions::serve::tracks(window).len();
    let _ = writeln!(out, "brdyun_caption_tracks{{stream=\"{stream}\"}} {tracks}");
}
