//! The switching rules, as a plain state machine over events and instants (no I/O):
//! which input is active, when to fail over, when to go back, and which events of the
//! active input pass the keyframe gate.
//!
//! A standby input keeps its last two GOPs (a source: from the keyframe before its
//! last; a relay of another brdyun: its last two segments, from their markers): when it
//! takes over on the same clock, the stream gets them at once instead of waiting for
//! the next keyframe, so a dual publish or an MC failover loses no media even when the
//! failed input ran behind or died in the middle of a segment (the segmenter drops or
//! replaces what it already has).

use std::time::Duration;

use media::TrackKind;
use tokio::time::Instant;

use crate::status::InputState;
use crate::IngestEvent;

/// Per-input view of the switcher.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) state: InputState,
    pub(crate) last_media: Option<Instant>,
    /// How long it may deliver nothing, while active with a live backup, before it
    /// counts as stalled (otherwise the stream's source timeout).
    silence_timeout: Duration,
    /// Start of the current run of steady delivery (for the hold-down).
    live_since: Option<Instant>,
    connects: u64,
    has_video: bool,
    /// Timeline markers came on this input (a relay): its segments are kept, not GOPs.
    has_markers: bool,
    /// The decode timestamp of its latest frame (33 bits).
    last_dts: Option<u64>,
    /// Events of the GOP before the current one while this input stands by.
    previous_gop: Vec<IngestEvent>,
    /// Events since the last video keyframe while this input stands by.
    gop: Vec<IngestEvent>,
}

/// Two inputs whose latest frames are this close (5 s of 90 kHz) are on one clock:
/// the same source, one of them a relay a little behind.
const SAME_CLOCK_TICKS: u64 = 5 * 90_000;

/// The distance of two 33-bit timestamps, across a wrap.
fn clock_distance(a: u64, b: u64) -> u64 {
    const WRAP: u64 = 1 << 33;
    let d = a.wrapping_sub(b) & (WRAP - 1);
    d.min(WRAP - d)
}

/// Most events of one standby GOP kept; a longer GOP is not kept.
const MAX_GOP_EVENTS: usize = 4096;

/// Decides which input's events reach the stream.
#[derive(Debug)]
pub(crate) struct Switcher {
    source_timeout: Duration,
    hold_down: Duration,
    slots: Vec<Slot>,
    active: Option<usize>,
    /// False until the active input's first video keyframe after (re)activation.
    video_open: bool,
    forwarded_any: bool,
    pub(crate) switches: u64,
}

impl Switcher {
    /// A switcher whose inputs count as stalled after `source_timeout` without media,
    /// but the active input `i` after `silence_timeouts[i]` when another input is live
    /// to take over (a publish input, which only goes silent when its publisher is
    /// lost, may be given less: a lone publisher's hiccup still waits `source_timeout`).
    pub(crate) fn with_silence_timeouts(
        silence_timeouts: &[Duration],
        source_timeout: Duration,
        hold_down: Duration,
    ) -> Self {
        let slots = silence_timeouts
            .iter()
            .map(|&silence_timeout| Slot {
                state: InputState::Connecting,
                last_media: None,
                silence_timeout,
                live_since: None,
                connects: 0,
                has_video: false,
                has_markers: false,
                last_dts: None,
                previous_gop: Vec::new(),
                gop: Vec::new(),
            })
            .collect();
        Switcher {
            source_timeout,
            hold_down,
            slots,
            active: None,
            video_open: false,
            forwarded_any: false,
            switches: 0,
        }
    }

    pub(crate) fn active(&self) -> Option<usize> {
        self.active
    }

    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The input is trying to reach its source again.
    pub(crate) fn on_connecting(&mut self, input: usize) {
        if let Some(slot) = self.slots.get_mut(input) {
            if slot.state == InputState::Live || slot.state == InputState::Stalled {
                slot.state = InputState::Connecting;
            }
            slot.live_since = None;
        }
    }

    /// A new connection or session began on `input`.
    pub(crate) fn on_connected(&mut self, input: usize, out: &mut Vec<IngestEvent>) {
        let Some(slot) = self.slots.get_mut(input) else {
            return;
        };
        slot.connects += 1;
        // A rejected input stays rejected until a frame comes, across reconnects.
        if !matches!(slot.state, InputState::Rejected { .. }) {
            slot.state = InputState::Connecting;
        }
        slot.live_since = None;
        if self.active == Some(input) && slot.connects > 1 {
            // A reconnect of the active input: its timeline may not continue.
            self.restart_active(out);
        }
    }

    /// The input's connection or session ended.
    pub(crate) fn on_failed(&mut self, input: usize, error: String, out: &mut Vec<IngestEvent>) {
        let Some(slot) = self.slots.get_mut(input) else {
            return;
        };
        slot.state = InputState::Down { error };
        slot.live_since = None;
        if self.active == Some(input) {
            if let Some(next) = self.first_live() {
                self.switch_to(next, out);
            }
        }
    }

    /// Bytes reach `input` but no frame comes out of them (see `Faults::no_frames`): it
    /// is not live until frames come, and `on_tick` moves the stream off it.
    pub(crate) fn on_rejected(&mut self, input: usize, reason: String) {
        if let Some(slot) = self.slots.get_mut(input) {
            slot.state = InputState::Rejected { reason };
            slot.live_since = None;
        }
    }

    /// Media from `input`; appends what the stream should receive to `out`.
    pub(crate) fn on_media(
        &mut self,
        input: usize,
        event: IngestEvent,
        now: Instant,
        out: &mut Vec<IngestEvent>,
    ) {
        let Some(slot) = self.slots.get_mut(input) else {
            return;
        };
        // A rejected input is live again only at a frame: markers or a program change
        // alone do not bring it back.
        let frame = match &event {
            IngestEvent::Frame(frame) => Some(frame),
            _ if matches!(slot.state, InputState::Rejected { .. }) => return,
            _ => None,
        };
        // Another language alone is not the input delivering: an input whose video and
        // floor died while an interpreter's audio flows is silent, and fails over.
        if !matches!(
            event,
            IngestEvent::AlternateAudio { .. } | IngestEvent::InterpreterFeed { .. }
        ) {
            slot.last_media = Some(now);
        }
        slot.has_video |= frame.is_some_and(|f| f.kind() == TrackKind::Video);
        slot.has_markers |= matches!(event, IngestEvent::Marker(_));
        if let Some(frame) = frame {
            slot.last_dts = Some(frame.dts);
        }
        // Every input keeps its last two GOPs, the active one too: an input that was
        // active a moment ago (the primary took back over) is a standby with its recent
        // media the instant it stops being active.
        {
            // A source's GOPs start at video keyframes; a relay's segments at markers.
            let start = if slot.has_markers {
                matches!(&event, IngestEvent::Marker(m) if media::timeline::starts_segment(m))
            } else {
                frame.is_some_and(|f| f.kind() == TrackKind::Video && f.keyframe)
            };
            if slot.gop.len() >= MAX_GOP_EVENTS {
                slot.previous_gop.clear();
                slot.gop.clear();
            } else if start {
                slot.previous_gop = std::mem::take(&mut slot.gop);
            }
            if (slot.has_video || slot.has_markers) && (start || !slot.gop.is_empty()) {
                slot.gop.push(event.clone());
            }
        }
        if slot.state != InputState::Live {
            let resumed = matches!(
                slot.state,
                InputState::Stalled | InputState::Rejected { .. }
            );
            slot.state = InputState::Live;
            slot.live_since = Some(now);
            match self.active {
                None => self.activate(input),
                Some(active) if active == input && resumed => self.restart_active(out),
                Some(_) => {}
            }
        }
        if self.active == Some(input) {
            self.gate(input, event, out);
        }
    }

    /// Periodic check: marks stalls, fails over, and goes back after the hold-down.
    pub(crate) fn on_tick(&mut self, now: Instant, out: &mut Vec<IngestEvent>) {
        let live = |slot: &Slot| slot.state == InputState::Live;
        let live_count = self.slots.iter().filter(|slot| live(slot)).count();
        let active = self.active;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            // The active input's own silence timeout counts while another is live.
            let backup_live = live_count > usize::from(live(slot));
            let timeout = if active == Some(i) && backup_live {
                slot.silence_timeout
            } else {
                self.source_timeout
            };
            let quiet = slot
                .last_media
                .is_none_or(|at| now.saturating_duration_since(at) >= timeout);
            if slot.state == InputState::Live && quiet {
                slot.state = InputState::Stalled;
                slot.live_since = None;
            }
        }
        let Some(active) = self.active else {
            return;
        };
        let active_live = self
            .slots
            .get(active)
            .is_some_and(|slot| slot.state == InputState::Live);
        if !active_live {
            if let Some(next) = self.first_live() {
                self.switch_to(next, out);
            }
            return;
        }
        let hold_down = self.hold_down;
        let recovered = self.slots.iter().take(active).position(|slot| {
            slot.state == InputState::Live
                && slot
                    .live_since
                    .is_some_and(|since| now.saturating_duration_since(since) >= hold_down)
        });
        if let Some(better) = recovered {
            self.switch_to(better, out);
        }
    }

    fn first_live(&self) -> Option<usize> {
        self.slots
            .iter()
            .position(|slot| slot.state == InputState::Live)
    }

    fn activate(&mut self, input: usize) {
        self.active = Some(input);
        self.video_open = false;
        if let Some(slot) = self.slots.get_mut(input) {
            slot.previous_gop.clear();
            slot.gop.clear();
        }
    }

    fn switch_to(&mut self, input: usize, out: &mut Vec<IngestEvent>) {
        if self.active == Some(input) {
            return;
        }
        self.switches += 1;
        // A takeover: the new input was delivering while the old one still was, on the
        // same clock (the same source published twice), so its recent GOPs continue
        // the stream.
        let old = self.active.and_then(|a| self.slots.get(a));
        let new = self.slots.get(input);
        let takeover = match (old, new) {
            (Some(old), Some(new)) => {
                let overlapped = new
                    .live_since
                    .zip(old.last_media)
                    .is_some_and(|(since, last)| since <= last);
                let same_clock = new
                    .last_dts
                    .zip(old.last_dts)
                    .is_some_and(|(a, b)| clock_distance(a, b) <= SAME_CLOCK_TICKS);
                overlapped && same_clock
            }
            _ => false,
        };
        // The standby's last two GOPs, from a keyframe: no wait for the next one.
        let cached: Vec<IngestEvent> = self
            .slots
            .get_mut(input)
            .filter(|_| takeover)
            .map(|slot| {
                let mut events = std::mem::take(&mut slot.previous_gop);
                events.append(&mut slot.gop);
                events
            })
            .unwrap_or_default();
        self.activate(input);
        if self.forwarded_any {
            out.push(if takeover {
                IngestEvent::Takeover
            } else {
                IngestEvent::Discontinuity
            });
        }
        for event in cached {
            self.gate(input, event, out);
        }
    }

    fn restart_active(&mut self, out: &mut Vec<IngestEvent>) {
        self.video_open = false;
        if self.forwarded_any {
            out.push(IngestEvent::Discontinuity);
        }
    }

    /// Forwards the active input's event unless it precedes the first video keyframe.
    fn gate(&mut self, input: usize, event: IngestEvent, out: &mut Vec<IngestEvent>) {
        let has_video = self.slots.get(input).is_some_and(|slot| slot.has_video);
        let pass = match &event {
            IngestEvent::Frame(frame) if frame.kind() == TrackKind::Video => {
                self.video_open |= frame.keyframe;
                self.video_open
            }
            // Audio-only inputs start at once; with video, audio waits for the keyframe.
            IngestEvent::Frame(_)
            | IngestEvent::AlternateAudio { .. }
            | IngestEvent::InterpreterFeed { .. } => self.video_open || !has_video,
            // A relay's segment starts at its marker (not a live relay's close marker),
            // its first frame a keyframe.
            IngestEvent::Marker(m) => {
                self.video_open |= media::timeline::starts_segment(m)
                    && self.slots.get(input).is_some_and(|slot| slot.has_markers);
                true
            }
            IngestEvent::Captions(_) => true,
            // A switch or restart already sent one.
            IngestEvent::Discontinuity | IngestEvent::Takeover => self.video_open,
        };
        if pass {
            self.forwarded_any = true;
            out.push(event);
        }
    }
}
