//! The sandbox every plugin call runs in: an empty WASI context, a memory cap, and a budget of
//! guest time enforced through epoch interruption.
//!
//! Time spent inside host functions (a summariser's `complete`) is recorded and subtracted, so
//! only the plugin's own computation counts against its budget.

use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::{Version, Versioned};
use super::limits::Limits;
use super::stderr::{StderrTail, Written};
use super::{Error, PluginKind};

/// Caps linear memory and table growth, remembering whether the cap was hit.
pub(super) struct MemoryCap {
    max_bytes: usize,
    pub(super) hit: bool,
    /// The largest linear memory the instance has had: every size it grew to, from the first
    /// (wasmtime asks here for a memory's initial size too), as memories only grow.
    peak: usize,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.hit = true;
            wasmtime::bail!("memory limit of {} bytes reached", self.max_bytes);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// Guest-time accounting for the call in progress.
pub(super) struct Clock {
    started: Instant,
    in_host: Duration,
    budget: Duration,
    pub(super) expired: bool,
}

impl Clock {
    /// Guest time used by the current call so far.
    pub(super) fn guest_time(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.in_host)
    }
}

/// A line a plugin may log, and a panic message it may hand over, at most this many bytes.
pub(super) const LOG_LINE_BYTES: usize = 4096;
/// A call's log lines together, at most this many bytes; later lines are counted, not shown.
pub(super) const LOG_CALL_BYTES: usize = 64 * 1024;

/// What a plugin said through `log` (0.2.0) during the call in progress.
#[derive(Default)]
pub(super) struct Diagnostics {
    /// The plugin's id, on every line.
    plugin: String,
    /// Bytes of log lines shown so far in this call.
    bytes: usize,
    /// Lines dropped past [`LOG_CALL_BYTES`] in this call.
    dropped: usize,
    /// The message the SDK's panic hook handed over, for the trap that follows.
    pub(super) panic: Option<String>,
    /// Texts never shown (a provider's credential), replaced by `[redacted]`.
    pub(super) secrets: Vec<String>,
}

/// The level of a plugin's log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// `text` cut to at most `max` bytes at a character boundary, saying so.
fn bounded(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let end = text.floor_char_boundary(max);
    std::borrow::Cow::Owned(format!("{}… [{} bytes cut]", &text[..end], text.len() - end))
}

impl Diagnostics {
    /// A plugin's text as the host shows it: secrets redacted, cut to [`LOG_LINE_BYTES`], control
    /// characters as escapes.
    fn render(&self, message: &str) -> String {
        crate::conversation::visible(&bounded(&self.redacted(message), LOG_LINE_BYTES)).into_owned()
    }

    /// `text` with every secret replaced by `[redacted]`.
    fn redacted(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in self.secrets.iter().filter(|s| !s.is_empty()) {
            text = text.replace(secret.as_str(), "[redacted]");
        }
        text
    }

    /// The end of several lines of a plugin's text as the host shows them: secrets redacted,
    /// control characters as escapes, then the last [`super::stderr::TAIL_BYTES`] kept (the end
    /// is what matters in a tail: the exception).
    fn render_block(&self, text: &str) -> String {
        let mut out = crate::conversation::visible(&self.redacted(text)).into_owned();
        if out.len() > super::stderr::TAIL_BYTES {
            let cut = out.ceil_char_boundary(out.len() - super::stderr::TAIL_BYTES);
            out = format!("[… {cut} bytes cut]{}", &out[cut..]);
        }
        out
    }

    /// Writes one of the plugin's lines to the host's log: shown visibly, bounded per line and
    /// per call, never on stdout.
    pub(super) fn log(&mut self, level: LogLevel, message: &str) {
        let line = self.render(message);
        if self.bytes + line.len() > LOG_CALL_BYTES {
            self.dropped += 1;
            return;
        }
        self.bytes += line.len();
        let plugin = self.plugin.as_str();
        match level {
            LogLevel::Trace => tracing::trace!(target: "seshat::plugin", plugin, "{line}"),
            LogLevel::Debug => tracing::debug!(target: "seshat::plugin", plugin, "{line}"),
            LogLevel::Info => tracing::info!(target: "seshat::plugin", plugin, "{line}"),
            LogLevel::Warn => tracing::warn!(target: "seshat::plugin", plugin, "{line}"),
            LogLevel::Error => tracing::error!(target: "seshat::plugin", plugin, "{line}"),
        }
    }

    /// Keeps a panic message for the error of the trap that follows.
    pub(super) fn panicked(&mut self, message: &str) {
        self.panic = Some(self.render(message));
    }

    /// Writes what the plugin wrote to stderr in the call to the host's log, a line at a time
    /// (bounded as its log lines are): at `warn` when the call failed, else at `debug`.
    fn stderr(&mut self, written: &Written, failed: bool) {
        let level = if failed { LogLevel::Warn } else { LogLevel::Debug };
        if written.cut > 0 {
            self.log(level, &format!("[stderr] ({} earlier bytes not kept)", written.cut));
        }
        for line in written.tail.lines().filter(|l| !l.trim().is_empty()) {
            self.log(level, &format!("[stderr] {line}"));
        }
    }

    /// Ends a call: says how many lines went unshown, and starts the next call's count.
    fn end_call(&mut self) {
        if self.dropped > 0 {
            let plugin = self.plugin.as_str();
            tracing::warn!(
                target: "seshat::plugin",
                plugin,
                "{} more log lines dropped: a call may log at most {LOG_CALL_BYTES} bytes",
                self.dropped
            );
        }
        self.bytes = 0;
        self.dropped = 0;
        self.panic = None;
    }
}

/// Everything a plugin instance's `Store` holds.
pub(crate) struct State<H> {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) memory: MemoryCap,
    pub(super) clock: Clock,
    /// What the plugin logged in the call in progress.
    pub(super) diagnostics: Diagnostics,
    /// The tail of what it wrote to stderr in the call in progress.
    stderr: StderrTail,
    /// Kind-specific host context (what host functions need).
    pub(super) host: H,
}

impl<H: Send> super::bindings::v0_2::log::Host for State<H> {
    fn log(&mut self, level: super::bindings::v0_2::log::Level, message: String) {
        use super::bindings::v0_2::log::Level;
        let level = match level {
            Level::Trace => LogLevel::Trace,
            Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        };
        self.diagnostics.log(level, &message);
    }

    fn panicked(&mut self, message: String) {
        self.diagnostics.panicked(&message);
    }
}

/// The `log` interface of a version after 0.2.0 (the same records), served as 0.2.0's.
macro_rules! later_log {
    ($version:ident) => {
        impl<H: Send> super::bindings::$version::log::Host for State<H> {
            fn log(&mut self, level: super::bindings::$version::log::Level, message: String) {
                use super::bindings::$version::log::Level;
                let level = match level {
                    Level::Trace => super::bindings::v0_2::log::Level::Trace,
                    Level::Debug => super::bindings::v0_2::log::Level::Debug,
                    Level::Info => super::bindings::v0_2::log::Level::Info,
                    Level::Warn => super::bindings::v0_2::log::Level::Warn,
                    Level::Error => super::bindings::v0_2::log::Level::Error,
                };
                super::bindings::v0_2::log::Host::log(self, level, message);
            }

            fn panicked(&mut self, message: String) {
                self.diagnostics.panicked(&message);
            }
        }
    };
}
later_log!(v0_3);
later_log!(v0_4);

impl<H: Send> WasiView for State<H> {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl<H> State<H> {
    /// The kind-specific host context.
    pub(super) fn host_mut(&mut self) -> &mut H {
        &mut self.host
    }

    /// Runs `f` as host time: it does not count against the guest's budget.
    pub(super) fn host_time<R>(&mut self, f: impl FnOnce(&mut H) -> R) -> R {
        let start = Instant::now();
        let out = f(&mut self.host);
        self.clock.in_host += start.elapsed();
        out
    }
}

/// A new store with an empty WASI context (no files, environment, arguments, sockets or stdio),
/// the memory cap and the epoch callback installed.
pub(super) fn new_store<H: Send + 'static>(limits: &Limits, plugin: &str, host: H) -> Store<State<H>> {
    // stdin and stdout stay closed; stderr is kept (a tail) for the errors and the log.
    let stderr = StderrTail::default();
    let wasi = wasmtime_wasi::WasiCtxBuilder::new()
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build();
    let state = State {
        stderr,
        wasi,
        table: ResourceTable::new(),
        memory: MemoryCap { max_bytes: limits.memory_bytes(), hit: false, peak: 0 },
        clock: Clock { started: Instant::now(), in_host: Duration::ZERO, budget: limits.time_budget(), expired: false },
        diagnostics: Diagnostics { plugin: plugin.to_string(), ..Diagnostics::default() },
        host,
    };
    let mut store = Store::new(super::engine::engine(), state);
    store.limiter(|s| &mut s.memory);
    store.epoch_deadline_callback(|mut ctx| {
        let clock = &mut ctx.data_mut().clock;
        if clock.guest_time() >= clock.budget {
            clock.expired = true;
            Ok(UpdateDeadline::Interrupt)
        } else {
            Ok(UpdateDeadline::Continue(1))
        }
    });
    store.set_epoch_deadline(1);
    store
}

/// Resets the clock before a call into the guest.
pub(super) fn start_call<H>(store: &mut Store<State<H>>) {
    let clock = &mut store.data_mut().clock;
    clock.started = Instant::now();
    clock.in_host = Duration::ZERO;
    clock.expired = false;
    store.set_epoch_deadline(1);
}

/// Turns a failed call into an error naming the plugin and what happened.
pub(super) fn classify<H>(
    store: &Store<State<H>>,
    err: &wasmtime::Error,
    plugin: &str,
    kind: PluginKind,
    limits: &Limits,
) -> Error {
    let data = store.data();
    let (plugin, kind_name) = (plugin.to_string(), kind.as_str());
    // The epoch callback marks the clock expired before it interrupts the guest: the one way a
    // call runs out of time.
    if data.clock.expired {
        Error::Timeout { plugin, kind: kind_name, budget_ms: limits.time_ms }
    } else if data.memory.hit {
        Error::Memory { plugin, kind: kind_name, limit_mib: limits.memory_mib }
    } else {
        let message = match (err.downcast_ref::<Trap>(), &data.diagnostics.panic) {
            // The SDK's panic hook handed the message over before the trap.
            (_, Some(panic)) => format!("it panicked: {panic}"),
            // A Rust plugin's panic ends in `unreachable`.
            (Some(Trap::UnreachableCodeReached), None) => {
                format!("{} (a panic, or an uncaught exception, in the plugin)", Trap::UnreachableCodeReached)
            }
            (Some(trap), None) => trap.to_string(),
            (None, None) => format!("{err:#}"),
        };
        Error::Trap { plugin, kind: kind_name, message, stderr: String::new() }
    }
}

/// A failed call's error with what the plugin wrote to stderr (a crash's traceback) in it, and
/// that written to the log and kept in `record` (its last [`super::stderr::TAIL_BYTES`]); a call
/// that went well logs and keeps it only.
fn with_stderr<H, R>(store: &mut Store<State<H>>, record: &mut String, result: super::Result<R>) -> super::Result<R> {
    let Some(written) = store.data().stderr.take() else { return result };
    let diagnostics = &mut store.data_mut().diagnostics;
    diagnostics.stderr(&written, result.is_err());
    record.push_str(&diagnostics.render_block(&written.tail));
    if record.len() > super::stderr::TAIL_BYTES {
        let cut = record.ceil_char_boundary(record.len() - super::stderr::TAIL_BYTES);
        record.drain(..cut);
    }
    match result {
        Err(Error::Trap { plugin, kind, message, .. }) => {
            let cut =
                if written.cut > 0 { format!("[{} earlier bytes not kept]\n", written.cut) } else { String::new() };
            Err(Error::Trap {
                plugin,
                kind,
                message,
                stderr: diagnostics.render_block(&format!("{cut}{}", written.tail)),
            })
        }
        other => other,
    }
}

/// A `Linker` for one plugin kind, built once per process: WASI (with the empty context every
/// store gets) plus the kind's host interfaces, added by `add`.
pub(super) fn linker<H: Send + 'static>(
    cell: &'static std::sync::OnceLock<wasmtime::component::Linker<State<H>>>,
    add: impl FnOnce(&mut wasmtime::component::Linker<State<H>>) -> wasmtime::Result<()>,
) -> wasmtime::Result<&'static wasmtime::component::Linker<State<H>>> {
    if let Some(l) = cell.get() {
        return Ok(l);
    }
    let mut linker = wasmtime::component::Linker::new(super::engine::engine());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    add(&mut linker)?;
    Ok(cell.get_or_init(|| linker))
}

/// Type-checks a loaded plugin against its kind's linker and bindings, once, at load.
pub(super) fn prepare<H: Send + 'static, P>(
    plugin: &super::LoadedPlugin,
    kind: PluginKind,
    linker: wasmtime::Result<&'static wasmtime::component::Linker<State<H>>>,
    typed: impl FnOnce(wasmtime::component::InstancePre<State<H>>) -> wasmtime::Result<P>,
) -> super::Result<(P, Slot<H, ()>)> {
    plugin.expect_kind(kind)?;
    let id = plugin.manifest.id.clone();
    let pre = linker
        .and_then(|l| l.instantiate_pre(&plugin.component))
        .and_then(typed)
        .map_err(|e| super::link_error(&id, &e))?;
    let sha256 = plugin.sha256.clone();
    Ok((
        pre,
        Slot {
            id,
            kind,
            limits: plugin.limits,
            sha256,
            usage: Usage::default(),
            secrets: Vec::new(),
            stderr: String::new(),
            live: None,
        },
    ))
}

/// A kind's linker, built once per process.
pub(super) type LinkerFn<H> = fn() -> wasmtime::Result<&'static wasmtime::component::Linker<State<H>>>;

/// A typed prepared instance from an untyped one.
pub(super) type TypedFn<H, P> = fn(wasmtime::component::InstancePre<State<H>>) -> wasmtime::Result<P>;

/// A prepared instance of the plugin's version and its slot.
pub(super) type PreparedVersion<H, P1, P2, P3, P4> = (Versioned<P1, P2, P3, P4>, Slot<H, ()>);

/// [`prepare`] with the linker and bindings of the contract version the plugin was built for.
pub(super) fn prepare_versioned<H: Send + 'static, P1, P2, P3, P4>(
    plugin: &super::LoadedPlugin,
    kind: PluginKind,
    v0_1: (LinkerFn<H>, TypedFn<H, P1>),
    v0_2: (LinkerFn<H>, TypedFn<H, P2>),
    v0_3: (LinkerFn<H>, TypedFn<H, P3>),
    v0_4: (LinkerFn<H>, TypedFn<H, P4>),
) -> super::Result<PreparedVersion<H, P1, P2, P3, P4>> {
    Ok(match plugin.version {
        Version::V0_1 => {
            let (pre, slot) = prepare(plugin, kind, v0_1.0(), v0_1.1)?;
            (Versioned::V0_1(pre), slot)
        }
        Version::V0_2 => {
            let (pre, slot) = prepare(plugin, kind, v0_2.0(), v0_2.1)?;
            (Versioned::V0_2(pre), slot)
        }
        Version::V0_3 => {
            let (pre, slot) = prepare(plugin, kind, v0_3.0(), v0_3.1)?;
            (Versioned::V0_3(pre), slot)
        }
        Version::V0_4 => {
            let (pre, slot) = prepare(plugin, kind, v0_4.0(), v0_4.1)?;
            (Versioned::V0_4(pre), slot)
        }
    })
}

/// What a plugin's calls have used so far (`seshat plugins test` reports it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Calls into the plugin (instantiation not counted).
    pub calls: u32,
    /// Guest time of those calls together, in microseconds (time in host functions, such as a
    /// summariser's model calls, not counted).
    pub guest_micros: u64,
    /// The most linear memory an instance of it has had, in bytes.
    pub peak_memory_bytes: u64,
}

/// One plugin's instance: made lazily, used for every call, dropped after a trap, deadline or
/// memory-limit hit (the next call makes a fresh one).
pub(super) struct Slot<H: 'static, B> {
    pub(super) id: String,
    pub(super) kind: PluginKind,
    pub(super) limits: Limits,
    /// The SHA-256 of the plugin's `.wasm`.
    pub(super) sha256: String,
    pub(super) usage: Usage,
    /// Texts its log lines never show ([`Diagnostics::secrets`]).
    secrets: Vec<String>,
    /// The end of what its calls wrote to stderr, as shown (redacted, escaped).
    pub(super) stderr: String,
    live: Option<(Store<State<H>>, B)>,
}

impl<H: Default + Send + 'static> Slot<H, ()> {
    /// The slot for instances with bindings of type `B`.
    pub(super) fn with_bindings<B>(self) -> Slot<H, B> {
        Slot {
            id: self.id,
            kind: self.kind,
            limits: self.limits,
            sha256: self.sha256,
            usage: self.usage,
            secrets: self.secrets,
            stderr: self.stderr,
            live: None,
        }
    }
}

impl<H: Default + Send + 'static, B> Slot<H, B> {
    /// Runs `f` in the instance (made with `instantiate` first if there is none) with a fresh
    /// time budget. A trap becomes an error naming the plugin and drops the instance; an error
    /// the plugin returns becomes [`Error::Plugin`].
    pub(super) fn call<R>(
        &mut self,
        instantiate: impl FnOnce(&mut Store<State<H>>) -> wasmtime::Result<B>,
        f: impl FnOnce(&mut Store<State<H>>, &B) -> wasmtime::Result<Result<R, super::bindings::v0_1::wit::Error>>,
    ) -> super::Result<R> {
        if self.live.is_none() {
            let mut store = new_store(&self.limits, &self.id, H::default());
            store.data_mut().diagnostics.secrets.clone_from(&self.secrets);
            start_call(&mut store);
            match instantiate(&mut store) {
                Ok(b) => self.live = Some((store, b)),
                Err(e) => {
                    let error = classify(&store, &e, &self.id, self.kind, &self.limits);
                    return with_stderr(&mut store, &mut self.stderr, Err(error));
                }
            }
        }
        let (store, bindings) = self.live.as_mut().expect("just created");
        start_call(store);
        let outcome = f(store, bindings);
        let result = match outcome {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Error::Plugin { plugin: self.id.clone(), code: e.code, message: e.message }),
            Err(trap) => Err(classify(store, &trap, &self.id, self.kind, &self.limits)),
        };
        let result = with_stderr(store, &mut self.stderr, result);
        store.data_mut().diagnostics.end_call();
        let data = store.data();
        self.usage.calls += 1;
        self.usage.guest_micros += data.clock.guest_time().as_micros() as u64;
        self.usage.peak_memory_bytes = self.usage.peak_memory_bytes.max(data.memory.peak as u64);
        if matches!(result, Err(Error::Timeout { .. } | Error::Memory { .. } | Error::Trap { .. })) {
            self.live = None;
        }
        result
    }

    /// Texts the plugin's log lines and panic messages must never show (a credential).
    pub(super) fn redact(&mut self, secrets: Vec<String>) {
        if let Some((store, _)) = self.live.as_mut() {
            store.data_mut().diagnostics.secrets.clone_from(&secrets);
        }
        self.secrets = secrets;
    }

    /// Frees a guest resource of the live instance, with a fresh time budget (the last call's may
    /// have run out while the host worked — retries' backoff, a slow server). A drop that fails
    /// leaves the instance unfit to enter again: it is dropped, and the next call makes a new one.
    pub(super) fn drop_resource(&mut self, resource: wasmtime::component::ResourceAny) {
        let Some((store, _)) = self.live.as_mut() else { return };
        start_call(store);
        let dropped = resource.resource_drop(&mut *store);
        // What the guest wrote while freeing it is this drop's, not the next call's.
        let _ = with_stderr(store, &mut self.stderr, Ok(()));
        store.data_mut().diagnostics.end_call();
        if let Err(e) = dropped {
            tracing::debug!(plugin = %self.id, "a guest resource could not be freed, so the instance is restarted: {e}");
            self.live = None;
        }
    }

    /// Whether an instance is live.
    pub(super) fn is_live(&self) -> bool {
        self.live.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugins_text_is_redacted_bounded_and_shown_visibly() {
        let d = Diagnostics { secrets: vec!["sk-live-123".into(), String::new()], ..Diagnostics::default() };
        assert_eq!(d.render("key sk-live-123 \x1b[31m"), "key [redacted] \\u{1b}[31m");
        // A stderr tail: redacted, escaped, and its end kept within the bound after escaping.
        let tail = format!("{}sk-live-123\nKeyError: 'x'\x1b[0m\n", "\x07".repeat(4000));
        let block = d.render_block(&tail);
        assert!(block.len() <= super::super::stderr::TAIL_BYTES + 32, "{}", block.len());
        assert!(block.ends_with("[redacted]\nKeyError: 'x'\\u{1b}[0m\n") && block.starts_with("[… "), "{block}");
        let long = d.render(&"é".repeat(3000));
        assert!(long.len() < LOG_LINE_BYTES + 32 && long.ends_with("bytes cut]"), "{}", long.len());
        assert!(long.starts_with("éé"), "cut at a character boundary");
    }
}
