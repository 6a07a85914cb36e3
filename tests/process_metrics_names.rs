//! The packaged dashboard and alert rules against real processes (OTT-OPS-3): every
//! `brdyun_…` metric name that `packaging/grafana/brdyun.json` and
//! `packaging/prometheus/brdyun.rules.yml` mention is exported by a running node or MC.
//! The MC encodes a meeting's ladder with ffmpeg and takes an SRT publisher on its backup
//! slot; the node follows it, records its own stream (one input live, one that cannot
//! connect) and copies its archive to a recordings store, is alone in its OTT group (so alert 70 fires), has a viewer of the meeting
//! and refuses one of a meeting it lacks, so the series that exist only while something
//! happens (input faults, alerts, viewers, refusals, an SRT link) are there too. A
//! rename on either side fails this test instead of leaving a panel empty or an alert
//! that never fires.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::cluster::{self, Cluster, NodeConfig};
use common::{http_get, open_meeting, wait_for};

/// The files whose metric names are checked, from the repository root.
const PACKAGED: [&str; 2] = [
    "packaging/grafana/brdyun.json",
    "packaging/prometheus/brdyun.rules.yml",
];

/// Every `brdyun_` name in `text` (expressions, template queries and descriptions alike:
/// a name a description points an operator to must exist too).
fn names_in(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    let mut at = 0;
    while let Some(found) = text[at..].find("brdyun_") {
        let start = at + found;
        let preceded_by_word = start > 0 && is_name_byte(bytes[start - 1]);
        let end = start
            + text[start..]
                .bytes()
                .take_while(|&b| is_name_byte(b))
                .count();
        if !preceded_by_word {
            names.insert(text[start..end].to_owned());
        }
        at = end;
    }
    names
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The names of the samples in Prometheus text (a histogram's `_bucket`, `_sum` and
/// `_count` lines are samples of their own, as PromQL names them).
fn exported(metrics: &str) -> BTreeSet<String> {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| line.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect()
}

fn scrape(addr: SocketAddr) -> String {
    let (status, _, body) = http_get(addr, "/metrics");
    assert_eq!(status, 200, "/metrics of {addr}");
    String::from_utf8(body).expect("metrics are UTF-8")
}

/// An MC taking SRT on `srt`, with a ladder and the meeting `townhall` live.
fn mc(srt: u16) -> Cluster {
    Cluster::mc()
        .no_rtmp()
        .mc_lines(&format!(
            r#"srt = "127.0.0.1:{srt}"
[mc.ladder]
preset = "ultrafast"
rungs = [{{ name = "source" }}, {{ name = "96p", height = 96, video_kbps = 100 }}]
"#
        ))
        .sections(
            r#"[[meeting]]
id = "townhall"
start = true
inputs = ["builtin://meeting"]
"#,
        )
        .start()
}

/// A node of the MC that records, takes RTMP, backs up a stream of its own over OTT
/// and has no `[mc.stream]`.
fn node_config(cluster: &Cluster) -> NodeConfig {
    let mut node = cluster.node_config("node-a");
    node.lines = r#"rtmp = "127.0.0.1:0"
[defaults]
segment_duration = 1
[defaults.dvr]
enabled = true
depth = "1h"
[[stream]]
name = "tv"
inputs = ["builtin://meeting", "http://127.0.0.1:1/nothing-listens-here"]
ott_backup = true
[ott]
domain_secret = "a-domain-secret-for-these-tests"
gossip = "127.0.0.1:0"
"#
    .to_owned();
    // Its archive goes to a recordings store (a directory), so the uploader's metrics
    // are there.
    let store = cluster.path().join("recordings-store");
    node.lines.push_str(&format!(
        "[recordings]\nstore = \"file://{}\"\n",
        store.display()
    ));
    node.stream = None;
    node
}

#[test]
fn every_metric_the_dashboard_and_the_rules_query_is_exported() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wanted = BTreeSet::new();
    for file in PACKAGED {
        let text = std::fs::read_to_string(root.join(file)).expect(file);
        let names = names_in(&text);
        assert!(names.len() >= 3, "{file} names only {names:?}");
        wanted.extend(names);
    }
    // The panels of the brief and the alerts: a file that lost them fails here, not in
    // front of an operator.
    for name in [
        "brdyun_meeting_viewers",
        "brdyun_shed_requests_total",
        "brdyun_shed_overload_level",
        "brdyun_input_fault_active",
        "brdyun_input_frames_total",
        "brdyun_ott_alert_active",
        "brdyun_dvr_archive_bytes",
        "brdyun_ladder_encoder_running",
        "brdyun_http_connections_open",
        "brdyun_srt_link_receive_bits_per_second",
        "brdyun_srt_refused_total",
    ] {
        assert!(wanted.contains(name), "no {name} in {PACKAGED:?}");
    }

    let srt = common::free_udp_port();
    let cluster = mc(srt);
    let mc = &cluster.mc;
    // An SRT publisher on the meeting's backup slot: its link's series.
    let key = cluster::stream_key(mc.http, "townhall");
    let _srt_publisher = common::ChildGuard::spawn(
        "ffmpeg srt publisher",
        &mut common::ffmpeg_source(
            120,
            "mpegts",
            &format!("srt://127.0.0.1:{srt}?streamid=townhall@backup?key={key}"),
        ),
    );
    let node = node_config(&cluster).start(cluster.path());
    // A viewer of the meeting, counted by the node.
    wait_for(
        "the node to serve the meeting",
        Duration::from_secs(30),
        || (open_meeting(node.http, "townhall", "viewer-1").0 == 200).then_some(()),
    );

    // A viewer of a meeting the MC does not have is refused with a meeting code.
    let (status, code) = open_meeting(node.http, "no-such-meeting", "viewer-2");
    assert!(status >= 400 && code > 0, "{status} {code}");

    // Alert 70 is raised after 10 s alone in the group; the encoder's rungs, the archive
    // and the faults come sooner.
    let (node_metrics, mc_metrics) = wait_for(
        "every packaged metric name in /metrics",
        Duration::from_secs(60),
        || {
            let node_metrics = scrape(node.http);
            let mc_metrics = scrape(mc.http);
            let mut have = exported(&node_metrics);
            have.extend(exported(&mc_metrics));
            wanted
                .is_subset(&have)
                .then_some((node_metrics, mc_metrics))
        },
    );

    // The series that exist only while something happens say what they should.
    assert!(
        node_metrics.contains("brdyun_meeting_viewers{meeting=\"townhall\"} 1\n"),
        "one viewer of townhall:\n{node_metrics}"
    );
    assert!(
        node_metrics.contains(
            "brdyun_input_fault_active{stream=\"tv\",input=\"1\",reason=\"input_down\"} 1\n"
        ),
        "the input that cannot connect is down:\n{node_metrics}"
    );
    assert!(
        node_metrics.contains("brdyun_ott_alert_active{code=\"70\",alertname=\"reserve-ott-unprotected\",group=\"tv\""),
        "alert 70 for the group of one:\n{node_metrics}"
    );
    assert!(
        mc_metrics.contains("brdyun_ladder_encoder_running{stream=\"townhall\"} 1\n"),
        "the MC's encoder runs:\n{mc_metrics}"
    );
}

#[test]
fn names_are_read_whole_and_only_as_names() {
    let names = names_in(
        "sum(rate(brdyun_a_total{x=\"1\"}[5m])) / brdyun_b_bucket, my_brdyun_c, brdyun_d\n",
    );
    let expected: BTreeSet<String> = ["brdyun_a_total", "brdyun_b_bucket", "brdyun_d"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, expected);
    let samples = exported(
        "# HELP brdyun_h x\n# TYPE brdyun_h histogram\nbrdyun_h_bucket{le=\"1\"} 0\nbrdyun_g 3\n",
    );
    assert_eq!(
        samples,
        ["brdyun_h_bucket", "brdyun_g"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
}
