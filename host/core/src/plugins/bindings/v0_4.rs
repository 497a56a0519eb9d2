//! Bindings for `seshat:plugin@0.4.x`, generated from `wit/` (0.4.0, unstable until this round's
//! last addition freezes it and `wit/v0.4.0/` holds it as released). Its shared types are
//! unchanged from 0.1.0 and its trim types from 0.2.0, so they are mapped onto those bindings'
//! Rust types; its worlds of the earlier kinds are 0.3.0's, served by the same conversions; what
//! 0.4.0 adds is the hook and the extractor worlds.

pub(crate) mod trimmer {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "trimmer",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/trim-types": super::super::v0_2::trimmer::seshat::plugin::trim_types,
        },
    });
}

/// The `log` interface at 0.4.0, served once for all (`sandbox`).
pub(crate) use trimmer::seshat::plugin::log;

pub(crate) mod summariser {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "summariser",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod provider {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "provider",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod hook {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "hook",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod extractor {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "extractor",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod embedder {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "embedder",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

/// The provider calls, in host types: as at 0.3.0.
pub(crate) mod translate {
    use super::provider::Provider as Bindings;
    use super::provider::exports::seshat::plugin::translate as t;
    include!("translate.rs");

    include!("translate_v0_2.rs");

    include!("translate_v0_3.rs");
}
