//! OTT groups across real node processes on loopback (OTT-GRP-*, OTT-PROT-1/2,
//! OTT-OPS-2): an origin node feeds one meeting to nodes a, b and c, which pull it on the
//! same timeline and form one OTT group in one mesh domain.
//!
//! - kill -9 of a node: the others stop offering it within seconds; restarted, it
//!   rejoins and is offered again;
//! - a paused input: new viewers of that node are redirected with a pass that the
//!   other node accepts, and the others stop offering it;
//! - a node with another domain secret never joins.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{free_udp_port, http_request, wait_for, NodeProcess};

const SECRET: &str = "process test domain secret";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) Chrome/120 Safari/537.36";

/// GET with headers: (status, head, body as text).
fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let (status, head, body) = common::http_get_with(addr, path, headers);
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

/// [`get`] as the viewer `who`, from its own loopback address (a node counts viewers,
/// and binds passes, by the address it sees).
fn get_as(
    who: &str,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let (status, head, body) = common::http_get_as(who, addr, path, headers);
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

fn origin_config(dir: &Path) -> String {
    format!(
        "[node]\nname = \"origin\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[defaults]\nsegment_duration = 1\n[[stream]]\nname = \"meeting\"\ninputs = [\"builtin://meeting\"]\n",
        dir.join("origin").display()
    )
}

struct Member {
    name: &'static str,
    gossip: u16,
}

fn member_config(
    dir: &Path,
    me: &Member,
    peers: &[u16],
    origin: SocketAddr,
    secret: &str,
) -> String {
    let seeds: Vec<String> = peers
        .iter()
        .filter(|p| **p != me.gossip)
        .map(|p| format!("\"127.0.0.1:{p}\""))
        .collect();
    format!(
        "[node]\nname = \"{name}\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{data}\"\n\
         [defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"meeting\"\ninputs = [\"http://{origin}/meeting/mpegts\"]\nott_backup = true\n\
         [ott]\ndomain_secret = \"{secret}\"\ngossip = \"127.0.0.1:{gossip}\"\nseeds = [{seeds}]\n",
        name = me.name,
        data = dir.join(me.name).display(),
        gossip = me.gossip,
        seeds = seeds.join(", "),
    )
}

fn start_member(
    dir: &Path,
    me: &Member,
    peers: &[u16],
    origin: SocketAddr,
    secret: &str,
) -> NodeProcess {
    NodeProcess::start(dir, me.name, &member_config(dir, me, peers, origin, secret))
}

/// The backup URLs in a node's master playlist for a browser.
fn offered(node: SocketAddr) -> Vec<String> {
    let (status, _, body) = get(node, "/meeting/index.m3u8", &[("User-Agent", BROWSER)]);
    if status != 200 {
        return Vec::new();
    }
    body.lines()
        .filter(|l| l.starts_with("http://"))
        .map(str::to_owned)
        .collect()
}

fn offers(node: SocketAddr, other: SocketAddr) -> bool {
    let prefix = format!("http://{other}/");
    offered(node).iter().any(|u| u.starts_with(&prefix))
}

struct Cluster {
    _dir: tempfile::TempDir,
    origin: NodeProcess,
    nodes: Vec<NodeProcess>,
    members: Vec<Member>,
}

impl Cluster {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let origin = NodeProcess::start(dir.path(), "origin", &origin_config(dir.path()));
        let members: Vec<Member> = ["a", "b", "c"]
            .into_iter()
            .map(|name| Member {
                name,
                gossip: free_udp_port(),
            })
            .collect();
        let ports: Vec<u16> = members.iter().map(|m| m.gossip).collect();
        let nodes: Vec<NodeProcess> = members
            .iter()
            .map(|m| start_member(dir.path(), m, &ports, origin.http, SECRET))
            .collect();
        let cluster = Self {
            _dir: dir,
            origin,
            nodes,
            members,
        };
        // Every node offers the two others once the group has formed.
        for (i, node) in cluster.nodes.iter().enumerate() {
            wait_for(
                &format!("node {} to offer two backups", cluster.members[i].name),
                Duration::from_secs(40),
                || (offered(node.http).len() == 2).then_some(()),
            );
        }
        cluster
    }

    fn ports(&self) -> Vec<u16> {
        self.members.iter().map(|m| m.gossip).collect()
    }
}

#[test]
fn a_killed_node_leaves_the_master_playlists_and_rejoins_on_restart() {
    let mut cluster = Cluster::start();
    let a_http = cluster.nodes[0].http;
    let (b, c) = (cluster.nodes[1].http, cluster.nodes[2].http);
    assert!(offers(b, a_http) && offers(c, a_http));
    cluster.nodes[0].kill9();
    let killed = Instant::now();
    wait_for(
        "b and c to stop offering a",
        Duration::from_secs(15),
        || (!offers(b, a_http) && !offers(c, a_http)).then_some(()),
    );
    let dropped_after = killed.elapsed();
    println!("a dropped from b's and c's master playlists {dropped_after:?} after kill -9");
    assert!(dropped_after < Duration::from_secs(10), "{dropped_after:?}");
    // b and c still back each other up.
    assert!(offers(b, c) && offers(c, b));
    // a restarts with the same config (new generation, new HTTP port): it rejoins.
    let ports = cluster.ports();
    let restarted = start_member(
        cluster._dir.path(),
        &cluster.members[0],
        &ports,
        cluster.origin.http,
        SECRET,
    );
    let back = Instant::now();
    wait_for(
        "b to offer the restarted a",
        Duration::from_secs(30),
        || offers(b, restarted.http).then_some(()),
    );
    println!("restarted a offered again {:?} after start", back.elapsed());
    cluster.nodes[0] = restarted;
}

#[test]
fn a_paused_input_redirects_new_viewers_with_a_pass_the_other_node_accepts() {
    let cluster = Cluster::start();
    let (a, b) = (cluster.nodes[0].http, cluster.nodes[1].http);
    let (status, _) = http_request(a, "POST", "/api/streams/meeting/pause", &[], "");
    assert_eq!(status, 200);
    // A new viewer of a (no User-Agent: a non-switching player) is sent elsewhere.
    let (status, head, _) = get(a, "/meeting/index.m3u8", &[]);
    assert_eq!(status, 302, "{head}");
    let location = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .expect("location")
        .to_owned();
    assert!(location.contains("/meeting/index.m3u8?pass="), "{location}");
    let target: SocketAddr = location
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_ne!(target, a);
    // The pass signed on a is accepted on the target (the view key is agreed), and a
    // forged one is refused there.
    let path = &location[location.find("/meeting/").unwrap()..];
    let (status, _, body) = get(target, path, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("#EXTM3U"));
    let (status, _, body) = get(target, "/meeting/index.m3u8?pass=AQAAAAA", &[]);
    assert_eq!(status, 403, "{body}");
    // The others stop offering a: its member announces no live window while paused.
    wait_for(
        "b to stop offering the paused a",
        Duration::from_secs(15),
        || (!offers(b, a)).then_some(()),
    );
    // Resumed: a serves its own viewers again and is offered again.
    let (status, _) = http_request(a, "POST", "/api/streams/meeting/resume", &[], "");
    assert_eq!(status, 200);
    wait_for("a to serve again", Duration::from_secs(20), || {
        (get(a, "/meeting/index.m3u8", &[]).0 == 200).then_some(())
    });
    wait_for("b to offer a again", Duration::from_secs(20), || {
        offers(b, a).then_some(())
    });
}

#[test]
fn a_node_with_another_domain_secret_never_joins() {
    let cluster = Cluster::start();
    let a = cluster.nodes[0].http;
    let stranger = Member {
        name: "stranger",
        gossip: free_udp_port(),
    };
    let mut seeds = cluster.ports();
    seeds.push(stranger.gossip);
    let other = start_member(
        cluster._dir.path(),
        &stranger,
        &seeds,
        cluster.origin.http,
        "another domain's secret, 32 bytes",
    );
    // Every round the stranger gossips to a with its own secret: once a has refused
    // a good many of its datagrams, it has had as many chances to join.
    wait_for(
        "a to refuse the stranger's gossip",
        Duration::from_secs(30),
        || {
            let (_, report) = http_request(a, "GET", "/api/ott", &[], "");
            (report["gossip"]["rejected"].as_u64() >= Some(12)).then_some(())
        },
    );
    let (_, report) = http_request(a, "GET", "/api/ott", &[], "");
    let names: Vec<String> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("stranger")),
        "{names:?}"
    );
    assert!(!offers(a, other.http));
    let (_, theirs) = http_request(other.http, "GET", "/api/ott", &[], "");
    assert_eq!(theirs["nodes"].as_array().unwrap().len(), 1, "{theirs}");
    assert_eq!(report["view_key"]["in_use"], true, "{report}");
    assert_eq!(offered(other.http), Vec::<String>::new());
}

/// A webhook receiver on loopback: every POST body it gets, in order.
fn webhook_receiver() -> (SocketAddr, std::sync::mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            // Read the head, then Content-Length bytes of body.
            let body = loop {
                let Ok(n) = stream.read(&mut buf) else {
                    break None;
                };
                if n == 0 {
                    break None;
                }
                raw.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&raw).into_owned();
                let Some((head, body)) = text.split_once("\r\n\r\n") else {
                    continue;
                };
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0usize);
                if body.len() >= length {
                    break Some(body[..length].to_owned());
                }
            };
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            if let Some(body) = body {
                if tx.send(body).is_err() {
                    return;
                }
            }
        }
    });
    (addr, rx)
}

#[test]
fn losing_protection_raises_alert_70_to_the_webhook_and_recovery_clears_it() {
    // OTT-OPS-3: two members; kill one, the other's group is unprotected: alert 70
    // reaches Alertmanager's API shape after its 10 s raise delay.
    let dir = tempfile::tempdir().unwrap();
    let origin = NodeProcess::start(dir.path(), "origin", &origin_config(dir.path()));
    let (hook, bodies) = webhook_receiver();
    let members = [
        Member {
            name: "a",
            gossip: free_udp_port(),
        },
        Member {
            name: "b",
            gossip: free_udp_port(),
        },
    ];
    let ports: Vec<u16> = members.iter().map(|m| m.gossip).collect();
    let config_a = member_config(dir.path(), &members[0], &ports, origin.http, SECRET)
        + &format!("alert_webhook = \"http://{hook}/api/v2/alerts\"\n");
    let a = NodeProcess::start(dir.path(), "a", &config_a);
    let mut b = start_member(dir.path(), &members[1], &ports, origin.http, SECRET);
    wait_for("a to offer b", Duration::from_secs(40), || {
        offers(a.http, b.http).then_some(())
    });
    let killed = Instant::now();
    b.kill9();
    let raised = loop {
        let body = bodies
            .recv_timeout(Duration::from_secs(40))
            .expect("an alert within 40 s of the kill");
        let alerts: serde_json::Value = serde_json::from_str(&body).expect("JSON array");
        let found = alerts.as_array().unwrap().iter().find(|alert| {
            alert["labels"]["alertname"] == "reserve-ott-unprotected"
                && alert["labels"]["group"] == "meeting"
                && alert.get("endsAt").is_none()
        });
        if let Some(alert) = found {
            break alert.clone();
        }
    };
    println!("alert 70 delivered {:?} after kill -9", killed.elapsed());
    assert_eq!(raised["labels"]["code"], "70");
    assert_eq!(raised["labels"]["severity"], "critical");
    assert!(raised["startsAt"].as_str().unwrap().ends_with('Z'));
    let (_, report) = http_request(a.http, "GET", "/api/ott", &[], "");
    assert!(
        report["alerts"]["active"]
            .as_array()
            .unwrap()
            .iter()
            .any(|alert| alert["code"] == 70),
        "{report}"
    );
    let (_, _, metrics) = get(a.http, "/metrics", &[]);
    assert!(
        metrics.contains("brdyun_ott_alert_active{code=\"70\",alertname=\"reserve-ott-unprotected\",group=\"meeting\""),
        "{metrics}"
    );
    // b comes back: after 30 s protected the alert is resolved (endsAt).
    let _b = start_member(dir.path(), &members[1], &ports, origin.http, SECRET);
    let back = Instant::now();
    loop {
        let body = bodies
            .recv_timeout(Duration::from_secs(60))
            .expect("the resolved alert within 60 s of the restart");
        let alerts: serde_json::Value = serde_json::from_str(&body).expect("JSON array");
        let resolved = alerts.as_array().unwrap().iter().any(|alert| {
            alert["labels"]["alertname"] == "reserve-ott-unprotected"
                && alert.get("endsAt").is_some()
        });
        if resolved {
            break;
        }
    }
    println!("alert 70 resolved {:?} after the restart", back.elapsed());
}

/// The alerts of one webhook body with `alertname`, raised (no `endsAt`).
fn raised(body: &str, alertname: &str) -> Vec<serde_json::Value> {
    let alerts: serde_json::Value = serde_json::from_str(body).expect("JSON array");
    alerts
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["labels"]["alertname"] == alertname && a.get("endsAt").is_none())
        .cloned()
        .collect()
}

#[test]
fn full_backups_refuse_the_player_which_tries_the_next_and_alerts_79_and_78_reach_the_webhook() {
    // OTT-OVL-1..3 end to end: b and c take one viewer from another node each
    // (`backup_session_limit = 1`). A player that holds a's master with both as backups
    // is refused by the first (503, 105013) and goes to the second; once both are full
    // and it keeps knocking for more than 30 s, each raises alert 79 at the webhook. A
    // member whose input stays paused is alert 78 at the other nodes after 30 s.
    let dir = tempfile::tempdir().unwrap();
    let origin = NodeProcess::start(dir.path(), "origin", &origin_config(dir.path()));
    let (hook, bodies) = webhook_receiver();
    let members: Vec<Member> = ["a", "b", "c"]
        .into_iter()
        .map(|name| Member {
            name,
            gossip: free_udp_port(),
        })
        .collect();
    let ports: Vec<u16> = members.iter().map(|m| m.gossip).collect();
    let hooked = |m: &Member, extra: &str| {
        member_config(dir.path(), m, &ports, origin.http, SECRET)
            + &format!("alert_webhook = \"http://{hook}/api/v2/alerts\"\n{extra}")
    };
    let a = NodeProcess::start(dir.path(), "a", &hooked(&members[0], ""));
    let b = NodeProcess::start(
        dir.path(),
        "b",
        &hooked(&members[1], "backup_session_limit = 1\n"),
    );
    let c = NodeProcess::start(
        dir.path(),
        "c",
        &hooked(&members[2], "backup_session_limit = 1\n"),
    );
    wait_for("a to offer b and c", Duration::from_secs(40), || {
        (offers(a.http, b.http) && offers(a.http, c.http)).then_some(())
    });
    // Each viewer's master on a: b and c with passes bound to that viewer's address.
    let path_of = |url: &str| {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        (host.parse::<SocketAddr>().unwrap(), format!("/{path}"))
    };
    let backups_of = |who: &str| -> Vec<(SocketAddr, String)> {
        let (_, _, master) = get_as(
            who,
            a.http,
            "/meeting/index.m3u8",
            &[("User-Agent", BROWSER)],
        );
        let backups: Vec<(SocketAddr, String)> = master
            .lines()
            .filter(|l| l.starts_with("http://"))
            .map(path_of)
            .collect();
        assert_eq!(backups.len(), 2, "{master}");
        backups
    };
    let player = backups_of("player");
    let (first, second) = (player[0].0, player[1].0);
    let urls: std::collections::HashMap<&str, Vec<(SocketAddr, String)>> =
        ["player", "filler-1", "player-2"]
            .into_iter()
            .map(|who| (who, backups_of(who)))
            .collect();
    let knock = |node: SocketAddr, who: &str| {
        let path = &urls[who]
            .iter()
            .find(|(n, _)| *n == node)
            .expect("a backup")
            .1;
        get_as(who, node, path, &[("User-Agent", BROWSER)])
    };
    // Another viewer fills the first backup's one place.
    assert_eq!(knock(first, "filler-1").0, 200);
    let (status, _, body) = knock(first, "player");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("105013"), "{body}");
    // The player goes to the second, which takes it.
    assert_eq!(knock(second, "player").0, 200);

    // Now the second is full too (the player's own place, kept while it reloads), and a
    // second player knocks at both, as a player whose node died would, every 2 s.
    let started = Instant::now();
    let mut seen_79: std::collections::BTreeSet<String> = Default::default();
    let mut seen_78 = false;
    while (seen_79.len() < 2 || !seen_78) && started.elapsed() < Duration::from_secs(100) {
        let _ = knock(first, "filler-1");
        let _ = knock(second, "player");
        for node in [first, second] {
            let (status, _, body) = knock(node, "player-2");
            assert_eq!(status, 503, "{body}");
        }
        if started.elapsed() > Duration::from_secs(2) && started.elapsed() < Duration::from_secs(4)
        {
            // And b's input stops: a and c see a member problem.
            let (status, _) = http_request(b.http, "POST", "/api/streams/meeting/pause", &[], "");
            assert_eq!(status, 200);
        }
        while let Ok(body) = bodies.recv_timeout(Duration::from_millis(2_000)) {
            for alert in raised(&body, "reserve-ott-overload") {
                assert_eq!(alert["labels"]["code"], "79");
                seen_79.insert(alert["labels"]["instance"].as_str().unwrap().to_owned());
            }
            seen_78 |= raised(&body, "reserve-ott-problem").iter().any(|alert| {
                alert["labels"]["code"] == "78"
                    && alert["labels"]["node"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("b@"))
            });
        }
    }
    println!(
        "overload: alert 79 from {seen_79:?} and alert 78 about b's paused member after {:?}",
        started.elapsed()
    );
    assert_eq!(
        seen_79.len(),
        2,
        "alert 79 from both full backups: {seen_79:?}"
    );
    assert!(seen_78, "alert 78 about b's paused input");
    assert!(
        started.elapsed() >= Duration::from_secs(30),
        "79 fires after more than 30 s of refusals"
    );
}
