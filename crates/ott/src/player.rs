//! Which players get backup variants in the master playlist (OTT-PLAY-1).

/// Whether a player switches to backup variants of a master playlist on failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlayerKind {
    /// AVPlayer (Safari, iOS, tvOS, AppleCoreMedia), hls.js and browser players,
    /// ExoPlayer, Media3: offered backup variants.
    Switching,
    /// VLC, ffmpeg/Lavf-based players, mpv, Kodi, anything without a User-Agent and
    /// anything unknown: no backup variants; they reopen the stream and the redirect
    /// on open takes over (OTT-PROT-2).
    NonSwitching,
}

/// Tokens of players that do not switch; checked first, because some of them embed
/// browser-like tokens. Public so tests can check the classifier against them.
pub const NON_SWITCHING: &[&str] = &[
    "vlc", "libvlc", "lavf", "ffmpeg", "ffplay", "ffprobe", "libmpv", "mpv/", "mpv ", "kodi",
    "xbmc",
];

/// Tokens of players that switch (public like [`NON_SWITCHING`]).
pub const SWITCHING: &[&str] = &[
    "applecoremedia",
    "avplayer",
    "iphone",
    "ipad",
    "ipod",
    "appletv",
    "tvos",
    "exoplayer",
    "media3",
    "hls.js",
    "mozilla/",
    "safari/",
];

/// Whether `haystack` contains one of `tokens` (lowercase ASCII), ignoring ASCII case:
/// one pass, a token tried only where its first byte is, no allocation (a master
/// playlist request classifies its User-Agent on the hot path).
fn contains_any(haystack: &[u8], tokens: &[&str]) -> bool {
    (0..haystack.len()).any(|at| {
        let first = haystack[at].to_ascii_lowercase();
        tokens.iter().any(|token| {
            let token = token.as_bytes();
            token.first() == Some(&first)
                && haystack
                    .get(at..at + token.len())
                    .is_some_and(|window| window.eq_ignore_ascii_case(token))
        })
    })
}

impl PlayerKind {
    /// Classifies a `User-Agent` header value; a missing header is `""`.
    pub fn from_user_agent(user_agent: &str) -> Self {
        let ua = user_agent.trim().as_bytes();
        if ua.is_empty() || contains_any(ua, NON_SWITCHING) || ua.eq_ignore_ascii_case(b"mpv") {
            return PlayerKind::NonSwitching;
        }
        if contains_any(ua, SWITCHING) {
            PlayerKind::Switching
        } else {
            PlayerKind::NonSwitching
        }
    }

    /// Whether the master playlist should carry backup variants for this player.
    pub fn offers_backups(self) -> bool {
        self == PlayerKind::Switching
    }
}
