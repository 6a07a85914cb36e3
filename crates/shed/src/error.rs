//! Error types of the shedding core.

/// A configuration value that cannot work; `key` is the dotted config path, so the
/// operator knows exactly which line to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A route's base score is outside the range of the bucket it is assigned to.
    #[error("{key}: score {score} is outside the {bucket} range {min}..={max}")]
    ScoreOutsideBucket {
        /// Dotted config path, e.g. `routes.live_segment.score`.
        key: String,
        /// The configured score.
        score: u8,
        /// The bucket's name.
        bucket: &'static str,
        /// Lowest score of the bucket.
        min: u8,
        /// Highest score of the bucket.
        max: u8,
    },
    /// A number is outside its allowed range (or not a number).
    #[error("{key}: {value} is outside {expected}")]
    OutOfRange {
        /// Dotted config path.
        key: &'static str,
        /// The configured value.
        value: f64,
        /// Human description of the allowed range.
        expected: &'static str,
    },
    /// Two values that must be ordered are not (e.g. a low mark above a high mark).
    #[error("{key}: must be greater than {other}")]
    NotOrdered {
        /// The key that must be the larger one.
        key: &'static str,
        /// The key it must exceed.
        other: &'static str,
    },
}

/// Why a fault-injection rule was refused or not found (FIT-1). The admin API maps
/// `Full` to "try later / remove one", the others to "fix the request".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    /// The cap on active rules is reached.
    #[error("fault rules full: {cap} active rules")]
    Full {
        /// The configured cap.
        cap: usize,
    },
    /// A field of the new rule is invalid; `key` names it.
    #[error("invalid fault rule: {key}: {reason}")]
    Invalid {
        /// The rule field at fault (`share`, `priorities`, `expires_at`, ...).
        key: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No active rule has this id.
    #[error("no fault rule {0}")]
    UnknownRule(u64),
}
