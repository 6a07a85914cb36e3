//! Opening the recordings' object store from its settings: an S3 (or S3-compatible)
//! bucket, or a local directory behind the same interface (the demo's default).

use std::path::PathBuf;
use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

use crate::pace::Pacer;
use crate::transport::Connector;

/// S3 credentials. Never printed: `Debug` shows only the key id's first characters.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token of temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: String = self.access_key_id.chars().take(4).collect();
        write!(f, "Credentials({shown}…, secret hidden)")
    }
}

/// Where recordings go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `s3://bucket/prefix`: an S3 bucket, or an S3-compatible one at `endpoint`.
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key prefix inside the bucket (may be empty).
        prefix: String,
        /// `http(s)://host:port` of an S3-compatible service; AWS when `None`.
        endpoint: Option<String>,
        /// Region (default `us-east-1`).
        region: String,
        /// Credentials.
        credentials: Credentials,
    },
    /// `file:///dir`: a directory (one per host, or a shared mount).
    Directory(PathBuf),
}

/// Why the store cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    /// The URL is neither `s3://bucket[/prefix]` nor `file:///absolute/dir`.
    #[error("recordings store {0:?}: expected s3://bucket[/prefix] or file:///absolute/dir")]
    BadUrl(String),
    /// The object store client refused its configuration.
    #[error("recordings store: {0}")]
    Store(#[from] object_store::Error),
    /// The directory cannot be created.
    #[error("recordings directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Location {
    /// Reads a store URL; `endpoint`, `region` and `credentials` apply to `s3://` only.
    ///
    /// # Errors
    /// [`BucketError::BadUrl`].
    pub fn parse(
        url: &str,
        endpoint: Option<String>,
        region: Option<String>,
        credentials: Option<Credentials>,
    ) -> Result<Location, BucketError> {
        let bad = || BucketError::BadUrl(url.to_owned());
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let valid_bucket = (3..=63).contains(&bucket.len())
                && bucket.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                });
            if !valid_bucket || prefix.split('/').any(|p| p == "..") {
                return Err(bad());
            }
            return Ok(Location::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.trim_matches('/').to_owned(),
                endpoint,
                region: region.unwrap_or_else(|| "us-east-1".to_owned()),
                credentials: credentials.ok_or_else(bad)?,
            });
        }
        let dir = url.strip_prefix("file://").ok_or_else(bad)?;
        if !dir.starts_with('/') {
            return Err(bad());
        }
        Ok(Location::Directory(PathBuf::from(dir)))
    }

    /// The location as logs and the status API show it: no credentials.
    pub fn describe(&self) -> String {
        match self {
            Location::S3 {
                bucket,
                prefix,
                endpoint,
                ..
            } => {
                let at = endpoint
                    .as_deref()
                    .map(|e| format!(" at {}", without_userinfo(e)))
                    .unwrap_or_default();
                format!("s3://{bucket}/{prefix}{at}")
            }
            Location::Directory(dir) => format!("file://{}", dir.display()),
        }
    }
}

/// `endpoint` without a `user:password@` part, to show it.
fn without_userinfo(endpoint: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => endpoint.to_owned(),
    }
}

/// An opened store and the prefix every key goes under.
#[derive(Debug, Clone)]
pub struct Bucket {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// Every object's key starts with this.
    pub prefix: ObjectPath,
    /// [`Location::describe`].
    pub description: String,
}

impl Bucket {
    /// Opens `location`; uploads to an S3 bucket are paced by `pacer` and `https`
    /// endpoints are trusted by `tls`.
    ///
    /// # Errors
    /// [`BucketError`] when the client refuses the settings or the directory cannot be
    /// made.
    pub fn open(
        location: &Location,
        tls: Option<Arc<rustls::ClientConfig>>,
        pacer: Option<Arc<Pacer>>,
    ) -> Result<Bucket, BucketError> {
        let description = location.describe();
        match location {
            Location::S3 {
                bucket,
                prefix,
                endpoint,
                region,
                credentials,
            } => {
                let mut builder = AmazonS3Builder::new()
                    .with_bucket_name(bucket)
                    .with_region(region)
                    .with_access_key_id(&credentials.access_key_id)
                    .with_secret_access_key(&credentials.secret_access_key)
                    // Create-only puts: `If-None-Match: *`, 412 when the key exists.
                    .with_conditional_put(S3ConditionalPut::ETagMatch)
                    .with_http_connector(Connector::new(tls, pacer));
                if let Some(token) = &credentials.session_token {
                    builder = builder.with_token(token);
                }
                if let Some(endpoint) = endpoint {
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_allow_http(endpoint.starts_with("http://"))
                        // S3-compatible services take the bucket in the path.
                        .with_virtual_hosted_style_request(false);
                }
                Ok(Bucket {
                    store: Arc::new(builder.build()?),
                    prefix: ObjectPath::from(prefix.as_str()),
                    description,
                })
            }
            Location::Directory(dir) => {
                std::fs::create_dir_all(dir).map_err(|source| BucketError::Directory {
                    path: dir.clone(),
                    source,
                })?;
                Ok(Bucket {
                    store: Arc::new(LocalFileSystem::new_with_prefix(dir)?),
                    prefix: ObjectPath::default(),
                    description,
                })
            }
        }
    }

    /// The key prefix of one archive: `names` are the archive's directory levels under
    /// `data_dir/archive` (`["meeting", "ts"]`).
    pub fn archive_prefix(&self, names: &[&str]) -> ObjectPath {
        names
            .iter()
            .fold(self.prefix.clone(), |path, name| path.clone().join(*name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials() -> Credentials {
        Credentials {
            access_key_id: "AKIAEXAMPLEKEY".into(),
            secret_access_key: "very-secret".into(),
            session_token: None,
        }
    }

    #[test]
    fn urls_are_read_strictly_and_secrets_never_shown() {
        let s3 = Location::parse(
            "s3://rec-bucket/brdyun/prod/",
            Some("http://127.0.0.1:9000".into()),
            None,
            Some(credentials()),
        )
        .unwrap();
        assert_eq!(
            s3.describe(),
            "s3://rec-bucket/brdyun/prod at http://127.0.0.1:9000"
        );
        assert!(!format!("{s3:?}").contains("very-secret"));
        assert!(!format!("{s3:?}").contains("AKIAEXAMPLEKEY"));
        let with_user = Location::parse(
            "s3://rec-bucket",
            Some("https://user:pw@s3.example.net:9000/".into()),
            None,
            Some(credentials()),
        )
        .unwrap();
        assert_eq!(
            with_user.describe(),
            "s3://rec-bucket/ at https://s3.example.net:9000/"
        );
        assert_eq!(
            Location::parse("file:///var/rec", None, None, None).unwrap(),
            Location::Directory("/var/rec".into())
        );
        for bad in [
            "s3://AB",
            "s3://Bucket_Name/x",
            "s3://bucket/../x",
            "file://relative/dir",
            "http://x",
            "",
        ] {
            assert!(
                Location::parse(bad, None, None, Some(credentials())).is_err(),
                "{bad}"
            );
        }
        // An S3 location without credentials is refused rather than signed anonymously.
        assert!(Location::parse("s3://bucket", None, None, None).is_err());
    }
}
