//! Nodes that copy their archives to the tests' S3 server (moto): the bucket's name,
//! the credentials file the nodes and the MC read, their `[recordings]` table, and a
//! node started with it that logs what its uploader did.

use std::path::{Path, PathBuf};

use super::cluster::Cluster;
use super::{start_role_logging, NodeProcess};

/// The bucket every recordings test uses.
pub const BUCKET: &str = "meetings";

/// Writes the test server's credentials as a node reads them (`credentials_file`).
pub fn credentials_file(dir: &Path) -> PathBuf {
    let path = dir.join("bucket.env");
    std::fs::write(
        &path,
        "AWS_ACCESS_KEY_ID=test-key\nAWS_SECRET_ACCESS_KEY=test-secret\n",
    )
    .expect("credentials file");
    path
}

/// The `[recordings]` table of a node or MC reaching the bucket at `endpoint`.
pub fn recordings_section(endpoint: &str, credentials: &Path) -> String {
    format!(
        "[recordings]\nstore = \"s3://{BUCKET}/rec\"\nendpoint = \"{endpoint}\"\ncredentials_file = \"{}\"\n",
        credentials.display()
    )
}

/// A node following the cluster's MC with `section` added, logging the uploader's
/// `info` lines (what it uploaded, what it found).
pub fn start_recording_node(cluster: &Cluster, name: &str, section: &str) -> NodeProcess {
    let mut config = cluster.node_config(name);
    config.sections.push_str(section);
    let data = cluster.path().join(format!("{name}-data"));
    let filter = "warn,recordings=info";
    start_role_logging(cluster.path(), name, "node", &config.render(&data), filter)
}
