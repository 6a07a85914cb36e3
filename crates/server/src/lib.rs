//! A brdyun node: its streams, how they are packaged and served over HTTP(S), and what
//! guards them. Folders point one way (CI checks it): leaves ([`error`], [`url`],
//! [`metrics`], [`clock`]) and the shedding and experiments cores at the bottom, then
//! [`http`] and [`stream`] (which know nothing of each other), then [`access`] and
//! [`redundancy`], then the node's [`state`], then [`routes`] and [`app`].
//!
//! | Folder | What it owns |
//! |---|---|
//! | [`http`] | The serving stack: listeners, TLS, connections and their limits, the priority lanes, the edge, the shedding and KPI layers, extractors |
//! | [`stream`] | The stream model: a [`stream::package::Package`] of renditions on one timeline, each with one live window (the `packaging` crate's, which renders every manifest); the [`stream::pipeline`] from ingest events to segments (its decisions in the pure [`stream::cutter`]), the ladder, captions, the archive's recorder and packaging, the table of streams |
//! | [`access`] | Who a viewer is and what a node checks before a meeting's stream: the gate, private meetings' sessions, logins |
//! | [`redundancy`] | OTT groups: backups, Content Steering, redirects with passes, drain, alerts |
//! | [`shed`] | Load shedding over the pure `shed` crate: policy, levels, fault rules, pauses |
//! | [`experiments`] | Continuous shedding experiments over the pure `experiments` crate |
//! | [`health`], [`notify`] | Liveness and readiness; the service manager's notifications |
//! | [`state`] | The node's state every route shares, and the [`role`] an MC gives it |
//! | [`routes`], [`app`] | The handlers of the route table ([`url`]) and the application built from them |
//!
//! Start reading at [`stream::cutter`] → [`stream::pipeline`] → `packaging::window` → [`routes::stream`] for a
//! stream from ingest to viewer, and at [`http::serve`] for a request from the socket in.
//! The MC role is the `mc` crate, which reaches a node through [`role`]; every error a
//! client sees is a row of the `codes` table ([`error`]). The crates around this one are
//! mapped in the README's "Code map".

pub mod access;
pub mod app;
pub mod clock;
pub mod credentials;
pub mod error;
pub mod experiment_pull;
pub mod experiments;
pub mod health;
pub mod http;
pub mod ingest_listeners;
pub mod ingest_view;
pub mod link_view;
pub mod metrics;
pub mod notify;
pub mod redundancy;
pub mod role;
pub mod routes;
pub mod shed;
pub mod state;
pub mod stream;
pub mod url;

pub use app::router;
pub use http::serve::run;
pub use state::{AppState, NodeIdentity};
