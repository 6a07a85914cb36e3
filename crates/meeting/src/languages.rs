//! A meeting's audio languages: the floor (the audio the publisher's feed carries with
//! the video) first, then each language interpreters speak, as the MC's API, its
//! presets and a node's `[[stream.language]]` take them. Checked here once for all.

use media::Language;
use serde::{Deserialize, Serialize};

/// The most languages a meeting offers: the floor and one per further audio stream a
/// source may carry.
pub const MAX_LANGUAGES: usize = 1 + media::ts::demux::MAX_ALTERNATE_AUDIO;

/// Longest menu name, bytes.
pub const MAX_NAME: usize = 64;

/// The farthest an interpreter's feed may be placed from its arrival, ms.
pub const MAX_OFFSET_MS: i32 = 30_000;

/// One language of a meeting.
///
/// Unknown fields are ignored, not refused: the same entries are stored by the MC and
/// sent to nodes, so an older node or MC reads a newer one's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeetingLanguage {
    /// ISO 639-2 code: three letters (`eng`, `spa`).
    pub code: String,
    /// What players' menus show (default: the language's English name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The MPEG-TS PID carrying it, for a source whose PMT names no language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u16>,
    /// An interpreter publishes this language on its own (`<meeting>@audio-<code>`,
    /// with the meeting's stream key), placed on the meeting's timeline as it arrives.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interpreter: bool,
    /// Where an interpreter's feed is placed against its arrival, ms: negative moves it
    /// earlier (an interpreter who hears the floor late speaks late).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<i32>,
}

impl MeetingLanguage {
    /// The language ([`check`]ed entries always have one).
    pub fn language(&self) -> Option<Language> {
        Language::parse(&self.code)
    }

    /// The menu name: the given one, else the language's English name.
    pub fn menu_name(&self) -> String {
        match (&self.name, self.language()) {
            (Some(name), _) => name.clone(),
            (None, Some(language)) => language.english_name().to_owned(),
            (None, None) => self.code.clone(),
        }
    }
}

/// Why a list of languages was refused: the entry (if one) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageProblem {
    /// The entry at fault; `None` for the list as a whole.
    pub index: Option<usize>,
    /// What is wrong, naming the field.
    pub message: String,
}

impl std::fmt::Display for LanguageProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(i) => write!(f, "language[{i}].{}", self.message),
            None => write!(f, "language: {}", self.message),
        }
    }
}

/// The key an interpreter of `code` publishes with (`<meeting>@audio-<code>`), made
/// from the meeting's stream key: an interpreter holds their language's key only, so
/// they cannot publish the floor or another language, and their key does not give the
/// stream key away. 32 hex digits (the first 128 bits of HMAC-SHA256).
pub fn interpreter_key(stream_key: &str, code: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, stream_key.as_bytes());
    let tag = ring::hmac::sign(&key, format!("brdyun interpreter {code}").as_bytes());
    tag.as_ref()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks a meeting's languages: at most [`MAX_LANGUAGES`], ISO 639-2 codes each once,
/// names that fit a menu, no PID on the floor (its audio is the feed's main one), PIDs
/// of elementary streams.
///
/// # Errors
/// The first problem found.
pub fn check(languages: &[MeetingLanguage]) -> Result<(), LanguageProblem> {
    if languages.len() > MAX_LANGUAGES {
        return Err(LanguageProblem {
            index: None,
            message: format!(
                "at most {MAX_LANGUAGES} languages (the floor and {} others)",
                MAX_LANGUAGES - 1
            ),
        });
    }
    let problem = |i: usize, message: String| LanguageProblem {
        index: Some(i),
        message,
    };
    let mut seen = Vec::with_capacity(languages.len());
    let mut names: Vec<String> = Vec::with_capacity(languages.len());
    for (i, entry) in languages.iter().enumerate() {
        let Some(code) = entry.language() else {
            return Err(problem(
                i,
                format!(
                    "code {:?}: an ISO 639-2 code of three letters (e.g. \"spa\")",
                    entry.code
                ),
            ));
        };
        if seen.contains(&code) {
            return Err(problem(i, format!("code {code} is listed twice")));
        }
        seen.push(code);
        if let Some(name) = &entry.name {
            if name.trim().is_empty()
                || name.len() > MAX_NAME
                || name.chars().any(|c| c.is_control() || c == '"')
            {
                return Err(problem(
                    i,
                    format!("name: 1 to {MAX_NAME} bytes, no control characters or '\"'"),
                ));
            }
        }
        // Every NAME of an HLS audio group differs (RFC 8216 §4.3.4.1.1).
        let menu = entry.menu_name();
        if names.contains(&menu) {
            return Err(problem(i, format!("name {menu:?} is another language's")));
        }
        names.push(menu);
        if i == 0 && entry.pid.is_some() {
            return Err(problem(
                i,
                "pid: the first language is the floor (the feed's main audio), it takes no pid"
                    .into(),
            ));
        }
        if entry.pid.is_some_and(|pid| !(0x10..0x1fff).contains(&pid)) {
            return Err(problem(
                i,
                "pid: an elementary-stream PID, 16 to 8190".into(),
            ));
        }
        if let Some(message) = interpreter_problem(i, entry) {
            return Err(problem(i, message));
        }
    }
    Ok(())
}

/// What is wrong with entry `i`'s interpreter settings, if anything.
fn interpreter_problem(i: usize, entry: &MeetingLanguage) -> Option<String> {
    if entry.interpreter && i == 0 {
        return Some(
            "interpreter: the first language is the floor, published with the video".into(),
        );
    }
    if entry.interpreter && entry.pid.is_some() {
        return Some("interpreter: a language published on its own takes no pid".into());
    }
    match entry.offset_ms {
        Some(_) if !entry.interpreter => {
            Some("offset_ms: only an interpreter's feed is placed with an offset".into())
        }
        Some(offset) if offset.unsigned_abs() > MAX_OFFSET_MS.unsigned_abs() => {
            Some(format!("offset_ms: -{MAX_OFFSET_MS} to {MAX_OFFSET_MS}"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: &str) -> MeetingLanguage {
        MeetingLanguage {
            code: code.into(),
            name: None,
            pid: None,
            interpreter: false,
            offset_ms: None,
        }
    }

    #[test]
    fn a_good_list_passes_and_names_default_to_english() {
        let spa = MeetingLanguage {
            name: Some("Español".into()),
            pid: Some(258),
            ..entry("spa")
        };
        assert_eq!(check(&[entry("eng"), spa.clone()]), Ok(()));
        assert_eq!(entry("eng").menu_name(), "English");
        assert_eq!(spa.menu_name(), "Español");
    }

    #[test]
    fn each_problem_is_named() {
        let message = |list: &[MeetingLanguage]| check(list).unwrap_err().to_string();
        assert!(message(&[entry("es")]).contains("ISO 639-2"));
        assert!(message(&[entry("eng"), entry("ENG")]).contains("twice"));
        let floor_pid = MeetingLanguage {
            pid: Some(258),
            ..entry("eng")
        };
        assert!(message(&[floor_pid]).contains("floor"));
        let bad_pid = MeetingLanguage {
            pid: Some(8191),
            ..entry("spa")
        };
        assert!(message(&[entry("eng"), bad_pid]).contains("PID"));
        let bad_name = MeetingLanguage {
            name: Some("a\nb".into()),
            ..entry("spa")
        };
        assert!(message(&[entry("eng"), bad_name]).starts_with("language[1].name"));
        let quoted = MeetingLanguage {
            name: Some("\"".into()),
            ..entry("spa")
        };
        assert!(message(&[entry("eng"), quoted]).starts_with("language[1].name"));
        let same_name = MeetingLanguage {
            name: Some("English".into()),
            ..entry("spa")
        };
        assert!(message(&[entry("eng"), same_name]).contains("another language's"));
        let nine: Vec<MeetingLanguage> = [
            "eng", "spa", "fra", "deu", "ita", "por", "rus", "jpn", "kor",
        ]
        .iter()
        .map(|c| entry(c))
        .collect();
        assert!(message(&nine).contains("at most 8"));
        let interpreter = MeetingLanguage {
            interpreter: true,
            offset_ms: Some(-1_500),
            ..entry("spa")
        };
        assert_eq!(check(&[entry("eng"), interpreter.clone()]), Ok(()));
        let floor = MeetingLanguage {
            interpreter: true,
            ..entry("eng")
        };
        assert!(message(&[floor]).contains("floor"));
        let both = MeetingLanguage {
            pid: Some(258),
            ..interpreter.clone()
        };
        assert!(message(&[entry("eng"), both]).starts_with("language[1].interpreter"));
        let far = MeetingLanguage {
            offset_ms: Some(30_001),
            ..interpreter
        };
        assert!(message(&[entry("eng"), far]).contains("-30000 to 30000"));
        let stray = MeetingLanguage {
            offset_ms: Some(100),
            ..entry("spa")
        };
        assert!(message(&[entry("eng"), stray]).starts_with("language[1].offset_ms"));
    }

    #[test]
    fn each_interpreter_has_a_key_of_their_own() {
        let spa = interpreter_key("stream-key", "spa");
        // What docs/languages.md has operators compute with openssl.
        assert_eq!(spa, "e73d96bb82a0615e9ec70f7baf080c31");
        assert!(spa.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(spa, interpreter_key("stream-key", "spa"));
        assert_ne!(spa, interpreter_key("stream-key", "fra"));
        assert_ne!(spa, interpreter_key("other-key", "spa"));
        assert!(!spa.contains("stream-key"));
    }

    #[test]
    fn interpreter_settings_roundtrip_and_stay_out_of_plain_entries() {
        let plain = serde_json::to_string(&entry("spa")).unwrap();
        assert_eq!(plain, r#"{"code":"spa"}"#);
        let read: MeetingLanguage =
            serde_json::from_str(r#"{"code":"spa","interpreter":true,"offset_ms":-800}"#).unwrap();
        assert!(read.interpreter);
        assert_eq!(read.offset_ms, Some(-800));
    }
}
