//! The vocabulary a turn is made of: roles, parts, usage, statuses. Defined by the wire protocol
//! (`seshat-protocol`), which the library, `seshat serve` and its clients share.

pub use seshat_protocol::conversation::*;
