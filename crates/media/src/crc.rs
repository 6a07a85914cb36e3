//! The CRC of MPEG-2 systems: PSI sections and the timeline marker carry it. A leaf, so
//! the timeline does not depend on the TS code that carries it.

/// CRC32/MPEG-2 lookup table (polynomial 0x04C11DB7, MSB first).
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u32) << 24;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The CRC32 of ISO/IEC 13818-1 annex A (CRC-32/MPEG-2: init all ones, no reflection,
/// no final xor). Over a whole section including its CRC field the result is 0.
pub fn crc32_mpeg2(data: &[u8]) -> u32 {
    data.iter().fold(0xffff_ffff, |crc, &b| {
        (crc << 8) ^ CRC_TABLE[usize::from((crc >> 24) as u8 ^ b)]
    })
}
