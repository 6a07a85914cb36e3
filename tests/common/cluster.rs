//! One MC and the nodes that follow it, for the process tests: the MC's config and the
//! config of a node of an MC written once, with the knobs the tests vary, and a builder
//! that starts them (`Cluster::mc().sections(..).nodes(&["node-a"]).dvr(..).start()`).
//! Every process picks its own ports; they are read back from its `listening` line.

use std::net::SocketAddr;
use std::path::Path;

use super::etcd::EtcdCluster;
use super::{http_request, start_role, NodeProcess, NODE_TOKEN};

/// The admin token the process tests' MCs are configured with.
pub const ADMIN_TOKEN: &str = "admin-secret-for-these-tests";

/// The `Authorization` header of the MC's admin, as the tests send it.
pub const ADMIN: (&str, &str) = ("Authorization", "Bearer admin-secret-for-these-tests");

/// The `Authorization` header of a node of the MC (the node token).
pub const NODE: (&str, &str) = ("Authorization", "Bearer node-secret-for-these-tests");

/// An MC's config: the lines every test writes the same, and the ones they vary.
#[derive(Clone, Debug)]
pub struct McConfig {
    /// `name` in `[mc]` (an MC of a pair has one).
    pub name: Option<String>,
    /// The HTTP address (`127.0.0.1:0`: the MC picks one).
    pub http: String,
    /// Whether the MC takes RTMP publishers (on a port of its own choosing).
    pub rtmp: bool,
    pub admin_token: Option<String>,
    pub node_token: Option<String>,
    /// More lines of `[mc]` (and sub-tables such as `[mc.ladder]`), after the tokens.
    pub lines: String,
    /// The body of `[defaults]`; `None`: no such section.
    pub defaults: Option<String>,
    /// Sections after `[defaults]`: `[[meeting]]` presets and the like.
    pub sections: String,
}

impl Default for McConfig {
    fn default() -> McConfig {
        McConfig {
            name: None,
            http: "127.0.0.1:0".to_owned(),
            rtmp: true,
            admin_token: Some(ADMIN_TOKEN.to_owned()),
            node_token: Some(NODE_TOKEN.to_owned()),
            lines: String::new(),
            defaults: Some("segment_duration = 1\n".to_owned()),
            sections: String::new(),
        }
    }
}

impl McConfig {
    /// The TOML of this MC, its data in `data_dir`.
    pub fn render(&self, data_dir: &Path) -> String {
        let mut out = String::from("[mc]\n");
        if let Some(name) = &self.name {
            out.push_str(&format!("name = \"{name}\"\n"));
        }
        out.push_str(&format!("http = \"{}\"\n", self.http));
        if self.rtmp {
            out.push_str("rtmp = \"127.0.0.1:0\"\n");
        }
        out.push_str(&format!("data_dir = \"{}\"\n", data_dir.display()));
        if let Some(token) = &self.admin_token {
            out.push_str(&format!("admin_token = \"{token}\"\n"));
        }
        if let Some(token) = &self.node_token {
            out.push_str(&format!("node_token = \"{token}\"\n"));
        }
        push_lines(&mut out, &self.lines);
        if let Some(defaults) = &self.defaults {
            out.push_str("[defaults]\n");
            push_lines(&mut out, defaults);
        }
        push_lines(&mut out, &self.sections);
        out
    }
}

/// The config of a node that learns its meetings from an MC (`[mc]` in a node).
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub name: String,
    /// More lines of `[node]`.
    pub lines: String,
    /// The MC's URLs: one is written `url = `, more `urls = [..]` (an MC pair).
    pub mc_urls: Vec<String>,
    /// The node token; `None`: the node sends none.
    pub token: Option<String>,
    /// `poll_interval` in seconds, as written.
    pub poll_interval: String,
    /// `timeout` in seconds, as written; `None`: the default.
    pub timeout: Option<String>,
    /// More lines of the node's `[mc]` (`live_relay`, TLS trust, …).
    pub mc_lines: String,
    /// The body of `[mc.stream]`; `None`: no such section.
    pub stream: Option<String>,
    /// Sections after `[mc.stream]` (`[ott]` and the like).
    pub sections: String,
}

impl NodeConfig {
    /// A node named `name` with the values most tests use: the node token, a poll every
    /// 0.2 s with a 1 s timeout, 1 s segments.
    pub fn new(name: &str) -> NodeConfig {
        NodeConfig {
            name: name.to_owned(),
            lines: String::new(),
            mc_urls: Vec::new(),
            token: Some(NODE_TOKEN.to_owned()),
            poll_interval: "0.2".to_owned(),
            timeout: Some("1".to_owned()),
            mc_lines: String::new(),
            stream: Some("segment_duration = 1\n".to_owned()),
            sections: String::new(),
        }
    }

    /// The TOML of this node, its data in `data_dir`.
    pub fn render(&self, data_dir: &Path) -> String {
        let mut out = format!(
            "[node]\nname = \"{}\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n",
            self.name,
            data_dir.display()
        );
        push_lines(&mut out, &self.lines);
        out.push_str("[mc]\n");
        match self.mc_urls.as_slice() {
            [one] => out.push_str(&format!("url = \"{one}\"\n")),
            many => {
                let quoted: Vec<String> = many.iter().map(|u| format!("\"{u}\"")).collect();
                out.push_str(&format!("urls = [{}]\n", quoted.join(", ")));
            }
        }
        if let Some(token) = &self.token {
            out.push_str(&format!("token = \"{token}\"\n"));
        }
        out.push_str(&format!("poll_interval = {}\n", self.poll_interval));
        if let Some(timeout) = &self.timeout {
            out.push_str(&format!("timeout = {timeout}\n"));
        }
        push_lines(&mut out, &self.mc_lines);
        if let Some(stream) = &self.stream {
            out.push_str("[mc.stream]\n");
            push_lines(&mut out, stream);
        }
        push_lines(&mut out, &self.sections);
        out
    }

    /// Writes this config to `dir/<name>.toml` and starts the node, its data in
    /// `dir/<name>-data`.
    pub fn start(&self, dir: &Path) -> NodeProcess {
        let data = dir.join(format!("{}-data", self.name));
        start_role(dir, &self.name, "node", &self.render(&data))
    }
}

/// Appends `lines`, ending them with a newline when they do not.
fn push_lines(out: &mut String, lines: &str) {
    out.push_str(lines);
    if !lines.is_empty() && !lines.ends_with('\n') {
        out.push('\n');
    }
}

/// Starts an MC with `config` in `dir`: `dir/<file>.toml`, its data in
/// `dir/<file>-data`.
pub fn start_mc(dir: &Path, file: &str, config: &McConfig) -> NodeProcess {
    let data = dir.join(format!("{file}-data"));
    start_role(dir, file, "mc", &config.render(&data))
}

/// What [`Cluster::mc`] starts: an MC (on etcd when asked) and the nodes that follow it.
pub struct ClusterBuilder {
    mc: McConfig,
    node: NodeConfig,
    nodes: Vec<String>,
    etcd_members: Option<usize>,
}

impl ClusterBuilder {
    /// Names the MC (`name` in `[mc]`).
    pub fn name(mut self, name: &str) -> Self {
        self.mc.name = Some(name.to_owned());
        self
    }

    /// An MC without an RTMP listener.
    pub fn no_rtmp(mut self) -> Self {
        self.mc.rtmp = false;
        self
    }

    /// The MC's admin and node tokens (`None`: not configured); the nodes send the
    /// node token.
    pub fn tokens(mut self, admin: Option<&str>, node: Option<&str>) -> Self {
        self.mc.admin_token = admin.map(str::to_owned);
        self.mc.node_token = node.map(str::to_owned);
        self.node.token = node.map(str::to_owned);
        self
    }

    /// More lines of the MC's `[mc]` (viewer keys, `[mc.ladder]`, …).
    pub fn mc_lines(mut self, lines: &str) -> Self {
        self.mc.lines.push_str(lines);
        self
    }

    /// The body of the MC's `[defaults]` (`None`: no such section).
    pub fn defaults(mut self, body: Option<&str>) -> Self {
        self.mc.defaults = body.map(str::to_owned);
        self
    }

    /// Sections after the MC's `[defaults]`: `[[meeting]]` presets and the like.
    pub fn sections(mut self, sections: &str) -> Self {
        self.mc.sections.push_str(sections);
        self
    }

    /// Puts the MC's store on a fresh etcd cluster of `members` members.
    pub fn etcd(mut self, members: usize) -> Self {
        self.etcd_members = Some(members);
        self
    }

    /// The nodes that follow the MC, by name, started in this order.
    pub fn nodes(mut self, names: &[&str]) -> Self {
        self.nodes = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// Changes the nodes' config (each node's name and MC URL are set at start).
    pub fn node(mut self, change: impl FnOnce(&mut NodeConfig)) -> Self {
        change(&mut self.node);
        self
    }

    /// A DVR line in the nodes' `[mc.stream]`, e.g. `dvr = { enabled = true }`.
    pub fn dvr(mut self, line: &str) -> Self {
        let stream = self.node.stream.get_or_insert_with(String::new);
        push_lines(stream, line);
        self
    }

    /// Starts the MC, then the nodes, in a fresh temporary directory.
    pub fn start(self) -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let etcd = self
            .etcd_members
            .map(|members| EtcdCluster::start(&dir.path().join("etcd"), members));
        let mut mc_config = self.mc;
        if let Some(etcd) = &etcd {
            mc_config.lines = format!("etcd = {}\n{}", etcd.toml_urls(), mc_config.lines);
        }
        let mc = start_mc(dir.path(), "mc", &mc_config);
        let mut node = self.node;
        node.mc_urls = vec![format!("http://{}", mc.http)];
        let mut cluster = Cluster {
            nodes: Vec::new(),
            mc,
            etcd,
            mc_config,
            node_template: node,
            dir,
        };
        for name in &self.nodes {
            let node = cluster.start_node(name);
            cluster.nodes.push(node);
        }
        cluster
    }
}

/// A running MC with the nodes following it, all killed when dropped (the nodes
/// first), their configs, logs and data in `dir`.
pub struct Cluster {
    pub nodes: Vec<NodeProcess>,
    pub mc: NodeProcess,
    pub etcd: Option<EtcdCluster>,
    mc_config: McConfig,
    node_template: NodeConfig,
    pub dir: tempfile::TempDir,
}

impl Cluster {
    /// A builder of an MC with the tests' tokens, RTMP and 1 s segments, and no nodes.
    pub fn mc() -> ClusterBuilder {
        ClusterBuilder {
            mc: McConfig::default(),
            node: NodeConfig::new("node"),
            nodes: Vec::new(),
            etcd_members: None,
        }
    }

    /// The directory of the configs, logs and data.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The first node.
    pub fn node(&self) -> &NodeProcess {
        self.nodes.first().expect("a cluster with a node")
    }

    /// The config of one more node named `name` following this MC.
    pub fn node_config(&self, name: &str) -> NodeConfig {
        NodeConfig {
            name: name.to_owned(),
            ..self.node_template.clone()
        }
    }

    /// Starts one more node named `name` following this MC (not kept in `nodes`).
    pub fn start_node(&self, name: &str) -> NodeProcess {
        self.node_config(name).start(self.path())
    }

    /// Starts the MC again (after `mc.kill9()`) on its HTTP address, with its data.
    pub fn restart_mc(&mut self) {
        let config = McConfig {
            http: self.mc.http.to_string(),
            ..self.mc_config.clone()
        };
        self.mc = start_mc(self.dir.path(), "mc", &config);
    }
}

/// The stream key of `meeting`, read from the MC's admin API.
pub fn stream_key(mc: SocketAddr, meeting: &str) -> String {
    let (status, doc) = http_request(mc, "GET", &format!("/api/meetings/{meeting}"), &[ADMIN], "");
    doc["stream_key"]
        .as_str()
        .unwrap_or_else(|| panic!("the stream key of {meeting}: {status} {doc}"))
        .to_owned()
}
