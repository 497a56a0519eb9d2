//! Generated bindings, one private module per WIT version. Nothing outside `plugins` sees them.

pub(super) mod v0_1;
