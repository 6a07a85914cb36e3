//! `brdyun demo`: a local cluster on loopback with zero configuration.
//!
//! An MC hosts two meetings: `meeting`, fed by the built-in source (a looped clip), and
//! `live`, waiting for an RTMP publisher with its stream key. Nodes `a`, `b` and `c`
//! learn the meetings from the MC and pull each live one from it, so they share its
//! timeline: their playlists and segments are identical. The MC and every node are
//! built from ordinary configs, so the demo exercises the same code as production.

pub mod tls;

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;

use crate::config::{Config, NodeConfig, StreamDefaults};
use crate::mc::config::{McConfig, McLinkConfig, McSection, PresetMeeting};
use crate::mc::{self, RunningMc};
use crate::node::{self, RunningNode};

/// The demo's meeting fed by the built-in source.
pub const STREAM: &str = "meeting";
/// The demo's meeting that waits for an RTMP publisher.
pub const LIVE: &str = "live";

/// The demo domain's secret: the demo's nodes are on loopback only.
const DEMO_DOMAIN_SECRET: &str = "brdyun demo domain, loopback only";

/// The UDP gossip port of demo node `i` (`port + 10 + i`).
fn gossip_port(port: u16, i: u16) -> u16 {
    port.saturating_add(10).saturating_add(i)
}

/// Runs the demo until Ctrl-C.
///
/// # Errors
/// A port is taken or the data directory cannot be created.
pub async fn run(port: u16) -> anyhow::Result<()> {
    let base = std::env::temp_dir().join("brdyun-demo");
    let (mc, nodes) = start_cluster(port, &base).await?;
    let captioners = start_captioners(&mc);
    print_urls(&mc, &nodes, &tls::cert_path(&base.join("tls")));
    node::wait_for_signal().await;
    for captioner in captioners {
        captioner.abort();
    }
    for node in nodes {
        node.stop().await;
    }
    mc.stop().await;
    Ok(())
}

/// Starts the MC on `port + 3` and the three nodes on `port`, `port + 1`, `port + 2`.
///
/// # Errors
/// As [`run`].
pub async fn start_cluster(
    port: u16,
    data: &Path,
) -> anyhow::Result<(RunningMc, Vec<RunningNode>)> {
    let mc_data = data.join("mc");
    // The demo starts fresh: a meeting closed in an earlier run would stay closed.
    match std::fs::remove_file(mc_data.join("meetings.json")) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).context("removing the previous demo's meetings"),
    }
    let mc_http = SocketAddr::from(([127, 0, 0, 1], port.saturating_add(3)));
    // The operator's pages (backups, experiments) call the admin API without a token:
    // the demo trusts loopback, explicitly. Nodes still sync with a node token, made
    // fresh for each run and handed to every node, as a real deployment does.
    let node_token = ::mc::store::random_secret();
    let rtmp_port = 1935 + port.saturating_sub(8080);
    let (rtmps_cert, rtmps_key) = tls::self_signed(&data.join("tls"))?;
    let language = |code: &str, name: &str| meeting::MeetingLanguage {
        code: code.into(),
        name: Some(name.into()),
        ..Default::default()
    };
    let preset = |id: &str, title: &str, inputs: Vec<String>| PresetMeeting {
        id: id.into(),
        title: title.into(),
        viewer_limit: None,
        start: true,
        inputs,
        ladder: true,
        cc_language: None,
        private: false,
        recording_depth_days: None,
        languages: Vec::new(),
    };
    let mc_config = McConfig {
        mc: McSection {
            name: "mc".into(),
            http: mc_http,
            rtmp: Some(SocketAddr::from(([127, 0, 0, 1], rtmp_port))),
            rtmp_limits: Default::default(),
            rtmps: Some(SocketAddr::from((
                [127, 0, 0, 1],
                rtmp_port.saturating_add(1000),
            ))),
            rtmps_cert: Some(rtmps_cert),
            rtmps_key: Some(rtmps_key),
            // SRT on the RTMP port's number, over UDP, where libsrt is installed (the
            // demo runs without it, and says why).
            srt: demo_srt(rtmp_port),
            srt_options: Default::default(),
            hostname: Some("localhost".into()),
            data_dir: mc_data,
            admin_token: None,
            node_token: Some(node_token.clone()),
            trust_loopback: true,
            min_client_version: None,
            viewer_report_ttl: 10.0,
            // Without ffmpeg the source alone is served (the URL block says so), rather
            // than an encoder failing to start.
            ladder: which_ffmpeg().map(|_| demo_ladder()).transpose()?,
            viewer_keys: Vec::new(),
            etcd: Vec::new(),
            peers: Vec::new(),
            allow_insecure_peers: false,
            etcd_prefix: "/brdyun/".into(),
            max_connections: None,
            max_connections_per_client: None,
            body_timeout: crate::config::default_body_timeout(),
            shutdown_delay: 0.0,
        },
        defaults: StreamDefaults::default(),
        meetings: vec![
            // The built-in source carries an interpretation: the meeting has two languages.
            PresetMeeting {
                languages: vec![
                    language("eng", "English"),
                    language("spa", "Español (interpretation)"),
                ],
                ..preset(STREAM, "built-in meeting", vec!["builtin://meeting".into()])
            },
            preset(LIVE, "your stream", Vec::new()),
        ],
        log: Default::default(),
        recordings: Some(demo_recordings(data)?),
    };
    let mc = mc::start(mc_config).await.context("starting the demo mc")?;

    // Every meeting is archived for an hour on the nodes (catch-up URLs in docs/dvr.md)
    // and is one OTT group across the three nodes: each node offers its copy as a
    // backup of the others.
    let template: toml::Table =
        toml::from_str("dvr = { enabled = true, depth = \"1h\" }\nott_backup = true")
            .context("demo template")?;
    let gossip = |i: u16| SocketAddr::from(([127, 0, 0, 1], gossip_port(port, i)));
    let mut nodes = Vec::new();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        let http = SocketAddr::from(([127, 0, 0, 1], port + i as u16));
        let ott = crate::ott::OttConfig {
            domain_secret: DEMO_DOMAIN_SECRET.into(),
            gossip: gossip(i as u16),
            gossip_advertise: None,
            seeds: (0..3u16)
                .filter(|j| *j != i as u16)
                .map(|j| gossip(j).to_string())
                .collect(),
            announce: Vec::new(),
            cdn_names: Vec::new(),
            cpu_error_percent: 90,
            net_error_percent: 90,
            net_capacity_mbps: 1000,
            backup_session_limit: None,
            alert_webhook: None,
            view_key_rotation_hours: 24.0,
            min_version: None,
        };
        let config = Config {
            node: NodeConfig {
                name: format!("node-{name}"),
                http,
                data_dir: data.join(format!("node-{name}")),
                trust_loopback: true,
                ..NodeConfig::default()
            },
            defaults: StreamDefaults::default(),
            shedding: Default::default(),
            mc: Some(McLinkConfig {
                url: format!("http://{}", mc.http),
                urls: Vec::new(),
                token: Some(node_token.clone()),
                ca_file: None,
                poll_interval: 0.5,
                timeout: 2.0,
                backup_urls: Vec::new(),
                live_relay: false,
                allow_insecure: false,
                stream: template.clone(),
            }),
            streams: Vec::new(),
            ott: Some(ott),
            experiments: Vec::new(),
            logins: Vec::new(),
            log: Default::default(),
            recordings: Some(demo_recordings(data)?),
        };
        config.validate().context("demo config")?;
        nodes.push(
            node::start(config)
                .await
                .with_context(|| format!("starting demo node-{name}"))?,
        );
    }
    Ok((mc, nodes))
}

/// The demo's recordings store: one local directory behind the object-store interface,
/// shared by the three nodes, so each closed archive file is kept once whichever node
/// records it (docs/recordings.md).
fn demo_recordings(data: &Path) -> anyhow::Result<crate::config::RecordingsConfig> {
    let dir = std::path::absolute(data.join("recordings")).context("demo recordings dir")?;
    Ok(crate::config::RecordingsConfig {
        store: format!("file://{}", dir.display()),
        endpoint: None,
        region: None,
        credentials_file: None,
        ca_file: None,
        concurrency: 2,
        max_bytes_per_second: None,
        depth: None,
    })
}

/// The built-in meeting's captions: an English feed and its Portuguese translation,
/// posted through the MC's caption API with the meeting's host token, as a live
/// transcription service would (docs/captions.md).
pub fn start_captioners(mc: &RunningMc) -> Vec<tokio::task::JoinHandle<()>> {
    use server::stream::captions::feed;
    let url = format!("http://{}/api/meetings/{STREAM}/captions", mc.http);
    let token = mc.host_token(STREAM);
    [
        ("en", "English", &feed::SCRIPT_EN[..]),
        ("pt-BR", "Português", &feed::SCRIPT_PT[..]),
    ]
    .into_iter()
    .map(|(language, name, script)| {
        tokio::spawn(feed::run(
            url.clone(),
            token.clone(),
            language,
            name,
            script,
        ))
    })
    .collect()
}

fn print_urls(mc: &RunningMc, nodes: &[RunningNode], rtmps_cert: &Path) {
    println!();
    println!("brdyun demo: an MC and three nodes on loopback, one meeting on the same timeline,");
    println!("each node a backup of the others (one OTT group per meeting)");
    println!();
    for (i, node) in nodes.iter().enumerate() {
        let base = format!("http://{}", node.http);
        println!(
            "  node-{} (pulls the meetings from the MC)",
            ["a", "b", "c"][i]
        );
        println!("    watch:    {base}/player?stream={STREAM}");
        println!("    playlist: {base}/{STREAM}/index.m3u8   (HLS, MPEG-TS; backups for switching players)");
        println!("    ll-hls:   {base}/{STREAM}/ll-index.m3u8   dash: {base}/{STREAM}/index.mpd");
        println!("    captions: {base}/{STREAM}/sub-en.m3u8, sub-pt-br.m3u8   (WebVTT; in the player's menu)");
        println!("    languages: English (the floor, in the video's playlist) and {base}/{STREAM}/audio-spa/mono.m3u8   (Español; in the player's menu)");
        println!("    status:   {base}/api/streams/{STREAM}");
        println!("    way in:   {base}/watch/{STREAM}.m3u8   (302 to a node that serves you now; .mpd, .ll.m3u8 too)");
        println!("    backups:  {base}/backups   (OTT group state; buttons: pause this node's input, drain this node)");
        println!("    experiments: {base}/experiments   (continuous shedding experiments, API /api/experiments)");
        println!("    metrics:  {base}/metrics");
        if let Some(rtmp) = node.rtmp {
            println!("    publish:  rtmp://{rtmp}/live/NAME");
        }
        if let Some(gossip) = node.gossip {
            println!("    gossip:   udp {gossip} (the mesh domain, sealed with the domain secret)");
        }
    }
    let api = format!("http://{}", mc.http);
    println!();
    println!("  mc (meetings, and the origin the nodes pull)");
    match which_ffmpeg() {
        Some(path) => println!(
            "    ladder:   source 640x360, 240p and 144p, encoded by {path} (docs/ladder.md)"
        ),
        None => println!(
            "    ladder:   off: ffmpeg is not on PATH (apt-get install ffmpeg), so the source alone is served"
        ),
    }
    println!("    meetings: {api}/api/meetings   (OpenAPI: {api}/api/openapi.json)");
    println!("    captions: POST {api}/api/meetings/{STREAM}/captions   (a built-in captioner posts a cue every 4 s, English and Portuguese)");
    println!("    recordings: {api}/api/meetings/{STREAM}/recordings, {api}/api/meetings/{LIVE}/recordings   (periods and catch-up URLs; a file is listed once its 10 minutes closed)");
    let first = nodes.first().map_or(mc.http, |n| n.http);
    println!("    recording: http://{first}/{STREAM}/recording.m3u8, recording.mp4, recording-progressive.mp4   (the whole recording so far; after POST {api}/api/meetings/{STREAM}/close, from the store on any node)");
    if let Some(rtmp) = mc.rtmp {
        let key = mc.stream_key(LIVE).unwrap_or_else(|| "KEY".into());
        println!();
        println!("  publish your own stream to the meeting \"{LIVE}\":");
        println!("    ffmpeg -re -i INPUT -c:v libx264 -c:a aac -f flv 'rtmp://{rtmp}/live/{LIVE}?key={key}'");
        if let Some(rtmps) = mc.rtmps {
            println!(
                "    rtmps:    'rtmps://localhost:{}/live/{LIVE}?key={key}'   (self-signed certificate, made at start: tell the publisher not to verify it, or give it {} as its CA)",
                rtmps.port(),
                rtmps_cert.display()
            );
        }
        if let Some(srt) = mc.srt {
            println!("    srt:      'srt://{srt}?streamid=#!::r={LIVE},m=publish,s={key}'   (ffmpeg -f mpegts; srt-live-transmit, OBS: the same URL)");
        }
        println!(
            "    then watch it at http://{}/player?stream={LIVE}",
            nodes.first().map_or(mc.http, |n| n.http)
        );
    }
    println!();
    println!("Ctrl-C stops the demo.");
}

/// The demo's ABR ladder: the source (640x360) and two transcoded rungs, small enough
/// for one encoder to run in real time on a 2-core machine beside the MC and three
/// nodes ([docs/ladder.md](../../docs/ladder.md) has the measured cost).
fn demo_ladder() -> anyhow::Result<server::stream::ladder::LadderSettings> {
    let ladder: server::stream::ladder::LadderSettings = toml::from_str(
        r#"preset = "veryfast"
threads = 1
rungs = [
  { name = "source" },
  { name = "240p", height = 240, video_kbps = 250 },
  { name = "144p", height = 144, video_kbps = 100, profile = "baseline" },
]"#,
    )
    .context("the demo ladder")?;
    ladder
        .validate()
        .map_err(|e| anyhow::anyhow!("the demo ladder: {e}"))?;
    Ok(ladder)
}

/// Where `ffmpeg` is on `PATH`, if it is (the demo ladder's encoder).
fn which_ffmpeg() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("ffmpeg"))
        .find(|candidate| candidate.is_file())
        .map(|found| found.display().to_string())
}

/// The demo's SRT address, or `None` (with the reason logged) without libsrt.
fn demo_srt(port: u16) -> Option<SocketAddr> {
    match ingest::srt::ffi::load() {
        Ok(()) => Some(SocketAddr::from(([127, 0, 0, 1], port))),
        Err(e) => {
            tracing::warn!(error = %e, "the demo runs without SRT");
            None
        }
    }
}
