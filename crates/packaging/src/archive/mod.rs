//! The archive's packaging: fMP4 catch-up derived from the TS archive ([`fmp4`]), a
//! run of archived segments as one progressive MP4 file ([`progressive`]) and a
//! package's catch-up master ([`master`]), all reading through a [`SegmentSource`].

pub mod fmp4;
pub mod master;
pub mod progressive;
pub mod source;

pub use source::SegmentSource;
