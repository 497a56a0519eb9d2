//! The default trimmer's decision logic, compiled natively so its unit tests run here (the guest
//! crate itself only builds for wasm32-wasip2).

#[path = "../../../plugins/trimmer/src/policy.rs"]
mod policy;
