//! An MC pair on a real 3-member etcd cluster (MTG-1, MTG-2): two `brdyun mc`
//! processes that are one MC, and nodes that sync with whichever answers.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::cluster::{self, McConfig, NodeConfig, ADMIN};
use common::etcd::EtcdCluster;
use common::{http_request, open_meeting, wait_for, NodeProcess};
use serde_json::{json, Value};

/// MC `name` of the pair, its store on `etcd`, with `sections` after `[defaults]`.
fn start_mc(dir: &Path, name: &str, etcd: &EtcdCluster, sections: &str) -> NodeProcess {
    let config = McConfig {
        name: Some(name.to_owned()),
        rtmp: false,
        lines: format!("etcd = {}\n", etcd.toml_urls()),
        sections: sections.to_owned(),
        ..McConfig::default()
    };
    cluster::start_mc(dir, name, &config)
}

/// Node `name` syncing with whichever of `mcs` answers.
fn start_node(dir: &Path, name: &str, mcs: &[String]) -> NodeProcess {
    NodeConfig {
        mc_urls: mcs.to_vec(),
        timeout: Some("0.5".to_owned()),
        ..NodeConfig::new(name)
    }
    .start(dir)
}

fn api(mc: SocketAddr, method: &str, path: &str, body: Value) -> (u16, Value) {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    http_request(mc, method, path, &[ADMIN], &body)
}

/// Waits until a fresh viewer opening `meeting` gets `code` (0: it plays); returns how
/// long that took.
fn wait_code(node: SocketAddr, meeting: &str, code: u64, limit: Duration) -> Duration {
    let start = Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = open_meeting(node, meeting, &format!("viewer-{attempt}"));
        if last.1 == code && (code != 0 || last.0 == 200) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "{meeting}: wanted {code} within {limit:?}, last answer {last:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a change until the MC accepts it (etcd electing a leader answers 102005
/// meanwhile); returns how long that took.
fn change_until_accepted(mc: SocketAddr, path: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let (status, body) = api(mc, "POST", path, Value::Null);
        if status == 200 {
            return start.elapsed();
        }
        assert_eq!(
            body["code"], 102005,
            "a refused change names the store: {body}"
        );
        assert!(
            start.elapsed() < limit,
            "{path} still refused after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

const PRESET: &str = "[[meeting]]\nid = \"pair\"\nstart = true\ninputs = [\"builtin://meeting\"]\n";

#[test]
fn two_mcs_on_etcd_are_one_mc_for_hosts_and_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut etcd = EtcdCluster::start(&dir.path().join("etcd"), 3);
    let mut mc1 = start_mc(dir.path(), "mc1", &etcd, PRESET);
    let mc2 = start_mc(dir.path(), "mc2", &etcd, PRESET);
    let urls = vec![
        format!("http://{}", mc1.http),
        format!("http://{}", mc2.http),
    ];
    let node = start_node(dir.path(), "node-a", &urls);

    // Creates racing on both MCs: exactly one wins, every other gets 102004.
    let racers: Vec<_> = (0..10)
        .map(|i| {
            let mc = if i % 2 == 0 { mc1.http } else { mc2.http };
            std::thread::spawn(move || api(mc, "POST", "/api/meetings", json!({"id": "race"})))
        })
        .collect();
    let answers: Vec<(u16, Value)> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won = answers.iter().filter(|(s, _)| *s == 201).count();
    assert_eq!(won, 1, "{answers:?}");
    for (status, body) in answers.iter().filter(|(s, _)| *s != 201) {
        assert_eq!((*status, body["code"].as_u64()), (409, Some(102_004)));
    }
    // Both MCs show the winner's meeting, secrets included.
    let winner = &answers.iter().find(|(s, _)| *s == 201).unwrap().1;
    for mc in [mc1.http, mc2.http] {
        let (_, seen) = wait_for(
            "the created meeting on both MCs",
            Duration::from_secs(5),
            || {
                let (status, body) = api(mc, "GET", "/api/meetings/race", Value::Null);
                (status == 200).then_some((status, body))
            },
        );
        assert_eq!(seen["host_token"], winner["host_token"]);
    }

    // The preset plays on the node; a lock on the standby MC reaches it within a poll.
    wait_code(node.http, "pair", 0, Duration::from_secs(30));
    let (status, _) = api(mc2.http, "POST", "/api/meetings/pair/lock", Value::Null);
    assert_eq!(status, 200);
    let took = wait_code(node.http, "pair", 103_011, Duration::from_secs(5));
    eprintln!("lock on the standby MC enforced by the node after {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");

    // The etcd leader dies: the meeting keeps playing for viewers already in, and
    // changes resume after the election.
    let leader = etcd.wait_for_leader(Duration::from_secs(10));
    etcd.kill(leader);
    let (status, _) = http_request(node.http, "GET", "/pair/index.m3u8", &[], "");
    assert!(
        status == 200 || status == 403,
        "the node still answers: {status}"
    );
    let took = change_until_accepted(
        mc1.http,
        "/api/meetings/pair/unlock",
        Duration::from_secs(15),
    );
    eprintln!("first change accepted {took:?} after the etcd leader was killed");
    wait_code(node.http, "pair", 0, Duration::from_secs(5));

    // Viewer reports are shared: the standby counts the viewers the primary's node
    // reported, so a limit set there refuses a viewer on a node that syncs with the
    // standby and has no viewer of its own.
    let viewers_on = |mc: SocketAddr| {
        let (_, view) = http_request(mc, "GET", "/api/meetings/pair", &[], "");
        view["viewers"].as_u64().unwrap_or(0)
    };
    let counted = wait_for(
        "node-a's viewers on the primary",
        Duration::from_secs(5),
        || Some(viewers_on(mc1.http)).filter(|&n| n > 0),
    );
    wait_for(
        "node-a's viewers on the standby",
        Duration::from_secs(5),
        || (viewers_on(mc2.http) >= counted).then_some(()),
    );
    let (status, _) = http_request(
        mc2.http,
        "PUT",
        "/api/meetings/pair/viewer-limit",
        &[ADMIN],
        &json!({"viewer_limit": counted}).to_string(),
    );
    assert_eq!(status, 200);
    let reversed = vec![urls[1].clone(), urls[0].clone()];
    let other = start_node(dir.path(), "node-b", &reversed);
    wait_code(other.http, "pair", 103_006, Duration::from_secs(30));
    let (status, _) = http_request(
        mc1.http,
        "PUT",
        "/api/meetings/pair/viewer-limit",
        &[ADMIN],
        &json!({"viewer_limit": null}).to_string(),
    );
    assert_eq!(status, 200);
    drop(other);

    // The primary MC dies: the node syncs with the standby, which enforces changes.
    mc1.kill9();
    let (status, _) = api(mc2.http, "POST", "/api/meetings/pair/lock", Value::Null);
    assert_eq!(status, 200);
    let took = wait_code(node.http, "pair", 103_011, Duration::from_secs(10));
    eprintln!("with the primary MC dead, a lock on the standby enforced after {took:?}");

    // A node started while the primary MC is down learns every meeting from the standby.
    let (status, _) = api(mc2.http, "POST", "/api/meetings/pair/unlock", Value::Null);
    assert_eq!(status, 200);
    let late = start_node(dir.path(), "node-late", &urls);
    wait_code(late.http, "pair", 0, Duration::from_secs(30));
}

#[test]
fn with_etcd_away_an_mc_keeps_its_view_refuses_changes_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let mut etcd = EtcdCluster::start(&dir.path().join("etcd"), 1);
    let mut first = start_mc(dir.path(), "mc1", &etcd, "");
    let (status, created) = api(first.http, "POST", "/api/meetings", json!({"id": "kept"}));
    assert_eq!(status, 201, "{created}");

    etcd.kill(0);
    let (status, body) = api(first.http, "POST", "/api/meetings/kept/start", Value::Null);
    assert_eq!(
        (status, body["code"].as_u64()),
        (503, Some(102_005)),
        "{body}"
    );
    let (status, body) = api(
        first.http,
        "POST",
        "/api/meetings",
        json!({"id": "refused"}),
    );
    assert_eq!(
        (status, body["code"].as_u64()),
        (503, Some(102_005)),
        "{body}"
    );
    // The last view is still served.
    let (status, view) = api(first.http, "GET", "/api/meetings/kept", Value::Null);
    assert_eq!((status, view["state"].as_str()), (200, Some("created")));

    // The MC restarts while etcd is away: it serves the view it kept.
    first.kill9();
    let mc = start_mc(dir.path(), "mc1", &etcd, "");
    let (status, view) = api(mc.http, "GET", "/api/meetings/kept", Value::Null);
    assert_eq!((status, view["state"].as_str()), (200, Some("created")));

    etcd.restart(0);
    etcd.wait_for_leader(Duration::from_secs(20));
    let took = change_until_accepted(mc.http, "/api/meetings/kept/start", Duration::from_secs(20));
    eprintln!("changes accepted {took:?} after etcd returned");
    let (_, view) = api(mc.http, "GET", "/api/meetings/kept", Value::Null);
    assert_eq!(view["state"], "live");
    let (_, gone) = api(mc.http, "GET", "/api/meetings/refused", Value::Null);
    assert_eq!(gone["code"], 104005, "a refused create left nothing behind");
}
