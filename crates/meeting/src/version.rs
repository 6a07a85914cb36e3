//! Client versions (MTG-3). Clients state theirs in the [`CLIENT_VERSION_HEADER`]
//! header as up to four dot-separated numbers (`5.2`, `2.1.0.456`). Below the
//! configured minimum a client gets 102011 when it creates or joins, and 16 when the
//! call belongs to a session that is already running.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::code::ErrorCode;

/// The request header that carries the client's version.
pub const CLIENT_VERSION_HEADER: &str = "x-brdyun-client-version";

/// A version: up to four numbers, missing ones count as 0 (`2.1` = `2.1.0.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientVersion([u32; 4]);

/// A version string that is not 1 to 4 dot-separated decimal numbers.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("a client version is 1 to 4 dot-separated numbers, like 2.1.0.456")]
pub struct InvalidVersion;

impl ClientVersion {
    /// A version from its parts.
    pub const fn new(parts: [u32; 4]) -> Self {
        Self(parts)
    }
}

impl FromStr for ClientVersion {
    type Err = InvalidVersion;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.is_empty() || text.len() > 64 {
            return Err(InvalidVersion);
        }
        let mut parts = [0u32; 4];
        for (index, piece) in text.split('.').enumerate() {
            let slot = parts.get_mut(index).ok_or(InvalidVersion)?;
            if piece.is_empty() || !piece.bytes().all(|b| b.is_ascii_digit()) {
                return Err(InvalidVersion);
            }
            *slot = piece.parse().map_err(|_| InvalidVersion)?;
        }
        Ok(Self(parts))
    }
}

impl Ord for ClientVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

impl PartialOrd for ClientVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ClientVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// Checks a client's stated version against the minimum.
///
/// A client that states no version is not checked (players such as hls.js cannot add
/// the header); one that states an unparseable version is treated as too old.
///
/// # Errors
/// [`ErrorCode::UpgradeRequired`] (102011) when `in_session` is false,
/// [`ErrorCode::UpgradeInSession`] (16) when it is true.
pub fn check_client(
    stated: Option<&str>,
    minimum: Option<ClientVersion>,
    in_session: bool,
) -> Result<(), ErrorCode> {
    let (Some(stated), Some(minimum)) = (stated, minimum) else {
        return Ok(());
    };
    let too_old = match stated.parse::<ClientVersion>() {
        Ok(version) => version < minimum,
        Err(_) => true,
    };
    if !too_old {
        Ok(())
    } else if in_session {
        Err(ErrorCode::UpgradeInSession)
    } else {
        Err(ErrorCode::UpgradeRequired)
    }
}
