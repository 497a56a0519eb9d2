//! Builds the default plugins in `plugins/` for `wasm32-wasip2` into `OUT_DIR/plugins/` for
//! `include_bytes!` (see `plugins/build-guests.rs`).

include!("../../plugins/build-guests.rs");

/// The default plugins: (cargo package, file name).
const PLUGINS: &[(&str, &str)] = &[
    ("seshat-trimmer", "trimmer"),
    ("seshat-summariser", "summariser"),
    ("seshat-summariser-extractive", "summariser-extractive"),
    ("seshat-provider-anthropic", "provider-anthropic"),
    ("seshat-provider-openai", "provider-openai"),
    ("seshat-embedder-openai", "embedder-openai"),
];

fn main() {
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("host/core/ is two levels below the repository")
        .to_path_buf();
    println!("cargo::rerun-if-changed={}", root.join("plugins").display());
    println!("cargo::rerun-if-changed={}", root.join("wit").display());
    println!("cargo::rerun-if-changed={}", root.join("host/outcomes").display());
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("plugins");
    build_guests(&root.join("plugins/Cargo.toml"), &root.join("target/wasm-plugins"), PLUGINS, &out);
}
