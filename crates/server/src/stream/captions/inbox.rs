//! The way cues reach a stream's pipeline: the caption API puts a request in the
//! stream's inbox, the pipeline stamps it on the timeline at its next frame and answers
//! with where the cue landed (or why it could not be placed).

use std::collections::VecDeque;
use std::sync::Mutex;

use media::captions::CaptionTrack;
use tokio::sync::oneshot;

/// The most requests waiting in one stream's inbox (a flood is refused, not queued).
pub const INBOX_CAPACITY: usize = 256;

/// Where a cue goes on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CueTiming {
    /// At the live edge when the pipeline takes the cue, moved back by this many 90 kHz
    /// ticks (a captioner's or a speech recogniser's own delay).
    Now {
        /// How far back, 90 kHz ticks.
        offset_ticks: u64,
    },
    /// At the moment whose PROGRAM-DATE-TIME is this, Unix ms.
    At {
        /// The date, Unix ms.
        unix_ms: i64,
    },
}

/// Where a cue landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampedCue {
    /// Extended 90 kHz timestamp of its start (after any move into the open part of the
    /// timeline).
    pub start_ts: u64,
    /// Extended 90 kHz timestamp of its end.
    pub end_ts: u64,
    /// Its start's PROGRAM-DATE-TIME, Unix ms.
    pub start_unix_ms: i64,
    /// Its end's PROGRAM-DATE-TIME, Unix ms.
    pub end_unix_ms: i64,
}

/// Why the pipeline could not place a cue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CueRefusal {
    /// It ends before the part of the timeline still open.
    Past,
    /// It starts further ahead of the live edge than cues may.
    Future,
    /// The stream has as many tracks as it may.
    TooManyTracks,
    /// Too many cues wait to be cut.
    Full,
    /// The stream is cut by an upstream (a node following its MC): cues go to the MC.
    NotOrigin,
}

/// One cue on its way to the pipeline.
#[derive(Debug)]
pub struct CueRequest {
    /// The track it belongs to (added to the stream if new).
    pub track: CaptionTrack,
    /// The text, normalised.
    pub text: String,
    /// Where it goes.
    pub timing: CueTiming,
    /// How long it shows, 90 kHz ticks.
    pub duration_ticks: u64,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<StampedCue, CueRefusal>>,
}

/// The inbox holds [`INBOX_CAPACITY`] requests already: the captioner must slow down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxFull;

/// A stream's inbox of cue requests.
#[derive(Debug, Default)]
pub struct CaptionInbox {
    queue: Mutex<VecDeque<CueRequest>>,
    cc_language: std::sync::OnceLock<String>,
}

impl CaptionInbox {
    /// Sets the language of the stream's decoded CEA-608 track (once, before its
    /// pipeline starts); false if it was already set.
    pub fn set_cc_language(&self, language: String) -> bool {
        self.cc_language.set(language).is_ok()
    }

    /// The language of the stream's decoded CEA-608 track.
    pub fn cc_language(&self) -> String {
        self.cc_language
            .get()
            .map_or(super::DEFAULT_CC_LANGUAGE, String::as_str)
            .to_owned()
    }

    /// Queues `request`; refuses it (dropping it) when [`INBOX_CAPACITY`] requests
    /// already wait.
    ///
    /// # Errors
    /// [`InboxFull`] then.
    pub fn submit(&self, request: CueRequest) -> Result<(), InboxFull> {
        let mut queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if queue.len() >= INBOX_CAPACITY {
            return Err(InboxFull);
        }
        queue.push_back(request);
        Ok(())
    }

    /// Every waiting request, oldest first (the pipeline's call, once per frame).
    pub fn take(&self) -> VecDeque<CueRequest> {
        let mut queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *queue)
    }
}
