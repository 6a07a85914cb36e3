//! The node's side of meetings: what a node checks before a viewer gets a meeting's
//! stream. Its MC's sync answer is screened first ([`mc_answer`]); then every request
//! for a meeting passes the [`gate`] (the meeting's state, the client's version, the
//! viewer count the MC enforces across nodes, [`viewer_table`]), a private meeting's
//! requests also its viewer's session ([`private`]), written into every URI the viewer
//! is answered ([`session_uris`]) and signed with the keys its MC hands it
//! ([`session_keys`]). The MC role itself is the `mc` crate.

pub mod gate;
pub mod logins;
pub mod mc_answer;
pub mod private;
pub mod session_keys;
pub mod session_uris;
pub mod viewer_id;
mod viewer_table;
