//! The master playlist with backup variants (OTT-PROT-1, OTT-PLAY-1, OTT-GRP-2):
//! this node's variant first, then the same variant at up to two backups, with
//! byte-identical attributes and a pass, so a switching player treats them as
//! redundant streams.

use axum::extract::Request;
use axum::http::header;
use bytes::Bytes;

use crate::channel::WindowSnapshot;
use crate::redundancy::door::{sign_for, Viewer};
use crate::redundancy::Redundancy;

/// The master playlist for this viewer, when it gets backups: the stream is in a
/// group, the player switches (by its User-Agent), and at least one backup is
/// eligible with an address for this viewer. `None` means: serve the plain one.
pub fn with_backups(
    redundancy: &Redundancy,
    stream: &str,
    window: &WindowSnapshot,
    request: &Request,
    now_ms: i64,
) -> Option<Bytes> {
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
    let targets = ott::backups_for_viewer(
        &view.snapshot,
        &membership.group,
        viewer.context,
        &viewer.session,
        now_ms,
    );
    if targets.is_empty() {
        return None;
    }
    let links: Vec<ott::BackupLink> = targets
        .iter()
        .filter_map(|target| {
            let pass = sign_for(
                redundancy,
                &view,
                &target.stream,
                now_ms,
                ott::MASTER_PASS_LIFETIME_MS,
            )?;
            Some(target.link(pass))
        })
        .collect();
    let own = crate::render::master_playlist(window);
    let playlist = media::hls::MasterPlaylist {
        variants: ott::master_variants(&own.variants, &links),
        ..own
    };
    redundancy
        .counters
        .masters_with_backups
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(Bytes::from(playlist.render()))
}
