//! The catch-up master playlist of a package (an ABR ladder): one variant per recorded
//! rendition of the period, in ladder order, so a catch-up viewer gets the ladder a
//! live viewer gets.
//!
//! A variant is described from what was recorded, not from the live window (a meeting
//! watched after it ended has none): BANDWIDTH and AVERAGE-BANDWIDTH from the period's
//! index entries, CODECS, RESOLUTION and FRAME-RATE probed from the rendition's first
//! archived segment of the period. Every rendition's archive is cut on the package's
//! timeline, so the same MSN covers the same span in each and a player can switch at
//! any segment boundary. A rung whose first segment of the period does not start on a
//! keyframe at the source's cut (its timeline marker says so) is left out, as the live
//! master leaves out a rung that is not switchable. A period's master also lists the
//! stream's subtitle tracks, read from the caption block of its last archived segment,
//! and the audio languages recorded in the span (the floor muxed in the variants, each
//! other at its own catch-up playlist, as live).
//!
//! Probing a rendition means reading and demuxing a whole segment, so it is done once
//! per archive and discontinuity sequence ([`probe`]): HLS lets an encoding change
//! only at a discontinuity, so every segment between two discontinuities has the
//! codecs, picture size and frame rate of the first one probed. A catch-up master for
//! any other `from` in the same run reads at most the first TS packet of each rung
//! (whether it may be switched into there), never a whole segment.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use dvr::index::Entry;
use media::hls::{AudioRendition, MasterPlaylist, SubtitleRendition, Variant};

use super::SegmentSource;
use crate::tracks::TrackProbe;
use crate::window::TrackSummary;

/// Probes kept (archives × discontinuity runs); past it the cache starts again empty,
/// so a node with thousands of archived runs still holds a bounded amount.
const MAX_PROBES: usize = 4096;

/// How often a catch-up master found its renditions' probes cached, and how often it
/// had to read and demux a segment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeCounts {
    /// Probes found in the cache.
    pub hits: u64,
    /// Segments read and demuxed.
    pub misses: u64,
}

/// The probes of the process's archives: (archive directory, discontinuity sequence)
/// to what the run's first probed segment carries.
#[derive(Default)]
struct ProbeCache {
    probes: Mutex<HashMap<(PathBuf, u64), TrackSummary>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

fn cache() -> &'static ProbeCache {
    static CACHE: OnceLock<ProbeCache> = OnceLock::new();
    CACHE.get_or_init(ProbeCache::default)
}

fn key(reader: &dyn SegmentSource, entry: &Entry) -> (PathBuf, u64) {
    (reader.key().to_owned(), entry.discontinuity_seq)
}

fn cached(key: &(PathBuf, u64)) -> Option<TrackSummary> {
    let probes = cache().probes.lock().unwrap_or_else(|p| p.into_inner());
    probes.get(key).cloned()
}

/// The probe counters since the process started (tests and diagnostics).
pub fn probe_counts() -> ProbeCounts {
    ProbeCounts {
        hits: cache().hits.load(Ordering::Relaxed),
        misses: cache().misses.load(Ordering::Relaxed),
    }
}

/// Whether rendering a master of `renditions` would read and demux a segment (some
/// rendition's run is not probed yet): such a master is an archive scan.
pub fn needs_probe(renditions: &[RecordedRendition]) -> bool {
    renditions.iter().any(|r| {
        r.entries
            .first()
            .is_some_and(|first| cached(&key(r.reader.as_ref(), first)).is_none())
    })
}

/// What the run of `entry` carries (codecs, picture size, frame rate): from the cache,
/// or read and demuxed from `entry` once. Blocking on a miss.
///
/// # Errors
/// The segment cannot be read (retention removed it meanwhile, a disk error).
pub fn probe(reader: &dyn SegmentSource, entry: &Entry) -> std::io::Result<TrackSummary> {
    let key = key(reader, entry);
    if let Some(summary) = cached(&key) {
        cache().hits.fetch_add(1, Ordering::Relaxed);
        return Ok(summary);
    }
    let data = reader.read(entry)?;
    cache().misses.fetch_add(1, Ordering::Relaxed);
    let mut tracks = TrackProbe::default();
    for frame in media::ts::demux_frames(&data) {
        tracks.observe(&frame);
    }
    let summary = tracks.summary();
    let mut probes = cache().probes.lock().unwrap_or_else(|p| p.into_inner());
    if probes.len() >= MAX_PROBES {
        probes.clear();
    }
    probes.insert(key, summary.clone());
    Ok(summary)
}

/// One rendition's part of a catch-up master: where its media playlist is (relative to
/// the master) and its archived segments of the period.
#[derive(Debug, Clone)]
pub struct RecordedRendition {
    /// The media playlist's URI, e.g. `240p/mono-{from}-{duration}.m3u8`.
    pub uri: String,
    /// The rendition's archive.
    pub reader: Arc<dyn SegmentSource>,
    /// Its segments of the period, oldest first.
    pub entries: Vec<Entry>,
    /// A ladder rung (offered only where it is switchable), not the source.
    pub rung: bool,
}

/// The subtitle renditions of a catch-up period: the tracks of the caption block of
/// the source's last archived segment of the period, each at its catch-up playlist
/// `sub-{track}-{period}.m3u8` (`period` is `{from}-{duration}`). Blocking: reads the
/// head of one archived segment.
pub fn subtitles(source: &RecordedRendition, period: &str) -> Vec<SubtitleRendition> {
    let Some(last) = source.entries.last() else {
        return Vec::new();
    };
    let block = source
        .reader
        .read_head(last, 188 * 24)
        .ok()
        .and_then(|head| media::ts::captions::segment_block(&head).ok().flatten())
        .or_else(|| {
            let data = source.reader.read(last).ok()?;
            media::ts::captions::segment_block(&data).ok().flatten()
        });
    block.map_or_else(Vec::new, |block| {
        block
            .tracks
            .into_iter()
            .map(|t| SubtitleRendition {
                uri: format!("sub-{}-{period}.m3u8", t.id),
                name: t.name,
                language: t.language,
            })
            .collect()
    })
}

/// Peak and average bit rate of archived segments, bits per second.
pub fn entries_bandwidth(entries: &[Entry]) -> (u64, u64) {
    crate::window::peak_and_average(
        entries
            .iter()
            .map(|e| (u64::from(e.size), e.duration_ticks)),
    )
}

/// The master playlist of the recorded renditions that have segments in the period;
/// `None` when none has. Blocking: reads the first TS packet of each rung's first
/// segment, and a whole segment of a rendition whose run is not probed yet
/// ([`probe`]). A rendition whose first segment cannot be read is left out (and
/// logged); the master is still rendered from the others.
pub fn render(
    stream: &str,
    renditions: &[RecordedRendition],
    subtitles: Vec<SubtitleRendition>,
    audio: Vec<AudioRendition>,
) -> Option<media::manifest::Manifest> {
    let mut variants = Vec::with_capacity(renditions.len());
    for rendition in renditions {
        let Some(first) = rendition.entries.first() else {
            continue;
        };
        let unreadable = |error: std::io::Error| {
            tracing::warn!(stream, uri = %rendition.uri, msn = first.msn, %error, "archived segment unreadable, variant left out");
        };
        if rendition.rung {
            match rendition.reader.read_head(first, media::ts::PACKET_SIZE) {
                Ok(head) if !switchable(&head) => {
                    tracing::debug!(stream, uri = %rendition.uri, msn = first.msn, "archived rung not switchable, variant left out");
                    continue;
                }
                Ok(_) => {}
                Err(error) => {
                    unreadable(error);
                    continue;
                }
            }
        }
        let tracks = match probe(rendition.reader.as_ref(), first) {
            Ok(tracks) => tracks,
            Err(error) => {
                unreadable(error);
                continue;
            }
        };
        let (peak, average) = entries_bandwidth(&rendition.entries);
        variants.push(Variant {
            uri: rendition.uri.clone(),
            bandwidth: peak.max(1),
            average_bandwidth: (average > 0).then_some(average),
            codecs: tracks.codecs,
            resolution: tracks.resolution,
            frame_rate_milli: tracks.frame_rate_milli,
        });
    }
    (!variants.is_empty()).then(|| {
        MasterPlaylist {
            audio,
            independent_segments: true,
            subtitles,
            variants,
            ..Default::default()
        }
        .manifest_for(&media::hls::Personalisation::default())
    })
}

/// Whether an archived segment starts where a player can switch into it: its timeline
/// marker (the first TS packet) says it starts with a keyframe at the source's cut. A
/// segment without a marker counts as switchable, as in the live window.
fn switchable(data: &[u8]) -> bool {
    data.get(4..188)
        .and_then(|payload| media::TimelineMarker::parse(payload).ok())
        .is_none_or(|marker| marker.keyframe_start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(msn: u64, size: u32, duration_ticks: u64) -> Entry {
        Entry {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            start_ms: 0,
            duration_ticks,
            file: 0,
            offset: 0,
            size,
        }
    }

    #[test]
    fn bandwidth_is_the_peak_segment_and_the_period_average() {
        // 25,000 bytes in 2 s = 100 kbit/s; 50,000 bytes in 2 s = 200 kbit/s.
        let entries = [entry(1, 25_000, 180_000), entry(2, 50_000, 180_000)];
        assert_eq!(entries_bandwidth(&entries), (200_000, 150_000));
        assert_eq!(entries_bandwidth(&[]), (0, 0));
        // A zero-length segment (a torn index entry) divides nothing by zero.
        assert_eq!(entries_bandwidth(&[entry(3, 10, 0)]), (0, 0));
    }
}
