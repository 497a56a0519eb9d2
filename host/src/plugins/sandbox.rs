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
            // A Rust plugin's panic ends in `unreachable`.
            Some(Trap::UnreachableCodeReached) => format!("{} (a panic in the plugin)", Trap::UnreachableCodeReached),
            Some(trap) => trap.to_string(),
            None => format!("{err:#}"),
        };
        Error::Trap { plugin, kind: kind_name, message }
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
    Ok((pre, Slot { id, kind, limits: plugin.limits, live: None }))
}

/// A kind's linker, built once per process.
pub(super) type LinkerFn<H> = fn() -> wasmtime::Result<&'static wasmtime::component::Linker<State<H>>>;

/// A typed prepared instance from an untyped one.
pub(super) type TypedFn<H, P> = fn(wasmtime::component::InstancePre<State<H>>) -> wasmtime::Result<P>;

/// [`prepare`] with the linker and bindings of the contract version the plugin was built for.
pub(super) fn prepare_versioned<H: Send + 'static, P1, P2>(
    plugin: &super::LoadedPlugin,
    kind: PluginKind,
    v0_1: (LinkerFn<H>, TypedFn<H, P1>),
    v0_2: (LinkerFn<H>, TypedFn<H, P2>),
) -> super::Result<(Versioned<P1, P2>, Slot<H, ()>)> {
    Ok(match plugin.version {
        Version::V0_1 => {
            let (pre, slot) = prepare(plugin, kind, v0_1.0(), v0_1.1)?;
            (Versioned::V0_1(pre), slot)
        }
        Version::V0_2 => {
            let (pre, slot) = prepare(plugin, kind, v0_2.0(), v0_2.1)?;
            (Versioned::V0_2(pre), slot)
        }
    })
}

/// One plugin's instance: made lazily, used for every call, dropped after a trap, deadline or
/// memory-limit hit (the next call makes a fresh one).
pub(super) struct Slot<H: 'static, B> {
    pub(super) id: String,
    pub(super) kind: PluginKind,
    pub(super) limits: Limits,
    live: Option<(Store<State<H>>, B)>,
}

impl<H: Default + Send + 'static> Slot<H, ()> {
    /// The slot for instances with bindings of type `B`.
    pub(super) fn with_bindings<B>(self) -> Slot<H, B> {
        Slot { id: self.id, kind: self.kind, limits: self.limits, live: None }
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
            let mut store = new_store(&self.limits, H::default());
            start_call(&mut store);
            match instantiate(&mut store) {
                Ok(b) => self.live = Some((store, b)),
                Err(e) => return Err(classify(&store, &e, &self.id, self.kind, &self.limits)),
            }
        }
        let (store, bindings) = self.live.as_mut().expect("just created");
        start_call(store);
        match f(store, bindings) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Error::Plugin { plugin: self.id.clone(), code: e.code, message: e.message }),
            Err(trap) => {
                let err = classify(store, &trap, &self.id, self.kind, &self.limits);
                self.live = None;
                Err(err)
            }
        }
    }

    /// The live instance's store, if any (to release guest resources).
    pub(super) fn store_mut(&mut self) -> Option<&mut Store<State<H>>> {
        self.live.as_mut().map(|(s, _)| s)
    }

    /// Whether an instance is live.
    pub(super) fn is_live(&self) -> bool {
        self.live.is_some()
    }
}
