//! HTTP(S) delivery for brdyun.
//!
//! A node's streams live in [`channel::Channel`]s: a package of
//! [`rendition::Rendition`]s on one timeline, each with one live [`window`] of stored
//! segments whose TS, fMP4 and LL-HLS forms are views of one segment, swapped
//! atomically per segment with every manifest pre-rendered. [`pipeline`] turns a
//! stream's ingest events into those segments. [`url`] is the URL grammar and the one
//! route table; [`routes::router`] builds the application from it ([`app`]); [`serve`]
//! serves it over HTTP or HTTPS (a node on one thread per core,
//! [`serve::serve_on_threads`], with the priority [`lane`]). Every error a client sees
//! is a row of the `codes` table ([`error`]).
//!
//! Where to start reading, by role: a stream from ingest to viewer is [`pipeline`] →
//! [`window`] → [`routes`]; the MC role is the `mc` crate, which reaches a node through
//! [`role`]; redundancy (backups, steering, redirects) is [`redundancy`]; load shedding
//! is [`shed`] over the pure `shed` crate; the serving stack is [`serve`],
//! [`connection`] and [`lane`]. The crates around this one are mapped in the README's "Code map".

pub mod access;
pub mod access_log;
pub mod admin_door;
pub mod app;
pub mod archive_master;
pub mod archive_scans;
pub mod auth;
pub mod bounded_body;
pub mod captions;
pub mod channel;
pub mod clock;
pub mod conn_limits;
pub mod connection;
mod connection_service;
pub mod cpu_placement;
pub mod credentials;
pub mod edge;
pub mod edge_limits;
pub mod error;
pub mod experiments;
pub mod extract;
pub mod fmp4;
mod head_deadline;
pub mod header_walk;
pub mod health;
pub mod http_app;
pub mod http_util;
pub mod ingest_listeners;
pub mod ingest_view;
pub mod ladder;
pub mod lane;
pub mod link_view;
pub mod live_relay;
pub mod llhls;
pub mod logins;
pub mod metrics;
pub mod notify;
pub mod pipeline;
pub mod recorder;
pub mod redundancy;
pub mod render;
pub mod rendition;
pub mod request_context;
pub mod request_id;
mod request_log;
pub mod role;
pub mod routes;
pub mod serve;
pub mod shed;
pub mod state;
pub mod tls;
pub mod tracks;
pub mod url;
pub mod viewer_id;
pub mod window;

pub use routes::router;
pub use serve::run;
pub use state::{AppState, NodeIdentity};
