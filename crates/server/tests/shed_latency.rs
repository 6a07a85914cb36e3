//! The shedding layer times an admitted request from before its service is called: an
//! answer made in the call itself (a playlist from memory, with no future to wait on)
//! is timed with the work that made it, so the request-duration histogram and the
//! adaptive concurrency limit learn the real cost of the requests a node answers most.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use server::http::shed_layer::ShedLayer;
use server::shed::{ShedSettings, Shedder};
use tower::{service_fn, Layer, Service, ServiceExt};

/// The sum of every bucket's request durations, from the shedder's metrics.
fn seconds_timed(shedder: &Shedder) -> f64 {
    let mut out = String::new();
    shedder.render_metrics(&mut out);
    out.lines()
        .filter(|line| line.starts_with("brdyun_shed_request_duration_seconds_sum"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn an_answer_made_in_the_call_is_timed_with_its_work() {
    let shedder = Arc::new(Shedder::new(&ShedSettings::default()).expect("valid settings"));
    let mut service = ShedLayer::new(Arc::clone(&shedder), server::clock::Clock::system()).layer(
        service_fn(|_: Request<Body>| {
            // The work is done in the call; the future is ready at once.
            std::thread::sleep(Duration::from_millis(30));
            std::future::ready(Ok::<_, Infallible>(Response::new(Body::empty())))
        }),
    );
    let request = Request::builder()
        .uri("/meeting/index.m3u8")
        .body(Body::empty())
        .expect("a request");
    let response = service
        .ready()
        .await
        .expect("ready")
        .call(request)
        .await
        .expect("answered");
    assert!(response.status().is_success());
    let timed = seconds_timed(&shedder);
    assert!(
        timed >= 0.030,
        "the request was timed {timed} s, its work took 0.030 s"
    );
}
