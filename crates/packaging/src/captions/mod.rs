//! Subtitles of a stream: the WebVTT playlists and files rendered from the caption
//! files its segments keep ([`crate::segment::captions`]) ([`serve`]).

pub mod serve;
