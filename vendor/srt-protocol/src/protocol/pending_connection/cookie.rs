use std::{
    collections::hash_map::RandomState,
    hash::{BuildHasher, Hash, Hasher},
    net::SocketAddr,
    sync::OnceLock,
    time::{SystemTime, UNIX_EPOCH},
};

/// The process's cookie secret: a SYN cookie an off-path sender cannot compute, so a
/// handshake from a spoofed address cannot be completed.
fn secret() -> &'static RandomState {
    static SECRET: OnceLock<RandomState> = OnceLock::new();
    SECRET.get_or_init(RandomState::new)
}

pub fn gen_cookie(saddr: &SocketAddr) -> i32 {
    let time_mins = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("Time was before the the unix epoch!!!")
        .as_secs()
        / 60;

    let mut hasher = secret().build_hasher();
    saddr.hash(&mut hasher);
    time_mins.hash(&mut hasher);

    hasher.finish() as u32 as i32
}
