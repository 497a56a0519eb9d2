//! A trimmer built against seshat:plugin@0.2.0: the same source as `semver-0-1-1`, compiled
//! against this crate's `wit-generated` (the real WIT with the version changed, written by
//! tests/plugins/build.rs).

include!("../../semver-0-1-1/src/lib.rs");
