//! Failure detection with the production defaults across domain sizes: a killed
//! node is marked dead within 6 s whether the domain has 2 or 5 nodes, and a healthy
//! domain sees no false deaths meanwhile.

mod common;

use std::time::Duration;

use common::{alive_peers, config, node, wait_until};
use mesh::MeshEvent;

async fn detection_time(size: usize) -> Duration {
    let first = node(config("n0", &[])).await;
    let seed = first.gossip_addr();
    let mut nodes = vec![first];
    for i in 1..size {
        nodes.push(node(config(&format!("n{i}"), &[seed])).await);
    }
    wait_until(Duration::from_secs(10), "converged", || async {
        nodes.iter().all(|h| alive_peers(h).len() == size - 1)
    })
    .await;
    let mut events: Vec<_> = nodes.iter().map(|h| h.subscribe()).collect();
    // Two seconds of steady gossip: no one is declared dead.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for rx in &mut events {
        while let Ok(e) = rx.try_recv() {
            assert!(!matches!(e, MeshEvent::NodeDown(_)), "false death: {e:?}");
        }
    }
    let victim = nodes.pop().expect("size >= 2");
    let victim_id = victim.node_id().clone();
    drop(victim);
    let took = wait_until(
        Duration::from_secs(6),
        "all survivors mark it dead",
        || async {
            nodes.iter().all(|h| {
                h.snapshot()
                    .nodes
                    .iter()
                    .any(|n| n.id == victim_id && !n.alive)
            })
        },
    )
    .await;
    for h in &nodes {
        assert_eq!(alive_peers(h).len(), size - 2, "only the victim died");
    }
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_is_dead_within_six_seconds_in_domains_of_two_and_five() {
    for size in [2, 5] {
        let took = detection_time(size).await;
        eprintln!("domain of {size}: dead node detected by every survivor after {took:?}");
    }
}
