//! Meeting recordings that outlive a node: each node's closed archive files copied to
//! object storage (an S3 or S3-compatible bucket, or a directory behind the same
//! interface), **one copy per group**.
//!
//! # Shape
//!
//! - [`key`] is pure: an object's name is a function of the timeline (archive, file span,
//!   first and last MSN, segment count), and [`key::plan`] decides whether a closed file
//!   is already in the bucket (found), or goes up and replaces partial copies.
//! - [`object`] is pure: one object holds a closed file's segments, their index and a
//!   footer, so a reader needs nothing else and a create-only put makes it appear whole.
//! - [`bucket`] opens the store from its settings (credentials never printed);
//!   [`transport`] is its HTTP client (the project's hyper and rustls) and [`pace`] the
//!   node-wide upload bandwidth cap.
//! - [`remote`] reads an archive back from the bucket: its objects, an object's index,
//!   one segment, each by ranged reads.
//! - [`catalog`] attaches an archive's objects under the local archive as its remote
//!   tier, so any node serves a recorded period its disk lacks; segments read from the
//!   bucket go through a byte-bounded cache.
//! - [`listing`] tells what the bucket holds of one meeting (renditions, bytes, periods),
//!   for the MC's recordings API.
//! - [`expiry`] removes a meeting's objects past its retention (the MC's sweep, which
//!   knows closed meetings too).
//! - [`recorded`] opens a recording from the bucket alone (a closed meeting's, on any
//!   node), kept a few seconds for the requests that follow.
//! - [`uploader`] is the node's task: closed files up, local retention held back until
//!   they are there, remote retention; [`stats`] its counters and state.
//!
//! Nodes of a group record byte-identical segments under the same MSNs (DESIGN.md, the
//! same-timeline invariant), so the node that uploads a span first writes the object
//! every other node would have written, and the others find it there.

pub mod bucket;
pub mod catalog;
pub mod expiry;
pub mod key;
pub mod listing;
pub mod object;
pub mod pace;
pub mod recorded;
pub mod remote;
pub mod stats;
pub mod transport;
pub mod uploader;

pub use bucket::{Bucket, BucketError, Credentials, Location};
pub use remote::{RemoteArchive, RemoteError};
pub use uploader::{ArchiveSource, Uploader, UploaderSettings};
