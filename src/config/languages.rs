//! `[[stream.language]]`: a stream's audio languages (docs/languages.md). The first is
//! the floor, the audio muxed with the video; each other one is an audio-only rendition
//! cut from the source's audio stream its PMT names with the language's code, or, for a
//! source that names none, from the stream on `pid`.

use anyhow::bail;
use media::Language;
use packaging::languages::{AudioLanguage, MAX_LANGUAGES};
use serde::Deserialize;
use server::stream::languages::LanguageSource;

/// One language as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageConfig {
    /// ISO 639-2 code: three letters (`eng`, `spa`).
    pub code: String,
    /// What players' menus show (default: the language's English name).
    pub name: Option<String>,
    /// The MPEG-TS PID carrying it, for a source whose PMT names no language.
    pub pid: Option<u16>,
}

/// Longest menu name, in bytes.
const MAX_NAME: usize = 64;

/// Checks `languages` of the stream at `at`: known codes, each once, names that fit a
/// menu, at most [`MAX_LANGUAGES`], no PID on the floor (its audio is the main one).
pub fn check(at: &str, languages: &[LanguageConfig]) -> anyhow::Result<()> {
    if languages.len() > MAX_LANGUAGES {
        bail!(
            "{at}.language: at most {MAX_LANGUAGES} languages (the floor and {} others)",
            MAX_LANGUAGES - 1
        );
    }
    let mut seen = Vec::with_capacity(languages.len());
    for (i, language) in languages.iter().enumerate() {
        let Some(code) = Language::parse(&language.code) else {
            bail!(
                "{at}.language[{i}].code {:?}: an ISO 639-2 code of three letters (e.g. \"spa\")",
                language.code
            );
        };
        if seen.contains(&code) {
            bail!("{at}.language[{i}].code {code} is listed twice");
        }
        seen.push(code);
        if let Some(name) = &language.name {
            if name.trim().is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control)
            {
                bail!("{at}.language[{i}].name: 1 to {MAX_NAME} bytes, no control characters");
            }
        }
        if i == 0 && language.pid.is_some() {
            bail!("{at}.language[0] is the floor (the source's main audio): it takes no pid");
        }
        if language
            .pid
            .is_some_and(|pid| !(0x10..0x1fff).contains(&pid))
        {
            bail!("{at}.language[{i}].pid: an elementary-stream PID, 16 to 8190");
        }
    }
    Ok(())
}

/// The languages as the package lists them (checked by [`check`]; a bad entry is
/// skipped).
pub fn audio_languages(languages: &[LanguageConfig]) -> Vec<AudioLanguage> {
    languages
        .iter()
        .filter_map(|l| {
            let language = Language::parse(&l.code)?;
            let name = l
                .name
                .clone()
                .unwrap_or_else(|| language.english_name().to_owned());
            Some(AudioLanguage { language, name })
        })
        .collect()
}

/// The languages beside the floor, as the pipeline matches the source's audio streams.
pub fn sources(languages: &[LanguageConfig]) -> Vec<LanguageSource> {
    languages
        .iter()
        .skip(1)
        .filter_map(|l| {
            Some(LanguageSource {
                language: Language::parse(&l.code)?,
                pid: l.pid,
            })
        })
        .collect()
}
