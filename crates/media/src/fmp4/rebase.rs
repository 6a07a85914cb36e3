//! Moving fragments' decode times: a file made of archived fragments (an MP4 export of a
//! period) starts its timeline at zero, as editors and players expect of a file, while
//! every fragment carries the stream's own 90 kHz decode times.

/// Calls `f` with the payload of every `tfdt` box of every `moof` in `bytes` (top-level
/// boxes, then `moof` → `traf` → `tfdt`); stops at a malformed box.
fn each_tfdt(bytes: &mut [u8], f: &mut impl FnMut(&mut [u8])) {
    for_boxes(bytes, b"moof", &mut |moof| {
        for_boxes(moof, b"traf", &mut |traf| {
            for_boxes(traf, b"tfdt", &mut |tfdt| f(tfdt));
        });
    });
}

/// Calls `f` with the payload of every box of type `kind` directly in `bytes`.
fn for_boxes(bytes: &mut [u8], kind: &[u8; 4], f: &mut impl FnMut(&mut [u8])) {
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let size =
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        if size < 8 || at + size > bytes.len() {
            return;
        }
        if &bytes[at + 4..at + 8] == kind {
            f(&mut bytes[at + 8..at + size]);
        }
        at += size;
    }
}

/// A `tfdt` payload's decode time (version 0: 32 bits, version 1: 64 bits).
fn read_time(tfdt: &[u8]) -> Option<u64> {
    match tfdt.first()? {
        0 => Some(u64::from(u32::from_be_bytes(
            tfdt.get(4..8)?.try_into().ok()?,
        ))),
        1 => Some(u64::from_be_bytes(tfdt.get(4..12)?.try_into().ok()?)),
        _ => None,
    }
}

/// The earliest decode time of any track in `fragment`'s `moof`s.
pub fn first_decode_time(fragment: &[u8]) -> Option<u64> {
    let mut copy = fragment.to_vec();
    let mut first: Option<u64> = None;
    each_tfdt(&mut copy, &mut |tfdt| {
        if let Some(time) = read_time(tfdt) {
            first = Some(first.map_or(time, |f| f.min(time)));
        }
    });
    first
}

/// Subtracts `base` from every decode time of `fragment` (to zero at the least): every
/// track shares the 90 kHz timescale, so one base keeps them in sync.
pub fn rebase_decode_times(fragment: &mut [u8], base: u64) {
    each_tfdt(fragment, &mut |tfdt| {
        let Some(time) = read_time(tfdt) else { return };
        let moved = time.saturating_sub(base);
        match tfdt[0] {
            0 => {
                tfdt[4..8].copy_from_slice(&u32::try_from(moved).unwrap_or(u32::MAX).to_be_bytes())
            }
            _ => tfdt[4..12].copy_from_slice(&moved.to_be_bytes()),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut out = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(payload);
        out
    }

    fn tfdt(version: u8, time: u64) -> Vec<u8> {
        let mut payload = vec![version, 0, 0, 0];
        if version == 0 {
            payload.extend_from_slice(&(time as u32).to_be_bytes());
        } else {
            payload.extend_from_slice(&time.to_be_bytes());
        }
        boxed(b"tfdt", &payload)
    }

    #[test]
    fn every_tracks_decode_time_moves_by_one_base() {
        let traf_v = boxed(
            b"traf",
            &[boxed(b"tfhd", &[0; 8]), tfdt(1, 900_000_123)].concat(),
        );
        let traf_a = boxed(b"traf", &tfdt(0, 900_000_000));
        let moof = boxed(b"moof", &[boxed(b"mfhd", &[0; 8]), traf_v, traf_a].concat());
        let mut file = [moof, boxed(b"mdat", &[7; 16])].concat();
        assert_eq!(first_decode_time(&file), Some(900_000_000));
        rebase_decode_times(&mut file, 900_000_000);
        let mut times = Vec::new();
        each_tfdt(&mut file, &mut |t| times.push(read_time(t).unwrap()));
        assert_eq!(times, vec![123, 0]);
        assert_eq!(&file[file.len() - 16..], &[7; 16], "the media is untouched");
    }

    #[test]
    fn malformed_boxes_are_left_alone() {
        let mut junk = vec![0, 0, 0, 200, b'm', b'o', b'o', b'f', 1, 2, 3];
        let before = junk.clone();
        rebase_decode_times(&mut junk, 5);
        assert_eq!(junk, before);
        assert_eq!(first_decode_time(&junk), None);
    }
}
