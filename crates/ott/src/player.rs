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
/// browser-like tokens.
const NON_SWITCHING: &[&str] = &[
    "vlc", "libvlc", "lavf", "ffmpeg", "ffplay", "ffprobe", "libmpv", "mpv/", "mpv ", "kodi",
    "xbmc",
];

/// Tokens of players that switch.
const SWITCHING: &[&str] = &[
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

impl PlayerKind {
    /// Classifies a `User-Agent` header value; a missing header is `""`.
    pub fn from_user_agent(user_agent: &str) -> Self {
        let ua = user_agent.trim().to_ascii_lowercase();
        if ua.is_empty() || NON_SWITCHING.iter().any(|t| ua.contains(t)) || ua == "mpv" {
            return PlayerKind::NonSwitching;
        }
        if SWITCHING.iter().any(|t| ua.contains(t)) {
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
