//! OTT-PLAY-1: backup variants only for players that switch.

use ott::player::{NON_SWITCHING, SWITCHING};
use ott::PlayerKind;

#[test]
fn play_1_switching_players() {
    for ua in [
        "AppleCoreMedia/1.0.0.20G75 (iPhone; U; CPU OS 16_6 like Mac OS X; en_us)",
        "AppleCoreMedia/1.0.0.21J354 (Apple TV; U; CPU OS 17_0 like Mac OS X; en_us)",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
        "MyApp/1.0 (Linux;Android 12) ExoPlayerLib/2.18.1",
        "ExoPlayer",
        "AndroidXMedia3/1.1.1",
        "androidx.media3.exoplayer/1.2.0",
    ] {
        assert_eq!(PlayerKind::from_user_agent(ua), PlayerKind::Switching, "{ua}");
        assert!(PlayerKind::from_user_agent(ua).offers_backups());
    }
}

#[test]
fn play_1_non_switching_players() {
    for ua in [
        "",
        "   ",
        "VLC/3.0.18 LibVLC/3.0.18",
        "Lavf/60.3.100",
        "Lavf58.76.100",
        "ffmpeg/6.0",
        "libmpv",
        "mpv 0.35.1",
        "mpv",
        "Kodi/20.2 (X11; Linux x86_64) Ubuntu/22.04 App_Bitness/64 Version/20.2",
        "XBMC/12.0",
        "curl/8.4.0",
        "GStreamer souphttpsrc 1.22",
    ] {
        assert_eq!(
            PlayerKind::from_user_agent(ua),
            PlayerKind::NonSwitching,
            "{ua:?}"
        );
    }
}

proptest::proptest! {
    #[test]
    fn any_user_agent_is_classified_without_panic(ua in "\\PC{0,200}") {
        let _ = PlayerKind::from_user_agent(&ua);
    }

    /// A VLC token wins over any browser token around it.
    #[test]
    fn vlc_never_switches(prefix in "[ -~]{0,40}", suffix in "[ -~]{0,40}") {
        let ua = format!("{prefix} VLC/3.0.20 {suffix}");
        proptest::prop_assert_eq!(PlayerKind::from_user_agent(&ua), PlayerKind::NonSwitching);
    }

    /// The allocation-free scan agrees with one lowercase search per token, on headers
    /// made of token fragments in any case, noise and multi-byte characters.
    #[test]
    fn scan_agrees_with_one_search_per_token(parts in proptest::collection::vec(
        (0usize..tokens().len(), 0usize..16, proptest::bool::ANY, "[ a-zA-Z0-9;/().é]{0,6}"),
        0..10,
    )) {
        let mut ua = String::new();
        for (k, cut, upper, noise) in parts {
            let token = tokens()[k];
            let token = &token[..cut.min(token.len())];
            if upper { ua.push_str(&token.to_ascii_uppercase()) } else { ua.push_str(token) }
            ua.push_str(&noise);
        }
        proptest::prop_assert_eq!(PlayerKind::from_user_agent(&ua), reference(&ua), "ua: {:?}", ua);
    }
}

/// Every token either list of `ott::player` looks for, and a few near misses.
fn tokens() -> Vec<&'static str> {
    let mut all: Vec<&str> = NON_SWITCHING.iter().chain(SWITCHING).copied().collect();
    all.extend(["mpv", "mozilla", "hls."]);
    all
}

/// The classification spelled out: lowercase the header, then one search per token.
fn reference(user_agent: &str) -> PlayerKind {
    let ua = user_agent.trim().to_ascii_lowercase();
    if ua.is_empty() || NON_SWITCHING.iter().any(|t| ua.contains(t)) || ua == "mpv" {
        PlayerKind::NonSwitching
    } else if SWITCHING.iter().any(|t| ua.contains(t)) {
        PlayerKind::Switching
    } else {
        PlayerKind::NonSwitching
    }
}

#[test]
fn only_the_head_of_a_huge_header_counts() {
    let padded = |token: &str| format!("{}{token}", "x".repeat(ua_scan::SCAN_LIMIT));
    assert_eq!(
        PlayerKind::from_user_agent(&padded("Mozilla/5.0")),
        PlayerKind::NonSwitching
    );
    let late_tool = format!("Mozilla/5.0 {}", padded("Lavf/60"));
    assert_eq!(
        PlayerKind::from_user_agent(&late_tool),
        PlayerKind::Switching
    );
}
