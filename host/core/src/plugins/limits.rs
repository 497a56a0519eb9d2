//! Resource limits per plugin call: defaults per kind, overridable by the manifest and the user's
//! configuration, never beyond the maxima.

use std::time::Duration;

use serde::Serialize;

use super::PluginKind;

pub use crate::config::LimitRequest;

/// The limits a plugin runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Linear memory cap in MiB.
    pub memory_mib: u64,
    /// Guest time per call in milliseconds.
    pub time_ms: u64,
    /// Model calls per compaction (summarisers).
    pub complete_calls: u32,
    /// Largest `max-tokens` per model call (summarisers).
    pub complete_max_tokens: u32,
}

/// The most any manifest or configuration can grant.
pub const MAXIMUM: Limits =
    Limits { memory_mib: 1024, time_ms: 60_000, complete_calls: 32, complete_max_tokens: 8_192 };

impl Limits {
    /// The defaults for a kind.
    pub(crate) fn default_for(kind: PluginKind) -> Self {
        let time_ms = match kind {
            PluginKind::Trimmer | PluginKind::Provider | PluginKind::Embedder | PluginKind::Hook => 2_000,
            PluginKind::Summariser | PluginKind::Extractor => 10_000,
        };
        Limits { memory_mib: 64, time_ms, complete_calls: 8, complete_max_tokens: 2_000 }
    }

    /// The defaults for `kind`, overridden by the manifest's request, then by the user's
    /// configuration, each capped at [`MAXIMUM`].
    pub fn resolve(kind: PluginKind, manifest: LimitRequest, config: LimitRequest) -> Self {
        let d = Self::default_for(kind);
        let pick = |m: Option<u64>, c: Option<u64>, default: u64, max: u64| c.or(m).unwrap_or(default).clamp(1, max);
        let pick32 = |m: Option<u32>, c: Option<u32>, default: u32, max: u32| c.or(m).unwrap_or(default).clamp(1, max);
        Limits {
            memory_mib: pick(manifest.memory_mib, config.memory_mib, d.memory_mib, MAXIMUM.memory_mib),
            time_ms: pick(manifest.time_ms, config.time_ms, d.time_ms, MAXIMUM.time_ms),
            complete_calls: pick32(
                manifest.complete_calls,
                config.complete_calls,
                d.complete_calls,
                MAXIMUM.complete_calls,
            ),
            complete_max_tokens: pick32(
                manifest.complete_max_tokens,
                config.complete_max_tokens,
                d.complete_max_tokens,
                MAXIMUM.complete_max_tokens,
            ),
        }
    }

    /// What [`resolve`](Self::resolve) lowered to the maxima, one sentence each naming the asked
    /// and the granted figure and who asked (the configuration or the manifest).
    pub(crate) fn over_the_cap(manifest: LimitRequest, config: LimitRequest) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |name: &str, m: Option<u64>, c: Option<u64>, max: u64| {
            let (asked, by) = match (c, m) {
                (Some(c), _) => (c, "the configuration"),
                (None, Some(m)) => (m, "the plugin's manifest"),
                (None, None) => return,
            };
            if asked > max {
                out.push(format!("{by} asks for {name} = {asked}, above the cap of {max}: {max} is used"));
            }
        };
        check("memory_mib", manifest.memory_mib, config.memory_mib, MAXIMUM.memory_mib);
        check("time_ms", manifest.time_ms, config.time_ms, MAXIMUM.time_ms);
        let wide = |v: Option<u32>| v.map(u64::from);
        check(
            "complete_calls",
            wide(manifest.complete_calls),
            wide(config.complete_calls),
            u64::from(MAXIMUM.complete_calls),
        );
        check(
            "complete_max_tokens",
            wide(manifest.complete_max_tokens),
            wide(config.complete_max_tokens),
            u64::from(MAXIMUM.complete_max_tokens),
        );
        out
    }

    /// The memory cap in bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        (self.memory_mib as usize) << 20
    }

    /// The guest-time budget.
    pub(crate) fn time_budget(&self) -> Duration {
        Duration::from_millis(self.time_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_beats_manifest_beats_default_within_the_maximum() {
        let m = LimitRequest { memory_mib: Some(128), time_ms: Some(999_999), ..Default::default() };
        let c = LimitRequest { memory_mib: Some(32), ..Default::default() };
        let l = Limits::resolve(PluginKind::Trimmer, m, c);
        assert_eq!(l.memory_mib, 32);
        assert_eq!(l.time_ms, MAXIMUM.time_ms);
        assert_eq!(l.complete_calls, 8);
        assert_eq!(Limits::resolve(PluginKind::Trimmer, m, LimitRequest::default()).memory_mib, 128);
    }
}
