//! The default plugins, built from `plugins/` by `host/core/build.rs` and embedded in the binary.

use super::{CatalogEntry, Manifest, Origin, WasmSource};

struct Builtin {
    manifest: &'static str,
    wasm: &'static [u8],
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        manifest: include_str!("../../../../plugins/trimmer/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/plugins/trimmer.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../../plugins/summariser/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/plugins/summariser.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../../plugins/summariser-extractive/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/plugins/summariser-extractive.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../../plugins/provider-anthropic/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/plugins/provider-anthropic.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../../plugins/provider-openai/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/plugins/provider-openai.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../../plugins/embedder-openai/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/plugins/embedder-openai.wasm")),
    },
];

/// The built-in plugins as catalog entries.
pub(super) fn entries() -> Vec<CatalogEntry> {
    BUILTINS
        .iter()
        .map(|b| CatalogEntry {
            manifest: Manifest::parse(b.manifest, std::path::Path::new("<builtin>"))
                .expect("built-in manifests are checked by the tests"),
            origin: Origin::Builtin,
            wasm: WasmSource::Embedded(b.wasm),
        })
        .collect()
}
