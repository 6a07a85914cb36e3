//! Player families and their recognition from a User-Agent (SHED-1, FIT-1).
//!
//! Devices differ in how badly a refused request hurts (a smart TV often gives up a
//! playback after one failed playlist, hls.js retries well), so the classifier adjusts
//! priority per family, and fault-injection rules can target one family.

use serde::Deserialize;

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
pub const UA_SCAN_LIMIT: usize = 512;

/// Case-insensitive ASCII substring search, without allocation.
fn contains_ci(haystack: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

fn any_ci(haystack: &[u8], needles: &[&str]) -> bool {
    needles.iter().any(|n| contains_ci(haystack, n.as_bytes()))
}

/// Case-sensitive substring search, for tokens that are short enough to collide with
/// ordinary words when case is ignored (`AFT` of Fire TV models).
fn contains_cs(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

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
        const TV: &[&str] = &[
            "smart-tv",
            "smarttv",
            "tizen",
            "webos",
            "web0s",
            "netcast",
            "hbbtv",
            "bravia",
            "android tv",
            "googletv",
            "roku",
            "crkey",
            "aquos",
            "vidaa",
            "philipstv",
            "playstation",
            "xbox",
        ];
        if any_ci(ua, TV) || contains_cs(ua, b"; AFT") {
            return DeviceType::SmartTv;
        }
        const TOOLS: &[&str] = &[
            "lavf/",
            "libvlc",
            "vlc/",
            "libmpv",
            "mpv ",
            "kodi/",
            "xbmc/",
            "gstreamer",
            "ffmpeg",
        ];
        if any_ci(ua, TOOLS) {
            return DeviceType::MediaTool;
        }
        if any_ci(ua, &["exoplayer", "media3"]) {
            return DeviceType::Android;
        }
        if any_ci(
            ua,
            &[
                "applecoremedia",
                "iphone",
                "ipad",
                "ipod",
                "appletv",
                "tvos",
            ],
        ) {
            return DeviceType::Apple;
        }
        const NOT_SAFARI: &[&str] = &[
            "chrome/",
            "chromium/",
            "edg/",
            "firefox/",
            "opr/",
            "android",
        ];
        if contains_ci(ua, b"safari/") && !any_ci(ua, NOT_SAFARI) {
            return DeviceType::Apple;
        }
        if contains_ci(ua, b"mozilla/") {
            return DeviceType::Browser;
        }
        DeviceType::Unknown
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

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_header(ua in ".{0,300}") {
            let _ = DeviceType::from_user_agent(&ua);
        }
    }
}
