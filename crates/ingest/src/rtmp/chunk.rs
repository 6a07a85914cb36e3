//! The RTMP chunk stream (RTMP 1.0 spec, section 5.3): the decoder reassembles
//! messages from interleaved chunks, the encoder splits outgoing messages into chunks.
//!
//! Both are sans-I/O: bytes in, messages out. The decoder applies the two chunk-layer
//! control messages itself (Set Chunk Size and Abort) so that every later byte is read
//! with the right framing, and still hands them up for accounting.

use std::collections::HashMap;

use bytes::{Buf, Bytes, BytesMut};
use thiserror::Error;

/// The chunk size both directions start with.
pub const DEFAULT_CHUNK_SIZE: u32 = 128;

/// The largest chunk size the spec allows (31 bits).
pub const MAX_CHUNK_SIZE: u32 = 0x7fff_ffff;

/// How many distinct chunk stream ids one connection may use; real publishers use a handful.
pub const MAX_CHUNK_STREAMS: usize = 64;

/// A 24-bit timestamp field with this value means "a 32-bit extended timestamp follows".
const EXTENDED_TIMESTAMP: u32 = 0x00ff_ffff;

/// Protocol control message type ids (spec 5.4).
pub mod msg_type {
    /// Set Chunk Size.
    pub const SET_CHUNK_SIZE: u8 = 1;
    /// Abort Message.
    pub const ABORT: u8 = 2;
    /// Acknowledgement.
    pub const ACKNOWLEDGEMENT: u8 = 3;
    /// User Control Message.
    pub const USER_CONTROL: u8 = 4;
    /// Window Acknowledgement Size.
    pub const WINDOW_ACK_SIZE: u8 = 5;
    /// Set Peer Bandwidth.
    pub const SET_PEER_BANDWIDTH: u8 = 6;
    /// Audio data (an FLV audio tag body).
    pub const AUDIO: u8 = 8;
    /// Video data (an FLV video tag body).
    pub const VIDEO: u8 = 9;
    /// Data message in AMF3 (a leading format byte, then AMF0 in practice).
    pub const DATA_AMF3: u8 = 15;
    /// Command message in AMF3 (a leading format byte, then AMF0 in practice).
    pub const COMMAND_AMF3: u8 = 17;
    /// Data message in AMF0 (`@setDataFrame`, `onMetaData`).
    pub const DATA_AMF0: u8 = 18;
    /// Command message in AMF0 (`connect`, `publish`, ...).
    pub const COMMAND_AMF0: u8 = 20;
}

/// Why the chunk stream cannot be read any further; the connection must be closed.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ChunkError {
    /// A type 1, 2 or 3 header on a chunk stream that never had a type 0 header.
    #[error("chunk header type {fmt} on chunk stream {csid} without a previous header")]
    NoPreviousHeader {
        /// The chunk stream id.
        csid: u32,
        /// The header type (1, 2 or 3).
        fmt: u8,
    },
    /// A message longer than the configured limit.
    #[error("message of {length} bytes exceeds the limit of {limit}")]
    MessageTooLarge {
        /// The announced length.
        length: u32,
        /// The limit in force.
        limit: u32,
    },
    /// Set Chunk Size with zero.
    #[error("invalid chunk size {0}")]
    InvalidChunkSize(u32),
    /// More chunk streams than [`MAX_CHUNK_STREAMS`].
    #[error("too many chunk streams")]
    TooManyChunkStreams,
    /// More partially received bytes than the limit allows across all chunk streams.
    #[error("too many partially received bytes")]
    TooMuchBuffered,
    /// A protocol control message shorter than its fixed size.
    #[error("protocol control message type {0} truncated")]
    ControlTruncated(u8),
}

/// One reassembled RTMP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The chunk stream it arrived on.
    pub csid: u32,
    /// The message timestamp in milliseconds (32 bits, wraps).
    pub timestamp: u32,
    /// The message type id (see [`msg_type`]).
    pub type_id: u8,
    /// The message stream id (0 for control and connection commands).
    pub stream_id: u32,
    /// The message body.
    pub payload: Bytes,
}

/// What the decoder remembers per chunk stream, for headers that omit fields.
#[derive(Debug)]
struct StreamState {
    /// Absolute timestamp of the last message started on this chunk stream.
    timestamp: u32,
    /// The last timestamp field read (absolute for type 0, delta otherwise), extended.
    delta: u32,
    /// Whether the last type 0/1/2 header used an extended timestamp.
    extended: bool,
    length: u32,
    type_id: u8,
    stream_id: u32,
    /// Payload received so far for the message in progress.
    partial: Option<BytesMut>,
}

/// Reassembles RTMP messages from a byte stream (after the handshake).
#[derive(Debug)]
pub struct ChunkDecoder {
    buf: BytesMut,
    chunk_size: u32,
    max_message_size: u32,
    buffered: usize,
    streams: HashMap<u32, StreamState>,
}

/// What consuming one chunk achieved.
enum Chunk {
    /// The chunk's payload is not all here yet; nothing was consumed.
    NeedMore,
    /// The chunk was consumed; its message is still incomplete.
    Consumed,
    /// The chunk completed a message.
    Complete(Message),
}

/// A parsed chunk header: everything needed to place the payload that follows.
struct Header {
    header_len: usize,
    csid: u32,
    fmt: u8,
    ts_value: u32,
    extended: bool,
    length: u32,
    type_id: u8,
    stream_id: u32,
}

impl ChunkDecoder {
    /// A decoder for messages of at most `max_message_size` bytes.
    pub fn new(max_message_size: u32) -> Self {
        Self {
            buf: BytesMut::new(),
            chunk_size: DEFAULT_CHUNK_SIZE,
            max_message_size,
            buffered: 0,
            streams: HashMap::new(),
        }
    }

    /// Appends received bytes; call [`ChunkDecoder::poll`] until it returns `None`.
    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The chunk size the peer currently sends with.
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// Bytes received but not yet consumed as whole chunks.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next complete message, or `None` when more bytes are needed.
    ///
    /// # Errors
    /// A [`ChunkError`] when the stream is malformed or exceeds the limits; the
    /// decoder must not be used afterwards.
    pub fn poll(&mut self) -> Result<Option<Message>, ChunkError> {
        loop {
            let Some(header) = self.parse_header()? else {
                return Ok(None);
            };
            match self.take_chunk(&header)? {
                Chunk::NeedMore => return Ok(None),
                Chunk::Consumed => {}
                Chunk::Complete(message) => {
                    self.apply_control(&message)?;
                    return Ok(Some(message));
                }
            }
        }
    }

    fn parse_header(&self) -> Result<Option<Header>, ChunkError> {
        let data = &self.buf[..];
        let Some(&b0) = data.first() else {
            return Ok(None);
        };
        let fmt = b0 >> 6;
        let (csid, mut pos) = match b0 & 0x3f {
            0 => match data.get(1) {
                Some(&b1) => (64 + u32::from(b1), 2),
                None => return Ok(None),
            },
            1 => match (data.get(1), data.get(2)) {
                (Some(&b1), Some(&b2)) => (64 + u32::from(b1) + 256 * u32::from(b2), 3),
                _ => return Ok(None),
            },
            id => (u32::from(id), 1),
        };
        let fields_len = [11, 7, 3, 0][usize::from(fmt)];
        let Some(fields) = data.get(pos..pos + fields_len) else {
            return Ok(None);
        };
        pos += fields_len;
        let prev = self.streams.get(&csid);
        let prev = match (fmt, prev) {
            (0, p) => p,
            (_, Some(p)) => Some(p),
            (_, None) => return Err(ChunkError::NoPreviousHeader { csid, fmt }),
        };
        let be24 = |b: &[u8]| (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let (ts_field, extended) = if fmt == 3 {
            let p = prev.expect("checked above: type 3 requires a previous header");
            (p.delta, p.extended)
        } else {
            let field = be24(&fields[0..3]);
            (field, field == EXTENDED_TIMESTAMP)
        };
        let (length, type_id) = match (fmt, prev) {
            (0 | 1, _) => (be24(&fields[3..6]), fields[6]),
            (_, Some(p)) => (p.length, p.type_id),
            (_, None) => unreachable!("types 2 and 3 checked for a previous header above"),
        };
        let stream_id = match (fmt, prev) {
            (0, _) => u32::from_le_bytes([fields[7], fields[8], fields[9], fields[10]]),
            (_, Some(p)) => p.stream_id,
            (_, None) => unreachable!("types 1 to 3 checked for a previous header above"),
        };
        let ts_value = if extended {
            let Some(ext) = data.get(pos..pos + 4) else {
                return Ok(None);
            };
            pos += 4;
            u32::from_be_bytes([ext[0], ext[1], ext[2], ext[3]])
        } else {
            ts_field
        };
        if length > self.max_message_size {
            return Err(ChunkError::MessageTooLarge {
                length,
                limit: self.max_message_size,
            });
        }
        Ok(Some(Header {
            header_len: pos,
            csid,
            fmt,
            ts_value,
            extended,
            length,
            type_id,
            stream_id,
        }))
    }

    /// Consumes one chunk whose header is parsed, if its payload is all here.
    fn take_chunk(&mut self, h: &Header) -> Result<Chunk, ChunkError> {
        if !self.streams.contains_key(&h.csid) && self.streams.len() >= MAX_CHUNK_STREAMS {
            return Err(ChunkError::TooManyChunkStreams);
        }
        let state = self.streams.entry(h.csid).or_insert_with(|| StreamState {
            timestamp: 0,
            delta: 0,
            extended: false,
            length: 0,
            type_id: 0,
            stream_id: 0,
            partial: None,
        });
        let continuation = h.fmt == 3 && state.partial.is_some();
        let received = match (&state.partial, continuation) {
            (Some(p), true) => p.len(),
            _ => 0,
        };
        let remaining = h.length as usize - received.min(h.length as usize);
        let n = remaining.min(self.chunk_size as usize);
        if self.buf.len() < h.header_len + n {
            return Ok(Chunk::NeedMore);
        }
        if !continuation {
            // A new header while a message is in progress abandons that message.
            if let Some(old) = state.partial.take() {
                self.buffered -= old.len();
            }
            state.timestamp = if h.fmt == 0 {
                h.ts_value
            } else {
                state.timestamp.wrapping_add(h.ts_value)
            };
            // With an extended timestamp, type 3 headers after this one carry the value
            // again on the wire (the decoder reads it there); otherwise they reuse it.
            state.delta = h.ts_value;
            state.extended = h.extended;
            state.length = h.length;
            state.type_id = h.type_id;
            state.stream_id = h.stream_id;
            state.partial = Some(BytesMut::with_capacity((h.length as usize).min(64 * 1024)));
        }
        self.buf.advance(h.header_len);
        let chunk = self.buf.split_to(n);
        self.buffered += n;
        if self.buffered > 2 * self.max_message_size as usize {
            return Err(ChunkError::TooMuchBuffered);
        }
        let partial = state
            .partial
            .as_mut()
            .expect("a message is in progress: set above or continued");
        partial.extend_from_slice(&chunk);
        if partial.len() < state.length as usize {
            return Ok(Chunk::Consumed);
        }
        let payload = state
            .partial
            .take()
            .expect("a message is in progress")
            .freeze();
        self.buffered -= payload.len();
        Ok(Chunk::Complete(Message {
            csid: h.csid,
            timestamp: state.timestamp,
            type_id: state.type_id,
            stream_id: state.stream_id,
            payload,
        }))
    }

    fn apply_control(&mut self, message: &Message) -> Result<(), ChunkError> {
        match message.type_id {
            msg_type::SET_CHUNK_SIZE => {
                let size = read_u32(&message.payload)
                    .ok_or(ChunkError::ControlTruncated(message.type_id))?
                    & MAX_CHUNK_SIZE;
                if size == 0 {
                    return Err(ChunkError::InvalidChunkSize(size));
                }
                self.chunk_size = size;
            }
            msg_type::ABORT => {
                let csid = read_u32(&message.payload)
                    .ok_or(ChunkError::ControlTruncated(message.type_id))?;
                if let Some(partial) = self.streams.get_mut(&csid).and_then(|s| s.partial.take()) {
                    self.buffered -= partial.len();
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Reads a big-endian u32 from the start of a control message body.
pub(crate) fn read_u32(payload: &[u8]) -> Option<u32> {
    let b = payload.get(0..4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Splits outgoing messages into chunks (type 0 header, then type 3 continuations).
#[derive(Debug, Clone)]
pub struct ChunkEncoder {
    chunk_size: u32,
}

impl Default for ChunkEncoder {
    fn default() -> Self {
        Self {
            chunk_size: DEFAULT_CHUNK_SIZE,
        }
    }
}

impl ChunkEncoder {
    /// The chunk size this side sends with.
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// Changes the outgoing chunk size; call it right after writing a Set Chunk Size
    /// message. Zero is raised to one and sizes above [`MAX_CHUNK_SIZE`] are capped.
    pub fn set_chunk_size(&mut self, size: u32) {
        self.chunk_size = size.clamp(1, MAX_CHUNK_SIZE);
    }

    /// Appends `message` as chunks on chunk stream `message.csid` (2..=65599).
    ///
    /// Messages longer than 2^24 - 1 bytes cannot be framed; their length is truncated
    /// by the caller's contract (this server only sends small control messages).
    pub fn write(&self, message: &Message, out: &mut Vec<u8>) {
        debug_assert!((2..=65_599).contains(&message.csid));
        debug_assert!(message.payload.len() < 1 << 24);
        let extended = message.timestamp >= EXTENDED_TIMESTAMP;
        let ts_field = if extended {
            EXTENDED_TIMESTAMP
        } else {
            message.timestamp
        };
        let len = message.payload.len() as u32;
        write_basic_header(0, message.csid, out);
        out.extend_from_slice(&ts_field.to_be_bytes()[1..]);
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.push(message.type_id);
        out.extend_from_slice(&message.stream_id.to_le_bytes());
        if extended {
            out.extend_from_slice(&message.timestamp.to_be_bytes());
        }
        let mut chunks = message.payload.chunks(self.chunk_size as usize);
        if let Some(first) = chunks.next() {
            out.extend_from_slice(first);
        }
        for chunk in chunks {
            write_basic_header(3, message.csid, out);
            if extended {
                out.extend_from_slice(&message.timestamp.to_be_bytes());
            }
            out.extend_from_slice(chunk);
        }
    }
}

fn write_basic_header(fmt: u8, csid: u32, out: &mut Vec<u8>) {
    match csid {
        0..=63 => out.push((fmt << 6) | csid as u8),
        64..=319 => out.extend_from_slice(&[fmt << 6, (csid - 64) as u8]),
        _ => {
            let id = csid - 64;
            out.extend_from_slice(&[(fmt << 6) | 1, (id & 0xff) as u8, (id >> 8) as u8]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(decoder: &mut ChunkDecoder) -> Vec<Message> {
        let mut out = Vec::new();
        while let Some(m) = decoder.poll().unwrap() {
            out.push(m);
        }
        out
    }

    #[test]
    fn header_types_reuse_previous_fields() {
        let mut bytes = vec![
            // type 0, csid 4: ts 1000, len 3, type 9, stream 1
            0x04, 0x00, 0x03, 0xe8, 0x00, 0x00, 0x03, 0x09, 0x01, 0x00, 0x00, 0x00, 1, 2, 3,
        ];
        // type 1, csid 4: delta 40, len 2, type 8
        bytes.extend_from_slice(&[0x44, 0x00, 0x00, 0x28, 0x00, 0x00, 0x02, 0x08, 4, 5]);
        // type 2, csid 4: delta 20
        bytes.extend_from_slice(&[0x84, 0x00, 0x00, 0x14, 6, 7]);
        // type 3, csid 4: a new message with the same delta
        bytes.extend_from_slice(&[0xc4, 8, 9]);
        let mut d = ChunkDecoder::new(1 << 20);
        d.feed(&bytes);
        let got = decode_all(&mut d);
        let summary: Vec<_> = got
            .iter()
            .map(|m| (m.timestamp, m.type_id, m.stream_id, m.payload.to_vec()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (1000, 9, 1, vec![1, 2, 3]),
                (1040, 8, 1, vec![4, 5]),
                (1060, 8, 1, vec![6, 7]),
                (1080, 8, 1, vec![8, 9]),
            ]
        );
    }

    #[test]
    fn extended_timestamp_is_repeated_on_continuations() {
        let payload: Vec<u8> = (0..=255).collect();
        let message = Message {
            csid: 6,
            timestamp: 0x0123_4567,
            type_id: 9,
            stream_id: 1,
            payload: Bytes::from(payload),
        };
        let mut out = Vec::new();
        ChunkEncoder::default().write(&message, &mut out);
        // 12-byte header + 4 ext + 128, then 1 + 4 + 128.
        assert_eq!(out.len(), 12 + 4 + 128 + 1 + 4 + 128);
        let mut d = ChunkDecoder::new(1 << 20);
        d.feed(&out);
        assert_eq!(decode_all(&mut d), vec![message]);
    }

    #[test]
    fn unknown_chunk_stream_with_type3_is_an_error() {
        let mut d = ChunkDecoder::new(1 << 20);
        d.feed(&[0xc7, 0, 0]);
        assert_eq!(
            d.poll(),
            Err(ChunkError::NoPreviousHeader { csid: 7, fmt: 3 })
        );
    }

    #[test]
    fn absurd_length_is_refused_before_buffering() {
        let mut d = ChunkDecoder::new(1000);
        d.feed(&[0x04, 0, 0, 0, 0xff, 0xff, 0xff, 9, 1, 0, 0, 0]);
        assert_eq!(
            d.poll(),
            Err(ChunkError::MessageTooLarge {
                length: 0xff_ffff,
                limit: 1000
            })
        );
    }

    #[test]
    fn abort_discards_the_partial_message() {
        let mut d = ChunkDecoder::new(1 << 20);
        // 200-byte message on csid 4: only the first 128-byte chunk arrives.
        d.feed(&[0x04, 0, 0, 0, 0, 0, 200, 9, 1, 0, 0, 0]);
        d.feed(&[0xaa; 128]);
        // Abort csid 4, then a fresh type-0 message on csid 4.
        d.feed(&[0x02, 0, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 0, 0, 0, 4]);
        d.feed(&[0x04, 0, 0, 5, 0, 0, 1, 8, 1, 0, 0, 0, 0x55]);
        let got = decode_all(&mut d);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].type_id, msg_type::ABORT);
        assert_eq!(got[1].payload.as_ref(), &[0x55]);
        assert_eq!(got[1].timestamp, 5);
    }
}
