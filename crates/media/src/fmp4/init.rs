//! The init segment: `ftyp`, then `moov` with `mvhd`, one `trak` per track (empty
//! sample tables: every sample is in the fragments) and `mvex` with a `trex` per track.

use bytes::BufMut;

use super::bmff::{close, file_type, open, open_full};
use super::config::InitConfig;
use super::movie::{audio_trak, empty_tables, mvhd, video_trak, TrackTiming};
use super::{Fmp4Error, AUDIO_TRACK_ID, VIDEO_TRACK_ID};

/// Writes the init segment of `config` into `out`.
///
/// The bytes are a pure function of the config, so every node with the same source
/// writes the same init segment.
///
/// # Errors
/// [`Fmp4Error::Empty`] when the config carries no track.
pub fn write_init(config: &InitConfig, out: &mut Vec<u8>) -> Result<(), Fmp4Error> {
    if config.track_count() == 0 {
        return Err(Fmp4Error::Empty);
    }
    if config.track_count() == 1 {
        file_type(out, b"ftyp", b"iso6", &[b"iso6", b"isom", b"dash", b"cmfc"]);
    } else {
        file_type(out, b"ftyp", b"iso6", &[b"iso6", b"isom", b"dash"]);
    }
    let moov = open(out, b"moov");
    mvhd(out, 0);
    let unknown = TrackTiming::default();
    if let Some(video) = &config.video {
        video_trak(out, video, &unknown, empty_tables);
    }
    if let Some(audio) = &config.audio {
        audio_trak(out, audio, &unknown, empty_tables);
    }
    let mvex = open(out, b"mvex");
    for (id, present) in [
        (VIDEO_TRACK_ID, config.video.is_some()),
        (AUDIO_TRACK_ID, config.audio.is_some()),
    ] {
        if present {
            let trex = open_full(out, b"trex", 0, 0);
            out.put_u32(id);
            out.put_u32(1); // default_sample_description_index
            out.put_u32(0); // default_sample_duration
            out.put_u32(0); // default_sample_size
            out.put_u32(0); // default_sample_flags
            close(out, trex);
        }
    }
    close(out, mvex);
    close(out, moov);
    Ok(())
}
