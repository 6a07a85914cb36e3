//! The demuxer under hostile and damaged input: arbitrary chunking, random bytes,
//! truncation, lost packets, lying PES lengths, lost sync. It must never panic, must
//! count what it dropped, and must give the same events however the bytes arrive.

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;

use media::codec::probe::{is_keyframe, probe_audio, probe_video};
use media::ts::{DemuxEvent, Demuxer, DiscontinuityReason};
use proptest::prelude::*;

const PACKET: usize = 188;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn demux_chunked(data: &[u8], sizes: &[usize]) -> (Vec<DemuxEvent>, Demuxer) {
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(PACKET)
            .clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        demuxer.push(chunk, &mut events);
        rest = tail;
        i += 1;
    }
    demuxer.flush(&mut events);
    // Every frame must survive the probes whatever its content.
    for e in &events {
        if let DemuxEvent::Frame(f) = e {
            let _ = probe_video(f);
            let _ = probe_audio(f);
            let _ = is_keyframe(f.codec, &f.data);
        }
    }
    (events, demuxer)
}

fn demux(data: &[u8]) -> (Vec<DemuxEvent>, Demuxer) {
    demux_chunked(data, &[data.len().max(1)])
}

fn frame_count(events: &[DemuxEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, DemuxEvent::Frame(_)))
        .count()
}

/// PID of the packet at `index`.
fn pid(data: &[u8], index: usize) -> u16 {
    let p = &data[index * PACKET..];
    (u16::from(p[1] & 0x1f) << 8) | u16::from(p[2])
}

/// Index of the `nth` packet on `pid` that starts a PES.
fn nth_start(data: &[u8], on_pid: u16, nth: usize) -> usize {
    (0..data.len() / PACKET)
        .filter(|&i| pid(data, i) == on_pid && data[i * PACKET + 1] & 0x40 != 0)
        .nth(nth)
        .expect("fixture has enough pes")
}

/// The frames of `clean` with the video frames from the `first_lost`-th one up to
/// (not including) the next video keyframe taken out: what the demuxer must deliver
/// when bytes of that picture were lost. Returns them and how many were taken out.
fn without_damaged_video(clean: &[DemuxEvent], first_lost: usize) -> (Vec<&DemuxEvent>, u64) {
    let mut video = 0;
    let mut dropping = false;
    let mut dropped = 0;
    let mut kept = Vec::new();
    for event in without_discontinuities(clean) {
        if let DemuxEvent::Frame(f) = event {
            if f.kind() == media::TrackKind::Video {
                dropping = (dropping || video == first_lost) && !(video > first_lost && f.keyframe);
                video += 1;
                if dropping {
                    dropped += 1;
                    continue;
                }
            }
        }
        kept.push(event);
    }
    (kept, dropped)
}

/// Index of the video PES in progress at packet `index` (the last one started before).
fn video_pes_at(data: &[u8], index: usize) -> usize {
    (0..index)
        .filter(|&i| pid(data, i) == 0x100 && data[i * PACKET + 1] & 0x40 != 0)
        .count()
        - 1
}

#[test]
fn a_lost_video_packet_drops_its_picture_and_what_follows_up_to_the_next_keyframe() {
    let data = fixture("h264_aac.ts");
    // Drop the packet after the 10th video PES start (the middle of that PES).
    let lost = nth_start(&data, 0x100, 10) + 1;
    assert_eq!(pid(&data, lost), 0x100);
    let mut damaged = data[..lost * PACKET].to_vec();
    damaged.extend(&data[(lost + 1) * PACKET..]);
    let (events, demuxer) = demux(&damaged);
    assert_eq!(demuxer.stats().cc_errors, 1);
    assert!(events.contains(&DemuxEvent::Discontinuity(
        DiscontinuityReason::ContinuityCounter { pid: 0x100 }
    )));
    let (clean, _) = demux(&data);
    let (expected, dropped) = without_damaged_video(&clean, 10);
    assert!(dropped >= 1);
    assert_eq!(without_discontinuities(&events), expected);
    assert_eq!(demuxer.stats().damaged_frames, dropped);
}

#[test]
fn a_video_packet_flagged_with_a_transport_error_is_a_loss() {
    let mut data = fixture("h264_aac.ts");
    let flagged = nth_start(&data, 0x100, 20) + 1;
    assert_eq!(pid(&data, flagged), 0x100);
    data[flagged * PACKET + 1] |= 0x80;
    let (events, demuxer) = demux(&data);
    assert_eq!(demuxer.stats().dropped_packets, 1);
    assert_eq!(
        demuxer.stats().cc_errors,
        0,
        "one flagged packet, counted once"
    );
    let (clean, _) = demux(&fixture("h264_aac.ts"));
    let (expected, dropped) = without_damaged_video(&clean, 20);
    assert_eq!(without_discontinuities(&events), expected);
    assert_eq!(demuxer.stats().damaged_frames, dropped);
}

#[test]
fn a_lost_pes_start_is_a_loss_even_when_the_counters_hide_it() {
    // The start packet of the 4th audio PES is gone and the counters after it are
    // renumbered, as a remuxer that lost it would: only the payload after the 3rd PES's
    // declared end shows it. (An unbounded video PES would swallow such payload: there
    // the counters are what tell a loss.)
    let data = fixture("aac_only.ts");
    let lost = nth_start(&data, 0x100, 3);
    let mut damaged = Vec::new();
    for i in 0..data.len() / PACKET {
        let mut packet = data[i * PACKET..(i + 1) * PACKET].to_vec();
        if i == lost {
            continue;
        }
        if i > lost && pid(&data, i) == 0x100 {
            packet[3] = (packet[3] & 0xf0) | ((packet[3] & 0x0f).wrapping_sub(1) & 0x0f);
        }
        damaged.extend(packet);
    }
    let (events, demuxer) = demux(&damaged);
    assert_eq!(demuxer.stats().cc_errors, 0);
    assert_eq!(demuxer.stats().pes_errors, 1);
    let (clean, _) = demux(&data);
    let pts = |events: &[DemuxEvent]| -> Vec<u64> {
        events
            .iter()
            .filter_map(|e| match e {
                DemuxEvent::Frame(f) => Some(f.pts),
                _ => None,
            })
            .collect()
    };
    let (got, all) = (pts(&events), pts(&clean));
    assert!(got.len() < all.len(), "the PES without its start is gone");
    assert!(
        got.iter().all(|p| all.contains(p)),
        "nothing merged or invented"
    );
}

#[test]
fn a_lost_audio_packet_drops_only_its_pes() {
    let data = fixture("h264_aac.ts");
    let lost = nth_start(&data, 0x101, 3) + 1;
    assert_eq!(pid(&data, lost), 0x101);
    let mut damaged = data[..lost * PACKET].to_vec();
    damaged.extend(&data[(lost + 1) * PACKET..]);
    let (events, demuxer) = demux(&damaged);
    let (clean, _) = demux(&data);
    let audio_pts = |events: &[DemuxEvent]| -> Vec<u64> {
        events
            .iter()
            .filter_map(|e| match e {
                DemuxEvent::Frame(f) if f.kind() == media::TrackKind::Audio => Some(f.pts),
                _ => None,
            })
            .collect()
    };
    let video = |events: &[DemuxEvent]| -> usize {
        events
            .iter()
            .filter(|e| matches!(e, DemuxEvent::Frame(f) if f.kind() == media::TrackKind::Video))
            .count()
    };
    assert_eq!(video(&events), video(&clean), "video is untouched");
    let (got, all) = (audio_pts(&events), audio_pts(&clean));
    assert!(got.len() < all.len());
    assert!(got.iter().all(|pts| all.contains(pts)));
    assert_eq!(demuxer.stats().damaged_frames, 1, "one PES dropped");
}

#[test]
fn pes_headers_split_across_packets_are_legal_and_lose_nothing() {
    let data = fixture("h264_aac.ts");
    let split = corpus::split_video_pes_headers(&data);
    assert!(split.len() > data.len());
    let (events, demuxer) = demux(&split);
    let (clean, _) = demux(&data);
    let s = demuxer.stats();
    assert_eq!(
        (s.cc_errors, s.pes_errors, s.damaged_frames, s.sync_losses),
        (0, 0, 0, 0)
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, DemuxEvent::Discontinuity(_))));
    assert_eq!(events, clean);
}

#[test]
fn a_duplicated_packet_is_dropped_silently() {
    let data = fixture("h264_aac.ts");
    let dup = nth_start(&data, 0x100, 3) + 1;
    let mut doubled = data[..(dup + 1) * PACKET].to_vec();
    doubled.extend(&data[dup * PACKET..]);
    let (events, demuxer) = demux(&doubled);
    let (clean, _) = demux(&data);
    assert_eq!(demuxer.stats().cc_errors, 0);
    assert_eq!(events, clean);
}

fn without_discontinuities(events: &[DemuxEvent]) -> Vec<&DemuxEvent> {
    events
        .iter()
        .filter(|e| !matches!(e, DemuxEvent::Discontinuity(_)))
        .collect()
}

#[test]
fn garbage_between_packets_is_a_sync_loss() {
    let data = fixture("h264_only.ts");
    let at = 40 * PACKET;
    let mut damaged = data[..at].to_vec();
    damaged.extend([0x00, 0x47, 0x12, 0x34, 0x47]);
    damaged.extend(&data[at..]);
    let (events, demuxer) = demux(&damaged);
    assert_eq!(demuxer.stats().sync_losses, 1);
    // The packet before the garbage cannot be told from one cut short: it is dropped.
    assert_eq!(demuxer.stats().cc_errors, 1);
    assert!(events.contains(&DemuxEvent::Discontinuity(DiscontinuityReason::SyncLoss)));
    // Bytes were skipped: the picture in progress is lost, up to the next keyframe.
    let (clean, _) = demux(&data);
    let (expected, _) = without_damaged_video(&clean, video_pes_at(&data, 40));
    assert_eq!(without_discontinuities(&events), expected);
}

#[test]
fn garbage_that_looks_like_a_packet_costs_no_real_packet() {
    // The garbage starts with a sync byte, but the byte 188 further on is not one: the
    // false packet is dropped and the real one after it found again.
    let data = fixture("h264_only.ts");
    let at = nth_start(&data, 0x100, 10) * PACKET;
    let mut damaged = data[..at].to_vec();
    damaged.extend([0x47, 0x00, 0x47, 0x12, 0x34]);
    damaged.extend(&data[at..]);
    let (events, demuxer) = demux(&damaged);
    assert_eq!(demuxer.stats().sync_losses, 1);
    assert_eq!(demuxer.stats().cc_errors, 0);
    // The picture in progress before the garbage is dropped, and the pictures after it
    // wait for the next keyframe.
    let (clean, _) = demux(&data);
    let (expected, _) = without_damaged_video(&clean, 9);
    assert_eq!(without_discontinuities(&events), expected);
}

#[test]
fn a_packet_cut_short_never_reaches_a_frame_however_the_bytes_are_chunked() {
    // The last packet of the 4th audio PES loses its tail: read as 188 bytes it would
    // take the next packet's head and still complete the PES at its declared length.
    let data = fixture("aac_only.ts");
    let cut = (0..nth_start(&data, 0x100, 4))
        .rev()
        .find(|&i| pid(&data, i) == 0x100)
        .expect("an audio packet before");
    let mut damaged = data[..cut * PACKET + 100].to_vec();
    damaged.extend(&data[(cut + 1) * PACKET..]);
    let (clean, _) = demux(&data);
    let (events, demuxer) = demux(&damaged);
    assert_eq!(demuxer.stats().sync_losses, 1);
    let frames = |events: &[DemuxEvent]| -> Vec<media::Frame> {
        events
            .iter()
            .filter_map(|e| match e {
                DemuxEvent::Frame(f) => Some(f.clone()),
                _ => None,
            })
            .collect()
    };
    let (got, all) = (frames(&events), frames(&clean));
    assert!(got.len() < all.len(), "the cut PES is gone");
    assert!(
        got.iter().all(|f| all.contains(f)),
        "no frame carries spliced bytes"
    );
    for sizes in [&[1][..], &[188], &[189, 7], &[1316], &[100, 88, 376]] {
        let (chunked, _) = demux_chunked(&damaged, sizes);
        assert_eq!(chunked, events, "chunks of {sizes:?}");
    }
}

#[test]
fn lying_pes_lengths_are_counted() {
    // Audio PES declare their length: make the 2nd one claim 100 bytes less than it has.
    let mut data = fixture("aac_only.ts");
    let start = nth_start(&data, 0x100, 1) * PACKET;
    let payload = start
        + 4
        + if data[start + 3] & 0x20 != 0 {
            1 + usize::from(data[start + 4])
        } else {
            0
        };
    assert_eq!(&data[payload..payload + 3], &[0, 0, 1]);
    let len = u16::from_be_bytes([data[payload + 4], data[payload + 5]]);
    data[payload + 4..payload + 6].copy_from_slice(&(len - 100).to_be_bytes());
    let (events, demuxer) = demux(&data);
    // One error for the lie; the cut PES cannot be trusted and is dropped whole (its
    // 16 ADTS frames), the bytes past its declared end with it.
    assert_eq!(demuxer.stats().pes_errors, 1);
    assert_eq!(demuxer.stats().damaged_frames, 1);
    assert_eq!(frame_count(&events), 95 - 16);
}

#[test]
fn a_pes_without_pts_is_dropped_and_counted() {
    let mut data = fixture("aac_only.ts");
    let start = nth_start(&data, 0x100, 2) * PACKET;
    let payload = start
        + 4
        + if data[start + 3] & 0x20 != 0 {
            1 + usize::from(data[start + 4])
        } else {
            0
        };
    data[payload + 7] &= 0x3f; // PTS_DTS_flags = 00
    let (events, demuxer) = demux(&data);
    assert_eq!(demuxer.stats().pes_errors, 1);
    // 95 AAC frames in 6 PES; the dropped third PES carried 16 of them.
    assert_eq!(frame_count(&events), 95 - 16);
}

#[test]
fn a_corrupt_pmt_fails_its_crc() {
    let mut data = fixture("h264_only.ts");
    // Packet 2 is the first PMT; damage a byte inside its section.
    assert_eq!(pid(&data, 2), 0x1000);
    data[2 * PACKET + 10] ^= 0x01;
    let (_, demuxer) = demux(&data);
    assert_eq!(demuxer.stats().crc_errors, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn chunking_does_not_change_events(
        sizes in proptest::collection::vec(1usize..600, 1..16),
        name in prop::sample::select(vec!["h264_aac.ts", "h265_aac.ts"]),
    ) {
        let data = fixture(name);
        let (whole, _) = demux(&data);
        let (chunked, stats) = demux_chunked(&data, &sizes);
        prop_assert_eq!(chunked, whole);
        prop_assert_eq!(stats.stats().sync_losses, 0);
    }

    #[test]
    fn random_bytes_never_panic(
        data in proptest::collection::vec(any::<u8>(), 0..4000),
        sizes in proptest::collection::vec(1usize..300, 1..8),
    ) {
        let (_, demuxer) = demux_chunked(&data, &sizes);
        prop_assert!(demuxer.stats().packets as usize <= data.len() / PACKET);
    }

    #[test]
    fn random_packets_never_panic(
        packets in proptest::collection::vec(
            (0u16..4, any::<u8>(), proptest::collection::vec(any::<u8>(), 184)), 0..40),
    ) {
        // Well-framed packets with random headers and payloads on the PIDs that matter
        // (PAT, PMT, video, audio of ffmpeg's layout), after a valid PAT and PMT.
        let mut data = fixture("h264_aac.ts")[PACKET..3 * PACKET].to_vec();
        for (which, flags, payload) in packets {
            let pid = [0x0000u16, 0x1000, 0x100, 0x101][usize::from(which)];
            data.extend([0x47, (flags & 0xe0) | (pid >> 8) as u8, pid as u8, flags]);
            data.extend(payload);
        }
        let (_, demuxer) = demux(&data);
        prop_assert_eq!(demuxer.stats().packets as usize, data.len() / PACKET);
    }

    #[test]
    fn damaged_fixtures_never_panic_and_are_counted(
        cut in 0usize..100_000,
        flips in proptest::collection::vec((0usize..100_000, any::<u8>()), 1..20),
    ) {
        let mut data = fixture("h264_aac.ts");
        let damaged = flips.len();
        for (at, x) in flips {
            let at = at % data.len();
            data[at] ^= x | 1;
        }
        data.truncate(cut % data.len());
        let (events, demuxer) = demux(&data);
        let s = demuxer.stats();
        prop_assert_eq!(s.frames as usize, frame_count(&events));
        // 75 video and 142 AAC frames; a flipped ADTS length can split one frame in two.
        prop_assert!(s.frames as usize <= 75 + 142 + 5 + 2 * damaged);
    }

    #[test]
    fn a_lying_pes_length_never_panics(index in 0usize..9, len in any::<u16>()) {
        let mut data = fixture("h264_aac.ts");
        let start = nth_start(&data, 0x101, index) * PACKET;
        let payload = start + 4
            + if data[start + 3] & 0x20 != 0 { 1 + usize::from(data[start + 4]) } else { 0 };
        let old = u16::from_be_bytes([data[payload + 4], data[payload + 5]]);
        data[payload + 4..payload + 6].copy_from_slice(&len.to_be_bytes());
        let (events, demuxer) = demux(&data);
        let video = events.iter().filter(|e| matches!(e, DemuxEvent::Frame(f) if f.kind() == media::TrackKind::Video)).count();
        prop_assert_eq!(video, 75);
        if len != old {
            prop_assert!(demuxer.stats().pes_errors >= 1);
        }
    }
}
