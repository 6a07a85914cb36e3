//! The `brdyun` binary: CLI, config and wiring.
fn main() {}
