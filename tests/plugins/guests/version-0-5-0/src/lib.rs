//! The 0.1.0 test trimmer (`trimmer-0-1-0`) compiled against this crate's `wit-generated`: the
//! frozen 0.1.0 WIT with its version changed to 0.5.0, a contract this host does not serve
//! (written by tests/plugins/build.rs).

include!("../../trimmer-0-1-0/src/lib.rs");
