//! ISO BMFF box writing: a box is opened with a placeholder size, its body appended,
//! and the size patched when it is closed, so nested boxes need no size precomputation.

use bytes::BufMut;

/// Opens a box: writes a zero size and the type; returns where the box starts.
pub(crate) fn open(out: &mut Vec<u8>, kind: &[u8; 4]) -> usize {
    let at = out.len();
    out.put_u32(0);
    out.put_slice(kind);
    at
}

/// Opens a full box (version and 24-bit flags after the header).
pub(crate) fn open_full(out: &mut Vec<u8>, kind: &[u8; 4], version: u8, flags: u32) -> usize {
    let at = open(out, kind);
    out.put_u32((u32::from(version) << 24) | (flags & 0x00ff_ffff));
    at
}

/// Closes the box opened at `at`: patches its 32-bit size.
///
/// Callers bound what goes into a box beforehand (fragments check their sample bytes
/// against [`MAX_BOX_BODY`]), so the size always fits.
pub(crate) fn close(out: &mut [u8], at: usize) {
    let size = u32::try_from(out.len() - at).expect("box sizes are bounded before writing");
    out[at..at + 4].copy_from_slice(&size.to_be_bytes());
}

/// The most sample bytes one fragment may carry: leaves room for the boxes around them
/// under the 32-bit size of `mdat`.
pub(crate) const MAX_BOX_BODY: usize = (u32::MAX as usize) - (1 << 20);

/// Writes a box holding `body` as it is.
pub(crate) fn leaf(out: &mut Vec<u8>, kind: &[u8; 4], body: &[u8]) {
    let at = open(out, kind);
    out.put_slice(body);
    close(out, at);
}

/// Writes `ftyp` or `styp`: major brand, minor version 0, compatible brands.
pub(crate) fn file_type(
    out: &mut Vec<u8>,
    kind: &[u8; 4],
    major: &[u8; 4],
    compatible: &[&[u8; 4]],
) {
    let at = open(out, kind);
    out.put_slice(major);
    out.put_u32(0);
    for brand in compatible {
        out.put_slice(*brand);
    }
    close(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_boxes_get_their_sizes() {
        let mut out = vec![0xee];
        let outer = open(&mut out, b"moof");
        let inner = open_full(&mut out, b"mfhd", 1, 0x0102_0304);
        out.put_u32(7);
        close(&mut out, inner);
        close(&mut out, outer);
        assert_eq!(
            out,
            [
                0xee, 0, 0, 0, 24, b'm', b'o', b'o', b'f', 0, 0, 0, 16, b'm', b'f', b'h', b'd', 1,
                2, 3, 4, 0, 0, 0, 7
            ]
        );
    }

    #[test]
    fn file_type_lists_brands() {
        let mut out = Vec::new();
        file_type(&mut out, b"styp", b"msdh", &[b"msdh", b"cmfs"]);
        assert_eq!(&out[..4], &24u32.to_be_bytes());
        assert_eq!(&out[4..12], b"stypmsdh");
        assert_eq!(&out[16..], b"msdhcmfs");
    }
}
