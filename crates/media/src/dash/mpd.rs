//! The MPD writer: periods, adaptation sets (one per track, as CMAF wants), segment
//! templates with a run-length `SegmentTimeline`.

use std::fmt;

use super::audio::{self, MpdAudio, MpdLabel, MpdLanguage};
use super::timeline::{template, xml_attr, MpdSegment, Timeline};
use crate::hls::format_rfc3339_ms;
use crate::manifest::{Manifest, ManifestWrite, MarkedText};
use crate::TrackKind;

/// The video representation of a period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdVideo {
    /// RFC 6381 codec string.
    pub codecs: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Peak bits per second (`@bandwidth`, required by DASH).
    pub bandwidth: u64,
}

/// A ladder rung's video in a period: one more Representation of the video adaptation
/// set, on the same timeline, with files of its own under `{name}/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdRung {
    /// The rung's name: its Representation id and the folder of its files.
    pub name: String,
    /// The rung's video.
    pub video: MpdVideo,
    /// The rung's own discontinuity sequence in this period (its init segment's).
    pub discontinuity_seq: u64,
    /// The rung's segments in this period, oldest first, consecutive by MSN; each has
    /// the MSN, start and duration of the period's segment of that MSN.
    pub segments: Vec<MpdSegment>,
}

/// A subtitle track of a period: a text adaptation set of WebVTT in fMP4 (`wvtt`) on
/// the period's timeline, one file per segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdText {
    /// The track's id: its files are `sub-{id}-init.mp4` and `sub-{id}-$Number$.m4s`.
    pub id: String,
    /// BCP 47 language tag (`@lang`).
    pub language: String,
    /// What a player shows in its menu (`Label`).
    pub name: String,
}

/// The segments of one discontinuity sequence, with the anchor that maps its media time
/// to wall-clock time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdPeriod {
    /// The discontinuity sequence number: the Period is `id="d<seq>"`.
    pub discontinuity_seq: u64,
    /// Extended 90 kHz timestamp of the anchor (`presentationTimeOffset`).
    pub anchor_ts: u64,
    /// Wall-clock time at `anchor_ts`, Unix milliseconds (`Period@start` is its distance
    /// from `availabilityStartTime`).
    pub anchor_unix_ms: i64,
    /// The segments, oldest first, consecutive by MSN.
    pub segments: Vec<MpdSegment>,
    /// The video track, if any.
    pub video: Option<MpdVideo>,
    /// The audio track, if any.
    pub audio: Option<MpdAudio>,
    /// The ladder rungs besides `video`, best first: each one more video Representation.
    pub rungs: Vec<MpdRung>,
    /// When a discontinuity sequence is split into several periods (a ladder's rungs
    /// joined or left: a live period's Representations never change), what tells this
    /// one apart: its id is `d<seq><split>`.
    pub split: Option<String>,
    /// The subtitle tracks, each on the period's segments.
    pub texts: Vec<MpdText>,
    /// The floor audio's language, when the stream names its languages (`und` else).
    pub floor: Option<MpdLabel>,
    /// The languages beside the floor, each an audio adaptation set of its own.
    pub languages: Vec<MpdLanguage>,
}

/// Live or finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpdKind {
    /// A live MPD: `type="dynamic"`, reloaded by the player.
    Dynamic {
        /// `publishTime`, Unix milliseconds: when this MPD was produced.
        publish_unix_ms: i64,
        /// `minimumUpdatePeriod`, milliseconds.
        minimum_update_period_ms: u64,
        /// `timeShiftBufferDepth`, milliseconds: the live window.
        time_shift_buffer_depth_ms: u64,
        /// `suggestedPresentationDelay`, milliseconds: how far behind the live edge
        /// players start.
        suggested_presentation_delay_ms: u64,
        /// MPD-reload events just before the live edge, if any: see [`ReloadEvents`].
        reload_events: Option<ReloadEvents>,
    },
    /// A finished presentation (a stream that ended, an archive range): `type="static"`
    /// with `mediaPresentationDuration`.
    Static,
}

/// Inline MPD-reload events (`urn:mpeg:dash:event:2012`, value 1) in the last period,
/// every `every_ms` over the `before_edge_ms` before the newest segment's end. A player
/// that plays that close to the edge of the MPD it holds has not had a fresh one for a
/// while (its reload failed or hangs on a dead node): each event starts a new reload,
/// which a steering player sends to the pathway the steering now puts first. dash.js
/// schedules no reload after one fails, so without them a DASH viewer whose node died
/// mid-reload would stop for good. A player that keeps its delay behind the edge never
/// reaches them; each MPD moves them with the edge, so every node writes the same ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadEvents {
    /// How far before the newest segment's end the first event is, milliseconds.
    pub before_edge_ms: u64,
    /// The spacing of the events (and each event's duration), milliseconds; not 0.
    pub every_ms: u64,
}

/// The scheme of MPD validity-expiration (reload) events, ISO/IEC 23009-1 §5.10.4.
pub const MPD_RELOAD_SCHEME: &str = "urn:mpeg:dash:event:2012";

/// How an MPD names its resources.
pub trait MpdUris {
    /// The init segment of a track in a discontinuity sequence.
    fn init(&self, discontinuity_seq: u64, track: TrackKind) -> String;
    /// The media segment template of a track, containing `$Number$`.
    fn media(&self, discontinuity_seq: u64, track: TrackKind) -> String;
}

/// An MPD; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mpd {
    /// Dynamic or static.
    pub kind: MpdKind,
    /// `availabilityStartTime`, Unix milliseconds: fixed for the life of the timeline
    /// (its first anchor is the natural choice); every `Period@start` is measured from it.
    pub availability_start_unix_ms: i64,
    /// `minBufferTime`, milliseconds.
    pub min_buffer_time_ms: u64,
    /// The periods, oldest first.
    pub periods: Vec<MpdPeriod>,
    /// `UTCTiming` (`urn:mpeg:dash:utc:http-iso:2014`): where players read the node's
    /// clock; `None` writes none.
    pub utc_timing_uri: Option<String>,
}

/// The nodes one viewer's MPD names, first the default: a `BaseURL` each with DVB
/// priority in this order and equal weight (a player whose segment requests fail moves
/// to the next), a `Location` each (the MPD's reloads follow), and a `ContentSteering`
/// element naming the steering server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceLocations {
    /// The nodes, the default first.
    pub nodes: Vec<ServiceLocation>,
    /// The steering server's URI.
    pub steering: String,
}

/// One node of a viewer's MPD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceLocation {
    /// Its pathway id (`serviceLocation`).
    pub pathway: String,
    /// Where its files of the stream are (`BaseURL`), ending in `/`.
    pub base: String,
    /// Its MPD's URL (`Location`), with whatever query it needs.
    pub location: String,
}

impl ServiceLocations {
    fn write_to(&self, w: &mut impl ManifestWrite) -> fmt::Result {
        for (i, node) in self.nodes.iter().enumerate() {
            writeln!(
                w,
                "  <BaseURL serviceLocation=\"{}\" dvb:priority=\"{}\" dvb:weight=\"1\">{}</BaseURL>",
                xml_attr(&node.pathway),
                i + 1,
                xml_text(&node.base)
            )?;
        }
        for node in &self.nodes {
            write!(
                w,
                "  <Location serviceLocation=\"{}\">",
                xml_attr(&node.pathway),
            )?;
            w.uri(&xml_text(&node.location))?;
            w.write_str("</Location>\n")?;
        }
        writeln!(
            w,
            "  <ContentSteering defaultServiceLocation=\"{}\" queryBeforeStart=\"false\">{}</ContentSteering>",
            xml_attr(self.nodes.first().map_or("", |n| n.pathway.as_str())),
            xml_text(&self.steering)
        )
    }
}

/// `text` escaped for XML character data.
fn xml_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['&', '<', '>']) {
        return text.into();
    }
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .into()
}

/// The bit rate announced for a subtitle track (text is a few hundred bytes a segment).
const TEXT_BANDWIDTH: u64 = 1_000;

/// Writes milliseconds as an xs:duration, e.g. `PT2.035S`.
fn duration_ms(w: &mut impl fmt::Write, ms: u64) -> fmt::Result {
    write!(w, "PT{}.{:03}S", ms / 1000, ms % 1000)
}

/// 90 kHz ticks to milliseconds, rounded to nearest.
fn ticks_ms(ticks: u64) -> u64 {
    ticks.saturating_add(45) / 90
}

impl MpdPeriod {
    /// `Period@start` in milliseconds after `availabilityStartTime` (0 when the anchor
    /// is earlier).
    fn start_ms(&self, availability_start_unix_ms: i64) -> u64 {
        u64::try_from(
            self.anchor_unix_ms
                .saturating_sub(availability_start_unix_ms),
        )
        .unwrap_or(0)
    }

    /// Where the period's last segment ends, milliseconds after `availabilityStartTime`.
    fn end_ms(&self, availability_start_unix_ms: i64) -> u64 {
        let end_ts = self.segments.last().map_or(self.anchor_ts, |s| {
            s.start_ts.saturating_add(s.duration_ticks)
        });
        self.start_ms(availability_start_unix_ms)
            .saturating_add(ticks_ms(end_ts.saturating_sub(self.anchor_ts)))
    }
}

impl Mpd {
    /// The longest segment, milliseconds (`maxSegmentDuration`).
    fn max_segment_ms(&self) -> u64 {
        self.periods
            .iter()
            .flat_map(|p| &p.segments)
            .map(|s| ticks_ms(s.duration_ticks))
            .max()
            .unwrap_or(0)
    }

    /// Writes the MPD.
    pub fn write_to(&self, w: &mut impl ManifestWrite, uris: &impl MpdUris) -> fmt::Result {
        self.write_for(w, uris, None)
    }

    /// Writes the MPD as one viewer gets it: naming `service`'s nodes, when given.
    pub fn write_for(
        &self,
        w: &mut impl ManifestWrite,
        uris: &impl MpdUris,
        service: Option<&ServiceLocations>,
    ) -> fmt::Result {
        let ast = self.availability_start_unix_ms;
        w.write_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")?;
        w.write_str("<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\"")?;
        if service.is_some() {
            w.write_str(" xmlns:dvb=\"urn:dvb:dash-extensions:2014-1\"")?;
        }
        w.write_str(" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\"")?;
        match self.kind {
            MpdKind::Dynamic {
                publish_unix_ms,
                minimum_update_period_ms,
                time_shift_buffer_depth_ms,
                suggested_presentation_delay_ms,
                ..
            } => {
                w.write_str(" type=\"dynamic\" availabilityStartTime=\"")?;
                format_rfc3339_ms(w, ast)?;
                w.write_str("\" publishTime=\"")?;
                format_rfc3339_ms(w, publish_unix_ms)?;
                w.write_str("\" minimumUpdatePeriod=\"")?;
                duration_ms(w, minimum_update_period_ms)?;
                w.write_str("\" timeShiftBufferDepth=\"")?;
                duration_ms(w, time_shift_buffer_depth_ms)?;
                w.write_str("\" suggestedPresentationDelay=\"")?;
                duration_ms(w, suggested_presentation_delay_ms)?;
                w.write_char('"')?;
            }
            MpdKind::Static => {
                let end = self.periods.last().map_or(0, |p| p.end_ms(ast));
                let start = self.periods.first().map_or(0, |p| p.start_ms(ast));
                w.write_str(" type=\"static\" mediaPresentationDuration=\"")?;
                duration_ms(w, end.saturating_sub(start))?;
                w.write_char('"')?;
            }
        }
        w.write_str(" maxSegmentDuration=\"")?;
        duration_ms(w, self.max_segment_ms())?;
        w.write_str("\" minBufferTime=\"")?;
        duration_ms(w, self.min_buffer_time_ms)?;
        w.write_str("\">\n")?;
        if let Some(service) = service {
            service.write_to(w)?;
        }
        let first_start = self.periods.first().map_or(0, |p| p.start_ms(ast));
        for (i, p) in self.periods.iter().enumerate() {
            // A static presentation starts at its first period.
            let start = match self.kind {
                MpdKind::Dynamic { .. } => p.start_ms(ast),
                MpdKind::Static => p.start_ms(ast).saturating_sub(first_start),
            };
            write!(
                w,
                "  <Period id=\"d{}{}\" start=\"",
                p.discontinuity_seq,
                xml_attr(p.split.as_deref().unwrap_or(""))
            )?;
            duration_ms(w, start)?;
            w.write_str("\">\n")?;
            if let MpdKind::Dynamic {
                reload_events: Some(events),
                ..
            } = self.kind
            {
                if i + 1 == self.periods.len() {
                    reload_event_stream(w, p, events)?;
                }
            }
            if let Some(v) = &p.video {
                let (max_width, max_height) = p
                    .rungs
                    .iter()
                    .map(|r| (r.video.width, r.video.height))
                    .fold((v.width, v.height), |(w0, h0), (w1, h1)| {
                        (w0.max(w1), h0.max(h1))
                    });
                writeln!(
                    w,
                    "    <AdaptationSet id=\"1\" contentType=\"video\" mimeType=\"video/mp4\" \
                     segmentAlignment=\"true\" startWithSAP=\"1\" maxWidth=\"{max_width}\" maxHeight=\"{max_height}\">"
                )?;
                let own = Timeline {
                    anchor_ts: p.anchor_ts,
                    segments: &p.segments,
                };
                let init = uris.init(p.discontinuity_seq, TrackKind::Video);
                let media = uris.media(p.discontinuity_seq, TrackKind::Video);
                // The source's template is the adaptation set's, as without a ladder, so
                // an MPD update that adds or drops a rung leaves the source's
                // Representation as it was; each rung overrides it with its own files
                // and timeline.
                template(w, "      ", &own, &init, &media)?;
                video_representation(w, "v", v, None)?;
                for rung in &p.rungs {
                    let timeline = Timeline {
                        anchor_ts: p.anchor_ts,
                        segments: &rung.segments,
                    };
                    let init = format!(
                        "{}/{}",
                        rung.name,
                        uris.init(rung.discontinuity_seq, TrackKind::Video)
                    );
                    let media = format!(
                        "{}/{}",
                        rung.name,
                        uris.media(rung.discontinuity_seq, TrackKind::Video)
                    );
                    video_representation(
                        w,
                        &rung.name,
                        &rung.video,
                        Some((&timeline, &init, &media)),
                    )?;
                }
                w.write_str("    </AdaptationSet>\n")?;
            }
            if let Some(a) = &p.audio {
                audio::open_audio_set(w, 2, p.floor.as_ref(), "main")?;
                let own = Timeline {
                    anchor_ts: p.anchor_ts,
                    segments: &p.segments,
                };
                template(
                    w,
                    "      ",
                    &own,
                    &uris.init(p.discontinuity_seq, TrackKind::Audio),
                    &uris.media(p.discontinuity_seq, TrackKind::Audio),
                )?;
                audio::audio_representation(w, "a", a)?;
                w.write_str("    </AdaptationSet>\n")?;
            }
            for language in &p.languages {
                audio::language_set(
                    w,
                    language,
                    p.anchor_ts,
                    &uris.init(language.discontinuity_seq, TrackKind::Audio),
                    &uris.media(language.discontinuity_seq, TrackKind::Audio),
                )?;
            }
            for (i, text) in p.texts.iter().enumerate() {
                writeln!(
                    w,
                    "    <AdaptationSet id=\"{}\" contentType=\"text\" mimeType=\"application/mp4\" \
                     codecs=\"wvtt\" segmentAlignment=\"true\" startWithSAP=\"1\" lang=\"{}\">",
                    3 + i,
                    xml_attr(&text.language)
                )?;
                w.write_str(
                    "      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"subtitle\"/>\n",
                )?;
                writeln!(w, "      <Label>{}</Label>", xml_attr(&text.name))?;
                let own = Timeline {
                    anchor_ts: p.anchor_ts,
                    segments: &p.segments,
                };
                let id = xml_attr(&text.id);
                template(
                    w,
                    "      ",
                    &own,
                    &format!("sub-{id}-init.mp4"),
                    &format!("sub-{id}-$Number$.m4s"),
                )?;
                writeln!(
                    w,
                    "      <Representation id=\"t-{id}\" bandwidth=\"{TEXT_BANDWIDTH}\"/>\n    </AdaptationSet>"
                )?;
            }
            w.write_str("  </Period>\n")?;
        }
        if let Some(uri) = &self.utc_timing_uri {
            writeln!(
                w,
                "  <UTCTiming schemeIdUri=\"urn:mpeg:dash:utc:http-iso:2014\" value=\"{}\"/>",
                xml_attr(uri)
            )?;
        }
        w.write_str("</MPD>\n")
    }

    /// The MPD as a `String`.
    pub fn render(&self, uris: &impl MpdUris) -> String {
        self.render_for(uris, None)
    }

    /// The MPD as one viewer gets it (see [`Mpd::write_for`]), with where its URIs end.
    pub fn manifest_for(
        &self,
        uris: &impl MpdUris,
        service: Option<&ServiceLocations>,
    ) -> Manifest {
        let segments: usize = self.periods.iter().map(|p| p.segments.len()).sum();
        let nodes = service.map_or(0, |s| s.nodes.len());
        let mut text =
            MarkedText::xml(1024 + self.periods.len() * 1024 + segments * 40 + nodes * 400);
        self.write_for(&mut text, uris, service)
            .expect("writing to memory cannot fail");
        text.finish()
    }

    /// The MPD as one viewer gets it (see [`Mpd::write_for`]).
    pub fn render_for(&self, uris: &impl MpdUris, service: Option<&ServiceLocations>) -> String {
        String::from_utf8_lossy(&self.manifest_for(uris, service).bytes).into_owned()
    }
}

/// Writes the [`ReloadEvents`] of the period `p` (the last): times in milliseconds
/// from the period's start, each id the event's time so that a player that sees the same
/// event in the next MPD knows it.
fn reload_event_stream(
    w: &mut impl fmt::Write,
    p: &MpdPeriod,
    events: ReloadEvents,
) -> fmt::Result {
    let Some(last) = p.segments.last() else {
        return Ok(());
    };
    let every = events.every_ms.max(1);
    let edge = ticks_ms(
        last.start_ts
            .saturating_add(last.duration_ticks)
            .saturating_sub(p.anchor_ts),
    );
    writeln!(
        w,
        "    <EventStream schemeIdUri=\"{MPD_RELOAD_SCHEME}\" value=\"1\" timescale=\"1000\">"
    )?;
    let first = edge.saturating_sub(events.before_edge_ms);
    let mut at = first + (edge - first) % every;
    while at <= edge {
        writeln!(
            w,
            "      <Event presentationTime=\"{at}\" duration=\"{every}\" id=\"{at}\"/>"
        )?;
        at += every;
    }
    w.write_str("    </EventStream>\n")
}

/// A video Representation; with `own`, its own `SegmentTemplate` (a ladder's rungs
/// each have their files), else the adaptation set's.
fn video_representation(
    w: &mut impl ManifestWrite,
    id: &str,
    v: &MpdVideo,
    own: Option<(&Timeline<'_>, &str, &str)>,
) -> fmt::Result {
    write!(
        w,
        "      <Representation id=\"{}\" codecs=\"{}\" bandwidth=\"{}\" width=\"{}\" height=\"{}\"",
        xml_attr(id),
        xml_attr(&v.codecs),
        v.bandwidth,
        v.width,
        v.height
    )?;
    match own {
        None => w.write_str("/>\n"),
        Some((timeline, init, media)) => {
            w.write_str(">\n")?;
            template(w, "        ", timeline, init, media)?;
            w.write_str("      </Representation>\n")
        }
    }
}
