//! The library's I/O runtime, started on first use: a current-thread runtime driven for the life
//! of the process by the thread `seshat-io`. Network work (provider requests, PostgreSQL
//! connections) is spawned onto it through its handle; nothing blocks on it but that thread, so
//! the synchronous callers that wait for it may run inside another runtime or none.

use std::sync::OnceLock;

/// The runtime's handle (or why it could not start).
pub(crate) fn handle() -> Result<tokio::runtime::Handle, String> {
    static IO: OnceLock<Result<tokio::runtime::Handle, String>> = OnceLock::new();
    IO.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the I/O runtime: {e}"))?;
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("seshat-io".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()))
            .map_err(|e| format!("cannot start the I/O thread: {e}"))?;
        Ok(handle)
    })
    .clone()
}
