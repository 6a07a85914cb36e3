//! The origin's caption book: the cues of a stream waiting to be cut into segments.
//!
//! Cues arrive stamped on the stream's timeline (from the caption API, or from the
//! 608 decoder as what is on screen changes). When the origin cuts segment `msn`
//! spanning `[start, end)`, [`CaptionBook::cut`] hands the pieces of every cue in that
//! span to the segment as its [`CaptionBlock`]; a cue longer than a segment is cut into
//! one piece per segment, each piece inside its segment. What has been cut is final:
//! a cue can only be placed on the part of the timeline not cut yet (the open segment
//! and after it).

use thiserror::Error;

use super::block::{CaptionBlock, CaptionTrack, Cue, MAX_BLOCK_CUES, MAX_TRACKS};
use crate::CLOCK_HZ;

/// The most cues waiting in the book; more are refused ([`BookError::Full`]). One
/// less than a block holds, so that every waiting cue and the 608 caption on screen
/// always fit in the block of the segment they fall in: a placed cue is never left out.
pub const MAX_PENDING_CUES: usize = MAX_BLOCK_CUES - 1;

/// How long a decoded 608 caption stays without a change on screen before it is taken
/// down: 16 s, the time after which CEA-608 decoders erase captions whose data stopped.
pub const CAPTION_608_TIMEOUT_TICKS: u64 = 16 * CLOCK_HZ;

/// The track id of the decoded CEA-608 channel 1.
pub const CC1_TRACK: &str = "cc1";

/// Why the book refused a cue.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BookError {
    /// The cue ends where the timeline is already cut.
    #[error("the cue ends before the part of the timeline still open")]
    Past,
    /// The stream already has [`MAX_TRACKS`] subtitle tracks.
    #[error("the stream already has {MAX_TRACKS} subtitle tracks")]
    TooManyTracks,
    /// [`MAX_PENDING_CUES`] cues are waiting.
    #[error("{MAX_PENDING_CUES} cues are already waiting")]
    Full,
}

#[derive(Debug, Clone)]
struct Pending {
    track: u8,
    start_ts: u64,
    end_ts: u64,
    text: String,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct CaptionBook {
    tracks: Vec<CaptionTrack>,
    pending: Vec<Pending>,
    /// The decoded 608 caption on screen: track, since, text.
    on_screen: Option<(u8, u64, String)>,
    /// Where the last cut segment ended: nothing can be placed before it.
    cut_until: Option<u64>,
    dropped: u64,
}

impl CaptionBook {
    /// An empty book: no tracks, so segments get no block.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stream's tracks, in the order they were added.
    pub fn tracks(&self) -> &[CaptionTrack] {
        &self.tracks
    }

    /// Where the timeline is still open: the end of the last cut segment.
    pub fn open_from(&self) -> Option<u64> {
        self.cut_until
    }

    /// Cue pieces left out of blocks because a segment had more than
    /// [`MAX_BLOCK_CUES`], and cues dropped when their timeline was left behind.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Whether a cue ending at `end_ts` can still be placed, and there is room for it
    /// (what [`CaptionBook::add`] checks, asked before a new track is added for it).
    ///
    /// # Errors
    /// As [`CaptionBook::add`].
    pub fn room_for(&self, end_ts: u64) -> Result<(), BookError> {
        if end_ts <= self.cut_until.unwrap_or(0) {
            return Err(BookError::Past);
        }
        if self.pending.len() >= MAX_PENDING_CUES {
            return Err(BookError::Full);
        }
        Ok(())
    }

    /// The index of track `track`, added (last) if the stream does not have it yet.
    ///
    /// # Errors
    /// [`BookError::TooManyTracks`] when it is new and the stream has [`MAX_TRACKS`].
    pub fn track(&mut self, track: CaptionTrack) -> Result<u8, BookError> {
        if let Some(i) = self.tracks.iter().position(|t| t.id == track.id) {
            return Ok(u8::try_from(i).unwrap_or(u8::MAX));
        }
        if self.tracks.len() >= MAX_TRACKS {
            return Err(BookError::TooManyTracks);
        }
        self.tracks.push(track);
        Ok(u8::try_from(self.tracks.len() - 1).unwrap_or(u8::MAX))
    }

    /// Places a cue of track `track` (an index from [`CaptionBook::track`]) on the
    /// timeline from `start_ts` to `end_ts`; a start in the cut part is moved to where
    /// the timeline is open. Returns the start it got.
    ///
    /// # Errors
    /// [`BookError::Past`] when nothing of it is left to place, [`BookError::Full`] when
    /// too many cues wait.
    pub fn add(
        &mut self,
        track: u8,
        start_ts: u64,
        end_ts: u64,
        text: String,
    ) -> Result<u64, BookError> {
        let start_ts = start_ts.max(self.cut_until.unwrap_or(0));
        if end_ts <= start_ts {
            return Err(BookError::Past);
        }
        if self.pending.len() >= MAX_PENDING_CUES {
            return Err(BookError::Full);
        }
        self.pending.push(Pending {
            track,
            start_ts,
            end_ts,
            text,
        });
        Ok(start_ts)
    }

    /// The decoded 608 screen changed to `text` at `at_ts` (empty: cleared). The
    /// caption shown until now becomes a cue ending here.
    pub fn show_608(&mut self, at_ts: u64, text: String, language: &str) {
        let track = self.track(CaptionTrack {
            id: CC1_TRACK.into(),
            language: language.into(),
            name: "CC1".into(),
        });
        if let Some((index, since, shown)) = self.on_screen.take() {
            let end = at_ts.min(since + CAPTION_608_TIMEOUT_TICKS);
            if self.add(index, since, end, shown).is_err() {
                self.dropped += 1;
            }
        }
        match track {
            Ok(index) if !text.is_empty() => self.on_screen = Some((index, at_ts, text)),
            Ok(_) => {}
            Err(_) => self.dropped += 1,
        }
    }

    /// Cuts the segment `msn` spanning `[start_ts, end_ts)`: the block of its cue pieces,
    /// or `None` while the stream has no subtitle track.
    pub fn cut(&mut self, msn: u64, start_ts: u64, end_ts: u64) -> Option<CaptionBlock> {
        if self.tracks.is_empty() {
            self.cut_until = Some(end_ts);
            return None;
        }
        if let Some((index, since, text)) = &self.on_screen {
            if since + CAPTION_608_TIMEOUT_TICKS <= start_ts {
                let (index, since, text) = (*index, *since, text.clone());
                self.on_screen = None;
                let _ = self.add(index, since, since + CAPTION_608_TIMEOUT_TICKS, text);
            }
        }
        let mut cues: Vec<Cue> = self
            .pending
            .iter()
            .filter(|c| c.start_ts < end_ts && c.end_ts > start_ts)
            .map(|c| Cue {
                track: c.track,
                start_ts: c.start_ts.max(start_ts),
                end_ts: c.end_ts.min(end_ts),
                text: c.text.clone(),
            })
            .collect();
        if let Some((index, since, text)) = &self.on_screen {
            let until = (since + CAPTION_608_TIMEOUT_TICKS).min(end_ts);
            let from = (*since).max(start_ts);
            if from < until {
                cues.push(Cue {
                    track: *index,
                    start_ts: from,
                    end_ts: until,
                    text: text.clone(),
                });
            }
        }
        cues.sort_by_key(|c| (c.start_ts, c.track, c.end_ts));
        if cues.len() > MAX_BLOCK_CUES {
            self.dropped += (cues.len() - MAX_BLOCK_CUES) as u64;
            cues.truncate(MAX_BLOCK_CUES);
        }
        // Done with what ends here; a cue far ahead of the timeline belongs to a
        // timeline the source left (its timestamps jumped back): dropped.
        self.pending.retain(|c| c.end_ts > end_ts);
        let unfinished = self.pending.len();
        let horizon = end_ts.saturating_add(2 * super::MAX_CUE_AHEAD_TICKS);
        self.pending.retain(|c| c.start_ts < horizon);
        self.dropped += (unfinished - self.pending.len()) as u64;
        self.cut_until = Some(end_ts);
        Some(CaptionBlock {
            msn,
            tracks: self.tracks.clone(),
            cues,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn en() -> CaptionTrack {
        CaptionTrack::new("en", "en", "English")
    }

    #[test]
    fn a_cue_is_cut_into_one_piece_per_segment() {
        let mut book = CaptionBook::new();
        assert_eq!(book.cut(0, 0, 180_000), None);
        let en = book.track(en()).unwrap();
        assert_eq!(book.add(en, 150_000, 400_000, "long".into()), Ok(180_000));
        let b1 = book.cut(1, 180_000, 360_000).unwrap();
        assert_eq!(b1.cues.len(), 1);
        assert_eq!((b1.cues[0].start_ts, b1.cues[0].end_ts), (180_000, 360_000));
        let b2 = book.cut(2, 360_000, 540_000).unwrap();
        assert_eq!((b2.cues[0].start_ts, b2.cues[0].end_ts), (360_000, 400_000));
        let b3 = book.cut(3, 540_000, 720_000).unwrap();
        assert!(b3.cues.is_empty() && b3.tracks == vec![self::en()]);
        assert_eq!(
            book.add(en, 100, 720_000, "past".into()),
            Err(BookError::Past)
        );
    }

    #[test]
    fn a_608_caption_lasts_until_the_screen_changes_or_times_out() {
        let mut book = CaptionBook::new();
        book.show_608(1000, "HELLO".into(), "en");
        let b = book.cut(0, 0, 90_000).unwrap();
        assert_eq!(b.tracks[0].id, CC1_TRACK);
        assert_eq!((b.cues[0].start_ts, b.cues[0].end_ts), (1000, 90_000));
        book.show_608(100_000, String::new(), "en");
        let b = book.cut(1, 90_000, 180_000).unwrap();
        assert_eq!((b.cues[0].start_ts, b.cues[0].end_ts), (90_000, 100_000));
        book.show_608(200_000, "STUCK".into(), "en");
        let mut shown = 0;
        for msn in 2..30u64 {
            let b = book.cut(msn, msn * 90_000, (msn + 1) * 90_000).unwrap();
            shown += b.cues.iter().map(|c| c.end_ts - c.start_ts).sum::<u64>();
        }
        assert_eq!(shown, CAPTION_608_TIMEOUT_TICKS);
    }

    #[test]
    fn cues_of_a_timeline_left_behind_are_dropped() {
        let mut book = CaptionBook::new();
        let en = book.track(en()).unwrap();
        book.add(en, 50_000_000, 50_090_000, "old".into()).unwrap();
        for msn in 0..3 {
            book.cut(msn, msn * 90_000, (msn + 1) * 90_000);
        }
        assert!(book.pending.is_empty());
    }
}
