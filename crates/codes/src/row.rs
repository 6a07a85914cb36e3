//! The row type every family of the code table shares.

/// How loudly a code is logged where it is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// A normal answer to a client (not started, locked, full, …).
    Info,
    /// Something an operator should look at if it persists (the MC is unreachable).
    Warn,
    /// A configuration error that will not heal by itself (bad URL, bad CA file).
    Error,
}

/// One row of the code table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeInfo {
    /// The public numeric code.
    pub code: u32,
    /// The HTTP status it is sent with.
    pub status: u16,
    /// The fixed English message.
    pub message: &'static str,
    /// The Chinese message (seed 000's text).
    pub message_zh: &'static str,
    /// How loudly it is logged.
    pub level: LogLevel,
    /// The metric label (`code="…"` stays numeric; this is the `reason` label).
    pub label: &'static str,
    /// A temporary condition: the client should retry after a while (and the answer
    /// carries `Retry-After`).
    pub retryable: bool,
}

/// The accessors every code type has, each read from its row (`self.info()`): written
/// once here, expanded in each type's `impl`.
macro_rules! row_accessors {
    () => {
        /// The public numeric code.
        pub fn code(self) -> u32 {
            self.info().code
        }

        /// The HTTP status.
        pub fn status(self) -> u16 {
            self.info().status
        }

        /// The fixed English message.
        pub fn message(self) -> &'static str {
            self.info().message
        }

        /// The metric label.
        pub fn label(self) -> &'static str {
            self.info().label
        }
    };
}
pub(crate) use row_accessors;
