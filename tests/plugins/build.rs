//! Builds the test-only guest crates in `guests/` for wasm32-wasip2 (see
//! `plugins/build-guests.rs`) and writes their paths into `OUT_DIR/paths.rs`; builds the default
//! plugins in `plugins/` from source too, for the test that checks the components shipped in
//! `host/core/plugins/` are what their sources build.

include!("../../plugins/build-guests.rs");

/// (cargo package, file name, constant name).
const GUESTS: &[(&str, &str, &str)] = &[
    ("test-hostile", "hostile", "HOSTILE"),
    ("test-summariser", "summariser", "SUMMARISER"),
    ("test-provider", "provider", "PROVIDER"),
    ("test-trimmer-0-1-0", "trimmer-0-1-0", "TRIMMER_0_1_0"),
    ("test-semver-0-1-1", "semver-0-1-1", "SEMVER_0_1_1"),
    ("test-version-0-5-0", "version-0-5-0", "VERSION_0_5_0"),
    ("test-embedder", "embedder", "EMBEDDER"),
    ("test-trimmer-0-2-0", "trimmer-0-2-0", "TRIMMER_0_2_0"),
    ("test-trimmer-0-3-0", "trimmer-0-3-0", "TRIMMER_0_3_0"),
    ("test-hook", "hook", "HOOK"),
    ("test-extractor", "extractor", "EXTRACTOR"),
];

/// The default plugins: (cargo package, file name), as `host/core/plugins/<file>.wasm` ships them.
const DEFAULTS: &[(&str, &str)] = &[
    ("seshat-trimmer", "trimmer"),
    ("seshat-summariser", "summariser"),
    ("seshat-summariser-extractive", "summariser-extractive"),
    ("seshat-extractor", "extractor"),
    ("seshat-extractor-model", "extractor-model"),
    ("seshat-provider-anthropic", "provider-anthropic"),
    ("seshat-provider-openai", "provider-openai"),
    ("seshat-embedder-openai", "embedder-openai"),
];

fn main() {
    let here = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = here.join("../..");
    println!("cargo::rerun-if-changed={}", here.join("guests").display());
    println!("cargo::rerun-if-changed={}", root.join("plugins").display());
    println!("cargo::rerun-if-changed={}", root.join("wit").display());
    println!("cargo::rerun-if-changed={}", root.join("host/outcomes").display());

    // Three trimmers are built from the frozen 0.1.0 WIT: as it is, and with the version changed
    // to a compatible patch and to a minor this host does not serve.
    let wit = std::fs::read_to_string(root.join("wit/v0.1.0/seshat-plugin.wit")).expect("read the frozen WIT");
    for (dir, version) in [("trimmer-0-1-0", "0.1.0"), ("semver-0-1-1", "0.1.1"), ("version-0-5-0", "0.5.0")] {
        let generated = here.join("guests").join(dir).join("wit-generated");
        std::fs::create_dir_all(&generated).expect("create wit-generated");
        let text = wit.replace("package seshat:plugin@0.1.0;", &format!("package seshat:plugin@{version};"));
        let path = generated.join("seshat-plugin.wit");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).expect("write the versioned WIT");
        }
    }

    // One trimmer is built from the frozen 0.2.0 WIT as released, and the same source from the
    // frozen 0.3.0 WIT.
    for (dir, version) in [("trimmer-0-2-0", "v0.2.0"), ("trimmer-0-3-0", "v0.3.0")] {
        let frozen = std::fs::read_to_string(root.join("wit").join(version).join("seshat-plugin.wit"))
            .expect("read a frozen WIT");
        let generated = here.join("guests").join(dir).join("wit-generated");
        std::fs::create_dir_all(&generated).expect("create wit-generated");
        let path = generated.join("seshat-plugin.wit");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(frozen.as_str()) {
            std::fs::write(&path, frozen).expect("write a frozen WIT");
        }
    }

    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let packages: Vec<(&str, &str)> = GUESTS.iter().map(|(p, f, _)| (*p, *f)).collect();
    build_guests(&here.join("guests/Cargo.toml"), &root.join("target/wasm-plugins"), &packages, &out);
    let consts: String = GUESTS
        .iter()
        .map(|(_, file, name)| {
            format!(
                "/// The `{file}` test plugin.\npub const {name}: &str = {:?};\n",
                out.join(format!("{file}.wasm")).display().to_string()
            )
        })
        .collect();
    let defaults = out.join("defaults");
    build_guests(&root.join("plugins/Cargo.toml"), &root.join("target/wasm-plugins"), DEFAULTS, &defaults);
    let listed: String = DEFAULTS
        .iter()
        .map(|(_, file)| {
            format!("    ({file:?}, {:?}),\n", defaults.join(format!("{file}.wasm")).display().to_string())
        })
        .collect();
    let consts = format!(
        "{consts}/// The default plugins built from `plugins/`: (file name, path).\npub const DEFAULTS: &[(&str, &str)] = &[\n{listed}];\n"
    );
    std::fs::write(out.join("paths.rs"), consts).expect("write paths.rs");
}
