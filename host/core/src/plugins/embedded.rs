//! The default plugins, shipped built in `host/core/plugins/` (the test suite checks they are what
//! `plugins/` builds) and embedded in the binary.

use super::{CatalogEntry, Manifest, Origin, WasmSource};

struct Builtin {
    manifest: &'static str,
    wasm: &'static [u8],
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        manifest: include_str!("../../plugins/trimmer.toml"),
        wasm: include_bytes!("../../plugins/trimmer.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/summariser.toml"),
        wasm: include_bytes!("../../plugins/summariser.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/summariser-extractive.toml"),
        wasm: include_bytes!("../../plugins/summariser-extractive.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/extractor.toml"),
        wasm: include_bytes!("../../plugins/extractor.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/extractor-model.toml"),
        wasm: include_bytes!("../../plugins/extractor-model.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/provider-anthropic.toml"),
        wasm: include_bytes!("../../plugins/provider-anthropic.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/provider-openai.toml"),
        wasm: include_bytes!("../../plugins/provider-openai.wasm"),
    },
    Builtin {
        manifest: include_str!("../../plugins/embedder-openai.toml"),
        wasm: include_bytes!("../../plugins/embedder-openai.wasm"),
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
