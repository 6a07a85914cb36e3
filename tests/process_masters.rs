//! Every manifest a switching player opens on a node of an OTT group is protected
//! (OTT-PROT-1, OTT-GRP-2, OTT-GRP-3): the HLS master over TS, the fMP4 HLS master, the
//! LL-HLS master and the live MPD each name the other node as a backup with a pass, a
//! pathway per node and the mesh's content steering. An origin node feeds one meeting
//! to nodes a and b, which pull it on the same timeline and form one group.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::{free_udp_port, http_get_with, wait_for, NodeProcess};

const SECRET: &str = "process test domain secret for the masters";
/// A browser player (hls.js, dash.js): one that switches, so it gets backups.
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) Chrome/120 Safari/537.36";

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let (status, _, body) = http_get_with(addr, path, &[("User-Agent", BROWSER)]);
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn origin_config(dir: &Path) -> String {
    format!(
        "[node]\nname = \"origin\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[defaults]\nsegment_duration = 1\n[[stream]]\nname = \"meeting\"\ninputs = [\"builtin://meeting\"]\n",
        dir.join("origin").display()
    )
}

fn member_config(dir: &Path, name: &str, gossip: u16, peer: u16, origin: SocketAddr) -> String {
    format!(
        "[node]\nname = \"{name}\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{data}\"\n\
         [defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"meeting\"\ninputs = [\"http://{origin}/meeting/mpegts\"]\nott_backup = true\n\
         [ott]\ndomain_secret = \"{SECRET}\"\ngossip = \"127.0.0.1:{gossip}\"\nseeds = [\"127.0.0.1:{peer}\"]\n",
        data = dir.join(name).display(),
    )
}

/// The origin and the two members of the group, each killed when dropped.
struct Group {
    _origin: NodeProcess,
    a: NodeProcess,
    b: NodeProcess,
}

/// Starts the origin and nodes a and b, and waits until the group has formed (a's HLS
/// master offers b).
fn start_group(dir: &Path) -> Group {
    let origin = NodeProcess::start(dir, "origin", &origin_config(dir));
    let (ga, gb) = (free_udp_port(), free_udp_port());
    let a = NodeProcess::start(dir, "a", &member_config(dir, "a", ga, gb, origin.http));
    let b = NodeProcess::start(dir, "b", &member_config(dir, "b", gb, ga, origin.http));
    let offer = format!("http://{}/meeting/", b.http);
    wait_for("a to offer b", Duration::from_secs(40), || {
        let (status, body) = get(a.http, "/meeting/index.m3u8");
        (status == 200 && body.contains(&offer)).then_some(())
    });
    Group {
        _origin: origin,
        a,
        b,
    }
}

/// The manifests a player opens, with the media playlist each names.
const MASTERS: [(&str, &str); 3] = [
    ("index.m3u8", "mono.m3u8"),
    ("fmp4-index.m3u8", "fmp4.m3u8"),
    ("ll-index.m3u8", "ll.m3u8"),
];

/// Checks one master playlist of `a`: its own variant, then the same variant at `b`
/// with a pass, each on its own pathway, and content steering at `b`. Returns the
/// backup's URI.
fn check_master(master: &str, playlist: &str, b: SocketAddr) -> String {
    let uris: Vec<&str> = master.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(uris.len(), 2, "own variant and one backup:\n{master}");
    assert_eq!(uris[0], playlist, "{master}");
    let backup = format!("http://{b}/meeting/{playlist}?pass=");
    assert!(uris[1].starts_with(&backup), "{backup}…:\n{master}");
    let pathways: Vec<&str> = master
        .lines()
        .filter(|l| l.starts_with("#EXT-X-STREAM-INF:"))
        .filter_map(|l| l.split_once(",PATHWAY-ID=").map(|(_, p)| p))
        .collect();
    assert_eq!(pathways.len(), 2, "a pathway per variant:\n{master}");
    assert_ne!(pathways[0], pathways[1], "{master}");
    let steering = format!("#EXT-X-CONTENT-STEERING:SERVER-URI=\"http://{b}/steering/");
    assert!(
        master.lines().any(|l| l.starts_with(&steering)),
        "{steering}…:\n{master}"
    );
    uris[1].to_owned()
}

#[test]
fn every_master_and_the_mpd_of_a_group_member_list_backups_pathways_and_steering() {
    let dir = tempfile::tempdir().unwrap();
    let Group { _origin, a, b } = start_group(dir.path());
    let offer = format!("http://{}/meeting/", b.http);

    for (master, playlist) in MASTERS {
        let body = wait_for(
            &format!("a's {master} with its backup"),
            Duration::from_secs(20),
            || {
                let (status, body) = get(a.http, &format!("/meeting/{master}"));
                (status == 200 && body.contains(&offer)).then_some(body)
            },
        );
        let backup = check_master(&body, playlist, b.http);
        // The backup serves that media playlist to this viewer with its pass.
        let path = backup
            .strip_prefix(&format!("http://{}", b.http))
            .expect("a path on b");
        let (status, text) = get(b.http, path);
        assert_eq!(status, 200, "{backup}: {text}");
        assert!(text.contains("#EXTINF:"), "{backup}: {text}");
    }

    // The MPD: a BaseURL and a Location per node (the backup's with a pass) and the
    // mesh's steering.
    let (status, mpd) = get(a.http, "/meeting/index.mpd");
    assert_eq!(status, 200, "{mpd}");
    assert_eq!(mpd.matches("<BaseURL serviceLocation=").count(), 2, "{mpd}");
    assert!(
        mpd.contains(&format!("http://{}/meeting/", a.http))
            && mpd.contains(&format!("http://{}/meeting/", b.http)),
        "{mpd}"
    );
    assert!(
        mpd.contains(&format!(">http://{}/meeting/index.mpd?pass=", b.http)),
        "the backup's Location carries a pass: {mpd}"
    );
    assert!(
        mpd.contains("<ContentSteering") && mpd.contains(&format!("http://{}/steering/", b.http)),
        "{mpd}"
    );

    // A player that does not switch (no browser User-Agent) gets the plain manifests.
    for (master, _) in MASTERS {
        let (status, _, body) = http_get_with(a.http, &format!("/meeting/{master}"), &[]);
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{master}");
        assert!(
            !body.contains(&offer) && !body.contains("PATHWAY-ID"),
            "{master}: {body}"
        );
    }
}

/// The node a `/watch/meeting.m3u8` at `entry` sends a viewer to: its `Location`, made
/// absolute (the node itself answers with a path).
fn entry_target(entry: SocketAddr) -> Option<String> {
    let (status, head, _) = common::http_get(entry, "/watch/meeting.m3u8");
    if status != 302 {
        return None;
    }
    let location = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    })?;
    Some(if location.starts_with('/') {
        format!("http://{entry}{location}")
    } else {
        location
    })
}

/// A player that does not switch (ffmpeg here, as VLC, mpv or a site playing one media
/// playlist) is given the way in, `/watch/{meeting}.m3u8`: when the node it was sent to
/// dies, reopening the way in at a node that lives plays again (OTT-GRP-2, OTT-PROT-1).
#[test]
fn a_reopening_player_given_the_way_in_plays_again_after_its_node_dies() {
    let dir = tempfile::tempdir().unwrap();
    let Group {
        _origin,
        mut a,
        mut b,
    } = start_group(dir.path());

    // The way in at a sends ffmpeg to a node that plays.
    let way_in = |node: SocketAddr| format!("http://{node}/watch/meeting.m3u8");
    let target = wait_for("a's way in", Duration::from_secs(10), || {
        entry_target(a.http)
    });
    let (status, errors) = common::ffmpeg_decode(&way_in(a.http), 3, Duration::from_secs(30));
    assert!(status.success(), "ffmpeg played the way in: {errors:?}");

    // That node dies; the player reopens the way in at the node that lives.
    let b_serves = target.contains(&b.http.to_string());
    let (dead, live) = if b_serves {
        b.kill9();
        (b.http, a.http)
    } else {
        a.kill9();
        (a.http, b.http)
    };
    let to_live = wait_for(
        "the way in to send viewers to the node that lives",
        Duration::from_secs(20),
        || entry_target(live).filter(|t| !t.contains(&dead.to_string())),
    );
    assert!(to_live.contains(&live.to_string()), "{to_live}");
    let (status, errors) = common::ffmpeg_decode(&way_in(live), 3, Duration::from_secs(30));
    assert!(
        status.success() && errors.is_empty(),
        "ffmpeg played again after its node died: {errors:?}"
    );
}
