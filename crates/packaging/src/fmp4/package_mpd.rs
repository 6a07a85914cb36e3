//! The live MPD of a package (an ABR ladder): one video AdaptationSet whose
//! Representations are the source and every rung, all on one `SegmentTimeline`.
//!
//! A live period's Representations never change: dash.js 5.2 stops loading video for
//! good when an MPD update adds a Representation to the period it plays (measured: a
//! player started before the rungs joined froze when they did). So a rung's
//! membership splits periods instead: a segment's period is keyed by its discontinuity
//! sequence, by the rungs it lists, each with the rung's own discontinuity sequence, and
//! by the MSN where that run of segments began (`d3-240p.0-144p.0@120`), so a key never
//! comes back once left, even when the same rungs do.
//!
//! A segment's rungs are fixed when the MPD first lists it ([`Membership`]): the offered
//! rungs that have its MSN then. A rung that becomes offered later (its window turns
//! switchable, or its segment comes after the wait below) joins at a later segment, in a
//! new period; it never changes a period a player may already play (measured: dash.js
//! lost every Representation when the period it played was replaced by one of the same
//! start with another rung). Every node's rung segments are the MC's bytes and wait for
//! the rungs alike, so nodes list the same periods but for a rung that arrives right at
//! the end of the wait. A member rung whose window has already dropped a period's
//! oldest segments is listed over the segments it still has.
//!
//! At the live edge the newest source segment waits, at most [`HOLD_BACK_MS`], for the
//! rungs to bring theirs (they are cut on it, a few tens of milliseconds later): without
//! the wait every segment would first be listed without the rungs and then, moments
//! later, with them — a period that shrinks under a player.
//!
//! The audio languages beside the floor are members like the rungs (a language that
//! comes or goes splits periods the same way), each listed as an audio adaptation set
//! of its own over the period's segments it has; the floor's audio set names the floor's
//! language.

use std::collections::BTreeMap;
use std::sync::Arc;

use media::dash::{MpdLanguage, MpdPeriod, MpdRung, MpdSegment};

use super::mpd::{bps, dynamic_mpd, periods, representations};
use crate::languages::AudioLanguage;
use crate::segment::fmp4::Fmp4View;
use crate::window::WindowSnapshot;

/// How long the newest source segment waits for the rungs' segments of its MSN.
pub const HOLD_BACK_MS: i64 = 500;

/// One rung's (or language's) fMP4 segments by MSN.
struct RungSegments<'a> {
    name: &'a str,
    segments: BTreeMap<u64, &'a Fmp4View>,
    /// The master playlist offers the rung now ([`crate::render::offered`]), or the
    /// language has segments.
    offered: bool,
    /// The rung has no segment at all yet (its encoder or publisher has not started).
    unstarted: bool,
    /// The language, when this is an audio language beside the floor, not a rung.
    language: Option<&'a AudioLanguage>,
    /// The language's place among the stream's languages beside the floor.
    order: usize,
}

/// The rungs of one listed source segment, fixed when it was first listed.
#[derive(Debug, Clone)]
struct Listed {
    /// The source segment it was listed for (discontinuity sequence, start), so that a
    /// window that starts afresh with the same MSNs is not taken for it.
    source: (u64, u64),
    /// Indices of the rungs (in ladder order) listed with the segment.
    rungs: Vec<usize>,
    /// The rungs with their discontinuity sequences (`-240p.0-144p.0`; empty for none).
    members: String,
    /// The MSN where its run of consecutive segments with these members began: part of
    /// the period's id, so members that come back later in the window (a rung late for
    /// one segment) make a period of another id, never a second period of the same id.
    run: u64,
}

impl Listed {
    /// The period key of the segment: its members and its run (`-240p.0@120`).
    fn key(&self) -> String {
        format!("{}@{}", self.members, self.run)
    }
}

/// The rungs each source segment of a package's live MPD was first listed with, by
/// MSN, so that a listed period never changes (see the module docs). One per channel,
/// updated under its render lock.
#[derive(Debug, Default)]
pub struct Membership {
    listed: BTreeMap<u64, Listed>,
}

/// A source segment's place: discontinuity sequence and start.
fn source_of(view: &Fmp4View) -> (u64, u64) {
    (view.marker.state.discontinuity_seq, view.marker.start_ts)
}

impl Membership {
    /// Whether the source segment `view` has been listed.
    fn is_listed(&self, view: &Fmp4View) -> bool {
        self.listed
            .get(&view.marker.state.msn)
            .is_some_and(|l| l.source == source_of(view))
    }

    /// Source segment `view`'s rungs: as first listed, or, listed now for the first
    /// time, the offered rungs that have its MSN.
    fn of(&mut self, rungs: &[RungSegments<'_>], view: &Fmp4View) -> Listed {
        let msn = view.marker.state.msn;
        let source = source_of(view);
        if let Some(listed) = self.listed.get(&msn).filter(|l| l.source == source) {
            return listed.clone();
        }
        let mut members = String::new();
        let mut indices = Vec::new();
        for (index, rung) in rungs.iter().enumerate() {
            let Some(rung_view) = rung.segments.get(&msn).filter(|_| rung.offered) else {
                continue;
            };
            indices.push(index);
            members.push('-');
            members.push_str(rung.name);
            members.push('.');
            members.push_str(&rung_view.marker.state.discontinuity_seq.to_string());
        }
        let run = match self.listed.get(&msn.wrapping_sub(1)) {
            Some(previous) if previous.members == members && previous.source.0 == source.0 => {
                previous.run
            }
            _ => msn,
        };
        let listed = Listed {
            source,
            rungs: indices,
            members,
            run,
        };
        self.listed.insert(msn, listed.clone());
        listed
    }

    /// Forgets every segment out of `oldest..=newest` (the window's MSNs).
    fn keep_only(&mut self, oldest: u64, newest: u64) {
        self.listed.retain(|msn, _| (oldest..=newest).contains(msn));
    }
}

/// The audio languages of a package's MPD: the floor's and the others' with their
/// renditions' windows (named `audio-{code}`).
#[derive(Debug, Clone, Copy)]
pub struct MpdLanguages<'a> {
    /// The floor's language (the audio of the source's segments).
    pub floor: &'a AudioLanguage,
    /// Each other language and its rendition's window.
    pub others: &'a [(&'a AudioLanguage, Arc<WindowSnapshot>)],
}

/// The live MPD of a package: the source's `window`, its `rungs` (name and window, in
/// ladder order: the rungs the master playlist lists, offered or not) and its
/// `languages`, rendered at `now_ms`, each listed segment with the rungs and languages
/// `membership` fixed for it; see the module docs.
pub fn package_mpd(
    window: &WindowSnapshot,
    rungs: &[(&str, Arc<WindowSnapshot>)],
    languages: Option<MpdLanguages<'_>>,
    membership: &mut Membership,
    target_ms: u64,
    now_ms: i64,
) -> crate::live_mpd::LiveMpd {
    let names: Vec<String> = languages
        .iter()
        .flat_map(|l| {
            l.others
                .iter()
                .map(|(language, _)| language.rendition_name())
        })
        .collect();
    let rungs: Vec<RungSegments<'_>> = rungs
        .iter()
        .map(|(name, w)| RungSegments {
            name,
            segments: w.fmp4_segments().map(|(s, v)| (s.msn, v)).collect(),
            offered: crate::render::offered(name, w),
            unstarted: w.segments.is_empty(),
            language: None,
            order: 0,
        })
        .chain(
            languages
                .iter()
                .flat_map(|l| l.others.iter())
                .zip(&names)
                .enumerate()
                .map(|(order, ((language, w), name))| RungSegments {
                    name,
                    segments: w.fmp4_segments().map(|(s, v)| (s.msn, v)).collect(),
                    offered: !w.segments.is_empty(),
                    unstarted: w.segments.is_empty(),
                    language: Some(language),
                    order,
                }),
        )
        .collect();
    let mut views: Vec<&Fmp4View> = window.fmp4_segments().map(|(_, v)| v).collect();
    if let Some(newest) = views.last() {
        // A rung that has not started yet, or a rung or language that had one of the
        // two segments before (one segment late, it is back at the next), is waited
        // for; a language not started yet (an interpreter not come) is not.
        let msn = newest.marker.state.msn;
        let listed = membership.is_listed(newest);
        let recent = |r: &RungSegments<'_>| {
            r.segments.contains_key(&msn.wrapping_sub(1))
                || r.segments.contains_key(&msn.wrapping_sub(2))
        };
        let awaited = rungs.iter().any(|r| {
            !r.segments.contains_key(&msn)
                && ((r.unstarted && r.language.is_none()) || (r.offered && recent(r)))
        });
        // An MPD without a period is no MPD to a player: the first segment never waits.
        // And a segment once listed stays listed.
        let waits = awaited && views.len() > 1 && !listed;
        if waits && now_ms.saturating_sub(window.published_ms) < HOLD_BACK_MS {
            views.pop();
        }
    }
    if let (Some(oldest), Some(newest)) = (views.first(), views.last()) {
        membership.keep_only(oldest.marker.state.msn, newest.marker.state.msn);
    }
    let listed: BTreeMap<u64, Listed> = views
        .iter()
        .map(|view| (view.marker.state.msn, membership.of(&rungs, view)))
        .collect();
    let mut periods = periods(&views, |view| {
        listed.get(&view.marker.state.msn).map(Listed::key)
    });
    for period in &mut periods {
        let members = period
            .segments
            .first()
            .and_then(|s| listed.get(&s.msn))
            .map_or(&[][..], |l| &l.rungs[..]);
        let (spoken, ladder): (Vec<usize>, Vec<usize>) = members
            .iter()
            .partition(|&&index| rungs[index].language.is_some());
        period.rungs = ladder
            .iter()
            .filter_map(|&index| rung_of(&rungs[index], period))
            .collect();
        period.languages = spoken
            .iter()
            .filter_map(|&index| language_of(&rungs[index], period))
            .collect();
        period.floor = languages.map(|l| l.floor.mpd_label());
    }
    super::mpd::with_texts(&mut periods, window);
    dynamic_mpd(periods, target_ms, now_ms)
}

/// The rung's (or language's) segments of `period` with their fMP4 views: the last run
/// of consecutive MSNs it has (a run is what one `SegmentTemplate` can number).
fn own_segments<'a>(
    rung: &RungSegments<'a>,
    period: &MpdPeriod,
) -> (Vec<MpdSegment>, Vec<&'a Fmp4View>) {
    let mut segments = Vec::new();
    let mut views = Vec::new();
    for s in &period.segments {
        match rung.segments.get(&s.msn) {
            Some(view) => {
                segments.push(*s);
                views.push(*view);
            }
            None => {
                segments.clear();
                views.clear();
            }
        }
    }
    (segments, views)
}

/// The highest bit rate of one track over `views`, its bytes per view picked by
/// `track` from the views' (video, audio) media bytes.
fn peak_bps(views: &[&Fmp4View], track: impl Fn((u64, u64)) -> u64) -> u64 {
    views
        .iter()
        .map(|v| bps(track(v.media_bytes), v.marker.duration_ticks))
        .max()
        .unwrap_or(0)
}

/// A language's adaptation set in `period`, of which it is a member, over the
/// period's segments it has; `None` when it has none.
fn language_of(rung: &RungSegments<'_>, period: &MpdPeriod) -> Option<MpdLanguage> {
    let language = rung.language?;
    let (segments, views) = own_segments(rung, period);
    let first = views.first()?;
    let (_, audio) = representations(&first.init.config, 0, peak_bps(&views, |b| b.1));
    Some(MpdLanguage {
        folder: rung.name.to_owned(),
        label: language.mpd_label(),
        audio: audio?,
        discontinuity_seq: first.marker.state.discontinuity_seq,
        segments,
        order: rung.order,
    })
}

/// A rung's Representation in `period`, of which it is a member (its key says so:
/// every segment of the period has the same rungs), over the period's segments the rung
/// still has (its window may have dropped the oldest first); `None` when it has none.
fn rung_of(rung: &RungSegments<'_>, period: &MpdPeriod) -> Option<MpdRung> {
    let (segments, views) = own_segments(rung, period);
    let first = views.first()?;
    let (video, _) = representations(&first.init.config, peak_bps(&views, |b| b.0), 0);
    Some(MpdRung {
        name: rung.name.to_owned(),
        video: video?,
        discontinuity_seq: first.marker.state.discontinuity_seq,
        segments,
    })
}
