// The release's code as it is: its warnings (dead code, elided lifetimes) are not
// brdyun's to fix.
#![allow(warnings)]
pub mod access;
pub mod connection;
pub mod listener;
pub mod options;
pub mod packet;
pub mod protocol;
pub mod settings;
pub mod statistics;
