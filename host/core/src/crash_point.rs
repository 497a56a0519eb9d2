//! Crash points for the kill tests: in a debug build, `SESHAT_CRASH_AT=<point>[:<n>]` sends the
//! process SIGKILL the `n`-th time (the first by default) it reaches the named point — inside a
//! write's transaction, just before it commits. The tests use them to land a kill in the middle
//! of a compaction, an import, a migration or a memory write, where a kill at a random moment
//! would almost never fall. Release builds compile every point to nothing.

/// Reaches the crash point `name`.
#[cfg(all(debug_assertions, unix))]
pub(crate) fn reach(name: &str) {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};

    // Read once: the point armed for this process, if any.
    static ARMED: OnceLock<Option<(String, u32)>> = OnceLock::new();
    static HITS: AtomicU32 = AtomicU32::new(0);
    let armed = ARMED.get_or_init(|| {
        let value = std::env::var("SESHAT_CRASH_AT").ok()?;
        let (point, n) = value.split_once(':').unwrap_or((&value, "1"));
        Some((point.to_string(), n.parse().unwrap_or(1)))
    });
    if let Some((point, n)) = armed
        && point == name
        && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *n
    {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Reaches the crash point `name` (nothing happens in a release build).
#[cfg(not(all(debug_assertions, unix)))]
#[inline(always)]
pub(crate) fn reach(_name: &str) {}
