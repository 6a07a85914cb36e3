//! What this node announces about its own members (OTT-GRP-1, OTT-ELIG-1..3,
//! OTT-ARCH-1), computed from its live channels.

use crate::redundancy::{Membership, Redundancy};
use crate::stream::package::{Package, WindowSnapshot};
use crate::stream::streams::Streams;

/// Whether a stream works here now: its input is not paused and its newest segment
/// was published less than `stale_after_ms` ago. A stream that does not work sends new
/// viewers elsewhere (OTT-PROT-2) and announces no live window.
pub fn stream_working(channel: &Package, now_ms: i64, stale_after_ms: i64) -> bool {
    !channel.input_paused()
        && channel
            .pushed_at_ms()
            .is_some_and(|at| now_ms.saturating_sub(at) < stale_after_ms)
}

/// FNV-1a, 64 bits: a hash that is the same on every node and every build.
fn fnv1a(parts: &[u64]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.to_be_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// The timeline fingerprint of a window (OTT-ELIG-2, OTT-GRP-4): a hash of the timeline
/// law its newest segment carries in its marker packet (discontinuity sequence, the
/// PTS↔wall-clock anchor, the target duration). Two nodes that follow the same upstream
/// timeline cut every segment at the same place with the same numbers and dates, and
/// have equal fingerprints through a whole discontinuity period even while one is a
/// segment behind; a node that cut its own timeline (its own anchor) never matches.
pub fn timeline_fingerprint(window: &WindowSnapshot) -> Option<u64> {
    window
        .newest_marker()
        .map(|marker| marker_fingerprint(&marker))
}

/// The fingerprint of the timeline law one marker carries: any difference in the
/// anchor, down to one millisecond of its date, gives another fingerprint.
pub fn marker_fingerprint(marker: &media::timeline::TimelineMarker) -> u64 {
    let state = marker.state;
    fnv1a(&[
        state.discontinuity_seq,
        state.anchor_ts,
        state.anchor_unix_ms as u64,
        u64::from(marker.target_duration_ms),
    ])
}

/// The codec family the ladder announces (`h264`, `h265`, `aac`, …) from an RFC 6381
/// codec string.
pub fn codec_family(codec: &str) -> String {
    let prefix = codec.split('.').next().unwrap_or(codec);
    match prefix {
        "avc1" | "avc3" => "h264".to_owned(),
        "hvc1" | "hev1" => "h265".to_owned(),
        "mp4a" => "aac".to_owned(),
        other => other.to_ascii_lowercase(),
    }
}

/// The stream's audio languages as the mesh announces them (OTT-ELIG-3): ISO 639-2
/// codes, the floor's first; none for a stream of one audio.
pub fn announced_languages(channel: &Package) -> Vec<String> {
    channel
        .languages()
        .map_or_else(Vec::new, |(floor, others)| {
            std::iter::once(floor)
                .chain(others.into_iter().map(|(language, _)| language))
                .map(|l| l.language.to_string())
                .collect()
        })
}

/// This node's member for one stream of a group.
pub fn own_member(
    node: &ott::NodeId,
    stream: &str,
    membership: &Membership,
    channel: &Package,
    now_ms: i64,
    stale_after_ms: i64,
) -> ott::MemberView {
    let window = channel.snapshot();
    let working = stream_working(channel, now_ms, stale_after_ms);
    // The real ladder (OTT-ELIG-3): every rendition the master playlist offers, with its
    // video and audio codecs and peak bit rate. Every rendition is packaged in both
    // containers: fMP4 is made from the TS segments (packaging::fmp4), so each announces an
    // fMP4 rung alike (OTT-PROT-4).
    let ladder = channel
        .offered()
        .iter()
        .filter_map(|(_, rung)| {
            let families: Vec<String> =
                rung.tracks.codecs.iter().map(|c| codec_family(c)).collect();
            let audio = families.iter().find(|c| c.as_str() == "aac").cloned();
            let video = families.into_iter().find(|c| c.as_str() != "aac")?;
            Some((video, audio, rung.bandwidth.0))
        })
        .flat_map(|(codec, audio, bitrate_bps)| {
            [ott::Transport::Ts, ott::Transport::Fmp4].map(|transport| ott::Rung {
                codec: codec.clone(),
                audio_codec: audio.clone(),
                bitrate_bps,
                transport,
            })
        })
        .collect();
    let archive = channel
        .archive()
        .map_or_else(ott::ArchiveRanges::default, |r| {
            let range = r.reader().with_index(|i| i.range());
            let ts: Vec<(i64, i64)> = range
                .map(|r| vec![(r.from_ms, r.to_ms)])
                .unwrap_or_default();
            // The fMP4 archive is derived from the TS archive on request
            // (packaging::archive::fmp4): the same ranges (OTT-ARCH-1).
            ott::ArchiveRanges {
                fmp4: ts.clone(),
                ts,
            }
        });
    ott::MemberView {
        node: node.clone(),
        group: membership.group.clone(),
        stream: stream.to_owned(),
        can_substitute: membership.can_substitute,
        live_window_at_ms: if working {
            channel.pushed_at_ms()
        } else {
            None
        },
        timeline_fingerprint: timeline_fingerprint(&window),
        ladder,
        languages: announced_languages(channel),
        archive,
    }
}

impl Redundancy {
    /// Whether this node serves `channel`'s stream to viewers now: the stream works
    /// here (see [`stream_working`]) and the node is not draining.
    pub fn works_here(&self, channel: &Package, now_ms: i64) -> bool {
        !self.drain.is_draining() && stream_working(channel, now_ms, self.settings().stale_after_ms)
    }

    /// Feeds the drain what this node served so far (live playlists and segments of
    /// every stream), at `now_ms`.
    pub fn observe_viewers(&self, streams: &Streams, now_ms: i64) {
        let served = streams
            .all()
            .iter()
            .map(|entry| {
                let c = &entry.channel.counters;
                c.playlists_served
                    .load(std::sync::atomic::Ordering::Relaxed)
                    + c.segments_served.load(std::sync::atomic::Ordering::Relaxed)
            })
            .sum();
        self.drain.observe(served, now_ms);
    }

    /// Every member of this node (`node` is its mesh id), for the mesh to announce.
    pub fn own_members(
        &self,
        streams: &Streams,
        node: &ott::NodeId,
        now_ms: i64,
    ) -> Vec<ott::MemberView> {
        self.memberships()
            .into_iter()
            .filter_map(|(stream, membership)| {
                let channel = streams.channel(&stream)?;
                Some(own_member(
                    node,
                    &stream,
                    &membership,
                    &channel,
                    now_ms,
                    self.settings().stale_after_ms,
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_families() {
        assert_eq!(codec_family("avc1.64001f"), "h264");
        assert_eq!(codec_family("hvc1.1.6.L93.B0"), "h265");
        assert_eq!(codec_family("mp4a.40.2"), "aac");
        assert_eq!(codec_family("VP09.00"), "vp09");
    }

    #[test]
    fn dates_one_millisecond_apart_are_another_timeline() {
        // An MC pair (docs/mc-pair.md): two MCs whose anchors differ by 1 ms (a PDT
        // step of 1 ms) must not look like one timeline to the mesh; a node a segment
        // behind still does.
        let mut marker = media::timeline::TimelineMarker {
            target_duration_ms: 2_000,
            ..Default::default()
        };
        marker.state.anchor_ts = 900_000;
        marker.state.anchor_unix_ms = 1_796_000_000_000;
        let base = marker_fingerprint(&marker);
        let mut later = marker;
        later.state.anchor_unix_ms += 1;
        assert_ne!(marker_fingerprint(&later), base);
        let mut behind = marker;
        behind.state.msn += 1;
        behind.start_ts += 180_000;
        behind.program_date_time_ms += 2_000;
        assert_eq!(marker_fingerprint(&behind), base);
    }

    #[test]
    fn fingerprint_hash_is_stable_and_order_sensitive() {
        assert_eq!(fnv1a(&[1, 2]), fnv1a(&[1, 2]));
        assert_ne!(fnv1a(&[1, 2]), fnv1a(&[2, 1]));
        // FNV-1a of no input is its offset basis.
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
    }
}
