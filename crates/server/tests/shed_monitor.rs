//! The overload monitor end to end around the shedding layer, on paused time: requests
//! held in flight past the adaptive limit raise the overload level until low-priority
//! requests are shed (SHED-2); once they finish, the level decays back to 0.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use server::http::shed_layer::ShedLayer;
use server::shed::overload::run_monitor;
use server::shed::{LevelSource, ShedSettings, Shedder};
use shed::{AdaptiveLimitConfig, Bucket, OverloadConfig};
use tokio::sync::{oneshot, watch};
use tower::{service_fn, Layer, ServiceExt};

fn request(path: &str) -> Request<Body> {
    Request::builder()
        .uri(path)
        .header("x-brdyun-device", "browser")
        .body(Body::empty())
        .expect("request")
}

#[tokio::test(start_paused = true)]
async fn in_flight_past_the_limit_raises_the_level_and_it_decays_after() {
    let settings = ShedSettings {
        // Only concurrency pressure counts here: the host's CPU and the runtime's
        // queueing delay are pushed out of reach.
        overload: OverloadConfig {
            cpu_low: 1.0,
            cpu_high: 2.0,
            queue_delay_low_ms: 60_000.0,
            queue_delay_high_ms: 120_000.0,
            ..OverloadConfig::default()
        },
        limit: AdaptiveLimitConfig {
            initial_limit: 4.0,
            min_limit: 4.0,
            max_limit: 4.0,
            ..AdaptiveLimitConfig::default()
        },
        // The estimator's in-flight pressure is what this test watches.
        level_source: LevelSource::Pressure,
        tick_ms: 100,
        ..ShedSettings::default()
    };
    let shedder = Arc::new(Shedder::new(&settings).expect("valid"));
    let (open_tx, open_rx) = watch::channel(false);
    let service = ShedLayer::new(Arc::clone(&shedder), server::clock::Clock::system()).layer(
        service_fn(move |_: Request<Body>| {
            let mut open = open_rx.clone();
            // Boxed: the layer needs an `Unpin` inner future, as axum's routes have.
            Box::pin(async move {
                let _ = open.wait_for(|o| *o).await;
                Ok::<_, Infallible>(Response::new(Body::empty()))
            })
        }),
    );
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let monitor = tokio::spawn(run_monitor(Arc::clone(&shedder), async move {
        let _ = stop_rx.await;
    }));

    let mut held = tokio::task::JoinSet::new();
    for msn in 0..8 {
        held.spawn(
            service
                .clone()
                .oneshot(request(&format!("/s/seg-{msn}.ts"))),
        );
    }
    // One more, cancelled: its in-flight slot must be given back.
    let cancelled = tokio::spawn(service.clone().oneshot(request("/s/seg-9.ts")));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(shedder.metrics().in_flight(), 9);
    // A second monitor on the same shedder returns at once (the first one has
    // run by now).
    tokio::time::timeout(
        Duration::from_secs(1),
        run_monitor(Arc::clone(&shedder), std::future::pending()),
    )
    .await
    .expect("second monitor returns at once");

    cancelled.abort();
    let _ = cancelled.await;
    assert_eq!(shedder.metrics().in_flight(), 8);
    assert_eq!(
        shedder.levels().level().get(),
        0.0,
        "no tick has seen the load yet"
    );

    // 8 in flight over a limit of 4: ratio 2, past in_flight_high (1.2).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(shedder.levels().level().get(), 1.0);
    assert!(!shedder.levels().is_forced());
    let telemetry = service
        .clone()
        .oneshot(request("/telemetry"))
        .await
        .expect("infallible");
    assert_eq!(telemetry.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(shedder.metrics().counts(Bucket::NonCritical).shed, 1);

    open_tx.send(true).expect("handlers listen");
    while let Some(done) = held.join_next().await {
        let response = done.expect("task").expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_eq!(shedder.metrics().in_flight(), 0);
    assert_eq!(shedder.metrics().counts(Bucket::Critical).admitted, 9);

    // The level falls slowly (3 s time constant), then snaps to 0.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let falling = shedder.levels().level().get();
    assert!(falling > 0.3 && falling < 1.0, "{falling}");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(shedder.levels().level().get(), 0.0);
    let telemetry = service
        .clone()
        .oneshot(request("/telemetry"))
        .await
        .expect("infallible");
    assert_eq!(telemetry.status(), StatusCode::OK);

    let mut text = String::new();
    shedder.render_metrics(&mut text);
    assert!(text.contains("brdyun_shed_concurrency_limit 4\n"), "{text}");
    assert!(text.contains("brdyun_shed_overload_level 0\n"), "{text}");
    assert!(
        text.contains("brdyun_shed_request_duration_seconds_count{bucket=\"critical\"} 8\n"),
        "{text}"
    );

    stop_tx.send(()).expect("monitor running");
    monitor.await.expect("monitor ends on shutdown");
}
