//! Paths of the test-only plugins (some deliberately hostile), built from `guests/` by this
//! crate's build script. Never shipped: only the host's tests depend on this crate.

include!(concat!(env!("OUT_DIR"), "/paths.rs"));
