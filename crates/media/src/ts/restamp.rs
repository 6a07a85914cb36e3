//! Continuity counters made continuous for one transport stream put together from
//! pieces written apart (the live relay: whole segments, then chunks of a log a reader
//! joins and skips in): every packet carrying a payload gets the next counter of its
//! PID, so a demuxer sees no loss where nothing was lost.

use bytes::Bytes;

use super::{PACKET_SIZE, SYNC_BYTE};

/// The next counter per PID of one outgoing stream.
#[derive(Debug, Default, Clone)]
pub struct CcRestamp {
    next: std::collections::HashMap<u16, u8>,
}

impl CcRestamp {
    /// A stream with no packet sent yet (each PID starts where its first packet says).
    pub fn new() -> Self {
        Self::default()
    }

    /// `data` (whole packets) with continuous counters: the same bytes when they
    /// continue already, else a copy with the counters rewritten.
    pub fn apply(&mut self, data: Bytes) -> Bytes {
        if self.check(&data) {
            return data;
        }
        let mut out = data.to_vec();
        for packet in out.chunks_exact_mut(PACKET_SIZE) {
            if let Some((pid, _)) = counter(packet) {
                let cc = self.next.get(&pid).copied().unwrap_or(packet[3] & 0x0f);
                packet[3] = (packet[3] & 0xf0) | cc;
                self.next.insert(pid, (cc + 1) & 0x0f);
            }
        }
        Bytes::from(out)
    }

    /// Advances over `data` when every counter is the expected one; false (nothing
    /// changed) otherwise.
    fn check(&mut self, data: &[u8]) -> bool {
        let mut next = self.next.clone();
        for packet in data.chunks_exact(PACKET_SIZE) {
            if let Some((pid, cc)) = counter(packet) {
                if next.get(&pid).is_some_and(|&want| want != cc) {
                    return false;
                }
                next.insert(pid, (cc + 1) & 0x0f);
            }
        }
        self.next = next;
        true
    }
}

/// The PID and continuity counter of a packet that carries a payload.
fn counter(packet: &[u8]) -> Option<(u16, u8)> {
    if packet.len() < 4 || packet[0] != SYNC_BYTE || packet[3] & 0x10 == 0 {
        return None;
    }
    let pid = (u16::from(packet[1] & 0x1f) << 8) | u16::from(packet[2]);
    (pid != 0x1fff).then_some((pid, packet[3] & 0x0f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pid: u16, cc: u8) -> Vec<u8> {
        let mut p = vec![0u8; PACKET_SIZE];
        p[0] = SYNC_BYTE;
        p[1] = (pid >> 8) as u8;
        p[2] = pid as u8;
        p[3] = 0x10 | cc;
        p
    }

    #[test]
    fn continuous_pieces_pass_unchanged_and_gaps_are_closed() {
        let mut r = CcRestamp::new();
        let first = Bytes::from([packet(0x100, 5), packet(0x101, 9)].concat());
        assert_eq!(r.apply(first.clone()).as_ptr(), first.as_ptr(), "no copy");
        let gap = Bytes::from([packet(0x100, 12), packet(0x100, 13), packet(0x101, 10)].concat());
        let fixed = r.apply(gap);
        let ccs: Vec<u8> = fixed.chunks(PACKET_SIZE).map(|p| p[3] & 0x0f).collect();
        assert_eq!(ccs, [6, 7, 10]);
        let wrap = Bytes::from([packet(0x100, 8)].concat());
        assert_eq!(r.apply(wrap)[3] & 0x0f, 8);
    }
}
