//! A lean etcd v3 client over etcd's HTTP/JSON gateway (`/v3/kv/*`, `/v3/watch`).
//!
//! Why the gateway and not gRPC: the MC needs ranges, transactions and one watch.
//! Over the gateway that is hyper (already in the tree for HTTP) plus about 400 lines;
//! the gRPC client crates bring tonic, prost and a protobuf build step, which would
//! double the workspace's cold build. The gateway is on by default in etcd 3.4+.
//!
//! - [`Client`]: the cluster's endpoints, failover between them, the call timeout.
//! - [`kv`]: [`Client::get`], [`Client::get_prefix`] (read in pages, one consistent
//!   revision), [`Client::put`] and [`Client::txn`] with [`Compare`]s —
//!   create-if-absent and compare-and-swap.
//! - [`lease`]: [`Client::grant_lease`] and [`Client::put_with_lease`], for keys that
//!   must vanish when their writer stops writing them.
//! - [`watch`]: [`Client::watch_prefix`], a stream of [`WatchBatch`]es.

mod base64;
mod client;
pub mod kv;
pub mod lease;
pub mod watch;

use thiserror::Error;

pub use client::Client;
pub use kv::{Compare, KeyValue, Op, Page, TxnOutcome};
pub use watch::{Event, Watch, WatchBatch};

/// Why a call to etcd failed.
#[derive(Debug, Error)]
pub enum EtcdError {
    /// An endpoint is not `http://host:port`.
    #[error("etcd endpoint {0:?} is not http://host:port")]
    InvalidEndpoint(String),
    /// No endpoint answered in time (down, no leader, network): retry later.
    #[error("etcd unavailable: {0}")]
    Unavailable(String),
    /// etcd answered and refused the request.
    #[error("etcd refused ({status}): {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// etcd's message.
        message: String,
    },
    /// A watch asked for history etcd no longer keeps: read everything again.
    #[error("etcd history compacted at revision {0}")]
    Compacted(i64),
    /// An answer that is not etcd's JSON.
    #[error("etcd answer not understood: {0}")]
    BadAnswer(String),
}

impl EtcdError {
    pub(crate) fn bad_answer(e: impl std::fmt::Display) -> Self {
        EtcdError::BadAnswer(e.to_string())
    }
}
