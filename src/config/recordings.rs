//! `[recordings]`: the archive's copy on object storage (docs/configuration.md#recordings).
//! Without the table a node keeps its archive on its own disk only.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;

use super::{Depth, Size};

/// The table as written in the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordingsConfig {
    /// `s3://bucket[/prefix]` or `file:///absolute/dir`.
    pub store: String,
    /// `http(s)://host:port` of an S3-compatible service (AWS when left out).
    pub endpoint: Option<String>,
    /// The bucket's region (default `us-east-1`).
    pub region: Option<String>,
    /// A file of `AWS_ACCESS_KEY_ID=…`, `AWS_SECRET_ACCESS_KEY=…` and optionally
    /// `AWS_SESSION_TOKEN=…` lines; without it the same variables are read from the
    /// environment. The values are never logged.
    pub credentials_file: Option<PathBuf>,
    /// PEM CA certificates for an `https` endpoint (default: the system's roots).
    pub ca_file: Option<PathBuf>,
    /// Uploads at once (default 2).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// The node's upload bandwidth cap, bytes per second or `"20M"` (default none).
    pub max_bytes_per_second: Option<Size>,
    /// How long the bucket keeps a recording (default: until removed by someone else).
    pub depth: Option<Depth>,
}

fn default_concurrency() -> usize {
    2
}

const KEY_ID: &str = "AWS_ACCESS_KEY_ID";
const SECRET: &str = "AWS_SECRET_ACCESS_KEY";
const TOKEN: &str = "AWS_SESSION_TOKEN";

/// Reads `NAME=value` lines (blank lines and `#` comments skipped, values optionally
/// quoted): the format of a systemd `EnvironmentFile`.
fn env_file(text: &str) -> impl Fn(&str) -> Option<String> + '_ {
    move |name| {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("export ").unwrap_or(l).split_once('='))
            .find(|(key, _)| key.trim() == name)
            .map(|(_, value)| value.trim().trim_matches('"').trim_matches('\'').to_owned())
    }
}

fn credentials(
    lookup: impl Fn(&str) -> Option<String>,
    from: &str,
) -> anyhow::Result<recordings::Credentials> {
    let get = |name: &str| lookup(name).filter(|v| !v.is_empty());
    let (Some(access_key_id), Some(secret_access_key)) = (get(KEY_ID), get(SECRET)) else {
        bail!("recordings: {from} must give {KEY_ID} and {SECRET}");
    };
    Ok(recordings::Credentials {
        access_key_id,
        secret_access_key,
        session_token: get(TOKEN),
    })
}

impl RecordingsConfig {
    /// Where recordings go, credentials read from the file or the environment (only for
    /// an `s3://` store).
    ///
    /// # Errors
    /// A bad store URL, an unreadable credentials file, missing credentials, or a
    /// concurrency of 0.
    pub fn location(&self) -> anyhow::Result<recordings::Location> {
        if self.concurrency == 0 || self.concurrency > 64 {
            bail!("recordings.concurrency must be 1 to 64");
        }
        let credentials = if self.store.starts_with("s3://") {
            Some(match &self.credentials_file {
                Some(path) => {
                    let text = read_private(path)?;
                    credentials(env_file(&text), &path.display().to_string())?
                }
                None => credentials(|name| std::env::var(name).ok(), "the environment")?,
            })
        } else {
            None
        };
        Ok(recordings::Location::parse(
            &self.store,
            self.endpoint.clone(),
            self.region.clone(),
            credentials,
        )?)
    }

    /// The uploader's settings for node `node`.
    pub fn uploader(&self, node: &str) -> recordings::UploaderSettings {
        recordings::UploaderSettings {
            node: node.to_owned(),
            concurrency: self.concurrency,
            remote_depth_ms: self.depth.map(|d| i64::try_from(d.0).unwrap_or(i64::MAX)),
            interval: Duration::from_secs(5),
            ..recordings::UploaderSettings::default()
        }
    }
}

fn read_private(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("recordings: reading credentials file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_from_an_environment_file() {
        let text = "# bucket keys\nexport AWS_ACCESS_KEY_ID=\"AKIA123\"\nAWS_SECRET_ACCESS_KEY = s3cr3t\n\n";
        let found = credentials(env_file(text), "f").unwrap();
        assert_eq!(found.access_key_id, "AKIA123");
        assert_eq!(found.secret_access_key, "s3cr3t");
        assert_eq!(found.session_token, None);
        let error = credentials(env_file("AWS_ACCESS_KEY_ID=x"), "f").unwrap_err();
        assert!(error.to_string().contains("AWS_SECRET_ACCESS_KEY"));
    }
}
