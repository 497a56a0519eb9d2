//! Bindings for `seshat:plugin@0.2.x`, generated from the frozen copy in `wit/v0.2.0/` (released,
//! never edited). Its shared types are unchanged from 0.1.0, so they are
//! mapped onto the 0.1.0 bindings' Rust types and one set of conversions serves both versions;
//! what 0.2.0 adds (the provider's probes and refusal limits, the trimmer's keep-lines edit, the
//! `log` interface every world imports) is converted here or in the kind's module.

pub(crate) mod trimmer {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
        world: "trimmer",
        // 0.2.0's trim types add the keep-lines edit, so they are this version's own.
        with: { "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types },
    });
}

/// The `log` interface (0.2.0), imported by every world and served once for all (`sandbox`).
pub(crate) use trimmer::seshat::plugin::log;

pub(crate) mod summariser {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
        world: "summariser",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

pub(crate) mod provider {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
        world: "provider",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

/// The embedder world (0.2.0 only: there is no 0.1.0 embedder).
pub(crate) mod embedder {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
        world: "embedder",
        with: {
            "seshat:plugin/types": super::super::v0_1::trimmer::seshat::plugin::types,
            "seshat:plugin/log": super::trimmer::seshat::plugin::log,
        },
    });
}

/// The provider calls, in host types: 0.1.0's (the same conversions) plus 0.2.0's additions.
pub(crate) mod translate {
    use super::provider::Provider as Bindings;
    use super::provider::exports::seshat::plugin::translate as t;
    include!("translate.rs");

    include!("translate_v0_2.rs");
}
