//! A trimmer built against seshat:plugin@0.1.1 (its WIT is the real one with the version changed,
//! written by tests/plugins/build.rs), without the SDK.

wit_bindgen::generate!({ path: "wit-generated", world: "trimmer" });

struct Plugin;

impl exports::seshat::plugin::trim::Guest for Plugin {
    fn trim(
        _history: seshat::plugin::trim_types::History,
        _budget: seshat::plugin::trim_types::Budget,
    ) -> Result<Vec<seshat::plugin::trim_types::Edit>, seshat::plugin::types::Error> {
        Ok(Vec::new())
    }
}

export!(Plugin);
