//! The MPEG-TS demuxer: bytes in any chunking → [`Frame`]s of one program's video and
//! audio streams (the first program, or the one [`Demuxer::for_program`] names),
//! timeline markers and discontinuities.
//!
//! The program's first audio stream is its main audio (the floor, muxed with the
//! video); every further AAC stream, up to [`MAX_ALTERNATE_AUDIO`], is an alternate
//! language whose frames come as [`DemuxEvent::AlternateAudio`], named by its PID and
//! by the `ISO_639_language_descriptor` the PMT lists for it ([`Demuxer::audio_tracks`]).
//!
//! ```text
//! bytes ─► PacketReader ─► Packet ─┬─ PID 0 ─────► PAT ─► PMT PID
//!                                  ├─ PMT PID ───► PMT ─► the video and audio PIDs
//!                                  ├─ ES PIDs ───► PesAssembler ─► Frame
//!                                  └─ MARKER_PID ► Marker
//! ```

use bytes::Bytes;

use super::packet::{Packet, PacketReader, ReaderEvent};
use super::pes::{Pes, PesAssembler, PesOutput};
use super::psi::{Pat, Pmt, SectionAssembler};
use super::MARKER_PID;
use crate::codec::aac::{adts_frame_ranges, AudioSpecificConfig, SAMPLES_PER_FRAME};
use crate::codec::probe::is_keyframe;
use crate::{Codec, Frame, Language, TrackKind};

/// The most alternate audio streams followed beside the main audio; further ones are
/// counted in [`DemuxStats::unknown_stream_types`] and ignored.
pub const MAX_ALTERNATE_AUDIO: usize = 7;

/// PID of the program association table.
const PAT_PID: u16 = 0x0000;

/// Why the demuxer reports a break in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscontinuityReason {
    /// A packet of an elementary stream arrived with an unexpected continuity counter:
    /// packets were lost (or duplicated more than once).
    ContinuityCounter {
        /// The PID on which the break was seen.
        pid: u16,
    },
    /// The muxer signalled a discontinuity (discontinuity_indicator), e.g. a time-base
    /// change at a splice.
    Indicator {
        /// The PID whose adaptation field carried the flag.
        pid: u16,
    },
    /// The reader lost packet sync and skipped bytes.
    SyncLoss,
    /// The program's PMT changed (new version, new PMT PID, or different streams).
    ProgramChange,
}

/// What the demuxer produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemuxEvent {
    /// One PES of the selected video or audio stream.
    Frame(Frame),
    /// One frame of an alternate audio stream (another language), on its PID.
    AlternateAudio {
        /// The PID the stream is carried on ([`Demuxer::audio_tracks`] names it).
        pid: u16,
        /// The frame, with the source's timestamps.
        frame: Frame,
    },
    /// The payload of a packet on [`MARKER_PID`] (not listed in the PMT).
    Marker(Bytes),
    /// A whole caption block reassembled from the packets on
    /// [`crate::ts::captions::CAPTION_PID`] (not listed in the PMT; its CRC is checked
    /// when it is parsed).
    Captions(Bytes),
    /// A break in the stream the consumer should know about.
    Discontinuity(DiscontinuityReason),
}

/// Counters for monitoring input health.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DemuxStats {
    /// Transport packets read.
    pub packets: u64,
    /// Times the packet sync was lost after being established.
    pub sync_losses: u64,
    /// Continuity-counter breaks on the PIDs the demuxer follows.
    pub cc_errors: u64,
    /// PES dropped or cut: missing PTS, bad header, lying length, lost start.
    pub pes_errors: u64,
    /// PES dropped for outgrowing the assembler's bound (an endless PES).
    pub oversize_pes: u64,
    /// PSI sections rejected (CRC mismatch or malformed).
    pub crc_errors: u64,
    /// PMT entries with a stream type the demuxer does not deliver (counted once per
    /// PMT version).
    pub unknown_stream_types: u64,
    /// Frames delivered.
    pub frames: u64,
    /// Packets dropped because transport_error_indicator was set, or scrambled.
    pub dropped_packets: u64,
    /// Frames dropped because bytes of theirs, or of a video frame they depend on,
    /// were lost (see [`Demuxer`]).
    pub damaged_frames: u64,
    /// Caption blocks cut short or unreadable (their captions are lost).
    pub caption_errors: u64,
}

/// One followed elementary stream.
#[derive(Debug)]
struct Stream {
    pid: u16,
    codec: Codec,
    /// An alternate audio stream (its frames are [`DemuxEvent::AlternateAudio`]).
    alternate: bool,
    language: Option<Language>,
    pes: PesAssembler,
    /// Video lost data: pictures are dropped until the next keyframe.
    awaiting_keyframe: bool,
}

/// Continuity state of one PID.
#[derive(Debug, Clone, Copy)]
struct Continuity {
    pid: u16,
    last: u8,
    /// The last packet had a payload (so a repeat of its counter is a duplicate).
    duplicate_allowed: bool,
}

/// Verdict on one packet's continuity counter.
#[derive(Debug, PartialEq, Eq)]
enum CcCheck {
    Ok,
    /// discontinuity_indicator set on a PID with history.
    Signalled,
    Duplicate,
    Broken,
}

/// MPEG-TS demuxer for the first program of a stream (see the module docs).
///
/// Pure and synchronous: feed it bytes, collect events. Damage never reaches a
/// decoder: when bytes of an elementary stream are lost (a continuity-counter gap, a
/// packet flagged with transport_error_indicator, lost sync, a PES whose start or end
/// was lost, an oversize PES), the frame they belonged to is dropped, and on the video
/// stream every picture after it up to the next keyframe too (they predict from the
/// broken one; a browser's decoder can fail on them as a fatal media error). Audio
/// frames stand alone: only the damaged one goes. The timestamps of what follows are
/// untouched, so the timeline runs on without a discontinuity; the damage is reported
/// by a [`DemuxEvent::Discontinuity`] and counted in [`DemuxStats`].
#[derive(Debug, Default)]
pub struct Demuxer {
    reader: PacketReader,
    state: State,
}

#[derive(Debug, Default)]
struct State {
    /// The program followed; `None` follows the first one the PAT lists.
    program: Option<u16>,
    pat: SectionAssembler,
    pmt_pid: Option<u16>,
    pmt: SectionAssembler,
    pmt_seen: Option<Pmt>,
    video: Option<Stream>,
    audio: Option<Stream>,
    alternates: Vec<Stream>,
    continuity: Vec<Continuity>,
    sections: Vec<Vec<u8>>,
    captions: crate::ts::captions::BlockAssembler,
    stats: DemuxStats,
}

/// Every frame of a whole MPEG-TS buffer, in order (pushed and flushed at once; the
/// other events dropped): for a stored segment or a clip read in one piece.
pub fn demux_frames(ts: &[u8]) -> Vec<Frame> {
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    demuxer.push(ts, &mut events);
    demuxer.flush(&mut events);
    events
        .into_iter()
        .filter_map(|e| match e {
            DemuxEvent::Frame(f) => Some(f),
            _ => None,
        })
        .collect()
}

impl Demuxer {
    /// A demuxer that has seen no bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A demuxer that follows the program with this `program_number` of a multi-program
    /// transport stream (one rung of a ladder per program), not the first one.
    pub fn for_program(program_number: u16) -> Self {
        let mut demuxer = Self::default();
        demuxer.state.program = Some(program_number);
        demuxer
    }

    /// Feeds bytes in any chunking; appends what became complete to `out`.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<DemuxEvent>) {
        let Demuxer { reader, state } = self;
        reader.push(data, |ev| state.reader_event(ev, out));
    }

    /// Emits the last packet and any PES still being assembled (end of input).
    pub fn flush(&mut self, out: &mut Vec<DemuxEvent>) {
        let Demuxer { reader, state } = self;
        reader.finish(|ev| state.reader_event(ev, out));
        for stream in all_streams(&mut state.video, &mut state.audio, &mut state.alternates) {
            interrupt(&mut state.stats, stream, out);
        }
    }

    /// Counters since creation.
    pub fn stats(&self) -> &DemuxStats {
        &self.state.stats
    }

    /// What the demuxer knows of the program it follows: enough to say why an input
    /// that delivers bytes delivers no frame.
    pub fn program(&self) -> ProgramView {
        ProgramView {
            found: self.state.pmt_seen.is_some(),
            video: self.state.video.is_some(),
            audio: self.state.audio.is_some(),
        }
    }

    /// The program's audio streams the demuxer delivers, the main one first, each with
    /// the language its PMT entry names.
    pub fn audio_tracks(&self) -> Vec<AudioTrack> {
        let state = &self.state;
        state
            .audio
            .iter()
            .chain(&state.alternates)
            .map(|s| AudioTrack {
                pid: s.pid,
                language: s.language,
                main: !s.alternate,
            })
            .collect()
    }
}

/// One audio stream of the followed program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioTrack {
    /// The PID carrying it.
    pub pid: u16,
    /// The language its PMT entry names (`ISO_639_language_descriptor`), if any.
    pub language: Option<Language>,
    /// The main audio ([`DemuxEvent::Frame`]); the others are alternates.
    pub main: bool,
}

/// The program a [`Demuxer`] follows, as far as it knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramView {
    /// A PAT named the program and its PMT was read.
    pub found: bool,
    /// The PMT lists a video stream the demuxer delivers.
    pub video: bool,
    /// The PMT lists an audio stream the demuxer delivers.
    pub audio: bool,
}

impl State {
    fn reader_event(&mut self, event: ReaderEvent<'_>, out: &mut Vec<DemuxEvent>) {
        match event {
            ReaderEvent::Packet(bytes) => self.packet(bytes, out),
            ReaderEvent::SyncLost => {
                self.stats.sync_losses += 1;
                out.push(DemuxEvent::Discontinuity(DiscontinuityReason::SyncLoss));
                // Bytes were lost: partial sections and the PES in progress are
                // dropped, and video waits for its next keyframe.
                self.pat.reset();
                self.pmt.reset();
                let State {
                    video,
                    audio,
                    alternates,
                    stats,
                    ..
                } = self;
                for stream in all_streams(video, audio, alternates) {
                    lose(stats, stream);
                }
            }
        }
    }

    fn packet(&mut self, bytes: &[u8], out: &mut Vec<DemuxEvent>) {
        self.stats.packets += 1;
        let Ok(pkt) = Packet::parse(bytes) else {
            self.stats.dropped_packets += 1;
            return;
        };
        if pkt.transport_error || pkt.scrambling != 0 {
            self.stats.dropped_packets += 1;
            if let Some(stream) = stream_of(
                &mut self.video,
                &mut self.audio,
                &mut self.alternates,
                pkt.pid,
            ) {
                lose(&mut self.stats, stream);
                // The loss is counted: the next packet restarts the counter check
                // rather than count it again as a continuity error.
                self.continuity.retain(|c| c.pid != pkt.pid);
            }
            return;
        }
        if pkt.pid == crate::ts::captions::CAPTION_PID {
            // A block checks itself (length, CRC): no continuity across segments.
            match self.captions.push(pkt.pusi, pkt.payload) {
                Ok(Some(block)) => out.push(DemuxEvent::Captions(block)),
                Ok(None) => {}
                Err(_) => self.stats.caption_errors += 1,
            }
            return;
        }
        let is_es = self.stream_mut(pkt.pid).is_some();
        if !(is_es || pkt.pid == PAT_PID || Some(pkt.pid) == self.pmt_pid || pkt.pid == MARKER_PID)
        {
            return;
        }
        match self.check_continuity(&pkt) {
            CcCheck::Ok => {}
            CcCheck::Signalled => {
                if is_es {
                    out.push(DemuxEvent::Discontinuity(DiscontinuityReason::Indicator {
                        pid: pkt.pid,
                    }));
                }
            }
            CcCheck::Duplicate => return,
            CcCheck::Broken => {
                self.stats.cc_errors += 1;
                if is_es {
                    out.push(DemuxEvent::Discontinuity(
                        DiscontinuityReason::ContinuityCounter { pid: pkt.pid },
                    ));
                    if let Some(stream) = stream_of(
                        &mut self.video,
                        &mut self.audio,
                        &mut self.alternates,
                        pkt.pid,
                    ) {
                        lose(&mut self.stats, stream);
                    }
                } else if pkt.pid == PAT_PID {
                    self.pat.reset();
                } else if Some(pkt.pid) == self.pmt_pid {
                    self.pmt.reset();
                }
            }
        }
        if pkt.payload.is_empty() {
            return;
        }
        if pkt.pid == MARKER_PID {
            out.push(DemuxEvent::Marker(Bytes::copy_from_slice(pkt.payload)));
        } else if pkt.pid == PAT_PID {
            self.pat.push(pkt.pusi, pkt.payload, &mut self.sections);
            self.handle_pat(out);
        } else if Some(pkt.pid) == self.pmt_pid {
            self.pmt.push(pkt.pusi, pkt.payload, &mut self.sections);
            self.handle_pmt(out);
        } else if let Some(stream) = stream_of(
            &mut self.video,
            &mut self.audio,
            &mut self.alternates,
            pkt.pid,
        ) {
            let mut pes = PesOutput::default();
            stream.pes.push(pkt.pusi, pkt.payload, &mut pes);
            emit(&mut self.stats, stream, pes, out);
        }
    }

    fn stream_mut(&mut self, pid: u16) -> Option<&mut Stream> {
        stream_of(&mut self.video, &mut self.audio, &mut self.alternates, pid)
    }

    /// Checks the continuity counter; reports a signalled discontinuity on the way.
    fn check_continuity(&mut self, pkt: &Packet<'_>) -> CcCheck {
        let cc = pkt.continuity_counter;
        let Some(entry) = self.continuity.iter_mut().find(|c| c.pid == pkt.pid) else {
            self.continuity.push(Continuity {
                pid: pkt.pid,
                last: cc,
                duplicate_allowed: pkt.has_payload,
            });
            return CcCheck::Ok;
        };
        let expected = if pkt.has_payload {
            (entry.last + 1) & 0x0f
        } else {
            entry.last
        };
        let verdict = if pkt.discontinuity() {
            CcCheck::Signalled
        } else if cc == expected {
            CcCheck::Ok
        } else if pkt.has_payload && entry.duplicate_allowed && cc == entry.last {
            entry.duplicate_allowed = false;
            return CcCheck::Duplicate;
        } else {
            CcCheck::Broken
        };
        entry.last = cc;
        entry.duplicate_allowed = pkt.has_payload;
        verdict
    }

    fn handle_pat(&mut self, out: &mut Vec<DemuxEvent>) {
        for section in std::mem::take(&mut self.sections) {
            let pat = match Pat::parse(&section) {
                Ok(pat) if pat.current => pat,
                Ok(_) => continue,
                Err(_) => {
                    self.stats.crc_errors += 1;
                    continue;
                }
            };
            let pid = match self.program {
                Some(number) => pat
                    .programs
                    .iter()
                    .find(|p| p.program_number == number)
                    .map(|p| p.pid),
                None => pat.first_program().map(|p| p.pid),
            };
            if pid != self.pmt_pid {
                self.pmt_pid = pid;
                self.pmt.reset();
                if self.pmt_seen.take().is_some() {
                    self.drop_streams(out);
                    out.push(DemuxEvent::Discontinuity(
                        DiscontinuityReason::ProgramChange,
                    ));
                }
            }
        }
    }

    fn handle_pmt(&mut self, out: &mut Vec<DemuxEvent>) {
        for section in std::mem::take(&mut self.sections) {
            let pmt = match Pmt::parse(&section) {
                Ok(pmt) if pmt.current => pmt,
                Ok(_) => continue,
                Err(_) => {
                    self.stats.crc_errors += 1;
                    continue;
                }
            };
            if self.pmt_seen.as_ref() == Some(&pmt) {
                continue;
            }
            self.apply_pmt(pmt, out);
        }
    }

    /// Selects the first video and first audio stream of a new or changed PMT, and the
    /// further audio streams as alternates.
    fn apply_pmt(&mut self, pmt: Pmt, out: &mut Vec<DemuxEvent>) {
        let mut video = None;
        let mut audio = None;
        let mut alternates = Vec::new();
        for s in &pmt.streams {
            let codec = match s.stream_type {
                0x1b => Codec::H264,
                0x24 => Codec::H265,
                0x0f => Codec::Aac,
                _ => {
                    self.stats.unknown_stream_types += 1;
                    continue;
                }
            };
            let slot = match codec.kind() {
                TrackKind::Video => &mut video,
                TrackKind::Audio => &mut audio,
            };
            if slot.is_none() {
                *slot = Some((s.pid, codec));
            } else if codec.kind() == TrackKind::Audio && alternates.len() < MAX_ALTERNATE_AUDIO {
                alternates.push((s.pid, codec, s.language));
            } else {
                self.stats.unknown_stream_types += 1;
            }
        }
        self.apply_alternates(&alternates, out);
        let language_of = |pid: Option<(u16, Codec)>| {
            pid.and_then(|(pid, _)| pmt.streams.iter().find(|s| s.pid == pid))
                .and_then(|s| s.language)
        };
        let audio_language = language_of(audio);
        let same = |old: &Option<Stream>, new: Option<(u16, Codec)>| {
            old.as_ref().map(|s| (s.pid, s.codec)) == new
        };
        let keep_video = same(&self.video, video);
        let keep_audio = same(&self.audio, audio);
        // A stream added where the program had none of its kind loses nothing (a live
        // relay lists audio once its first frame comes): only a stream removed or
        // replaced is a change of program.
        let changed = self.pmt_seen.is_some()
            && ((self.video.is_some() && !keep_video) || (self.audio.is_some() && !keep_audio));
        if !keep_video {
            flush_stream(&mut self.stats, self.video.take(), out);
            self.video = video.map(|(pid, codec)| new_stream(pid, codec));
        }
        if !keep_audio {
            flush_stream(&mut self.stats, self.audio.take(), out);
            self.audio = audio.map(|(pid, codec)| new_stream(pid, codec));
        }
        if let Some(main) = self.audio.as_mut() {
            main.language = audio_language;
        }
        if changed {
            out.push(DemuxEvent::Discontinuity(
                DiscontinuityReason::ProgramChange,
            ));
        }
        self.pmt_seen = Some(pmt);
    }

    /// Follows these alternate audio streams: one that stays on its PID with its codec
    /// keeps its frame in progress (a new PMT version only renames it); the others are
    /// flushed or started. The main timeline does not depend on them, so a change here
    /// is no change of program.
    fn apply_alternates(
        &mut self,
        wanted: &[(u16, Codec, Option<Language>)],
        out: &mut Vec<DemuxEvent>,
    ) {
        let mut kept = Vec::with_capacity(wanted.len());
        let mut old = std::mem::take(&mut self.alternates);
        for &(pid, codec, language) in wanted {
            let stream = match old.iter().position(|s| s.pid == pid && s.codec == codec) {
                Some(i) => old.swap_remove(i),
                None => Stream {
                    alternate: true,
                    ..new_stream(pid, codec)
                },
            };
            kept.push(Stream { language, ..stream });
        }
        for gone in old {
            flush_stream(&mut self.stats, Some(gone), out);
        }
        self.alternates = kept;
    }

    fn drop_streams(&mut self, out: &mut Vec<DemuxEvent>) {
        flush_stream(&mut self.stats, self.video.take(), out);
        flush_stream(&mut self.stats, self.audio.take(), out);
        for gone in std::mem::take(&mut self.alternates) {
            flush_stream(&mut self.stats, Some(gone), out);
        }
    }
}

/// Every followed stream (a free function, so the stats can be borrowed beside it).
fn all_streams<'a>(
    video: &'a mut Option<Stream>,
    audio: &'a mut Option<Stream>,
    alternates: &'a mut [Stream],
) -> impl Iterator<Item = &'a mut Stream> {
    video
        .as_mut()
        .into_iter()
        .chain(audio.as_mut())
        .chain(alternates.iter_mut())
}

/// The followed stream on `pid`, if any (a free function, so the stats can be
/// borrowed beside it).
fn stream_of<'a>(
    video: &'a mut Option<Stream>,
    audio: &'a mut Option<Stream>,
    alternates: &'a mut [Stream],
    pid: u16,
) -> Option<&'a mut Stream> {
    all_streams(video, audio, alternates).find(|s| s.pid == pid)
}

fn new_stream(pid: u16, codec: Codec) -> Stream {
    Stream {
        pid,
        codec,
        alternate: false,
        language: None,
        pes: PesAssembler::new(),
        awaiting_keyframe: false,
    }
}

/// Delivers the pending PES of a stream that is going away.
fn flush_stream(stats: &mut DemuxStats, stream: Option<Stream>, out: &mut Vec<DemuxEvent>) {
    if let Some(mut stream) = stream {
        interrupt(stats, &mut stream, out);
    }
}

/// Delivers the PES in progress of a stream that ends (end of input, a changed
/// program): nothing of it was lost.
fn interrupt(stats: &mut DemuxStats, stream: &mut Stream, out: &mut Vec<DemuxEvent>) {
    let mut pes = PesOutput::default();
    stream.pes.flush(&mut pes);
    emit(stats, stream, pes, out);
}

/// Bytes of `stream` were lost: its PES in progress is dropped, and video waits for
/// its next keyframe.
fn lose(stats: &mut DemuxStats, stream: &mut Stream) {
    if stream.pes.discard() {
        stats.damaged_frames += 1;
    }
    stream.awaiting_keyframe |= stream.codec.kind() == TrackKind::Video;
}

/// Turns completed PES into frames; counts the ones that cannot be frames and drops
/// what damage reached (see [`Demuxer`]).
fn emit(stats: &mut DemuxStats, stream: &mut Stream, pes: PesOutput, out: &mut Vec<DemuxEvent>) {
    stats.pes_errors += pes.errors;
    stats.oversize_pes += pes.oversize;
    stats.damaged_frames += pes.lost;
    let codec = stream.codec;
    let video = codec.kind() == TrackKind::Video;
    let count = pes.complete.len();
    for (
        i,
        Pes {
            header,
            payload,
            intact,
        },
    ) in pes.complete.into_iter().enumerate()
    {
        // A loss before this PES breaks the pictures from here on.
        stream.awaiting_keyframe |= video && pes.lost_at == Some(i);
        let Some(pts) = header.pts.filter(|_| intact) else {
            if header.pts.is_none() {
                stats.pes_errors += 1;
            }
            stats.damaged_frames += 1;
            stream.awaiting_keyframe |= video;
            continue;
        };
        if codec == Codec::Aac {
            let alternate = stream.alternate.then_some(stream.pid);
            emit_aac(stats, pts, payload, &mut |frame| {
                out.push(frame_event(alternate, frame))
            });
            continue;
        }
        let keyframe = is_keyframe(codec, &payload);
        if stream.awaiting_keyframe && !keyframe {
            stats.damaged_frames += 1;
            continue;
        }
        stream.awaiting_keyframe = false;
        stats.frames += 1;
        out.push(DemuxEvent::Frame(Frame {
            codec,
            pts,
            dts: header.dts.unwrap_or(pts),
            keyframe,
            data: payload,
        }));
    }
    stream.awaiting_keyframe |= video && pes.lost_at == Some(count);
}

/// Splits an AAC PES into its ADTS frames, each with its own timestamp (the PES
/// timestamp plus the frames before it). Encoders pack many frames into one PES (ffmpeg
/// up to ~16, a third of a second); one frame per `Frame` lets a segment close as soon
/// as the frame that crosses the cut arrives, and cuts audio-only streams exactly.
/// Bytes that do not parse as ADTS are delivered as they are (one frame), or, when they
/// trail valid frames, dropped and counted.
fn emit_aac(stats: &mut DemuxStats, pts: u64, payload: Bytes, out: &mut dyn FnMut(Frame)) {
    let ranges = adts_frame_ranges(&payload);
    let sample_rate = ranges
        .first()
        .and_then(|r| AudioSpecificConfig::from_adts(&payload[r.clone()]).ok())
        .map(|c| u64::from(c.sample_rate()));
    let (Some(sample_rate), Some(last)) = (sample_rate, ranges.last()) else {
        stats.frames += 1;
        out(Frame {
            codec: Codec::Aac,
            pts,
            dts: pts,
            keyframe: true,
            data: payload,
        });
        return;
    };
    if last.end < payload.len() {
        stats.pes_errors += 1;
    }
    for (i, range) in ranges.into_iter().enumerate() {
        // Offsets from the PES start, so a non-integer frame duration never accumulates.
        let offset = i as u64 * SAMPLES_PER_FRAME * crate::CLOCK_HZ / sample_rate;
        let frame_pts = pts.wrapping_add(offset) & crate::PTS_MASK;
        stats.frames += 1;
        out(Frame {
            codec: Codec::Aac,
            pts: frame_pts,
            dts: frame_pts,
            keyframe: true,
            data: payload.slice(range),
        });
    }
}

/// The event of one delivered frame: of the main streams, or of the alternate audio on
/// this PID.
fn frame_event(alternate: Option<u16>, frame: Frame) -> DemuxEvent {
    match alternate {
        Some(pid) => DemuxEvent::AlternateAudio { pid, frame },
        None => DemuxEvent::Frame(frame),
    }
}
