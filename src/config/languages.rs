//! `[[stream.language]]`: a stream's audio languages (docs/languages.md). The first is
//! the floor, the audio muxed with the video; each other one is an audio-only rendition
//! cut from the source's audio stream its PMT names with the language's code, or, for a
//! source that names none, from the stream on `pid`. The entries are a meeting's
//! ([`meeting::MeetingLanguage`]), checked by the same rules.

pub use server::stream::languages::audio_languages;
use server::stream::languages::{InterpreterFeed, LanguageSource};

/// One language as written in the file.
pub type LanguageConfig = meeting::MeetingLanguage;

/// Checks `languages` of the stream at `at` (see [`meeting::languages::check`]).
pub fn check(at: &str, languages: &[LanguageConfig]) -> anyhow::Result<()> {
    meeting::languages::check(languages).map_err(|problem| anyhow::anyhow!("{at}.{problem}"))
}

/// Checks that a stream with a language interpreters publish on their own takes publish
/// (`publish://` among `inputs`): its key is the interpreters'.
pub fn check_interpreters(
    at: &str,
    languages: &[LanguageConfig],
    inputs: &[String],
) -> anyhow::Result<()> {
    let Some(i) = languages.iter().position(|l| l.interpreter) else {
        return Ok(());
    };
    let publishes = inputs.iter().any(|input| {
        matches!(
            ingest::input_url::InputUrl::parse(input),
            Ok(ingest::input_url::InputUrl::Publish { .. })
        )
    });
    if publishes {
        Ok(())
    } else {
        anyhow::bail!(
            "{at}.language[{i}].interpreter: the stream needs a publish:// input, whose key interpreters publish with"
        )
    }
}

/// The languages beside the floor, as the pipeline matches the source's audio streams.
pub fn sources(languages: &[LanguageConfig]) -> Vec<LanguageSource> {
    languages
        .iter()
        .skip(1)
        .filter_map(|l| {
            Some(LanguageSource {
                language: l.language()?,
                pid: l.pid,
                interpreter: l.interpreter.then(|| InterpreterFeed {
                    offset_ms: l.offset_ms.unwrap_or(0),
                    stats: std::sync::Arc::default(),
                }),
            })
        })
        .collect()
}
