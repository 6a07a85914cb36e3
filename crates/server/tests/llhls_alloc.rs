//! Memory of blocked LL-HLS playlist requests: 10,000 requests for the next part held
//! at once through the whole router (shedding and CORS layers included), measured with
//! a global allocator that counts the bytes in use; then the part appears and every one
//! is answered.
//!
//! `unsafe` is needed only to implement `GlobalAlloc` in this test binary; it forwards
//! to the system allocator unchanged.
#![allow(unsafe_code)]

mod harness;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use ingest::IngestEvent;
use server::router;
use server::stream::llhls::{LlChannel, LlSettings};
use server::stream::package::Package;
use server::stream::pipeline::{self, PipelineSettings};
use tokio::sync::mpsc;
use tower::ServiceExt;

use harness::{demo_frames, yield_until};

static IN_USE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        IN_USE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        IN_USE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const HELD: usize = 10_000;

#[tokio::test]
async fn ten_thousand_blocked_playlist_requests_cost_little_memory() {
    let state = harness::node(None);
    let channel = Arc::new(Package::new("s", 30, packaging::render::renderer(2000)));
    let ll = Arc::new(LlChannel::new(LlSettings {
        part_ms: 1000,
        hold_back_ms: None,
        target_ms: 2000,
    }));
    channel.set_llhls(Arc::clone(&ll));
    state.add_stream(Arc::clone(&channel), None);
    let (tx, rx) = mpsc::channel(100_000);
    tokio::spawn(pipeline::run(
        Arc::clone(&channel),
        rx,
        PipelineSettings {
            languages: Vec::new(),
            target_duration_ms: 2000,
            state_file: None,
            publish_latency: Arc::new(server::metrics::Histogram::default()),
        },
    ));
    let frames = demo_frames();
    let half = frames.len() / 2;
    for f in &frames[..half] {
        tx.send(IngestEvent::Frame(f.clone()))
            .await
            .expect("pipeline");
    }
    yield_until("the pipeline", || tx.capacity() == tx.max_capacity()).await;
    // One thread: the pipeline finishes the last frame the next time this task yields.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    let position = ll.snapshot().position;
    let (msn, part) = match position.pending {
        Some(p) => p,
        None => (position.last_complete.expect("a segment").0 + 1, 0),
    };
    let app = router(state.clone());
    let uri = format!("/s/ll.m3u8?_HLS_msn={msn}&_HLS_part={part}");
    let requests: Vec<Request<Body>> = (0..HELD)
        .map(|_| Request::get(&uri).body(Body::empty()).expect("request"))
        .collect();
    let mut tasks = Vec::with_capacity(HELD);
    let before = IN_USE.load(Ordering::Relaxed);
    for request in requests {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            app.oneshot(request).await.map(|r| r.status())
        }));
    }
    let blocked = || ll.counters.blocked.load(Ordering::Relaxed) as usize;
    yield_until("every request to block", || blocked() == HELD).await;
    let after = IN_USE.load(Ordering::Relaxed);
    let per_request = (after - before) as f64 / HELD as f64;
    println!(
        "{HELD} blocked playlist requests: {:.1} MiB in use, {:.2} KiB per request",
        (after - before) as f64 / (1024.0 * 1024.0),
        per_request / 1024.0
    );
    assert!(
        per_request < 8.0 * 1024.0,
        "{per_request} bytes per request"
    );
    // The part appears: every request is answered.
    let started = Instant::now();
    for f in &frames[half..] {
        tx.send(IngestEvent::Frame(f.clone()))
            .await
            .expect("pipeline");
        if blocked() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut ok = 0;
    for task in tasks {
        if task.await.expect("task") == Ok(StatusCode::OK) {
            ok += 1;
        }
    }
    println!(
        "all {HELD} answered {:?} after feeding resumed",
        started.elapsed()
    );
    assert_eq!(ok, HELD);
}
