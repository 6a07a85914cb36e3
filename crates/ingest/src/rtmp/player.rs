//! The client side of RTMP play, as a sans-I/O state machine (the pull input's
//! protocol): after the handshake it sends `connect`, `createStream` and `play`, then
//! turns the server's audio and video messages into [`Frame`]s with the same
//! [`FlvConverter`] a publish goes through.
//!
//! ```text
//! connect ─► _result ─► createStream ─► _result(id) ─► play ─► onStatus Play.Start ─► media
//! ```

use bytes::Bytes;
use media::Frame;
use thiserror::Error;

use super::amf0::{self, Amf0Error, Amf0Value};
use super::chunk::{msg_type, read_u32, ChunkDecoder, ChunkEncoder, ChunkError, Message};
use super::commands::{self as cmd, CSID_COMMAND, OUT_CHUNK_SIZE, WINDOW_SIZE};
use super::flv::{FlvConverter, FlvError, TagOutcome, UnsupportedCodec};
use super::pull_url::PullUrl;

/// The chunk stream `play` and the stream's control go on.
const CSID_PLAY: u32 = 8;
/// User control event: the client's buffer length for a stream.
const UC_SET_BUFFER_LENGTH: u16 = 3;
/// The buffer the player announces, in milliseconds.
const BUFFER_MS: u32 = 3000;
/// Transaction ids of the two commands that expect a `_result`.
const TX_CONNECT: f64 = 1.0;
const TX_CREATE_STREAM: f64 = 2.0;

/// Why the play session cannot continue.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PlayerError {
    /// The server's chunk stream is malformed or over the limits.
    #[error("chunk stream: {0}")]
    Chunk(#[from] ChunkError),
    /// A command that is not valid AMF0.
    #[error("command: {0}")]
    Amf(#[from] Amf0Error),
    /// The server refused a step (`_error`, or an error status such as
    /// `NetStream.Play.StreamNotFound`).
    #[error("refused: {code} {description}")]
    Refused {
        /// The status code, or the command refused.
        code: String,
        /// The server's words.
        description: String,
    },
}

/// What the connection task must act on.
#[derive(Debug, PartialEq)]
pub enum PlayerEvent {
    /// The server started the stream (`NetStream.Play.Start`).
    Playing,
    /// An access unit.
    Frame(Frame),
    /// The server ended the stream (`NetStream.Play.Stop`, `UnpublishNotify`,
    /// `Complete`): the status code.
    Ended(String),
    /// The first tag of a codec that is dropped (later ones are not reported).
    Unsupported(UnsupportedCodec),
    /// A media tag that could not be converted; it is dropped and play goes on.
    MediaError(FlvError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting,
    CreatingStream,
    Starting,
    Playing,
}

/// One play session's protocol state.
#[derive(Debug)]
pub struct Player {
    decoder: ChunkDecoder,
    encoder: ChunkEncoder,
    out: Vec<u8>,
    converter: FlvConverter,
    state: State,
    stream: String,
    received: u64,
    acked: u64,
    ack_window: u32,
    unsupported_seen: Vec<UnsupportedCodec>,
}

impl Player {
    /// A session for `url` whose handshake is done; `connect` is queued at once.
    /// Messages above `max_message_size` bytes end it.
    pub fn new(url: &PullUrl, max_message_size: u32) -> Self {
        let mut player = Self {
            decoder: ChunkDecoder::new(max_message_size),
            encoder: ChunkEncoder::default(),
            out: Vec::new(),
            converter: FlvConverter::new(),
            state: State::Connecting,
            stream: url.stream.clone(),
            received: 0,
            acked: 0,
            ack_window: 0,
            unsupported_seen: Vec::new(),
        };
        player.send(&cmd::set_chunk_size(OUT_CHUNK_SIZE));
        player.encoder.set_chunk_size(OUT_CHUNK_SIZE);
        player.send(&cmd::command(
            CSID_COMMAND,
            0,
            &[
                Amf0Value::string("connect"),
                Amf0Value::Number(TX_CONNECT),
                Amf0Value::object([
                    ("app", Amf0Value::string(&url.app)),
                    ("flashVer", Amf0Value::string("LNX 9,0,124,2")),
                    ("tcUrl", Amf0Value::string(&url.tc_url())),
                    ("fpad", Amf0Value::Boolean(false)),
                    ("capabilities", Amf0Value::Number(15.0)),
                    ("audioCodecs", Amf0Value::Number(4071.0)),
                    ("videoCodecs", Amf0Value::Number(252.0)),
                    ("videoFunction", Amf0Value::Number(1.0)),
                ]),
            ],
        ));
        player
    }

    /// Appends bytes read from the server (and acknowledges them when its window asks).
    pub fn feed(&mut self, data: &[u8]) {
        self.decoder.feed(data);
        self.received += data.len() as u64;
        if self.ack_window > 0 && self.received - self.acked >= u64::from(self.ack_window) {
            self.acked = self.received;
            self.send(&cmd::acknowledgement(self.received as u32));
        }
    }

    /// Bytes to write to the server; empty when there is nothing to send.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// True once the server started the stream.
    pub fn is_playing(&self) -> bool {
        self.state == State::Playing
    }

    /// The next event, or `None` when more bytes are needed.
    ///
    /// # Errors
    /// A [`PlayerError`] when the server broke the protocol or refused; the
    /// connection must close.
    pub fn poll_event(&mut self) -> Result<Option<PlayerEvent>, PlayerError> {
        while let Some(message) = self.decoder.poll()? {
            if let Some(event) = self.handle(&message)? {
                return Ok(Some(event));
            }
        }
        Ok(None)
    }

    fn send(&mut self, message: &Message) {
        self.encoder.write(message, &mut self.out);
    }

    fn handle(&mut self, message: &Message) -> Result<Option<PlayerEvent>, PlayerError> {
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
            msg_type::AUDIO | msg_type::VIDEO => return Ok(self.media(message)),
            msg_type::COMMAND_AMF0 => return self.command(&message.payload),
            msg_type::COMMAND_AMF3 => {
                return self.command(message.payload.get(1..).unwrap_or_default());
            }
            // Metadata says nothing the frames do not; chunk size and abort are the
            // decoder's; peer bandwidth and acknowledgements need nothing from a player.
            _ => {}
        }
        Ok(None)
    }

    fn media(&mut self, message: &Message) -> Option<PlayerEvent> {
        if !matches!(self.state, State::Starting | State::Playing) {
            return None;
        }
        let outcome = if message.type_id == msg_type::VIDEO {
            self.converter.video(message.timestamp, &message.payload)
        } else {
            self.converter.audio(message.timestamp, &message.payload)
        };
        match outcome {
            Ok(TagOutcome::Frame(frame)) => Some(PlayerEvent::Frame(frame)),
            Ok(TagOutcome::Config | TagOutcome::NoConfig) => None,
            Ok(TagOutcome::Unsupported(codec)) => {
                if self.unsupported_seen.contains(&codec) {
                    None
                } else {
                    self.unsupported_seen.push(codec);
                    Some(PlayerEvent::Unsupported(codec))
                }
            }
            Err(e) => Some(PlayerEvent::MediaError(e)),
        }
    }

    fn command(&mut self, body: &[u8]) -> Result<Option<PlayerEvent>, PlayerError> {
        let values = amf0::decode_all(body)?;
        let name = values
            .first()
            .and_then(Amf0Value::as_str)
            .unwrap_or_default();
        let transaction = values.get(1).and_then(Amf0Value::as_number).unwrap_or(0.0);
        match name {
            "_result" if transaction == TX_CONNECT && self.state == State::Connecting => {
                self.send(&cmd::window_ack_size(WINDOW_SIZE));
                self.send(&cmd::command(
                    CSID_COMMAND,
                    0,
                    &[
                        Amf0Value::string("createStream"),
                        Amf0Value::Number(TX_CREATE_STREAM),
                        Amf0Value::Null,
                    ],
                ));
                self.state = State::CreatingStream;
            }
            "_result" if transaction == TX_CREATE_STREAM && self.state == State::CreatingStream => {
                let id = values.get(3).and_then(Amf0Value::as_number).unwrap_or(1.0);
                let stream_id = if (0.0..=f64::from(u32::MAX)).contains(&id) {
                    id as u32
                } else {
                    1
                };
                self.play(stream_id);
                self.state = State::Starting;
            }
            "_error" => {
                let info = values.get(3);
                return Err(PlayerError::Refused {
                    code: status_field(info, "code")
                        .unwrap_or_else(|| format!("transaction {transaction}")),
                    description: status_field(info, "description").unwrap_or_default(),
                });
            }
            "onStatus" => return self.on_status(values.get(3)),
            _ => {}
        }
        Ok(None)
    }

    fn play(&mut self, stream_id: u32) {
        self.send(&cmd::command(
            CSID_PLAY,
            stream_id,
            &[
                Amf0Value::string("play"),
                Amf0Value::Number(0.0),
                Amf0Value::Null,
                Amf0Value::string(&self.stream),
                // Live, or recorded if there is no live stream of that name.
                Amf0Value::Number(-2.0),
            ],
        ));
        let mut payload = UC_SET_BUFFER_LENGTH.to_be_bytes().to_vec();
        payload.extend_from_slice(&stream_id.to_be_bytes());
        payload.extend_from_slice(&BUFFER_MS.to_be_bytes());
        self.send(&Message {
            csid: cmd::CSID_CONTROL,
            timestamp: 0,
            type_id: msg_type::USER_CONTROL,
            stream_id: 0,
            payload: Bytes::from(payload),
        });
    }

    fn on_status(&mut self, info: Option<&Amf0Value>) -> Result<Option<PlayerEvent>, PlayerError> {
        let code = status_field(info, "code").unwrap_or_default();
        let level = status_field(info, "level").unwrap_or_default();
        if level == "error" {
            return Err(PlayerError::Refused {
                code,
                description: status_field(info, "description").unwrap_or_default(),
            });
        }
        match code.as_str() {
            "NetStream.Play.Start" if self.state == State::Starting => {
                self.state = State::Playing;
                Ok(Some(PlayerEvent::Playing))
            }
            "NetStream.Play.Stop"
            | "NetStream.Play.UnpublishNotify"
            | "NetStream.Play.Complete" => Ok(Some(PlayerEvent::Ended(code))),
            _ => Ok(None),
        }
    }
}

/// The longest status field kept, in characters.
const MAX_STATUS_FIELD: usize = 256;

/// A field of the server's status for the input's error, which is logged and shown in
/// the status API: at most [`MAX_STATUS_FIELD`] characters, every control character (a
/// line break included) a space, so a server cannot write lines into the log.
fn status_field(info: Option<&Amf0Value>, key: &str) -> Option<String> {
    let text = info?.get(key)?.as_str()?;
    let plain = |c: char| if c.is_control() { ' ' } else { c };
    Some(text.chars().take(MAX_STATUS_FIELD).map(plain).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_command(stream_id: u32, values: &[Amf0Value]) -> Vec<u8> {
        let mut out = Vec::new();
        ChunkEncoder::default().write(&cmd::command(CSID_COMMAND, stream_id, values), &mut out);
        out
    }

    /// The commands a player wrote, by name, decoded as a server would.
    fn commands(bytes: &[u8], decoder: &mut ChunkDecoder) -> Vec<(String, u32, Vec<Amf0Value>)> {
        decoder.feed(bytes);
        let mut names = Vec::new();
        while let Some(message) = decoder.poll().unwrap() {
            if message.type_id == msg_type::COMMAND_AMF0 {
                let values = amf0::decode_all(&message.payload).unwrap();
                let name = values[0].as_str().unwrap().to_owned();
                names.push((name, message.stream_id, values));
            }
        }
        names
    }

    #[test]
    fn connect_create_stream_play_then_frames() {
        let url = PullUrl::parse("rtmp://h/live/room?key=k").unwrap();
        let mut player = Player::new(&url, 1 << 20);
        let mut server = ChunkDecoder::new(1 << 20);
        let sent = commands(&player.take_output(), &mut server);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, "connect");
        assert_eq!(
            sent[0].2[2].get("app").and_then(Amf0Value::as_str),
            Some("live")
        );
        assert_eq!(
            sent[0].2[2].get("tcUrl").and_then(Amf0Value::as_str),
            Some("rtmp://h:1935/live")
        );

        player.feed(&server_command(
            0,
            &[
                Amf0Value::string("_result"),
                Amf0Value::Number(1.0),
                Amf0Value::Null,
                Amf0Value::object([("code", Amf0Value::string("NetConnection.Connect.Success"))]),
            ],
        ));
        assert_eq!(player.poll_event().unwrap(), None);
        let sent = commands(&player.take_output(), &mut server);
        assert_eq!(sent[0].0, "createStream");

        player.feed(&server_command(
            0,
            &[
                Amf0Value::string("_result"),
                Amf0Value::Number(2.0),
                Amf0Value::Null,
                Amf0Value::Number(7.0),
            ],
        ));
        assert_eq!(player.poll_event().unwrap(), None);
        let sent = commands(&player.take_output(), &mut server);
        assert_eq!(sent[0].0, "play");
        assert_eq!(sent[0].1, 7, "play goes on the created stream");
        assert_eq!(sent[0].2[3].as_str(), Some("room?key=k"));

        player.feed(&server_command(
            7,
            &[
                Amf0Value::string("onStatus"),
                Amf0Value::Number(0.0),
                Amf0Value::Null,
                Amf0Value::object([
                    ("level", Amf0Value::string("status")),
                    ("code", Amf0Value::string("NetStream.Play.Start")),
                ]),
            ],
        ));
        assert_eq!(player.poll_event().unwrap(), Some(PlayerEvent::Playing));
        assert!(player.is_playing());
    }

    #[test]
    fn a_servers_words_are_one_bounded_line() {
        let url = PullUrl::parse("rtmp://h/live/none").unwrap();
        let mut player = Player::new(&url, 1 << 20);
        let long = format!(
            "refused\n2026-01-01T00:00:00Z  INFO forged\r\x1b[0m{}",
            "x".repeat(5000)
        );
        player.feed(&server_command(
            0,
            &[
                Amf0Value::string("onStatus"),
                Amf0Value::Number(0.0),
                Amf0Value::Null,
                Amf0Value::object([
                    ("level", Amf0Value::string("error")),
                    ("code", Amf0Value::string("NetStream.Play.Failed\nforged")),
                    ("description", Amf0Value::string(&long)),
                ]),
            ],
        ));
        let Err(PlayerError::Refused { code, description }) = player.poll_event() else {
            panic!("not a refusal");
        };
        assert_eq!(code, "NetStream.Play.Failed forged");
        assert!(description.starts_with("refused 2026-01-01T00:00:00Z  INFO forged  [0m"));
        assert_eq!(description.chars().count(), MAX_STATUS_FIELD);
        assert!(!description.contains(char::is_control), "{description:?}");
    }

    #[test]
    fn a_stream_not_found_is_a_refusal_with_its_code() {
        let url = PullUrl::parse("rtmp://h/live/none").unwrap();
        let mut player = Player::new(&url, 1 << 20);
        player.feed(&server_command(
            0,
            &[
                Amf0Value::string("onStatus"),
                Amf0Value::Number(0.0),
                Amf0Value::Null,
                Amf0Value::object([
                    ("level", Amf0Value::string("error")),
                    ("code", Amf0Value::string("NetStream.Play.StreamNotFound")),
                    ("description", Amf0Value::string("no such stream")),
                ]),
            ],
        ));
        assert_eq!(
            player.poll_event(),
            Err(PlayerError::Refused {
                code: "NetStream.Play.StreamNotFound".into(),
                description: "no such stream".into()
            })
        );
    }
}
