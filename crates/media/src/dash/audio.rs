//! The audio adaptation sets of a period: the floor (the audio of the video's
//! segments) and each other language, an adaptation set of its own with `lang`, `Label`
//! and a `Role` (`main` for the floor, `dub` for an interpretation), so that a DASH
//! player's language menu lists them as HLS players list the audio group.

use std::fmt;

use super::timeline::{template, xml_attr, MpdSegment, Timeline};
use crate::manifest::ManifestWrite;

/// The audio representation of a period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdAudio {
    /// RFC 6381 codec string.
    pub codecs: String,
    /// Sampling rate in Hz.
    pub sample_rate: u32,
    /// Channel count.
    pub channels: u8,
    /// Peak bits per second.
    pub bandwidth: u64,
}

/// The language of a period's floor audio, as a menu shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdLabel {
    /// BCP 47 language tag (`@lang`).
    pub language: String,
    /// What a player's menu shows (`Label`).
    pub name: String,
}

/// A language beside the floor in a period: an audio adaptation set of its own whose
/// files are under `{folder}/`, on the period's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpdLanguage {
    /// The folder of its files (`audio-spa`), also its Representation's id.
    pub folder: String,
    /// Its language and menu name.
    pub label: MpdLabel,
    /// Its audio.
    pub audio: MpdAudio,
    /// Its own discontinuity sequence in this period (its init segment's).
    pub discontinuity_seq: u64,
    /// Its place among the stream's languages beside the floor (0 for the first): its
    /// adaptation set is [`FIRST_LANGUAGE_SET_ID`] + `order` in every period, whichever
    /// other languages the period has.
    pub order: usize,
    /// Its segments in this period, oldest first, consecutive by MSN; each has the MSN,
    /// start and duration of the period's segment of that MSN.
    pub segments: Vec<MpdSegment>,
}

/// The first adaptation set id of the languages beside the floor: clear of the video
/// (1), the floor (2) and the subtitle tracks (3 on), so that an id stays the same
/// language across MPD updates.
pub const FIRST_LANGUAGE_SET_ID: usize = 200;

/// `<AdaptationSet>` of an audio track with its language (`und` when unknown), opened;
/// `Label` and `Role` when labelled.
pub(super) fn open_audio_set(
    w: &mut impl ManifestWrite,
    id: usize,
    label: Option<&MpdLabel>,
    role: &str,
) -> fmt::Result {
    writeln!(
        w,
        "    <AdaptationSet id=\"{id}\" contentType=\"audio\" mimeType=\"audio/mp4\" \
         segmentAlignment=\"true\" startWithSAP=\"1\" lang=\"{}\">",
        xml_attr(label.map_or("und", |l| l.language.as_str()))
    )?;
    if let Some(label) = label {
        writeln!(
            w,
            "      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"{role}\"/>\n      <Label>{}</Label>",
            xml_attr(&label.name)
        )?;
    }
    Ok(())
}

/// An audio `<Representation>` with its channel configuration, closed.
pub(super) fn audio_representation(
    w: &mut impl ManifestWrite,
    id: &str,
    a: &MpdAudio,
) -> fmt::Result {
    writeln!(
        w,
        "      <Representation id=\"{}\" codecs=\"{}\" bandwidth=\"{}\" audioSamplingRate=\"{}\">",
        xml_attr(id),
        xml_attr(&a.codecs),
        a.bandwidth,
        a.sample_rate
    )?;
    writeln!(
        w,
        "        <AudioChannelConfiguration \
         schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"{}\"/>",
        a.channels
    )?;
    w.write_str("      </Representation>\n")
}

/// The adaptation set of `language` in a period anchored at `anchor_ts`; `init` and
/// `media` name its files (relative to its folder).
pub(super) fn language_set(
    w: &mut impl ManifestWrite,
    language: &MpdLanguage,
    anchor_ts: u64,
    init: &str,
    media: &str,
) -> fmt::Result {
    open_audio_set(
        w,
        FIRST_LANGUAGE_SET_ID + language.order,
        Some(&language.label),
        "dub",
    )?;
    let timeline = Timeline {
        anchor_ts,
        segments: &language.segments,
    };
    let folder = &language.folder;
    template(
        w,
        "      ",
        &timeline,
        &format!("{folder}/{init}"),
        &format!("{folder}/{media}"),
    )?;
    audio_representation(w, folder, &language.audio)?;
    w.write_str("    </AdaptationSet>\n")
}
