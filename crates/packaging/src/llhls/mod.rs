//! The LL-HLS window of a rendition ([`window`]: parts, preload hints, blocking reload
//! positions) and where a request stands in it ([`position`]).

pub mod position;
pub mod window;

pub use position::Position;
pub use window::{LlSnapshot, LlWindow, PendingParts, Uris};
