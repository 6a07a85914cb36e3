//! The URL grammar (`server::url`) on arbitrary paths and queries: finding a route,
//! parsing a stream's file name and the LL-HLS and relay queries never panic, and a
//! file name that parses is classified the same way through the route table.
#![no_main]

use libfuzzer_sys::fuzz_target;
use server::url::{relay_query, Directives, Route, StreamFile, Target};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, query) = text.split_once('?').unwrap_or((text, ""));
    let target = Target::of_path(path);
    let _ = (target.shed_kind(true), target.shed_kind(false), target.metrics_kind());
    let _ = Directives::parse(Some(query));
    let _ = relay_query(Some(query));
    if let Some(file) = StreamFile::parse(path) {
        let _ = (file.role(), file.is_viewer_playlist(), file.is_archive());
        // The same name under a stream is found by the stream route with the same file.
        if !path.contains('/') && !path.is_empty() {
            let under = Target::of_path(&format!("/s/{path}"));
            assert_eq!(under.route, Some(Route::StreamFile));
            assert_eq!(under.file, Some(file));
        }
    }
});
