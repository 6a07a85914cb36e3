//! The node's experiments loop (EXP-1, EXP-2): the 1-s tick of its experiments and, in
//! an OTT domain, the pulls of its peers' KPI reports. It reads the whole node (its
//! shedder, clock and redundancy), so it sits above them.

use crate::experiments::peers::{fetch_report, peers_of, PULL_EVERY, PULL_TIMEOUT};

/// The peers to pull from: `(node id, url base)` of each alive node of the mesh view
/// with an `http://` address.
pub fn peer_urls(redundancy: &crate::redundancy::Redundancy) -> Vec<(String, String)> {
    redundancy
        .view()
        .map_or_else(Vec::new, |view| peers_of(&view.snapshot))
}

/// The node's experiments loop: [`crate::experiments::NodeExperiments::tick`] every second with the
/// wall clock, and while a run is in progress in an OTT domain, every [`PULL_EVERY`] a
/// pull of each alive peer's report (in the background, one round at a time, signed
/// with the domain's peer key). Ends when `shutdown` does.
pub async fn run(state: crate::state::AppState, shutdown: impl std::future::Future<Output = ()>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_pull = tokio::time::Instant::now();
    let mut pulling: Option<tokio::task::JoinHandle<()>> = None;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = &mut shutdown => break,
        }
        let experiments = state.shedder().experiments();
        experiments.tick(state.clock().unix_ms_u64());
        let Some(redundancy) = state.redundancy() else {
            continue;
        };
        if !experiments.is_running()
            || last_pull.elapsed() < PULL_EVERY
            || pulling.as_ref().is_some_and(|h| !h.is_finished())
        {
            continue;
        }
        last_pull = tokio::time::Instant::now();
        if redundancy.peer_key.get().is_none() {
            continue;
        }
        let peers = peer_urls(redundancy);
        let state = state.clone();
        let redundancy = std::sync::Arc::clone(redundancy);
        pulling = Some(tokio::spawn(async move {
            let Some(key) = redundancy.peer_key.get() else {
                return;
            };
            for (node, url) in peers {
                let now_s = state.clock().unix_ms() / 1000;
                match fetch_report(&url, key, now_s, PULL_TIMEOUT).await {
                    Ok(report) => state.shedder().experiments().apply_report(&node, report),
                    Err(error) => {
                        tracing::debug!(node = %node, %error, "cannot pull a peer's experiment report");
                    }
                }
            }
        }));
    }
    if let Some(handle) = pulling {
        handle.abort();
    }
}
