//! What a caption may say: the rules for a cue's text and for a language tag, checked
//! where cues enter (the caption API, the 608 decoder) so that everything downstream —
//! the in-band block, WebVTT, the transcript — can be written without escaping surprises.

use thiserror::Error;

/// The most characters a cue may hold (a caption line is 32–42 characters; a cue of a
/// live transcript a few lines).
pub const MAX_CUE_CHARS: usize = 300;

/// The most lines a cue may hold.
pub const MAX_CUE_LINES: usize = 4;

/// The longest language tag accepted (BCP 47 tags in practice are far shorter).
pub const MAX_LANGUAGE_LEN: usize = 35;

/// Why a cue's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TextError {
    /// Nothing but white space.
    #[error("the cue has no text")]
    Empty,
    /// Longer than [`MAX_CUE_CHARS`].
    #[error("the cue has {0} characters, more than {MAX_CUE_CHARS}")]
    TooLong(usize),
    /// More than [`MAX_CUE_LINES`] lines.
    #[error("the cue has {0} lines, more than {MAX_CUE_LINES}")]
    TooManyLines(usize),
    /// A control character other than a line break.
    #[error("the cue holds the control character U+{0:04X}")]
    ControlCharacter(u32),
}

/// A cue's text made safe to carry: line breaks normalised to `\n`, blank lines and
/// the white space around each line removed, control characters refused.
///
/// # Errors
/// [`TextError`] naming the rule the text breaks.
pub fn normalize_text(text: &str) -> Result<String, TextError> {
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\r' && *c != '\t')
    {
        return Err(TextError::ControlCharacter(u32::from(c)));
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| line.replace(['\r', '\t'], " ").trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect();
    if lines.is_empty() {
        return Err(TextError::Empty);
    }
    if lines.len() > MAX_CUE_LINES {
        return Err(TextError::TooManyLines(lines.len()));
    }
    let joined = lines.join("\n");
    let chars = joined.chars().count();
    if chars > MAX_CUE_CHARS {
        return Err(TextError::TooLong(chars));
    }
    Ok(joined)
}

/// Whether `tag` is a well-formed language tag of the BCP 47 shape players accept in
/// `LANGUAGE=` and `lang=`: a 2–3 letter primary language, then subtags of 1–8 letters or
/// digits separated by `-` (`en`, `pt-BR`, `zh-Hans-CN`).
pub fn is_language_tag(tag: &str) -> bool {
    if tag.is_empty() || tag.len() > MAX_LANGUAGE_LEN {
        return false;
    }
    let mut parts = tag.split('-');
    let primary = parts.next().unwrap_or_default();
    (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_normalised_or_refused_with_its_rule() {
        assert_eq!(
            normalize_text("  Hello\r\n\n world \t").unwrap(),
            "Hello\nworld"
        );
        assert_eq!(normalize_text(" \n\t "), Err(TextError::Empty));
        assert_eq!(
            normalize_text("a\nb\nc\nd\ne"),
            Err(TextError::TooManyLines(5))
        );
        assert_eq!(
            normalize_text(&"é".repeat(301)),
            Err(TextError::TooLong(301))
        );
        assert!(normalize_text(&"é".repeat(300)).is_ok());
        assert_eq!(
            normalize_text("bell\u{7}"),
            Err(TextError::ControlCharacter(7))
        );
        assert_eq!(normalize_text("nul\0"), Err(TextError::ControlCharacter(0)));
    }

    #[test]
    fn language_tags_have_the_bcp47_shape() {
        for good in ["en", "pt-BR", "zh-Hans-CN", "yue", "es-419"] {
            assert!(is_language_tag(good), "{good}");
        }
        for bad in [
            "",
            "e",
            "english",
            "en_US",
            "en-",
            "-en",
            "en--us",
            "pt-BRAZILIANS",
            "日本",
        ] {
            assert!(!is_language_tag(bad), "{bad}");
        }
    }
}
