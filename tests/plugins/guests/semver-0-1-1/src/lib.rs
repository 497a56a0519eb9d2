// A trimmer built without the SDK against this crate's `wit-generated`: the real WIT with the
// version changed to 0.1.1 (written by tests/plugins/build.rs). `version-0-2-0` includes this
// file, so it uses plain comments (an included file cannot carry inner doc comments).

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
