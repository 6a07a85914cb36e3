//! A per-thread memo of recent scans: a viewer's player sends the same `User-Agent` with
//! every playlist and segment request, and a node's viewers use a few hundred distinct
//! ones, so most scans are answered by a comparison with the header seen last in the
//! same slot instead of a pass over it.
//!
//! 32 slots per thread, each holding the last header it scanned in a fixed buffer: the
//! memo never allocates (the shedding decision must not, DESIGN invariant 5), a stream
//! of ever-new headers costs one copy each on top of the scan, and a header longer than
//! a slot (rare: real ones are under 250 bytes) is scanned every time.

use std::cell::RefCell;

/// Slots per thread (a power of two).
const SLOTS: usize = 32;

/// The longest header a slot holds.
const HELD: usize = 247;

struct Slot {
    /// The table's fingerprint (0: vacant).
    table: u64,
    found: u64,
    len: u8,
    header: [u8; HELD],
}

impl Slot {
    const VACANT: Slot = Slot {
        table: 0,
        found: 0,
        len: 0,
        header: [0; HELD],
    };
}

thread_local! {
    static MEMO: RefCell<[Slot; SLOTS]> = const { RefCell::new([Slot::VACANT; SLOTS]) };
}

/// The slot of a header scanned by a table: its words folded, then spread.
fn slot_of(table: u64, header: &[u8]) -> usize {
    let mut h = table ^ header.len() as u64;
    let mut words = header.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        h = h.rotate_left(7) ^ u64::from_le_bytes(w);
    }
    for &b in words.remainder() {
        h = h.rotate_left(7) ^ u64::from(b);
    }
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as usize & (SLOTS - 1)
}

/// `scan(header)`, or its answer from the last time this thread scanned the same
/// header with the same table (`table`: the table's fingerprint, never 0).
pub(crate) fn remembered(table: u64, header: &[u8], scan: impl FnOnce() -> u64) -> u64 {
    if header.len() > HELD {
        return scan();
    }
    // HELD < 256.
    let len = header.len() as u8;
    let slot = slot_of(table, header);
    MEMO.with(|memo| {
        let Ok(mut memo) = memo.try_borrow_mut() else {
            return scan();
        };
        let entry = &mut memo[slot];
        if entry.table == table && &entry.header[..usize::from(entry.len)] == header {
            return entry.found;
        }
        let found = scan();
        entry.table = table;
        entry.found = found;
        entry.len = len;
        entry.header[..header.len()].copy_from_slice(header);
        found
    })
}
