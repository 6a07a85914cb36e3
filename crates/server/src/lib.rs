//! HTTP(S) delivery for brdyun.
//!
//! A node's streams live in [`channel::Channel`]s (the live window, swapped atomically
//! per segment, playlists pre-rendered). [`routes::router`] is the one router table;
//! [`serve::run`] serves it on a listener over HTTP or HTTPS; [`pipeline`] turns a
//! stream's ingest events into segments in its channel.

pub mod auth;
pub mod channel;
pub mod clock;
pub mod connection;
pub mod edge;
pub mod error;
pub mod experiments;
pub mod fmp4;
pub mod http_util;
pub mod ingest_view;
pub mod lane;
pub mod llhls;
pub mod logins;
pub mod mc;
pub mod metrics;
pub mod pipeline;
pub mod recorder;
pub mod redundancy;
pub mod render;
pub mod rendition;
pub mod routes;
pub mod serve;
pub mod shed;
pub mod state;
pub mod tracks;
pub mod url;
pub mod window;

pub use routes::router;
pub use serve::run;
pub use state::{AppState, NodeIdentity};
