//! The node's recordings uploader: opened from `[recordings]`, given to the status API
//! and metrics, run until the node stops; every archive the node records registers with
//! it (see `stream::start_recorder`).

use std::sync::Arc;

use anyhow::Context;
use recordings::pace::Pacer;
use recordings::{Bucket, Location, Uploader};
use server::state::AppState;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::RecordingsConfig;

/// Opens the store of `config` (an `https` endpoint trusted by its CA file or the
/// system's roots; uploads paced by its cap).
///
/// # Errors
/// The store's settings are wrong (URL, credentials, CA file) or its directory cannot be
/// made.
pub fn open_store(config: &RecordingsConfig) -> anyhow::Result<Bucket> {
    let location = config.location()?;
    let tls = match &location {
        Location::S3 { endpoint, .. }
            if endpoint
                .as_deref()
                .is_none_or(|e| e.starts_with("https://")) =>
        {
            Some(
                ingest::tls::client_config(config.ca_file.as_deref())
                    .context("recordings: the bucket's TLS trust")?,
            )
        }
        _ => None,
    };
    let pacer = config
        .max_bytes_per_second
        .map(|size| Arc::new(Pacer::new(size.0)));
    Ok(Bucket::open(&location, tls, pacer)?)
}

/// Opens the store and starts the uploader.
///
/// # Errors
/// The store's settings are wrong (URL, credentials, CA file) or its directory cannot be
/// made.
pub fn start(
    config: &RecordingsConfig,
    node: &str,
    state: &AppState,
    stop: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<Arc<Uploader>> {
    let bucket = open_store(config)?;
    tracing::info!(store = %bucket.description, "recordings go to object storage");
    let uploader = Uploader::new(bucket, config.uploader(node));
    state.set_recordings(Arc::clone(&uploader));
    tasks.spawn(Arc::clone(&uploader).run(stop.clone()));
    Ok(uploader)
}
