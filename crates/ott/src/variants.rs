//! Master playlist variants with backups (OTT-PROT-1, OTT-PLAY-1): this node's
//! variants first, then the same variants at each backup's announced address, with
//! byte-identical attributes so players treat them as redundant.

use media::hls::Variant;

use crate::pass::PASS_QUERY_PARAM;

/// Where a backup serves the stream, and the pass that admits the viewer there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BackupLink {
    /// The backup's URL base for this viewer (from [`crate::backup_address`]).
    pub url_base: String,
    /// The stream's name on the backup node.
    pub stream: String,
    /// The signed pass text (URL-safe).
    pub pass: String,
}

/// Percent-encodes one path segment (RFC 3986 unreserved characters pass through).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The absolute URL of `uri` (a variant URI of this node's master playlist: relative
/// to the stream's folder, an absolute path, or an absolute URL whose path is kept) on
/// a backup, with the pass appended.
pub fn backup_uri(uri: &str, link: &BackupLink) -> String {
    let base = link.url_base.trim_end_matches('/');
    let path = match uri.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]).to_owned(),
        None if uri.starts_with('/') => uri.to_owned(),
        None => format!("/{}/{uri}", encode_segment(&link.stream)),
    };
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{base}{path}{sep}{PASS_QUERY_PARAM}={}", link.pass)
}

/// The ordered variants: `own` as given, then, for each backup in order, a copy of
/// every own variant with only its URI changed (OTT-PROT-1). Give `backups` empty for
/// a player that does not switch (OTT-PLAY-1).
pub fn master_variants(own: &[Variant], backups: &[BackupLink]) -> Vec<Variant> {
    let mut out = own.to_vec();
    for link in backups {
        out.extend(own.iter().map(|v| Variant {
            uri: backup_uri(&v.uri, link),
            ..v.clone()
        }));
    }
    out
}
