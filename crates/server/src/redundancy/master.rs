//! The master playlist with backup variants (OTT-PROT-1, OTT-PLAY-1, OTT-GRP-2):
//! this node's variants first, then the same variants at up to two backups, with
//! byte-identical attributes and a pass, so a switching player treats them as
//! redundant streams. Each node's variants form a pathway (`PATHWAY-ID`, its node's
//! name) and `EXT-X-CONTENT-STEERING` points at a steering server on the first backup
//! (RFC 8216bis §7), so a player that steers is moved off a hung, draining or broken
//! node by the mesh ([`crate::routes::steering`]); one that does not still fails over
//! between the redundant variants on errors.

use std::sync::Arc;

use crate::http::request_context::Arrival;
use bytes::Bytes;
use media::hls::Personalisation;
use media::manifest::Manifest;
use packaging::render::Master;

use crate::redundancy::door::Viewer;
use crate::redundancy::render_cache::RenderKey;
use crate::redundancy::{MeshView, Redundancy};

/// A viewer's backups under one mesh view: up to two of its group's candidates, first
/// backup first, held by position in the view's shared list (nothing copied per request).
pub(crate) struct ViewerBackups {
    /// The mesh view they were chosen in (passes, this node's id).
    pub view: Arc<MeshView>,
    /// The stream's group.
    pub group: Arc<str>,
    candidates: Arc<[ott::Target]>,
    picked: [Option<usize>; 2],
    /// The viewer's address, which its passes are bound to (none: an in-process call).
    pub viewer: Option<std::net::IpAddr>,
}

impl ViewerBackups {
    /// What a render for these backups depends on under their view (with the stream,
    /// its plain master playlist, the protocol and a login's query).
    fn render_key<'a>(
        &self,
        stream: &'a str,
        plain: &'a Bytes,
        protocol: ott::Protocol,
        query: Option<&'a str>,
    ) -> RenderKey<'a> {
        RenderKey {
            stream,
            plain,
            protocol,
            list: self.candidates.as_ptr() as usize,
            picked: self.picked,
            query,
            viewer: self
                .viewer
                .map_or([0; 16], crate::access::viewer_id::address_prefix),
        }
    }

    /// The chosen backups, first backup first.
    pub fn targets(&self) -> impl Iterator<Item = &ott::Target> {
        self.picked.iter().flatten().map(|&i| &self.candidates[i])
    }
}

/// The backups of this viewer: the stream is in a group, the player switches (by its
/// User-Agent), and the mesh has eligible candidates with an address for this viewer
/// (LL-HLS and DASH need the backup's fMP4 packaging: its ladder announces it).
pub(crate) fn backups_for(
    redundancy: &Redundancy,
    stream: &str,
    arrival: &Arrival,
    protocol: ott::Protocol,
) -> Option<ViewerBackups> {
    // Cheapest first: a stream in no group, then a player that does not switch, make
    // nothing per viewer.
    let view = redundancy.view()?;
    let group = redundancy
        .with_membership(stream, |m| view.candidates(&m.group))
        .flatten()?;
    let (context, session) = Viewer::switching_context_and_session(arrival)?;
    let candidates = group.for_viewer(context, protocol.transport());
    let picked = ott::choose_backup_indices_keyed(
        session,
        candidates
            .targets
            .iter()
            .map(|t| &t.node)
            .zip(candidates.keys.iter().copied()),
        (&view.snapshot.this.id, view.this_key),
    );
    if picked.iter().all(Option::is_none) {
        return None;
    }
    let (group, candidates) = (Arc::clone(&group.group), Arc::clone(candidates.targets));
    Some(ViewerBackups {
        view,
        group,
        candidates,
        picked,
        viewer: arrival.connection().map(|c| c.peer.ip()),
    })
}

/// The master playlist made for this viewer, or `None` for the plain, shared one: with
/// backup variants when it gets backups (see [`backups_for`]), and with `query` (a
/// login's `login=…&token=…`, OTT-GRP-6) on every variant URI when given, so the media
/// playlists here and on the backups are requested under the same login. `plain` is the
/// stream's shared master playlist: one variant, or one per rung of a ladder, over TS
/// (`index.m3u8`) or LL-HLS (`ll-index.m3u8`, `protocol`: backups must package it).
pub fn personalised(
    redundancy: Option<&Redundancy>,
    stream: &str,
    master: &Master,
    arrival: &Arrival,
    query: Option<&str>,
    protocol: ott::Protocol,
) -> Option<Manifest> {
    let backups =
        redundancy.and_then(|r| backups_for(r, stream, arrival, protocol).map(|b| (r, b)));
    if backups.is_none() && query.is_none() {
        return None;
    }
    // The same stream, master, protocol, backups and login make the same bytes under
    // one snapshot.
    let cached = backups.as_ref().map(|(redundancy, backups)| {
        let signed = backups
            .targets()
            .filter(|t| ott::Pass::can_sign(&t.stream))
            .count();
        let key = backups.render_key(stream, &master.plain.bytes, protocol, query);
        (*redundancy, Arc::clone(&backups.view), key, signed)
    });
    if let Some((redundancy, view, key, signed)) = &cached {
        if let Some(body) = view.rendered.get(key) {
            count_backups(redundancy, *signed);
            return Some(body);
        }
    }
    let body = render(backups, master, query);
    if let Some((_, view, key, _)) = cached {
        view.rendered.put(&key, body.clone());
    }
    Some(body)
}

/// Counts one personalised answer (master playlist or MPD) with `passes` backups.
pub(crate) fn count_backups(redundancy: &Redundancy, passes: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    redundancy
        .counters
        .passes_issued
        .fetch_add(passes as u64, Relaxed);
    redundancy
        .counters
        .masters_with_backups
        .fetch_add(1, Relaxed);
}

type Backups<'a> = Option<(&'a Redundancy, ViewerBackups)>;

/// Renders the personalised master playlist from the typed parts: the viewer's backups
/// that get a pass, each a copy of every variant at its address (OTT-PROT-1), with
/// this node's and their pathways under a steering server on the first backup, and
/// the login's query on every variant.
fn render(backups: Backups<'_>, master: &Master, query: Option<&str>) -> Manifest {
    let signed: Vec<(&ott::Target, String)> = backups
        .as_ref()
        .map(|(_, backups)| {
            backups
                .targets()
                .filter_map(|t| Some((t, backups.view.master_pass(&t.stream, backups.viewer)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut personalisation = Personalisation {
        query,
        ..Personalisation::default()
    };
    if let Some((redundancy, _)) = &backups {
        count_backups(redundancy, signed.len());
    }
    if let (Some((_, backups)), Some((first, _))) = (&backups, signed.first()) {
        let pathways: Vec<String> =
            std::iter::once(ott::pathway_id(&backups.view.snapshot.this.id))
                .chain(signed.iter().map(|(t, _)| ott::pathway_id(&t.node)))
                .collect();
        let uri = ott::steering_uri(&first.url_base, &backups.group, &pathways);
        personalisation.steering = Some((uri, pathways));
        personalisation.backups = signed
            .into_iter()
            .map(|(target, pass)| {
                let link = target.link(pass);
                Box::new(move |uri: &str| ott::backup_uri(uri, &link)) as media::hls::BackupUri<'_>
            })
            .collect();
    }
    master.render_for(&personalisation)
}
