//! One RTMP connection after the handshake, as a sans-I/O state machine:
//! bytes in ([`Session::feed`]), events out ([`Session::poll_event`]), replies to send
//! ([`Session::take_output`]). The connection task only moves bytes, asks the
//! [`crate::publish::PublishAuthorizer`], and forwards frames.

use std::net::SocketAddr;

use media::Frame;
use thiserror::Error;
use tracing::debug;

use super::amf0::{self, Amf0Error, Amf0Value};
use super::chunk::{msg_type, read_u32, ChunkDecoder, ChunkEncoder, ChunkError, Message};
use super::commands::{self as cmd, OUT_CHUNK_SIZE, WINDOW_SIZE};
use super::flv::{FlvConverter, FlvError, TagOutcome, UnsupportedCodec};
use crate::publish::{PublishRejection, PublishRequest};

/// Why the session cannot continue; the connection is closed.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SessionError {
    /// The chunk stream is malformed or over the limits.
    #[error("chunk stream: {0}")]
    Chunk(#[from] ChunkError),
    /// A command message that is not valid AMF0.
    #[error("command: {0}")]
    Amf(#[from] Amf0Error),
    /// A command out of order (publish before connect, a second publish).
    #[error("unexpected command {0}")]
    UnexpectedCommand(String),
}

/// What the connection task must act on.
#[derive(Debug, PartialEq)]
pub enum SessionEvent {
    /// The peer asks to publish: answer with [`Session::accept_publish`] or
    /// [`Session::reject_publish`] before polling again.
    Publish(PublishRequest),
    /// An access unit from the publisher.
    Frame(Frame),
    /// The publisher stopped (deleteStream / FCUnpublish); frames end here.
    Unpublish,
    /// The first tag of a codec this server drops (later ones are only counted).
    Unsupported(UnsupportedCodec),
    /// A media tag that could not be converted; it is dropped and the session goes on.
    MediaError(FlvError),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Waiting for `connect`.
    Handshaken,
    /// `connect` answered; `app` is known.
    Connected,
    /// A publish request is with the authorizer.
    Authorizing { stream_id: u32, name: String },
    /// Frames flow.
    Publishing { stream_id: u32 },
    /// Rejected: the replies are queued and nothing more is read.
    Closed,
}

/// One publisher connection's protocol state.
#[derive(Debug)]
pub struct Session {
    peer: SocketAddr,
    decoder: ChunkDecoder,
    encoder: ChunkEncoder,
    out: Vec<u8>,
    converter: FlvConverter,
    state: State,
    app: String,
    next_stream_id: u32,
    received: u64,
    acked: u64,
    ack_window: u32,
    unsupported_seen: Vec<UnsupportedCodec>,
    unsupported_tags: u64,
}

impl Session {
    /// A session for a peer that completed the handshake; messages above
    /// `max_message_size` bytes end it.
    pub fn new(peer: SocketAddr, max_message_size: u32) -> Self {
        Self {
            peer,
            decoder: ChunkDecoder::new(max_message_size),
            encoder: ChunkEncoder::default(),
            out: Vec::new(),
            converter: FlvConverter::new(),
            state: State::Handshaken,
            app: String::new(),
            next_stream_id: 1,
            received: 0,
            acked: 0,
            ack_window: 0,
            unsupported_seen: Vec::new(),
            unsupported_tags: 0,
        }
    }

    /// Appends bytes read from the peer (and acknowledges them when the peer's window
    /// asks for it).
    pub fn feed(&mut self, data: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        self.decoder.feed(data);
        self.received += data.len() as u64;
        if self.ack_window > 0 && self.received - self.acked >= u64::from(self.ack_window) {
            self.acked = self.received;
            self.send(&cmd::acknowledgement(self.received as u32));
        }
    }

    /// Bytes to write to the peer; empty when there is nothing to send.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// True once the session was rejected: flush the output, then close.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// True while a publish is accepted and frames flow.
    pub fn is_publishing(&self) -> bool {
        matches!(self.state, State::Publishing { .. })
    }

    /// Media tags of unsupported codecs dropped so far.
    pub fn unsupported_tags(&self) -> u64 {
        self.unsupported_tags
    }

    /// The next event, or `None` when more bytes are needed (or a publish awaits an answer).
    ///
    /// # Errors
    /// A [`SessionError`] when the peer broke the protocol; the connection must close.
    pub fn poll_event(&mut self) -> Result<Option<SessionEvent>, SessionError> {
        loop {
            if matches!(self.state, State::Authorizing { .. } | State::Closed) {
                return Ok(None);
            }
            let Some(message) = self.decoder.poll()? else {
                return Ok(None);
            };
            if let Some(event) = self.handle(message)? {
                return Ok(Some(event));
            }
        }
    }

    /// Accepts the pending publish: replies `NetStream.Publish.Start`.
    pub fn accept_publish(&mut self) {
        if let State::Authorizing { stream_id, name } =
            std::mem::replace(&mut self.state, State::Closed)
        {
            self.send(&cmd::user_control(cmd::UC_STREAM_BEGIN, stream_id));
            let description = format!("{name} is now published");
            self.send(&cmd::on_status(
                stream_id,
                "status",
                "NetStream.Publish.Start",
                &description,
            ));
            self.state = State::Publishing { stream_id };
        }
    }

    /// Rejects the pending publish: replies an error status and closes the session.
    pub fn reject_publish(&mut self, rejection: &PublishRejection) {
        if let State::Authorizing { stream_id, .. } = self.state {
            let code = match rejection {
                PublishRejection::WrongKey => "NetStream.Publish.Unauthorized",
                PublishRejection::UnknownStream | PublishRejection::Busy => {
                    "NetStream.Publish.BadName"
                }
            };
            self.send(&cmd::on_status(stream_id, "error", code, "publish refused"));
        }
        self.state = State::Closed;
    }

    fn send(&mut self, message: &Message) {
        self.encoder.write(message, &mut self.out);
    }

    fn handle(&mut self, message: Message) -> Result<Option<SessionEvent>, SessionError> {
        match message.type_id {
            msg_type::WINDOW_ACK_SIZE => {
                self.ack_window = read_u32(&message.payload).unwrap_or(0);
            }
            msg_type::USER_CONTROL => {
                if let Some(b) = message.payload.get(0..6) {
                    let event = u16::from_be_bytes([b[0], b[1]]);
                    let argument = u32::from_be_bytes([b[2], b[3], b[4], b[5]]);
                    if event == cmd::UC_PING_REQUEST {
                        self.send(&cmd::user_control(cmd::UC_PING_RESPONSE, argument));
                    }
                }
            }
            msg_type::AUDIO | msg_type::VIDEO => return Ok(self.media(&message)),
            msg_type::COMMAND_AMF0 => return self.command(&message, &message.payload),
            msg_type::COMMAND_AMF3 => {
                // A format byte (0) precedes what is AMF0 in practice.
                let body = message.payload.get(1..).unwrap_or_default();
                return self.command(&message, body);
            }
            msg_type::DATA_AMF0 | msg_type::DATA_AMF3 => {
                // @setDataFrame / onMetaData: the frames say everything we need.
                debug!(peer = %self.peer, bytes = message.payload.len(), "metadata ignored");
            }
            // Chunk size and abort are applied by the decoder; acknowledgements and
            // peer bandwidth need nothing from a receive-only server.
            _ => {}
        }
        Ok(None)
    }

    fn media(&mut self, message: &Message) -> Option<SessionEvent> {
        let State::Publishing { stream_id } = self.state else {
            return None;
        };
        if message.stream_id != stream_id {
            return None;
        }
        let outcome = if message.type_id == msg_type::VIDEO {
            self.converter.video(message.timestamp, &message.payload)
        } else {
            self.converter.audio(message.timestamp, &message.payload)
        };
        match outcome {
            Ok(TagOutcome::Frame(frame)) => Some(SessionEvent::Frame(frame)),
            Ok(TagOutcome::Config | TagOutcome::NoConfig) => None,
            Ok(TagOutcome::Unsupported(codec)) => {
                self.unsupported_tags += 1;
                if self.unsupported_seen.contains(&codec) {
                    None
                } else {
                    self.unsupported_seen.push(codec);
                    Some(SessionEvent::Unsupported(codec))
                }
            }
            Err(e) => Some(SessionEvent::MediaError(e)),
        }
    }

    fn command(
        &mut self,
        message: &Message,
        body: &[u8],
    ) -> Result<Option<SessionEvent>, SessionError> {
        let values = amf0::decode_all(body)?;
        let name = values
            .first()
            .and_then(Amf0Value::as_str)
            .unwrap_or_default();
        let transaction = values.get(1).and_then(Amf0Value::as_number).unwrap_or(0.0);
        debug!(peer = %self.peer, command = name, "rtmp command");
        match name {
            "connect" => {
                if self.state != State::Handshaken {
                    return Err(SessionError::UnexpectedCommand(name.to_owned()));
                }
                let app = values
                    .get(2)
                    .and_then(|o| o.get("app"))
                    .and_then(Amf0Value::as_str);
                self.app = cmd::clean_app(app.unwrap_or_default());
                self.send(&cmd::window_ack_size(WINDOW_SIZE));
                self.send(&cmd::set_peer_bandwidth(WINDOW_SIZE));
                self.send(&cmd::set_chunk_size(OUT_CHUNK_SIZE));
                self.encoder.set_chunk_size(OUT_CHUNK_SIZE);
                self.send(&cmd::connect_result(transaction));
                self.state = State::Connected;
            }
            "releaseStream" | "FCPublish" if transaction != 0.0 => {
                self.send(&cmd::simple_result(transaction, Amf0Value::Undefined));
            }
            "createStream" => {
                let id = self.next_stream_id;
                self.next_stream_id = self.next_stream_id.saturating_add(1);
                self.send(&cmd::simple_result(
                    transaction,
                    Amf0Value::Number(f64::from(id)),
                ));
            }
            "publish" => {
                if self.state != State::Connected {
                    return Err(SessionError::UnexpectedCommand(name.to_owned()));
                }
                let raw = values
                    .get(3)
                    .and_then(Amf0Value::as_str)
                    .unwrap_or_default();
                let (stream, key) = cmd::parse_publish_name(raw);
                self.state = State::Authorizing {
                    stream_id: message.stream_id,
                    name: stream.clone(),
                };
                return Ok(Some(SessionEvent::Publish(PublishRequest {
                    app: self.app.clone(),
                    stream,
                    key,
                    peer: self.peer,
                })));
            }
            "deleteStream" | "FCUnpublish" | "closeStream" if self.is_publishing() => {
                self.state = State::Connected;
                return Ok(Some(SessionEvent::Unpublish));
            }
            _ => {}
        }
        Ok(None)
    }
}
