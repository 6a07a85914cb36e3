//! A stream's audio languages: the floor (the audio muxed with the video, the first
//! language) and the others, each an audio-only rendition named `audio-{code}` cut on
//! the source's segments. The master playlists list them as one audio group
//! ([`audio_group`]): the floor without a URI (its audio is in every variant), each
//! other language at its own media playlist once it has segments.

use std::sync::Arc;

use media::hls::AudioRendition;
use media::Language;

use crate::window::WindowSnapshot;

/// The most languages a stream offers (the floor and seven others): one per audio
/// stream a TS source may carry beside its main one.
pub const MAX_LANGUAGES: usize = 1 + media::ts::demux::MAX_ALTERNATE_AUDIO;

/// What a rendition name starts with when it is an audio language.
pub const RENDITION_PREFIX: &str = "audio-";

/// One language a stream offers, as its menu shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioLanguage {
    /// The language.
    pub language: Language,
    /// What a player's menu shows (e.g. `Español`).
    pub name: String,
}

impl AudioLanguage {
    /// The name of the language's rendition: `audio-{code}` (never a rung's name: rungs
    /// may not start with [`RENDITION_PREFIX`]).
    pub fn rendition_name(&self) -> String {
        rendition_name(self.language)
    }

    /// How an MPD names the language: its BCP 47 tag and its menu name.
    pub fn mpd_label(&self) -> media::dash::MpdLabel {
        media::dash::MpdLabel {
            language: self.language.bcp47().to_owned(),
            name: self.name.clone(),
        }
    }
}

/// The rendition name of `language`'s audio.
pub fn rendition_name(language: Language) -> String {
    format!("{RENDITION_PREFIX}{language}")
}

/// Whether a rendition named `name` is an audio language (not a rung of the ladder).
pub fn is_language_rendition(name: &str) -> bool {
    name.starts_with(RENDITION_PREFIX)
}

/// The audio group of a master playlist whose media playlists are named `playlist`
/// (`mono.m3u8`, `fmp4.m3u8`): `floor` first, without a URI, then every other
/// language whose window has segments, at `audio-{code}/{playlist}`. Empty when the
/// stream has no language beside the floor.
pub fn audio_group(
    floor: &AudioLanguage,
    others: &[(&AudioLanguage, Arc<WindowSnapshot>)],
    playlist: &str,
) -> Vec<AudioRendition> {
    let offered = others
        .iter()
        .map(|(language, window)| (*language, !window.segments.is_empty()));
    offered_audio_group(floor, offered, playlist)
}

/// The audio group of a master playlist over `others`, each with whether it has
/// segments to offer (a live window's, or a catch-up span's archive): `floor` first,
/// without a URI, then each offered one at `audio-{code}/{playlist}`. Empty when no
/// language but the floor is offered.
pub fn offered_audio_group<'a>(
    floor: &AudioLanguage,
    others: impl IntoIterator<Item = (&'a AudioLanguage, bool)>,
    playlist: &str,
) -> Vec<AudioRendition> {
    let mut group = vec![AudioRendition {
        name: floor.name.clone(),
        language: floor.language.bcp47().to_owned(),
        uri: None,
    }];
    group.extend(
        others
            .into_iter()
            .filter(|(_, offered)| *offered)
            .map(|(language, _)| AudioRendition {
                name: language.name.clone(),
                language: language.language.bcp47().to_owned(),
                uri: Some(format!("{}/{playlist}", language.rendition_name())),
            }),
    );
    if group.len() == 1 {
        group.clear();
    }
    group
}
