//! The sandbox every plugin call runs in: an empty WASI context, a memory cap, and a budget of
//! guest time enforced through epoch interruption.
//!
//! Time spent inside host functions (a summariser's `complete`) is recorded and subtracted, so
//! only the plugin's own computation counts against its budget.

use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::limits::Limits;
use super::{Error, PluginKind};

/// Caps linear memory and table growth, remembering whether the cap was hit.
pub(super) struct MemoryCap {
    max_bytes: usize,
    pub(super) hit: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.hit = true;
            wasmtime::bail!("memory limit of {} bytes reached", self.max_bytes);
        }
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

/// Everything a plugin instance's `Store` holds.
pub(crate) struct State<H> {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) memory: MemoryCap,
    pub(super) clock: Clock,
    /// Kind-specific host context (what host functions need).
    pub(super) host: H,
}

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
pub(super) fn new_store<H: Send + 'static>(limits: &Limits, host: H) -> Store<State<H>> {
    let wasi =
        wasmtime_wasi::WasiCtxBuilder::new().allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false).build();
    let state = State {
        wasi,
        table: ResourceTable::new(),
        memory: MemoryCap { max_bytes: limits.memory_bytes(), hit: false },
        clock: Clock { started: Instant::now(), in_host: Duration::ZERO, budget: limits.time_budget(), expired: false },
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
    if data.clock.expired || matches!(err.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
        Error::Timeout { plugin, kind: kind_name, budget_ms: limits.time_ms }
    } else if data.memory.hit {
        Error::Memory { plugin, kind: kind_name, limit_mib: limits.memory_mib }
    } else {
        let message = match err.downcast_ref::<Trap>() {
            Some(trap) => format!("wasm trap: {trap}"),
            None => format!("{err:#}"),
        };
        Error::Trap { plugin, kind: kind_name, message }
    }
}
