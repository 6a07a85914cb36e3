//! Player families and their recognition from a User-Agent (SHED-1, FIT-1).
//!
//! Devices differ in how badly a refused request hurts (a smart TV often gives up a
//! playback after one failed playlist, hls.js retries well), so the classifier adjusts
//! priority per family, and fault-injection rules can target one family.

use serde::Deserialize;
use ua_scan::{bits, TokenTable};

/// The family of player behind a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceType {
    /// A desktop or Android web browser playing through hls.js or a similar MSE player.
    Browser,
    /// Apple's native stack: Safari, any iOS/iPadOS browser, AVPlayer apps, Apple TV.
    Apple,
    /// An Android app on ExoPlayer / Media3.
    Android,
    /// A smart TV, set-top box or streaming stick (Tizen, webOS, Android TV, Fire TV, Roku).
    SmartTv,
    /// Desktop players and media tools: VLC, ffmpeg (Lavf), mpv, Kodi, GStreamer.
    MediaTool,
    /// Not recognised, or no User-Agent at all.
    Unknown,
}

/// How many leading bytes of a User-Agent are examined; real ones are under 400.
pub const UA_SCAN_LIMIT: usize = ua_scan::SCAN_LIMIT;

/// Every token the recognition looks for, lowercase but for [`AFT`], grouped in
/// decision order (the `*_TOKENS` masks below select the groups). At most 64, one bit
/// each.
const TOKEN_LIST: [&[u8]; 43] = [
    // 0..18: TV platforms.
    b"smart-tv",
    b"smarttv",
    b"tizen",
    b"webos",
    b"web0s",
    b"netcast",
    b"hbbtv",
    b"bravia",
    b"android tv",
    b"googletv",
    b"roku",
    b"crkey",
    b"aquos",
    b"vidaa",
    b"philipstv",
    b"playstation",
    b"xbox",
    // Fire TV models ("; AFTMM"): matched case-sensitively, see `AFT`.
    b"; AFT",
    // 18..27: media tools.
    b"lavf/",
    b"libvlc",
    b"vlc/",
    b"libmpv",
    b"mpv ",
    b"kodi/",
    b"xbmc/",
    b"gstreamer",
    b"ffmpeg",
    // 27..29: Android player libraries.
    b"exoplayer",
    b"media3",
    // 29..35: Apple platforms.
    b"applecoremedia",
    b"iphone",
    b"ipad",
    b"ipod",
    b"appletv",
    b"tvos",
    // 35: Safari, 36..42: what makes "Safari" not Safari, 42: any browser.
    b"safari/",
    b"chrome/",
    b"chromium/",
    b"edg/",
    b"firefox/",
    b"opr/",
    b"android",
    b"mozilla/",
];

/// Index of `; AFT`, which must match exactly: ignoring case it would collide with
/// ordinary words ("; after").
const AFT: usize = 17;

static TOKENS: TokenTable<43> = TokenTable::new(TOKEN_LIST, 1 << AFT);

const TV_TOKENS: u64 = bits(0, 18);
const TOOL_TOKENS: u64 = bits(18, 27);
const ANDROID_TOKENS: u64 = bits(27, 29);
const APPLE_TOKENS: u64 = bits(29, 35);
const SAFARI_TOKEN: u64 = bits(35, 36);
const NOT_SAFARI_TOKENS: u64 = bits(36, 42);
const MOZILLA_TOKEN: u64 = bits(42, 43);

impl DeviceType {
    /// Number of device types; sizes per-device tables.
    pub const COUNT: usize = 6;

    /// All device types in declaration order (index = `self as usize`).
    pub const ALL: [DeviceType; DeviceType::COUNT] = [
        DeviceType::Browser,
        DeviceType::Apple,
        DeviceType::Android,
        DeviceType::SmartTv,
        DeviceType::MediaTool,
        DeviceType::Unknown,
    ];

    /// Stable snake_case name: the config key, the device-header value, a metric label.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeviceType::Browser => "browser",
            DeviceType::Apple => "apple",
            DeviceType::Android => "android",
            DeviceType::SmartTv => "smart_tv",
            DeviceType::MediaTool => "media_tool",
            DeviceType::Unknown => "unknown",
        }
    }

    /// The device type named by a device header value (`as_str` names, any ASCII
    /// case), or `None` for anything else.
    pub fn from_name(name: &str) -> Option<DeviceType> {
        let name = name.trim();
        DeviceType::ALL
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(name))
    }

    /// Recognise the player family from a User-Agent by plain substring matching: no
    /// allocation, no regex, linear in the header length. Order matters: TV platforms
    /// first (their UAs also say "Android" or "Safari"), then media tools and ExoPlayer
    /// (app UAs), then iOS (every iOS browser uses Apple's player), then desktop Safari
    /// (a UA that says "Safari" without being Chrome, Edge or Firefox).
    ///
    /// Only the first [`UA_SCAN_LIMIT`] bytes are looked at, so a hostile, huge header
    /// costs no more than a real one.
    pub fn from_user_agent(ua: &str) -> DeviceType {
        let ua = ua.as_bytes();
        let ua = ua.get(..UA_SCAN_LIMIT).unwrap_or(ua);
        if ua.iter().all(u8::is_ascii_whitespace) {
            return DeviceType::Unknown;
        }
        let found = TOKENS.scan(ua);
        if found & TV_TOKENS != 0 {
            DeviceType::SmartTv
        } else if found & TOOL_TOKENS != 0 {
            DeviceType::MediaTool
        } else if found & ANDROID_TOKENS != 0 {
            DeviceType::Android
        } else if found & APPLE_TOKENS != 0
            || (found & SAFARI_TOKEN != 0 && found & NOT_SAFARI_TOKENS == 0)
        {
            DeviceType::Apple
        } else if found & MOZILLA_TOKEN != 0 {
            DeviceType::Browser
        } else {
            DeviceType::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASES: &[(&str, DeviceType)] = &[
        ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", DeviceType::Apple),
        ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1", DeviceType::Apple),
        ("AppleCoreMedia/1.0.0.21E219 (iPhone; U; CPU OS 17_4 like Mac OS X; en_us)", DeviceType::Apple),
        ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15", DeviceType::Apple),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36", DeviceType::Browser),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0", DeviceType::Browser),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0", DeviceType::Browser),
        ("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36", DeviceType::Browser),
        ("ExoPlayerDemo/2.19.1 (Linux;Android 13) ExoPlayerLib/2.19.1", DeviceType::Android),
        ("myapp/1.0 (Linux;Android 14) AndroidXMedia3/1.3.1", DeviceType::Android),
        ("Lavf/60.16.100", DeviceType::MediaTool),
        ("VLC/3.0.20 LibVLC/3.0.20", DeviceType::MediaTool),
        ("libmpv", DeviceType::MediaTool),
        ("Kodi/20.2 (X11; Linux x86_64) Ubuntu/22.04 App_Bitness/64 Version/20.2-(20.2.0)-Git:20230630-5f418d0b13", DeviceType::MediaTool),
        ("GStreamer souphttpsrc 1.22.0 libsoup/3.4.0", DeviceType::MediaTool),
        ("Mozilla/5.0 (SMART-TV; LINUX; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 76.0.3809.146/6.0 TV Safari/537.36", DeviceType::SmartTv),
        ("Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.79 Safari/537.36 WebAppManager", DeviceType::SmartTv),
        ("Mozilla/5.0 (Linux; Android 9; AFTMM Build/PS7233; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36", DeviceType::SmartTv),
        ("Roku/DVP-12.5 (12.5.0.4178-29)", DeviceType::SmartTv),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Craft/1.0", DeviceType::Browser),
        ("curl/8.5.0", DeviceType::Unknown),
        ("", DeviceType::Unknown),
        ("   ", DeviceType::Unknown),
    ];

    #[test]
    fn real_user_agents() {
        for (ua, want) in CASES {
            assert_eq!(DeviceType::from_user_agent(ua), *want, "ua: {ua:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for d in DeviceType::ALL {
            assert_eq!(DeviceType::from_name(d.as_str()), Some(d));
            assert_eq!(DeviceType::ALL[d as usize], d);
        }
        assert_eq!(
            DeviceType::from_name(" Smart_TV "),
            Some(DeviceType::SmartTv)
        );
        assert_eq!(DeviceType::from_name("toaster"), None);
    }

    #[test]
    fn only_the_head_of_a_huge_header_counts() {
        let mut ua = "Lavf/60.16.100 ".to_string();
        ua.push_str(&"x".repeat(100_000));
        ua.push_str(" iPhone");
        assert_eq!(DeviceType::from_user_agent(&ua), DeviceType::MediaTool);
        let late = format!("{}Lavf/60", " ".repeat(UA_SCAN_LIMIT));
        assert_eq!(DeviceType::from_user_agent(&late), DeviceType::Unknown);
    }

    /// The straightforward recognition (one substring search per token), kept as the
    /// oracle of the single-pass scan.
    fn reference(ua: &str) -> DeviceType {
        fn contains_ci(haystack: &[u8], needle: &[u8]) -> bool {
            haystack
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
        }
        let any = |ua: &[u8], mask: u64| {
            (0..TOKEN_LIST.len()).any(|k| {
                mask & (1 << k) != 0
                    && if k == AFT {
                        ua.windows(5).any(|w| w == b"; AFT")
                    } else {
                        contains_ci(ua, TOKEN_LIST[k])
                    }
            })
        };
        let ua = ua.as_bytes();
        let ua = ua.get(..UA_SCAN_LIMIT).unwrap_or(ua);
        if ua.iter().all(u8::is_ascii_whitespace) {
            DeviceType::Unknown
        } else if any(ua, TV_TOKENS) {
            DeviceType::SmartTv
        } else if any(ua, TOOL_TOKENS) {
            DeviceType::MediaTool
        } else if any(ua, ANDROID_TOKENS) {
            DeviceType::Android
        } else if any(ua, APPLE_TOKENS) || (any(ua, SAFARI_TOKEN) && !any(ua, NOT_SAFARI_TOKENS)) {
            DeviceType::Apple
        } else if any(ua, MOZILLA_TOKEN) {
            DeviceType::Browser
        } else {
            DeviceType::Unknown
        }
    }

    #[test]
    fn token_groups_cover_every_token_once() {
        let groups = [
            TV_TOKENS,
            TOOL_TOKENS,
            ANDROID_TOKENS,
            APPLE_TOKENS,
            SAFARI_TOKEN,
            NOT_SAFARI_TOKENS,
            MOZILLA_TOKEN,
        ];
        assert_eq!(groups.iter().fold(0, |a, g| a | g), bits(0, 43));
        assert_eq!(groups.iter().map(|g| g.count_ones()).sum::<u32>(), 43);
        assert!(TOKEN_LIST
            .iter()
            .enumerate()
            .all(|(k, t)| t.len() >= 2 && (k == AFT || t.to_ascii_lowercase() == *t)));
        assert_eq!(TOKEN_LIST[AFT], b"; AFT");
        assert_eq!(
            DeviceType::from_user_agent("Mozilla/5.0 (X11; after hours) Firefox/125.0"),
            DeviceType::Browser
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_header(ua in ".{0,300}") {
            let _ = DeviceType::from_user_agent(&ua);
        }

        /// The single-pass scan agrees with one search per token, on headers made of
        /// token fragments in any case, noise and multi-byte characters.
        #[test]
        fn scan_agrees_with_the_reference(parts in proptest::collection::vec(
            (0usize..TOKEN_LIST.len(), 0usize..12, proptest::bool::ANY, "[ a-zA-Z0-9;/().é]{0,6}"),
            0..12,
        )) {
            let mut ua = String::new();
            for (k, cut, upper, noise) in parts {
                let token = std::str::from_utf8(TOKEN_LIST[k]).expect("ascii");
                let token = &token[..cut.min(token.len())];
                if upper { ua.push_str(&token.to_ascii_uppercase()) } else { ua.push_str(token) }
                ua.push_str(&noise);
            }
            proptest::prop_assert_eq!(DeviceType::from_user_agent(&ua), reference(&ua), "ua: {:?}", ua);
        }
    }
}
