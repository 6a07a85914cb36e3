//! The node's one wall clock. Every module that dates something (segments, passes,
//! experiments, the MC's records) reads it here, the lowest layer of the crate, so no
//! module reaches into another's file for the time.

/// The wall clock in Unix milliseconds (0 before 1970, saturating far in the future).
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// [`unix_ms`] as an unsigned count (what the experiments' records carry).
pub fn unix_ms_u64() -> u64 {
    u64::try_from(unix_ms()).unwrap_or(0)
}
