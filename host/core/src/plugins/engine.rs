//! The process's one wasmtime `Engine`, with the epoch ticker that drives per-call time budgets.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::{Config, Engine};

/// How often the engine's epoch advances; budgets are checked at this granularity.
pub(super) const TICK: Duration = Duration::from_millis(5);

/// How this process compiles components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Cranelift, optimising: what installed plugins and every session run.
    Optimised,
    /// A baseline compiler (Winch where the machine has it, else Cranelift without
    /// optimisation): several times faster to compile a large component (an interpreter), slower
    /// to run; for checking or testing a file once (`seshat plugins check`, `plugins test`).
    Quick,
}

static TIER: OnceLock<Tier> = OnceLock::new();

/// Makes this process compile with the [`Tier::Quick`] tier; only before any plugin was loaded
/// (returns whether the process now uses it).
pub fn use_quick_tier() -> bool {
    *TIER.get_or_init(|| Tier::Quick) == Tier::Quick
}

/// The tier this process compiles with.
pub fn tier() -> Tier {
    *TIER.get_or_init(|| Tier::Optimised)
}

static ENGINE: OnceLock<Engine> = OnceLock::new();

/// Whether this process has made its engine (compiled or loaded any plugin).
pub fn engine_started() -> bool {
    ENGINE.get().is_some()
}

/// The engine, created on first use with epoch interruption on, plus one background thread
/// that advances its epoch every [`TICK`].
pub(super) fn engine() -> &'static Engine {
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        match tier() {
            Tier::Optimised => {
                config.cranelift_opt_level(wasmtime::OptLevel::Speed);
            }
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            Tier::Quick => {
                config.strategy(wasmtime::Strategy::Winch);
            }
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Tier::Quick => {
                config.cranelift_opt_level(wasmtime::OptLevel::None);
            }
        }
        let engine = Engine::new(&config).expect("the engine configuration is valid");
        let ticker = engine.clone();
        std::thread::Builder::new()
            .name("seshat-epoch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(TICK);
                    ticker.increment_epoch();
                }
            })
            .expect("spawn the epoch thread");
        engine
    })
}

/// A stable number identifying which compiled artefacts this engine can load.
pub(super) fn compatibility_hash() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine().precompile_compatibility_hash().hash(&mut h);
    env!("CARGO_PKG_VERSION").hash(&mut h);
    (tier() == Tier::Quick).hash(&mut h);
    h.finish()
}
