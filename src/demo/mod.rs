//! `brdyun demo`: a local cluster on loopback with zero configuration.
//!
//! Node `a` ingests the built-in meeting (a looped clip) and also accepts RTMP publish;
//! nodes `b` and `c` pull the meeting from `a` over HTTP and so share its timeline:
//! their playlists and segments are identical to `a`'s. Each node is an ordinary node
//! built from an ordinary config, so the demo exercises the same code as production.

pub mod source;

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;

use crate::config::{Config, Depth, DvrConfig, NodeConfig, StreamConfig, StreamDefaults};
use crate::node::{self, RunningNode};

/// The demo's stream name.
pub const STREAM: &str = "meeting";

/// Runs the demo until Ctrl-C.
///
/// # Errors
/// A port is taken or the data directory cannot be created.
pub async fn run(port: u16) -> anyhow::Result<()> {
    let base = std::env::temp_dir().join("brdyun-demo");
    let nodes = start_cluster(port, &base).await?;
    print_urls(&nodes);
    node::wait_for_signal().await;
    for node in nodes {
        node.stop().await;
    }
    Ok(())
}

/// Starts the three demo nodes on consecutive ports from `port`.
///
/// # Errors
/// As [`run`].
pub async fn start_cluster(port: u16, data: &Path) -> anyhow::Result<Vec<RunningNode>> {
    let origin_port = port;
    let mut nodes = Vec::new();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        let http = SocketAddr::from(([127, 0, 0, 1], port + i as u16));
        let inputs = if i == 0 {
            vec!["builtin://meeting".to_owned()]
        } else {
            vec![format!("http://127.0.0.1:{origin_port}/{STREAM}/mpegts")]
        };
        let rtmp_port = 1935 + port.saturating_sub(8080);
        let config = Config {
            node: NodeConfig {
                name: format!("node-{name}"),
                http,
                rtmp: (i == 0).then(|| SocketAddr::from(([127, 0, 0, 1], rtmp_port))),
                data_dir: data.join(format!("node-{name}")),
                ..NodeConfig::default()
            },
            defaults: StreamDefaults::default(),
            shedding: Default::default(),
            mc: None,
            streams: vec![
                StreamConfig {
                    name: STREAM.into(),
                    inputs,
                    segment_duration: None,
                    window: None,
                    source_timeout: None,
                    // The demo meeting is archived for an hour (catch-up URLs in the README).
                    dvr: DvrConfig {
                        enabled: Some(true),
                        depth: Some(Depth(3_600_000)),
                        max_bytes: None,
                    },
                },
                StreamConfig {
                    name: "live".into(),
                    inputs: vec![if i == 0 {
                        "publish://".to_owned()
                    } else {
                        format!("http://127.0.0.1:{origin_port}/live/mpegts")
                    }],
                    segment_duration: None,
                    window: None,
                    source_timeout: None,
                    dvr: DvrConfig::default(),
                },
            ],
        };
        config.validate().context("demo config")?;
        nodes.push(
            node::start(config)
                .await
                .with_context(|| format!("starting demo node-{name}"))?,
        );
    }
    Ok(nodes)
}

fn print_urls(nodes: &[RunningNode]) {
    println!();
    println!("brdyun demo: three nodes on loopback, one meeting on the same timeline");
    println!();
    for (i, node) in nodes.iter().enumerate() {
        let base = format!("http://{}", node.http);
        let role = if i == 0 {
            "ingests the built-in meeting"
        } else {
            "pulls from node-a"
        };
        println!("  node-{} ({role})", ["a", "b", "c"][i]);
        println!("    watch:    {base}/player?stream={STREAM}");
        println!("    playlist: {base}/{STREAM}/index.m3u8");
        println!("    status:   {base}/api/streams/{STREAM}");
        println!("    metrics:  {base}/metrics");
    }
    if let Some(rtmp) = nodes.first().and_then(|n| n.rtmp) {
        println!();
        println!("  publish your own stream to node-a:  ffmpeg -re -i INPUT -c:v libx264 -c:a aac -f flv rtmp://{rtmp}/live/live");
        println!(
            "    then watch it at http://{}/player?stream=live",
            nodes[0].http
        );
    }
    println!();
    println!("Ctrl-C stops the demo.");
}
