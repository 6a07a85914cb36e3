//! fMP4 catch-up derived from the MPEG-TS archive on request (OTT-ARCH-1): the
//! archive stores TS only, and every fMP4 file of a period is packaged from the
//! archived TS segment when asked for, by the code that packages live segments.
//!
//! A period's files are grouped in *runs*: archived segments without a discontinuity
//! or gap between them (the rule of the TS archive playlists). A run shares one init
//! segment, named after the run's first segment in the period (`dvr-init-{msn}.mp4`)
//! and derived from that segment's frames, and is one DASH Period.
//!
//! Costs: the VOD fMP4 playlist reads the index only; the static MPD reads one archived
//! segment per run (its marker gives the run's start on the 90 kHz timeline, the rest
//! follows from the indexed durations); an fMP4 segment or init reads and packages one
//! archived segment.

use std::ops::Range;

use bytes::Bytes;
use dvr::index::{is_gap, Entry, Slice};
use std::sync::Arc;

use super::SegmentSource;
use crate::languages::AudioLanguage;
use media::dash::{Mpd, MpdKind, MpdLanguage, MpdPeriod, MpdRung, MpdSegment, MpdUris};
use media::fmp4::{frames_from_ts, InitConfig};
use media::hls::PlaylistType;
use media::manifest::Manifest;
use media::{TimelineMarker, TrackKind};

use crate::fmp4::mpd::{bps, representations};
use media::fmp4::{marker_of, package_segment, write_track_init, Track};

/// How many earlier segments of its run are tried for the init configuration of a
/// segment that carries no parameter sets (a forced cut without a keyframe).
const CONFIG_LOOKBACK: usize = 2;

/// How many earlier segments too small to hold media are passed over, unread, on the
/// way back to those: an audio language's spans its interpreter left empty (a marker
/// and the PSI, a few packets each), about 8.5 minutes of them at 2-s segments.
const EMPTY_LOOKBACK: usize = 256;

/// An archived segment smaller than this holds no media worth a configuration (an
/// empty segment is its marker, PAT and PMT: 3 packets; 2 s of the thinnest audio is
/// more than 8).
const EMPTY_SEGMENT_BYTES: u32 = 8 * 188;

/// The runs of `entries`: index ranges split at every discontinuity or gap.
pub fn runs(entries: &[Entry]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..entries.len() {
        if entries[i].discontinuous || is_gap(&entries[i - 1], &entries[i]) {
            out.push(start..i);
            start = i;
        }
    }
    if !entries.is_empty() {
        out.push(start..entries.len());
    }
    out
}

/// The VOD fMP4 HLS playlist of an archive slice: the TS archive playlist's timeline
/// with `dvr-{msn}.m4s` segments and one EXT-X-MAP per run. Reads the index only.
pub fn vod_playlist(slice: Slice<'_>) -> Manifest {
    let entries = slice.entries;
    let mut maps = Vec::with_capacity(entries.len());
    for run in runs(entries) {
        let name = format!("dvr-init-{}.mp4", entries[run.start].msn);
        maps.extend(std::iter::repeat_n(name, run.len()));
    }
    dvr::playlist::render_with_maps(
        slice,
        PlaylistType::Vod,
        1,
        true,
        |e| format!("dvr-{}.m4s", e.msn),
        &maps,
    )
}

/// Names of the archive's DASH files; a Period's "sequence" is its run's first MSN.
#[derive(Debug, Clone, Copy)]
pub struct ArchiveUris;

impl MpdUris for ArchiveUris {
    fn init(&self, run_msn: u64, track: TrackKind) -> String {
        format!("dvr-init-{run_msn}{}.mp4", Track::of_kind(track).suffix())
    }

    fn media(&self, _run_msn: u64, track: TrackKind) -> String {
        format!("dvr-$Number${}.m4s", Track::of_kind(track).suffix())
    }
}

/// Why an archived file could not be derived.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveFmp4Error {
    /// The archived segment could not be read.
    #[error("archived segment unreadable: {0}")]
    Read(#[from] std::io::Error),
    /// The archived bytes do not start with a timeline marker.
    #[error("archived segment without a timeline marker")]
    NoMarker,
    /// No init configuration (no parameter sets near the segment) or no such track.
    #[error("archived segment cannot be packaged")]
    Package,
}

/// An archived segment read back: its bytes and marker.
pub(super) fn read_marked(
    reader: &dyn SegmentSource,
    entry: &Entry,
) -> Result<(Bytes, TimelineMarker), ArchiveFmp4Error> {
    let ts = Bytes::from(reader.read(entry)?);
    let marker = marker_of(&ts).ok_or(ArchiveFmp4Error::NoMarker)?;
    Ok((ts, marker))
}

/// The init configuration of archived segment `msn` when its own frames give none:
/// from up to [`CONFIG_LOOKBACK`] earlier segments of its run among the
/// [`EMPTY_LOOKBACK`] before it, those too small to hold media passed over unread (an
/// empty language segment is packaged as silence with its run's configuration).
fn config_before(reader: &dyn SegmentSource, msn: u64) -> Option<InitConfig> {
    let (entries, at) = reader.around(msn, CONFIG_LOOKBACK + EMPTY_LOOKBACK)?;
    let run = runs(&entries).into_iter().find(|r| r.contains(&at))?;
    (run.start..at)
        .rev()
        .filter(|&i| entries[i].size >= EMPTY_SEGMENT_BYTES)
        .take(CONFIG_LOOKBACK)
        .find_map(|i| {
            let (ts, marker) = read_marked(reader, &entries[i]).ok()?;
            let frames = frames_from_ts(&ts, marker.start_ts);
            InitConfig::from_frames(frames.iter().map(|t| &t.frame)).ok()
        })
}

/// Archived segment `msn` read from disk with its timeline marker and the init
/// configuration of its run (its own frames', else [`config_before`]); `Ok(None)` when
/// it is not archived.
pub(super) fn archived(
    reader: &dyn SegmentSource,
    msn: u64,
) -> Result<Option<(Bytes, TimelineMarker, InitConfig)>, ArchiveFmp4Error> {
    let Some(entry) = reader.entry(msn) else {
        return Ok(None);
    };
    let (ts, marker) = read_marked(reader, &entry)?;
    let frames = frames_from_ts(&ts, marker.start_ts);
    let config = InitConfig::from_frames(frames.iter().map(|t| &t.frame))
        .ok()
        .or_else(|| config_before(reader, msn))
        .ok_or(ArchiveFmp4Error::Package)?;
    Ok(Some((ts, marker, config)))
}

/// `dvr-{msn}{suffix}.m4s`: the archived segment `msn` packaged as `track`, the muxed
/// file cut at the stream's part grid `part_ticks` as the live one is (the same bytes
/// as `seg-{msn}.m4s` was). Blocking (reads the disk); `Ok(None)` when `msn` is not
/// archived.
///
/// # Errors
/// [`ArchiveFmp4Error`] when it is archived but cannot be read or packaged.
pub fn segment(
    reader: &dyn SegmentSource,
    msn: u64,
    track: Track,
    part_ticks: Option<u64>,
) -> Result<Option<Bytes>, ArchiveFmp4Error> {
    let Some((ts, marker, config)) = archived(reader, msn)? else {
        return Ok(None);
    };
    package_segment(&marker, &ts, &config, track, part_ticks)
        .map(Some)
        .map_err(|_| ArchiveFmp4Error::Package)
}

/// `dvr-init-{msn}{suffix}.mp4`: the init segment of the run of archived segment
/// `msn`, from that segment's configuration. Blocking; `Ok(None)` when not archived.
///
/// # Errors
/// As [`segment`].
pub fn init(
    reader: &dyn SegmentSource,
    msn: u64,
    track: Track,
) -> Result<Option<Bytes>, ArchiveFmp4Error> {
    let Some((_, _, config)) = archived(reader, msn)? else {
        return Ok(None);
    };
    write_track_init(&config, track)
        .map(Some)
        .map_err(|_| ArchiveFmp4Error::Package)
}

/// A ladder rung's archive, for the catch-up MPD of a package.
#[derive(Debug, Clone)]
pub struct ArchivedRung {
    /// The rung's name: its Representation id and the folder of its files.
    pub name: String,
    /// Its archive.
    pub reader: Arc<dyn SegmentSource>,
}

/// An audio language's archive, for the catch-up MPD of a stream with languages.
#[derive(Debug, Clone)]
pub struct ArchivedLanguage {
    /// The language (its files are under its rendition's folder, `audio-{code}/`).
    pub language: AudioLanguage,
    /// Its place among the stream's languages beside the floor (as the live MPD's).
    pub order: usize,
    /// Its archive.
    pub reader: Arc<dyn SegmentSource>,
}

/// The audio languages of a catch-up MPD: the floor's (the source's audio) and each
/// other recorded one.
#[derive(Debug, Clone)]
pub struct ArchivedLanguages {
    /// The floor's language.
    pub floor: AudioLanguage,
    /// Each other language with its archive.
    pub others: Vec<ArchivedLanguage>,
}

/// What a catch-up MPD lists beside the source's archive: a package's recorded rungs
/// and the stream's recorded languages (`None` for one audio).
#[derive(Debug, Clone, Default)]
pub struct ArchivedTracks {
    /// The rungs, in ladder order.
    pub rungs: Vec<ArchivedRung>,
    /// The languages.
    pub languages: Option<ArchivedLanguages>,
}

/// A rendition's archive over a run of the source's (as the live MPD lists a rung or
/// language): the last consecutive run of the run's MSNs it archived with the same
/// durations (a language a segment behind the source at the archive's end keeps the
/// run before), its entries and the run's segments of them; `None` when it has none.
/// Reads the index only.
fn over_run(
    reader: &dyn SegmentSource,
    run_entries: &[Entry],
    segments: &[MpdSegment],
) -> Option<(Vec<Entry>, Vec<MpdSegment>)> {
    let mut theirs = Vec::new();
    let mut listed = Vec::new();
    let mut broken = false;
    for (e, segment) in run_entries.iter().zip(segments) {
        match reader
            .entry(e.msn)
            .filter(|r| r.duration_ticks == e.duration_ticks)
        {
            Some(entry) => {
                if broken {
                    theirs.clear();
                    listed.clear();
                    broken = false;
                }
                theirs.push(entry);
                listed.push(*segment);
            }
            None => broken = true,
        }
    }
    (!theirs.is_empty()).then_some((theirs, listed))
}

/// The marker and configuration of the first of a rendition's `entries` (see
/// [`archived`]): reads that segment, and earlier ones when it carries no
/// configuration. Blocking.
fn first_of(reader: &dyn SegmentSource, entries: &[Entry]) -> Option<(TimelineMarker, InitConfig)> {
    let (_, marker, config) = archived(reader, entries.first()?.msn).ok()??;
    Some((marker, config))
}

/// The highest bit rate of archived `entries`, by their archived sizes.
fn peak_bps(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .map(|e| bps(u64::from(e.size), e.duration_ticks))
        .max()
        .unwrap_or(0)
}

/// The rung's Representation in a run of the source's archive: when the rung archived
/// every MSN of the run with the same durations (see [`over_run`]), and its first
/// segment of the run is switchable (a keyframe at the source's cut, as its marker
/// says). Reads one archived segment of the rung (see [`first_of`]), once the index
/// shows it has the run. Blocking.
fn rung_in_run(
    rung: &ArchivedRung,
    run_entries: &[Entry],
    segments: &[MpdSegment],
    audio_bps: u64,
) -> Option<MpdRung> {
    let (theirs, segments) = over_run(rung.reader.as_ref(), run_entries, segments)?;
    // A rung is a Representation of the video's set: switched to at any time of the
    // period, so it must have the whole run.
    if theirs.len() != run_entries.len() {
        return None;
    }
    let (marker, config) = first_of(rung.reader.as_ref(), &theirs)?;
    if !marker.keyframe_start {
        return None;
    }
    let (video, _) = representations(&config, peak_bps(&theirs).saturating_sub(audio_bps), 0);
    Some(MpdRung {
        name: rung.name.clone(),
        video: video?,
        // Its init is the rung's `dvr-init-{msn}` of the run's first segment.
        discontinuity_seq: theirs.first()?.msn,
        segments,
    })
}

/// The language's adaptation set in a run of the source's archive, over the run's
/// segments it archived (see [`over_run`]; its segments are cut on the source's), its
/// files under `audio-{code}/`. Reads one archived segment of the language (see
/// [`first_of`]). Blocking.
fn language_in_run(
    language: &ArchivedLanguage,
    run_entries: &[Entry],
    segments: &[MpdSegment],
) -> Option<MpdLanguage> {
    let (theirs, segments) = over_run(language.reader.as_ref(), run_entries, segments)?;
    let (_, config) = first_of(language.reader.as_ref(), &theirs)?;
    let (_, audio) = representations(&config, 0, peak_bps(&theirs));
    Some(MpdLanguage {
        folder: language.language.rendition_name(),
        label: language.language.mpd_label(),
        audio: audio?,
        // Its init is the language's `dvr-init-{msn}-a` of its first segment.
        discontinuity_seq: theirs.first()?.msn,
        segments,
        order: language.order,
    })
}

/// The static MPD of archived `entries` (a period's, oldest first): one Period per run,
/// starting at its first segment (so playback starts with the period), reading one
/// archived segment per run and track (see [`first_of`]); for a package, each of the `tracks`' rungs that archived a
/// run is one more video Representation of it (files under `{rung}/`), and each
/// language that archived it an audio adaptation set (files under `audio-{code}/`), the
/// floor's set named by its language. Blocking.
///
/// # Errors
/// [`ArchiveFmp4Error`] when a run's first segment cannot be read or has no
/// configuration.
pub fn static_mpd(
    reader: &dyn SegmentSource,
    entries: &[Entry],
    tracks: &ArchivedTracks,
) -> Result<Manifest, ArchiveFmp4Error> {
    let mut periods = Vec::new();
    for run in runs(entries) {
        let run_entries = &entries[run.clone()];
        let first = &run_entries[0];
        let (ts, marker) = read_marked(reader, first)?;
        // A run's first segment has no earlier one to take a configuration from.
        let frames = frames_from_ts(&ts, marker.start_ts);
        let config = InitConfig::from_frames(frames.iter().map(|t| &t.frame))
            .map_err(|_| ArchiveFmp4Error::Package)?;
        let audio_bytes: u64 = frames
            .iter()
            .filter(|t| t.frame.kind() == TrackKind::Audio)
            .map(|t| t.frame.data.len() as u64)
            .sum();
        let audio_bps = bps(audio_bytes, marker.duration_ticks);
        let (video, audio) = representations(
            &config,
            peak_bps(run_entries).saturating_sub(audio_bps),
            audio_bps,
        );
        let mut start_ts = marker.start_ts;
        let segments: Vec<MpdSegment> = run_entries
            .iter()
            .map(|e| {
                let s = MpdSegment {
                    msn: e.msn,
                    start_ts,
                    duration_ticks: e.duration_ticks,
                };
                start_ts = start_ts.saturating_add(e.duration_ticks);
                s
            })
            .collect();
        let rungs = tracks
            .rungs
            .iter()
            .filter_map(|rung| rung_in_run(rung, run_entries, &segments, audio_bps))
            .collect();
        let languages = tracks.languages.as_ref().map_or_else(Vec::new, |l| {
            l.others
                .iter()
                .filter_map(|language| language_in_run(language, run_entries, &segments))
                .collect()
        });
        periods.push(MpdPeriod {
            discontinuity_seq: first.msn,
            anchor_ts: marker.start_ts,
            anchor_unix_ms: marker.program_date_time_ms,
            segments,
            video,
            audio,
            rungs,
            split: None,
            texts: Vec::new(),
            floor: tracks.languages.as_ref().map(|l| l.floor.mpd_label()),
            languages,
        });
    }
    let target_ms = entries.iter().map(Entry::duration_ms).max().unwrap_or(0);
    let mpd = Mpd {
        kind: MpdKind::Static,
        availability_start_unix_ms: periods.first().map_or(0, |p| p.anchor_unix_ms),
        min_buffer_time_ms: u64::try_from(target_ms).unwrap_or(2_000),
        periods,
        utc_timing_uri: None,
    };
    Ok(mpd.manifest_for(&ArchiveUris, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(msn: u64, start_ms: i64, discontinuous: bool) -> Entry {
        Entry {
            msn,
            discontinuity_seq: 0,
            discontinuous,
            start_ms,
            duration_ticks: 180_000,
            file: 0,
            offset: 0,
            size: 1000,
        }
    }

    #[test]
    fn runs_split_at_discontinuities_and_gaps() {
        let entries = [
            entry(1, 0, false),
            entry(2, 2_000, false),
            entry(3, 4_000, true),
            entry(4, 6_000, false),
            entry(6, 10_000, false),
        ];
        assert_eq!(runs(&entries), [0..2, 2..4, 4..5]);
        assert!(runs(&[]).is_empty());
    }
}
