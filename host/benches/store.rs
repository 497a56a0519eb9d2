//! Placeholder until the benchmark harness lands.
fn main() {}
