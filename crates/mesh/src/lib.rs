//! The mesh domain (OTT-GRP-3, OTT-GRP-5, OTT-ELIG-4, OTT-OPS-1): how the
//! nodes of one domain find each other, share their state, detect failures, compare
//! clocks and agree on the view key, and the [`ott::Snapshot`] all OTT decisions
//! read.
//!
//! Data flow:
//!
//! 1. [`Mesh::start`] binds the gossip UDP socket and starts chitchat (Quickwit's
//!    scuttlebutt gossip with phi-accrual failure detection) over the
//!    [`SealedTransport`]: every datagram is sealed with ChaCha20-Poly1305 under a key
//!    derived from the domain secret, so a node without the secret can neither join
//!    nor read (datagrams that do not open are counted, [`MeshHandle::rejected_datagrams`]).
//! 2. The node publishes typed state ([`state`]): its [`NodeAnnounce`] through
//!    [`MeshHandle::set_node`], its members (each an [`ott::MemberView`]) through
//!    [`MeshHandle::set_members`]; the mesh itself republishes the clock and the
//!    view-key fingerprint every round.
//! 3. Peers' clock updates feed an [`OffsetEstimator`] per peer ([`clock`]).
//! 4. Every round (and after each `set_*`) the state is folded into an
//!    [`ott::Snapshot`] ([`MeshHandle::snapshot`]): peers with their liveness, clock
//!    offset and whether they hold the view key, every member, the minimum version.
//!    Liveness changes are also sent as [`MeshEvent`]s ([`MeshHandle::subscribe`]).
//! 5. Passes are signed with [`MeshHandle::key_ring`] and checked with
//!    [`MeshHandle::verify_pass`]: the view key of each epoch is derived from the
//!    domain secret ([`ViewKeySchedule`]), so no key is ever exchanged.

pub mod clock;
mod codec;
mod config;
mod crypto;
mod mesh;
mod snapshot;
pub mod state;
mod transport;
mod viewkey;

pub use clock::{Clock, OffsetEstimator, SkewedClock, SystemClock};
pub use config::{MeshConfig, MeshError, MAX_OWN_STATE_BYTES, MIN_COMPATIBLE_VERSION};
pub use crypto::{GossipCipher, SealError, MIN_SECRET_LEN, SEAL_OVERHEAD};
pub use mesh::{Mesh, MeshEvent, MeshHandle};
pub use snapshot::{node_id, node_name};
pub use state::NodeAnnounce;
pub use transport::{Links, SealedTransport, TransportCounters, TransportStats};
pub use viewkey::{ViewKeyError, ViewKeySchedule, DEFAULT_ROTATION, MIN_ROTATION_MS};
