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
    plain: &Bytes,
    arrival: &Arrival,
    query: Option<&str>,
    protocol: ott::Protocol,
) -> Option<Bytes> {
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
        let key = backups.render_key(stream, plain, protocol, query);
        (*redundancy, Arc::clone(&backups.view), key, signed)
    });
    if let Some((redundancy, view, key, signed)) = &cached {
        if let Some(body) = view.rendered.get(key) {
            count_backups(redundancy, *signed);
            return Some(body);
        }
    }
    let body = render(backups, plain, query)?;
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

/// Writes the personalised master playlist.
fn render(backups: Backups<'_>, plain: &[u8], query: Option<&str>) -> Option<Bytes> {
    // The plain master playlist is rendered once per segment; each backup repeats every
    // variant's EXT-X-STREAM-INF line byte for byte (OTT-PROT-1) with the backup's URI
    // and pass, so a switching player sees the whole ladder on every pathway — but for
    // its SUBTITLES group: each backup's subtitle renditions are the backup's own, so
    // the subtitles follow a player that moves (players key redundant variants on
    // bandwidth, resolution, codecs and frame rate, not on the groups).
    let plain = std::str::from_utf8(plain).ok()?;
    let (header, variants) = split_variants(plain)?;
    let with_query = |uri: &str| match query {
        Some(q) if uri.contains('?') => format!("{uri}&{q}"),
        Some(q) => format!("{uri}?{q}"),
        None => uri.to_owned(),
    };
    let variants: Vec<(&str, String)> = variants
        .into_iter()
        .map(|(attributes, uri)| (attributes, with_query(uri)))
        .collect();
    let per_copy: usize = variants.iter().map(|(a, u)| a.len() + u.len() + 2).sum();
    let mut text = String::with_capacity(header.len() + 3 * (per_copy + 240 * variants.len()));
    // The backups that get a pass, with their pathways; the own node's pathway first.
    let signed: Vec<(&ott::Target, String)> = backups
        .as_ref()
        .map(|(_, backups)| {
            backups
                .targets()
                .filter_map(|t| Some((t, backups.view.master_pass(&t.stream, backups.viewer)?)))
                .collect()
        })
        .unwrap_or_default();
    let pathways: Vec<String> = match &backups {
        Some((_, backups)) if !signed.is_empty() => {
            std::iter::once(ott::pathway_id(&backups.view.snapshot.this.id))
                .chain(signed.iter().map(|(t, _)| ott::pathway_id(&t.node)))
                .collect()
        }
        _ => Vec::new(),
    };
    for line in &header {
        text.push_str(line);
        text.push('\n');
    }
    if let (Some((_, backups)), Some((first, _))) = (&backups, signed.first()) {
        let uri = ott::steering_uri(&first.url_base, &backups.group, &pathways);
        text.push_str(&format!(
            "#EXT-X-CONTENT-STEERING:SERVER-URI=\"{uri}\",PATHWAY-ID=\"{}\"\n",
            pathways[0]
        ));
    }

    let subtitles: Vec<&str> = header
        .iter()
        .copied()
        .filter(|l| l.starts_with(SUBTITLE_MEDIA))
        .collect();
    for (attributes, uri) in &variants {
        push_variant(&mut text, &on_pathway(attributes, pathways.first()), uri);
    }
    if let Some((redundancy, _)) = backups {
        count_backups(redundancy, signed.len());
        for (i, (target, pass)) in signed.into_iter().enumerate() {
            let link = target.link(pass);
            // The backup's own subtitle renditions (the same on every node), in a group
            // of its own that its variants name: a player that moves to the backup's
            // pathway takes its subtitles from the backup too.
            let group = format!("{SUBTITLES_GROUP_ATTR}\"subs-b{}\"", i + 1);
            for line in &subtitles {
                push_backup_media(&mut text, line, &group, &link);
            }
            for (attributes, uri) in &variants {
                let attributes = if subtitles.is_empty() {
                    std::borrow::Cow::Borrowed(*attributes)
                } else {
                    std::borrow::Cow::Owned(
                        attributes.replace(VARIANT_SUBTITLES, &variant_group(i)),
                    )
                };
                push_variant(
                    &mut text,
                    &on_pathway(&attributes, pathways.get(i + 1)),
                    &ott::backup_uri(uri, &link),
                );
            }
        }
    }
    Some(Bytes::from(text))
}

/// How the stream's subtitle renditions start (`media::hls::master`).
const SUBTITLE_MEDIA: &str = "#EXT-X-MEDIA:TYPE=SUBTITLES,";
/// The group attribute of the stream's subtitle renditions, and a variant's reference.
const SUBTITLES_GROUP_ATTR: &str = "GROUP-ID=";
const VARIANT_SUBTITLES: &str = ",SUBTITLES=\"subs\"";

fn variant_group(backup: usize) -> String {
    format!(",SUBTITLES=\"subs-b{}\"", backup + 1)
}

/// A subtitle rendition line of the stream, for a backup: in `group`, its URI on the
/// backup with the pass.
fn push_backup_media(text: &mut String, line: &str, group: &str, link: &ott::BackupLink) {
    let mut out = line.replace(&format!("{SUBTITLES_GROUP_ATTR}\"subs\""), group);
    if let Some(at) = out.find(",URI=\"") {
        let start = at + ",URI=\"".len();
        if let Some(len) = out[start..].find('"') {
            let uri = out[start..start + len].to_owned();
            out.replace_range(start..start + len, &ott::backup_uri(&uri, link));
        }
    }
    // One DEFAULT per group is the stream's own choice; keep it as it is.
    text.push_str(&out);
    text.push('\n');
}

/// A variant's attributes on its pathway (none without steering).
fn on_pathway<'a>(attributes: &'a str, pathway: Option<&String>) -> std::borrow::Cow<'a, str> {
    match pathway {
        Some(pathway) => std::borrow::Cow::Owned(format!("{attributes},PATHWAY-ID=\"{pathway}\"")),
        None => std::borrow::Cow::Borrowed(attributes),
    }
}

fn push_variant(text: &mut String, attributes: &str, uri: &str) {
    text.push_str(attributes);
    text.push('\n');
    text.push_str(uri);
    text.push('\n');
}

/// A variant of a master playlist: its `#EXT-X-STREAM-INF` line and its URI.
type VariantLines<'a> = (&'a str, &'a str);

/// A master playlist's lines before its first variant, and every variant. `None`
/// without a variant.
fn split_variants(master: &str) -> Option<(Vec<&str>, Vec<VariantLines<'_>>)> {
    let mut header = Vec::new();
    let mut variants = Vec::new();
    let mut lines = master.lines().filter(|l| !l.is_empty());
    while let Some(line) = lines.next() {
        if line.starts_with("#EXT-X-STREAM-INF:") {
            let uri = lines.by_ref().find(|l| !l.starts_with('#'))?;
            variants.push((line, uri));
        } else if variants.is_empty() {
            header.push(line);
        }
    }
    (!variants.is_empty()).then_some((header, variants))
}

#[cfg(test)]
mod tests {
    use super::{push_backup_media, split_variants, variant_group, VARIANT_SUBTITLES};

    #[test]
    fn a_backups_subtitles_are_its_own_group_at_its_address() {
        let link = ott::BackupLink {
            url_base: "http://b.example:8081".into(),
            stream: "m".into(),
            pass: "P".into(),
        };
        let mut text = String::new();
        let line = "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,URI=\"sub-en.m3u8\"";
        push_backup_media(&mut text, line, "GROUP-ID=\"subs-b1\"", &link);
        assert_eq!(
            text,
            "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs-b1\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,URI=\"http://b.example:8081/m/sub-en.m3u8?pass=P\"\n"
        );
        let variant = "#EXT-X-STREAM-INF:BANDWIDTH=1,SUBTITLES=\"subs\",CLOSED-CAPTIONS=\"cc\"";
        assert_eq!(
            variant.replace(VARIANT_SUBTITLES, &variant_group(0)),
            "#EXT-X-STREAM-INF:BANDWIDTH=1,SUBTITLES=\"subs-b1\",CLOSED-CAPTIONS=\"cc\""
        );
    }

    #[test]
    fn every_variant_is_found() {
        let text = "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\n\nb/mono.m3u8\n";
        assert_eq!(
            split_variants(text),
            Some((
                vec!["#EXTM3U", "#EXT-X-INDEPENDENT-SEGMENTS"],
                vec![
                    ("#EXT-X-STREAM-INF:BANDWIDTH=1", "a.m3u8"),
                    ("#EXT-X-STREAM-INF:BANDWIDTH=2", "b/mono.m3u8")
                ]
            ))
        );
        assert_eq!(split_variants("#EXTM3U\n"), None);
    }
}
