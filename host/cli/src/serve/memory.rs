//! What the service's process holds in memory, back near what its work needs once a busy spell
//! ends. glibc's allocator keeps what is freed for the process to reuse; a service that held many
//! clients (their connections, their sessions' agents, the threads their turns and requests ran
//! on, which end when idle) would stay that large after they left. Every few seconds
//! ([`start`]), the store connections kept idle too long are closed, and when any were or the
//! allocator holds [`GROWN`] more free than after it last gave back, its free pages go back
//! (`malloc_trim`). With another allocator, only the store connections are closed.
//!
//! (Fewer arenas — one per core rather than glibc's eight — kept 3 MiB less after 1,000 sessions
//! and cost a fifth of the turns a second on both sides of the service benchmark: not done.)

use std::time::Duration;

use seshat_server::Service;

/// How often [`start`]'s thread looks.
const EVERY: Duration = Duration::from_secs(2);

/// Giving back walks the allocator's free lists under its locks: not more often than this.
const AT_MOST_EVERY: Duration = Duration::from_secs(10);

/// How much more the allocator must hold free before it gives back again.
const GROWN: usize = 4 << 20;

/// Starts a thread of its own that looks every [`EVERY`] until the process exits: first closes
/// the store connections `service` kept idle too long ([`Service::close_idle_stores`]), then
/// gives back.
pub(super) fn start(service: Service) {
    let looking = move || {
        let mut after_last = 0;
        let mut last_trim = std::time::Instant::now();
        loop {
            std::thread::sleep(EVERY);
            let closed = service.close_idle_stores();
            let free = free_bytes();
            let wanted = closed > 0 || free > after_last + GROWN;
            after_last = if !wanted {
                // Free memory reused since: the next growth is counted from here.
                after_last.min(free)
            } else if last_trim.elapsed() >= AT_MOST_EVERY {
                trim();
                last_trim = std::time::Instant::now();
                free_bytes()
            } else {
                // (Given back at the next look past AT_MOST_EVERY.)
                after_last
            };
        }
    };
    if let Err(e) = std::thread::Builder::new().name("give-back".into()).spawn(looking) {
        tracing::warn!("cannot start the thread that gives memory back: {e}");
    }
}

/// What the allocator holds free (glibc; elsewhere 0).
#[allow(unsafe_code, reason = "mallinfo2 is a C function; it has no safe binding")]
fn free_bytes() -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallinfo2 only reads the allocator's own counters and returns them by value; it is
    // safe to call from any thread at any time.
    unsafe {
        libc::mallinfo2().fordblks
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    0
}

/// Returns the allocator's free pages to the system (glibc; elsewhere nothing).
#[allow(unsafe_code, reason = "malloc_trim is a C function; it has no safe binding")]
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own; it reads no pointer
    // of ours and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
