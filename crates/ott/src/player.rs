//! Which players get backup variants in the master playlist (OTT-PLAY-1).

use ua_scan::{bits, TokenTable};

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

/// Both lists in one table: [`NON_SWITCHING`]'s tokens first, then [`SWITCHING`]'s.
static TOKENS: TokenTable<{ NON_SWITCHING.len() + SWITCHING.len() }> = TokenTable::new(
    {
        let mut all: [&[u8]; NON_SWITCHING.len() + SWITCHING.len()] =
            [b"" as &[u8]; NON_SWITCHING.len() + SWITCHING.len()];
        let mut k = 0;
        while k < all.len() {
            all[k] = if k < NON_SWITCHING.len() {
                NON_SWITCHING[k].as_bytes()
            } else {
                SWITCHING[k - NON_SWITCHING.len()].as_bytes()
            };
            k += 1;
        }
        all
    },
    0,
);

/// The bits of [`NON_SWITCHING`]'s tokens in a scan of [`TOKENS`].
const NON_SWITCHING_BITS: u64 = bits(0, NON_SWITCHING.len() as u32);

impl PlayerKind {
    /// Classifies a `User-Agent` header value; a missing header is `""`. Only the
    /// first [`ua_scan::SCAN_LIMIT`] bytes are read (a master playlist request
    /// classifies its User-Agent on the hot path: one pass, no allocation).
    pub fn from_user_agent(user_agent: &str) -> Self {
        let ua = user_agent.trim().as_bytes();
        if ua.is_empty() || ua.eq_ignore_ascii_case(b"mpv") {
            return PlayerKind::NonSwitching;
        }
        let found = TOKENS.scan(ua);
        if found & NON_SWITCHING_BITS == 0 && found != 0 {
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
