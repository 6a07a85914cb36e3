//! The live relay log of one rendition: what its segmenter places, as transport stream,
//! as it places it — the open marker where a segment starts, each frame, the segment's
//! caption block and close marker once it is written
//! ([`media::ts::mux::RelayMuxer`]). A relay asked for `live=1`
//! ([`crate::routes::relay`]) sends the window's whole segments, then joins this log
//! where the next segment opens, so a node gets every frame as the MC cuts it and cuts
//! the same LL-HLS parts at the same moment.
//!
//! The log keeps the chunks of the segments not yet written and of the newest written
//! one (a relay joins at the segment after the window's newest), bounded by
//! [`MAX_CHUNKS`]; a reader that falls further behind goes back to whole segments. It
//! is kept only once a live relay was asked for ([`LiveLog::wanted`]): a delivery node
//! nobody pulls from spends nothing on it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use media::segmenter::Placed;
use media::ts::mux::RelayMuxer;
use media::Segment;
use tokio::sync::watch;

/// The most chunks kept (a frame each, about 25 s of 25-fps video with its audio): a
/// segmenter that never writes a segment cannot grow the log without bound.
pub const MAX_CHUNKS: usize = 2048;

/// One piece of the live relay: the bytes of an open marker, a frame or a close.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Position in the log; consecutive.
    pub seq: u64,
    /// The segment it belongs to.
    pub msn: u64,
    /// It is the segment's open marker (where a reader may join).
    pub opens: bool,
    /// It is the segment's close (its caption block and close marker).
    pub closes: bool,
    /// The TS packets.
    pub bytes: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkKind {
    Open,
    Frame,
    Close,
}

#[derive(Debug, Default)]
struct Log {
    mux: RelayMuxer,
    chunks: VecDeque<Chunk>,
    next_seq: u64,
}

impl Log {
    fn append(&mut self, msn: u64, kind: ChunkKind, bytes: Bytes) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.chunks.push_back(Chunk {
            seq,
            msn,
            opens: kind == ChunkKind::Open,
            closes: kind == ChunkKind::Close,
            bytes,
        });
        while self.chunks.len() > MAX_CHUNKS {
            self.chunks.pop_front();
        }
    }
}

/// What a reader gets from [`LiveLog::since`].
#[derive(Debug)]
pub enum Since {
    /// The chunks from the asked position on (maybe none yet).
    Chunks(Vec<Chunk>),
    /// The asked position was dropped from the log: the reader fell behind.
    Lagged,
}

/// One rendition's live relay log; see the module docs.
#[derive(Debug)]
pub struct LiveLog {
    log: Mutex<Log>,
    /// The next sequence number (changes with every chunk).
    appended: watch::Sender<u64>,
    /// A live relay was asked for: the pipeline keeps the log from then on.
    wanted: AtomicBool,
}

impl Default for LiveLog {
    fn default() -> Self {
        Self {
            log: Mutex::new(Log::default()),
            appended: watch::channel(0).0,
            wanted: AtomicBool::new(false),
        }
    }
}

impl LiveLog {
    fn with_log<T>(&self, f: impl FnOnce(&mut Log) -> T) -> T {
        let mut guard = match self.log.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let out = f(&mut guard);
        let next = guard.next_seq;
        drop(guard);
        self.appended.send_if_modified(|n| {
            let changed = *n != next;
            *n = next;
            changed
        });
        out
    }

    /// The pipeline's call after every segmenter step: what it placed, in order.
    pub fn placed(&self, placed: Vec<Placed>) {
        if placed.is_empty() {
            return;
        }
        self.with_log(|log| {
            for p in placed {
                match p {
                    Placed::Opened(marker) => {
                        let bytes = log.mux.open(&marker);
                        log.append(marker.state.msn, ChunkKind::Open, bytes);
                    }
                    Placed::Frame(msn, frame) => {
                        let bytes = log.mux.frame(&frame);
                        log.append(msn, ChunkKind::Frame, bytes);
                    }
                }
            }
        });
    }

    /// The pipeline's call when a segment is written (its caption block spliced in):
    /// its caption block and close marker; chunks of older segments are dropped.
    pub fn written(&self, segment: &Segment) {
        self.with_log(|log| {
            let bytes = log.mux.close(&segment.marker, segment.caption_packets());
            log.append(segment.msn, ChunkKind::Close, bytes);
            while log.chunks.front().is_some_and(|c| c.msn < segment.msn) {
                log.chunks.pop_front();
            }
        });
    }

    /// Where segment `msn` opens in the log, if it does.
    pub fn opening(&self, msn: u64) -> Option<u64> {
        self.with_log(|log| {
            log.chunks
                .iter()
                .rev()
                .find(|c| c.opens && c.msn == msn)
                .map(|c| c.seq)
        })
    }

    /// The chunks from `seq` on.
    pub fn since(&self, seq: u64) -> Since {
        self.with_log(|log| {
            let first = log.chunks.front().map_or(log.next_seq, |c| c.seq);
            if seq < first {
                return Since::Lagged;
            }
            let skip = usize::try_from(seq - first).unwrap_or(usize::MAX);
            Since::Chunks(log.chunks.iter().skip(skip).cloned().collect())
        })
    }

    /// Watches the log's end (what a live relay waits on); from the first call on, the
    /// log is [`LiveLog::wanted`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.wanted.store(true, Ordering::Relaxed);
        self.appended.subscribe()
    }

    /// Whether a live relay was ever asked for (the pipeline keeps the log only then;
    /// the first reader joins at the next segment that opens).
    pub fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }
}
