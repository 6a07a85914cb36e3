//! HTTP(S) delivery for brdyun.
//!
//! A node's streams live in [`package::Package`]s: a package of
//! [`rendition::Rendition`]s on one timeline, each with one live [`window`] of stored
//! segments whose TS, fMP4 and LL-HLS forms are views of one segment, swapped
//! atomically per segment with every manifest pre-rendered. [`pipeline`] turns a
//! stream's ingest events into those segments. [`url`] is the URL grammar and the one
//! route table; [`app::router`] builds the application from it ([`app`]); [`serve`]
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
