//! The archive's packaging: fMP4 catch-up derived from the TS archive ([`fmp4`]) and a
//! package's catch-up master ([`master`]), both reading through a [`SegmentSource`].

pub mod fmp4;
pub mod master;
pub mod source;

pub use source::SegmentSource;
