//! Bindings for `seshat:plugin@0.3.x`, generated from the frozen copy in `wit/v0.3.0/` (released,
//! never edited). Its shared types are unchanged from 0.1.0
//! and its trim types from 0.2.0, so they are mapped onto those bindings' Rust types and one set
//! of conversions serves every version; what 0.3.0 adds (the provider's token counters) is
//! converted here.

pub(crate) mod trimmer {
    wasmtime::component::bindgen!({
        path: "wit/v0.3.0",
        world: "trimmer",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/trim-types": super::super::v0_2::trimmer::seshat::plugin::trim_types,
        },
    });
}

/// The `log` interface at 0.3.0, served once for all (`sandbox`).
pub(crate) use trimmer::seshat::plugin::log;

pub(crate) mod summariser {
    wasmtime::component::bindgen!({
        path: "wit/v0.3.0",
        world: "summariser",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod provider {
    wasmtime::component::bindgen!({
        path: "wit/v0.3.0",
        world: "provider",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod embedder {
    wasmtime::component::bindgen!({
        path: "wit/v0.3.0",
        world: "embedder",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

/// The provider calls, in host types: 0.1.0's and 0.2.0's (the same conversions) plus 0.3.0's
/// token counters.
pub(crate) mod translate {
    use super::provider::Provider as Bindings;
    use super::provider::exports::seshat::plugin::translate as t;
    include!("translate.rs");

    include!("translate_v0_2.rs");

    include!("translate_v0_3.rs");
}
