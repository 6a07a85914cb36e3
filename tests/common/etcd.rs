//! A real etcd cluster on loopback for process tests (Debian's `etcd-server`), each
//! member stopped by PID when the cluster is dropped.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use std::io::{Read, Write};
use std::net::TcpStream;

use super::{free_tcp_port, ChildGuard};

/// A member's `/v3/maintenance/status`, or `None` when it does not answer.
fn status(addr: SocketAddr) -> Option<serde_json::Value> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let request = format!(
        "POST /v3/maintenance/status HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    serde_json::from_slice(&raw[split + 4..]).ok()
}

/// One member: its process and client address.
pub struct Member {
    pub name: String,
    pub client: SocketAddr,
    pub process: Option<ChildGuard>,
    args: Vec<String>,
}

/// A running cluster.
pub struct EtcdCluster {
    pub members: Vec<Member>,
}

impl EtcdCluster {
    /// Starts `size` members under `dir` and waits until the cluster has a leader.
    pub fn start(dir: &Path, size: usize) -> EtcdCluster {
        let ports: Vec<(u16, u16)> = (0..size)
            .map(|_| (free_tcp_port(), free_tcp_port()))
            .collect();
        let initial: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("e{i}=http://127.0.0.1:{peer}"))
            .collect();
        let initial = initial.join(",");
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, &(client, peer))| {
                let name = format!("e{i}");
                let client_url = format!("http://127.0.0.1:{client}");
                let peer_url = format!("http://127.0.0.1:{peer}");
                let args = vec![
                    format!("--name={name}"),
                    format!("--data-dir={}", dir.join(&name).display()),
                    format!("--listen-client-urls={client_url}"),
                    format!("--advertise-client-urls={client_url}"),
                    format!("--listen-peer-urls={peer_url}"),
                    format!("--initial-advertise-peer-urls={peer_url}"),
                    format!("--initial-cluster={initial}"),
                    "--initial-cluster-state=new".into(),
                    "--heartbeat-interval=100".into(),
                    "--election-timeout=1000".into(),
                ];
                let process = ChildGuard::spawn("etcd", Command::new("etcd").args(&args));
                Member {
                    name,
                    client: SocketAddr::from(([127, 0, 0, 1], client)),
                    process: Some(process),
                    args,
                }
            })
            .collect();
        let cluster = EtcdCluster { members };
        cluster.wait_for_leader(Duration::from_secs(30));
        cluster
    }

    /// The client URLs of every member, as an MC's `etcd` list.
    pub fn urls(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("http://{}", m.client))
            .collect()
    }

    /// The TOML array of [`EtcdCluster::urls`].
    pub fn toml_urls(&self) -> String {
        let quoted: Vec<String> = self.urls().iter().map(|u| format!("\"{u}\"")).collect();
        format!("[{}]", quoted.join(", "))
    }

    /// The index of the member that leads, asked of the live members.
    pub fn leader(&self) -> Option<usize> {
        let mut ids = Vec::new();
        let mut leader = None;
        for member in self.members.iter().filter(|m| m.process.is_some()) {
            let Some(answer) = status(member.client) else {
                ids.push(None);
                continue;
            };
            ids.push(answer["header"]["member_id"].as_str().map(str::to_owned));
            if let Some(l) = answer["leader"].as_str() {
                leader = Some(l.to_owned());
            }
        }
        let leader = leader?;
        let live: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].process.is_some())
            .collect();
        live.into_iter()
            .zip(ids)
            .find(|(_, id)| id.as_deref() == Some(leader.as_str()))
            .map(|(i, _)| i)
    }

    /// Waits until some live member leads.
    pub fn wait_for_leader(&self, limit: Duration) -> usize {
        let start = Instant::now();
        loop {
            if let Some(leader) = self.leader() {
                return leader;
            }
            assert!(
                start.elapsed() < limit,
                "etcd has no leader after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts member `index` again on its data (after [`EtcdCluster::kill`]).
    pub fn restart(&mut self, index: usize) {
        let member = &mut self.members[index];
        if member.process.is_none() {
            member.process = Some(ChildGuard::spawn(
                "etcd",
                Command::new("etcd").args(&member.args),
            ));
        }
    }

    /// Kills member `index` (SIGKILL) and waits for it.
    pub fn kill(&mut self, index: usize) {
        if let Some(process) = self.members[index].process.take() {
            drop(process.kill());
        }
    }
}
