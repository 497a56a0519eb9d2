//! The 0.2.0 test trimmer (`trimmer-0-2-0`) compiled against this crate's `wit-generated`: a copy
//! of the frozen `wit/v0.3.0` WIT as released (written by tests/plugins/build.rs), whose trim
//! types and `log` are 0.2.0's. It proves a plugin built for the frozen 0.3.0 keeps loading.

include!("../../trimmer-0-2-0/src/lib.rs");
