//! The cost of one private-meeting session check (every request of a private meeting
//! pays it), for docs/measured.md:
//!
//! ```sh
//! cargo run --release -p ott --example session_cost
//! ```

use ott::{viewer_hash, SessionKey};

fn main() {
    let now = 1_800_000_000;
    let key = SessionKey::derive(b"domain secret");
    let text = key.issue(
        "board",
        viewer_hash("viewer"),
        (now + 60) as u32,
        [1, 2, 3, 4],
    );
    let rounds = 2_000_000u32;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let mut ok = 0u32;
        for _ in 0..rounds {
            let verified =
                std::hint::black_box(&key).verify(std::hint::black_box(&text), "board", now);
            ok += u32::from(verified.is_ok());
        }
        assert_eq!(ok, rounds);
        let ns = started.elapsed().as_nanos() as f64 / f64::from(rounds);
        println!("session check: {ns:.0} ns ({rounds} checks)");
    }
}
