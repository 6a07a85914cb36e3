//! The contract between push inputs (RTMP publish) and the streams they feed:
//! a publisher asks to publish `app/stream` with a key, and the stream's owner
//! either hands it a sender or rejects it.

use std::net::SocketAddr;

use thiserror::Error;

use crate::IngestSender;

/// What a publisher asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishRequest {
    /// The application part of the URL (`live` in `rtmp://host/live/name`).
    pub app: String,
    /// The stream name, without any query.
    pub stream: String,
    /// The stream key (`?key=...` on the stream name), if given.
    pub key: Option<String>,
    /// The publisher's address, for logs.
    pub peer: SocketAddr,
}

/// Why a publish was refused; the RTMP server answers `NetStream.Publish.BadName`
/// or `NetStream.Publish.Unauthorized` and closes the connection.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PublishRejection {
    /// No stream of that name accepts RTMP publish here.
    #[error("unknown stream")]
    UnknownStream,
    /// The key is missing or wrong.
    #[error("wrong stream key")]
    WrongKey,
    /// Another publisher is already live on this stream.
    #[error("stream already has a publisher")]
    Busy,
}

impl PublishRejection {
    /// The code the refusal is logged with (111027, 111028, 111029), whatever the
    /// protocol it came over.
    pub fn code(&self) -> codes::InputFault {
        match self {
            PublishRejection::UnknownStream => codes::InputFault::UnknownStream,
            PublishRejection::WrongKey => codes::InputFault::WrongKey,
            PublishRejection::Busy => codes::InputFault::StreamBusy,
        }
    }
}

/// Decides who may publish, and where their frames go.
///
/// The returned sender belongs to this one publishing session: dropping it (when the
/// publisher disconnects) tells the stream that the publisher is gone.
pub trait PublishAuthorizer: Send + Sync + 'static {
    /// Authorizes one publish request.
    ///
    /// # Errors
    /// A [`PublishRejection`] saying why the publisher is refused.
    fn authorize(&self, request: &PublishRequest) -> Result<IngestSender, PublishRejection>;
}
