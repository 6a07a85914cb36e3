//! Audio languages: the ISO 639-2 code an MPEG-TS PMT carries for each audio stream
//! (ISO/IEC 13818-1 §2.6.18, `ISO_639_language_descriptor`), and the BCP 47 tag the
//! manifests write for it (RFC 5646 §2.2.1: the two-letter ISO 639-1 code where one
//! exists, so `eng` is written `en`).

use std::fmt;

/// Tag of the `ISO_639_language_descriptor` in a PMT's elementary-stream loop.
pub const ISO_639_DESCRIPTOR_TAG: u8 = 0x0a;

/// A language as three lowercase ASCII letters (ISO 639-2): what a TS source names and
/// what an operator configures. Nothing else can be built, so a language is always safe
/// in a URL path, a playlist attribute and a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Language([u8; 3]);

/// ISO 639-2 codes (bibliographic and terminologic forms) with their ISO 639-1 code
/// and English name: the languages meetings are most often interpreted into.
const KNOWN: &[(&str, &str, &str)] = &[
    ("ara", "ar", "Arabic"),
    ("ben", "bn", "Bengali"),
    ("bul", "bg", "Bulgarian"),
    ("ces", "cs", "Czech"),
    ("chi", "zh", "Chinese"),
    ("cze", "cs", "Czech"),
    ("dan", "da", "Danish"),
    ("deu", "de", "German"),
    ("dut", "nl", "Dutch"),
    ("ell", "el", "Greek"),
    ("eng", "en", "English"),
    ("est", "et", "Estonian"),
    ("fin", "fi", "Finnish"),
    ("fra", "fr", "French"),
    ("fre", "fr", "French"),
    ("ger", "de", "German"),
    ("gre", "el", "Greek"),
    ("heb", "he", "Hebrew"),
    ("hin", "hi", "Hindi"),
    ("hrv", "hr", "Croatian"),
    ("hun", "hu", "Hungarian"),
    ("ind", "id", "Indonesian"),
    ("ita", "it", "Italian"),
    ("jpn", "ja", "Japanese"),
    ("kor", "ko", "Korean"),
    ("lav", "lv", "Latvian"),
    ("lit", "lt", "Lithuanian"),
    ("msa", "ms", "Malay"),
    ("may", "ms", "Malay"),
    ("nld", "nl", "Dutch"),
    ("nor", "no", "Norwegian"),
    ("pol", "pl", "Polish"),
    ("por", "pt", "Portuguese"),
    ("ron", "ro", "Romanian"),
    ("rum", "ro", "Romanian"),
    ("rus", "ru", "Russian"),
    ("slk", "sk", "Slovak"),
    ("slo", "sk", "Slovak"),
    ("slv", "sl", "Slovenian"),
    ("spa", "es", "Spanish"),
    ("swe", "sv", "Swedish"),
    ("tha", "th", "Thai"),
    ("tur", "tr", "Turkish"),
    ("ukr", "uk", "Ukrainian"),
    ("urd", "ur", "Urdu"),
    ("vie", "vi", "Vietnamese"),
    ("zho", "zh", "Chinese"),
];

impl Language {
    /// A configured or requested code: three ASCII letters, any case.
    pub fn parse(code: &str) -> Option<Self> {
        let bytes: [u8; 3] = code.as_bytes().try_into().ok()?;
        Self::from_bytes(bytes)
    }

    /// The three bytes of a descriptor; `None` unless they are ASCII letters (a
    /// descriptor with `und`, spaces or binary is no language).
    pub fn from_bytes(bytes: [u8; 3]) -> Option<Self> {
        if !bytes.iter().all(u8::is_ascii_alphabetic) {
            return None;
        }
        let code = bytes.map(|b| b.to_ascii_lowercase());
        // "und" (undetermined), "mul" (multiple), "zxx" (no content) name no language.
        (!matches!(&code, b"und" | b"mul" | b"zxx" | b"mis")).then_some(Self(code))
    }

    /// The ISO 639-2 code, e.g. `spa`.
    pub fn as_str(&self) -> &str {
        // Built only from ASCII letters.
        std::str::from_utf8(&self.0).unwrap_or("und")
    }

    /// The three bytes a PMT descriptor carries.
    pub fn bytes(&self) -> [u8; 3] {
        self.0
    }

    /// The BCP 47 tag for manifests (`LANGUAGE=` in HLS, `lang` in DASH): the ISO
    /// 639-1 code when the language has one, else the three-letter code.
    pub fn bcp47(&self) -> &str {
        self.known().map_or(self.as_str(), |(_, two, _)| two)
    }

    /// The language's English name when it is a common one (a menu's default label),
    /// else its code.
    pub fn english_name(&self) -> &str {
        self.known().map_or(self.as_str(), |(_, _, name)| name)
    }

    fn known(&self) -> Option<&'static (&'static str, &'static str, &'static str)> {
        let code = self.as_str();
        KNOWN.iter().find(|(three, _, _)| *three == code)
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The language of an elementary stream from its PMT descriptors (the first
/// `ISO_639_language_descriptor` naming one), or `None`.
pub fn from_descriptors(mut descriptors: &[u8]) -> Option<Language> {
    while let [tag, len, ref rest @ ..] = *descriptors {
        let body = rest.get(..usize::from(len))?;
        if tag == ISO_639_DESCRIPTOR_TAG {
            // Entries of 4 bytes: the code and an audio_type.
            for entry in body.chunks_exact(4) {
                if let Some(language) = Language::from_bytes([entry[0], entry[1], entry[2]]) {
                    return Some(language);
                }
            }
        }
        descriptors = &rest[usize::from(len)..];
    }
    None
}

/// One `ISO_639_language_descriptor` for `language` (audio_type 0, undefined), as a
/// muxer writes it in a PMT's elementary-stream loop.
pub fn descriptor(language: Language) -> [u8; 6] {
    let [a, b, c] = language.bytes();
    [ISO_639_DESCRIPTOR_TAG, 4, a, b, c, 0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_three_letters_and_lowercased() {
        assert_eq!(
            Language::parse("SPA").map(|l| l.to_string()),
            Some("spa".into())
        );
        assert_eq!(Language::parse("es"), None);
        assert_eq!(Language::parse("sp4"), None);
        assert_eq!(Language::parse("spañ"), None);
        assert_eq!(Language::parse("und"), None);
        assert_eq!(Language::parse("../"), None);
    }

    #[test]
    fn manifests_get_the_shortest_tag() {
        let tag = |c: &str| Language::parse(c).map(|l| l.bcp47().to_owned());
        assert_eq!(tag("eng").as_deref(), Some("en"));
        assert_eq!(tag("ger").as_deref(), Some("de"));
        assert_eq!(tag("deu").as_deref(), Some("de"));
        assert_eq!(tag("yue").as_deref(), Some("yue"));
        let name = |c: &str| Language::parse(c).map(|l| l.english_name().to_owned());
        assert_eq!(name("spa").as_deref(), Some("Spanish"));
        assert_eq!(name("yue").as_deref(), Some("yue"));
    }

    #[test]
    fn the_descriptor_round_trips_and_others_are_skipped() {
        let spa = Language::parse("spa").unwrap();
        // A stream_identifier descriptor (0x52), then the language.
        let mut loop_ = vec![0x52, 1, 7];
        loop_.extend(descriptor(spa));
        assert_eq!(from_descriptors(&loop_), Some(spa));
        // An undetermined entry first, then a real one, in one descriptor.
        let two = [
            ISO_639_DESCRIPTOR_TAG,
            8,
            b'u',
            b'n',
            b'd',
            0,
            b'f',
            b'r',
            b'a',
            0,
        ];
        assert_eq!(
            from_descriptors(&two).map(|l| l.to_string()),
            Some("fra".into())
        );
        // A descriptor longer than the loop is no language, and no panic.
        assert_eq!(
            from_descriptors(&[ISO_639_DESCRIPTOR_TAG, 9, b's', b'p', b'a']),
            None
        );
        assert_eq!(from_descriptors(&[]), None);
    }
}
