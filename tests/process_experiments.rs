//! Continuous experiments at process level (EXP-1, EXP-2): a `brdyun node` whose config
//! has an `[[experiment]]` always in its window starts the run from the schedule at its
//! first tick, sheds the experiment group's TV requests and nobody else's, and counts
//! their KPIs; a config with a bad experiment is refused naming the field.

mod common;

use std::time::Duration;

use common::{http_request, wait_for, ChildGuard, NodeProcess};
use experiments::{Assigner, Group};
use server::shed::member_id;

/// Every hour on the hour for 60 minutes: a run is always in progress.
fn config(dir: &std::path::Path, experiment_share_bp: u32) -> String {
    format!(
        r#"
[node]
name = "exp"
http = "127.0.0.1:0"
data_dir = "{}"
admin_token = "experiments-admin-token-0001"
[[stream]]
name = "m"
inputs = ["builtin://meeting"]
[[experiment]]
id = "hourly"
priorities = {{ min = 0, max = 99 }}
control_share_bp = 1000
experiment_share_bp = {experiment_share_bp}
duration_minutes = 60
devices = ["smart_tv"]
schedule = {{ every_hours = 1, anchor = "2026-01-01T00:00Z" }}
"#,
        dir.join("data").display()
    )
}

fn member_in(group: Group) -> String {
    let assigner = Assigner::new("hourly", 1000, 1000);
    (0..10_000)
        .map(|i| format!("tv-{i}"))
        .find(|n| assigner.group(member_id(n.as_bytes()).expect("named")) == group)
        .expect("10 % of 10 000 names")
}

#[test]
fn a_configured_experiment_runs_from_its_schedule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(dir.path(), "exp", &config(dir.path(), 1000));
    let auth = [("Authorization", "Bearer experiments-admin-token-0001")];
    let run = wait_for("the scheduled run", Duration::from_secs(10), || {
        let (status, body) = http_request(node.http, "GET", "/api/experiments", &auth, "");
        assert_eq!(status, 200, "{body}");
        body["running"][0]["id"].as_str().map(str::to_string)
    });
    assert!(run.starts_with("hourly@"), "{run}");
    let start_ms: u64 = run["hourly@".len()..].parse().expect("start ms");
    assert_eq!(start_ms % 3_600_000, 0, "on the hour: {run}");

    // Wait for the stream, then the experiment group's TV requests are shed.
    wait_for("the stream", Duration::from_secs(20), || {
        let (status, _) = http_request(node.http, "GET", "/m/index.m3u8", &[], "");
        (status == 200).then_some(())
    });
    let exp = member_in(Group::Experiment);
    let control = member_in(Group::Control);
    let tv = |m: &str| {
        let (status, body) = http_request(
            node.http,
            "GET",
            "/m/index.m3u8",
            &[("X-Brdyun-Device", "smart_tv"), ("X-Brdyun-Member", m)],
            "",
        );
        (status, body)
    };
    let (status, advice) = tv(&exp);
    assert_eq!(status, 503);
    assert!(advice["retryAfterSeconds"].is_u64(), "{advice}");
    assert_eq!(tv(&control).0, 200);
    let (status, body) = http_request(node.http, "GET", "/api/experiments", &auth, "");
    assert_eq!(status, 200);
    let kpis = &body["running"][0]["kpis"];
    assert_eq!(
        kpis["experiment"]["smart_tv"]["critical_failed"], 1,
        "{kpis}"
    );
    assert_eq!(
        kpis["control"]["smart_tv"]["critical_requests"], 1,
        "{kpis}"
    );
}

#[test]
fn a_bad_experiment_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, config(dir.path(), 5000)).expect("write");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_brdyun"));
    cmd.arg("node").arg("--config").arg(&path);
    let (status, stderr) =
        ChildGuard::spawn("brdyun node", &mut cmd).finish(Duration::from_secs(20));
    assert!(!status.success());
    assert!(
        stderr.contains("experiment[0].experiment_share_bp"),
        "{stderr}"
    );
}

#[test]
fn kpis_combine_across_the_mesh_domain() {
    // EXP-1: a node pulls every alive peer's report while a run is in progress, so
    // guardrails and verdicts see the whole domain's traffic.
    let dir = tempfile::tempdir().expect("tempdir");
    let (gossip_a, gossip_b) = (common::free_udp_port(), common::free_udp_port());
    let ott = |me: u16, peer: u16| {
        format!(
            "[ott]\ndomain_secret = \"experiments across the domain\"\ngossip = \"127.0.0.1:{me}\"\nseeds = [\"127.0.0.1:{peer}\"]\n"
        )
    };
    let node_config = |name: &str, me: u16, peer: u16| {
        config(&dir.path().join(name), 1000)
            .replace("name = \"exp\"", &format!("name = \"{name}\""))
            + &ott(me, peer)
    };
    let a = NodeProcess::start(dir.path(), "a", &node_config("a", gossip_a, gossip_b));
    let b = NodeProcess::start(dir.path(), "b", &node_config("b", gossip_b, gossip_a));
    let auth = [("Authorization", "Bearer experiments-admin-token-0001")];
    wait_for("b's stream", Duration::from_secs(20), || {
        let (status, _) = http_request(b.http, "GET", "/m/index.m3u8", &[], "");
        (status == 200).then_some(())
    });
    // Three control-group TV requests on b only.
    let control = member_in(Group::Control);
    for _ in 0..3 {
        let (status, _) = http_request(
            b.http,
            "GET",
            "/m/index.m3u8",
            &[
                ("X-Brdyun-Device", "smart_tv"),
                ("X-Brdyun-Member", &control),
            ],
            "",
        );
        assert_eq!(status, 200);
    }
    // a counts them from b's report (pulled every 5 s).
    let seen = wait_for("a to count b's requests", Duration::from_secs(30), || {
        let (_, body) = http_request(a.http, "GET", "/api/experiments", &auth, "");
        let n = body["running"][0]["kpis"]["control"]["smart_tv"]["critical_requests"].as_u64();
        n.filter(|n| *n >= 3)
    });
    assert_eq!(seen, 3);
}
