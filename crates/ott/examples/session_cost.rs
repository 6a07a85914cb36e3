//! The cost of one private-meeting session check (every request of a private meeting
//! pays it: the HMAC and the address tag), for docs/measured.md:
//!
//! ```sh
//! cargo run --release -p ott --example session_cost
//! ```

use ott::{viewer_hash, SessionClaims, SessionKey, SessionKeys};

fn main() {
    let now = 1_800_000_000;
    let keys = SessionKeys::new(SessionKey::new(1, b"the MC's session secret"), None);
    let address = Some(std::net::IpAddr::from([198, 51, 100, 7]));
    let claims = SessionClaims {
        viewer: viewer_hash("viewer"),
        nonce: [1, 2, 3, 4],
        expires_unix_s: (now + 60) as u32,
        renew_until_unix_s: (now + 60) as u32,
    };
    let text = keys.issue("board", claims, address).expect("a key");
    let rounds = 2_000_000u32;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let mut ok = 0u32;
        for _ in 0..rounds {
            let verified = std::hint::black_box(&keys).verify(
                std::hint::black_box(&text),
                "board",
                address,
                now,
            );
            ok += u32::from(verified.is_ok());
        }
        assert_eq!(ok, rounds);
        let ns = started.elapsed().as_nanos() as f64 / f64::from(rounds);
        println!("session check: {ns:.0} ns ({rounds} checks)");
    }
}
