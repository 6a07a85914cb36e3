//! The master playlist with backup variants (OTT-PROT-1, OTT-PLAY-1, OTT-GRP-2):
//! this node's variant first, then the same variant at up to two backups, with
//! byte-identical attributes and a pass, so a switching player treats them as
//! redundant streams.

use axum::extract::Request;
use axum::http::header;
use bytes::Bytes;

use crate::channel::WindowSnapshot;
use crate::redundancy::door::Viewer;
use crate::redundancy::Redundancy;

/// The backups of this viewer: the stream is in a group, the player switches (by its
/// User-Agent), and the mesh has eligible candidates with an address for this viewer.
fn backups_for(
    redundancy: &Redundancy,
    stream: &str,
    request: &Request,
) -> Option<(
    std::sync::Arc<crate::redundancy::MeshView>,
    Vec<ott::Target>,
)> {
    let membership = redundancy.membership(stream)?;
    let user_agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ott::PlayerKind::from_user_agent(user_agent).offers_backups() {
        return None;
    }
    let view = redundancy.view()?;
    let viewer = Viewer::of(request);
    let candidates = view.candidates(&membership.group, viewer.context);
    let targets = ott::pick_backups(candidates, &viewer.session, &view.snapshot.this.id);
    (!targets.is_empty()).then_some((view, targets))
}

/// The master playlist made for this viewer, or `None` for the plain, shared one: with
/// backup variants when it gets backups (see [`backups_for`]), and with `query` (a
/// login's `login=…&token=…`, OTT-GRP-6) on every variant URI when given, so the media
/// playlists here and on the backups are requested under the same login.
pub fn personalised(
    redundancy: Option<&Redundancy>,
    stream: &str,
    window: &WindowSnapshot,
    request: &Request,
    query: Option<&str>,
) -> Option<Bytes> {
    let backups = redundancy.and_then(|r| backups_for(r, stream, request).map(|b| (r, b)));
    if backups.is_none() && query.is_none() {
        return None;
    }
    // The plain master playlist is rendered once per segment with one variant; each
    // backup repeats that variant's EXT-X-STREAM-INF line byte for byte (OTT-PROT-1)
    // with the backup's URI and pass.
    let plain = std::str::from_utf8(&window.master_playlist).ok()?;
    let (attributes, uri) = last_variant(plain)?;
    let uri = match query {
        Some(q) if uri.contains('?') => format!("{uri}&{q}"),
        Some(q) => format!("{uri}?{q}"),
        None => uri.to_owned(),
    };
    let mut text = String::with_capacity(plain.len() + 3 * (attributes.len() + 240));
    for line in plain.lines() {
        // Only the variant's URI line changes (it is the last non-tag line).
        if !line.starts_with('#') && !line.is_empty() {
            text.push_str(&uri);
        } else {
            text.push_str(line);
        }
        text.push('\n');
    }
    if let Some((redundancy, (view, targets))) = backups {
        for target in &targets {
            let Some(pass) = view.master_pass(&target.stream).map(str::to_owned) else {
                continue;
            };
            redundancy
                .counters
                .passes_issued
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            text.push_str(attributes);
            text.push('\n');
            text.push_str(&ott::backup_uri(&uri, &target.link(pass)));
            text.push('\n');
        }
        redundancy
            .counters
            .masters_with_backups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    Some(Bytes::from(text))
}

/// The last variant of a master playlist: its `#EXT-X-STREAM-INF` line and URI.
fn last_variant(master: &str) -> Option<(&str, &str)> {
    let mut lines = master.lines();
    let mut found = None;
    while let Some(line) = lines.next() {
        if line.starts_with("#EXT-X-STREAM-INF:") {
            let uri = lines
                .by_ref()
                .find(|l| !l.is_empty() && !l.starts_with('#'))?;
            found = Some((line, uri));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::last_variant;

    #[test]
    fn the_last_variant_is_found() {
        let text = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\n\nb.m3u8\n";
        assert_eq!(
            last_variant(text),
            Some(("#EXT-X-STREAM-INF:BANDWIDTH=2", "b.m3u8"))
        );
        assert_eq!(last_variant("#EXTM3U\n"), None);
    }
}
