//! The one handle every plugin kind's type wraps: the prepared instance (type-checked once, at
//! load), the sandboxed live instance ([`Slot`]) and what the manifest allows. A kind says only
//! what differs — its host context, its bindings and linkers — through [`Kind`], written by
//! [`versioned_kind!`]; the accessors every kind shares are written once by
//! [`shared_accessors!`].

use wasmtime::Store;

use super::sandbox::{Slot, State};
use super::{Error, LoadedPlugin, PluginKind, Result};

/// A kind's prepared instance and its (not yet bound) slot, as [`Kind::prepare`] makes them.
pub(super) type Prepared<K> = (<K as Kind>::Pre, Slot<<K as Kind>::Host, ()>);

/// What one plugin kind's handle is made of.
pub(super) trait Kind {
    /// The kind, for errors and for checking the manifest.
    const KIND: PluginKind;
    /// What its host functions need (a summariser's model, a trimmer's part reader).
    type Host: Default + Send + 'static;
    /// The prepared (type-checked) instance.
    type Pre;
    /// The live instance's bindings.
    type Bound;
    /// Type-checks a loaded plugin against the kind's linker and bindings.
    fn prepare(plugin: &LoadedPlugin) -> Result<Prepared<Self>>;
    /// Makes a live instance from the prepared one.
    fn instantiate(pre: &Self::Pre, store: &mut Store<State<Self::Host>>) -> wasmtime::Result<Self::Bound>;
}

/// A prepared plugin of kind `K` and its live instance.
pub(super) struct Handle<K: Kind> {
    pre: K::Pre,
    slot: Slot<K::Host, K::Bound>,
    allowed_hosts: Vec<String>,
}

impl<K: Kind> std::fmt::Debug for Handle<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("kind", &K::KIND)
            .field("id", &self.slot.id)
            .field("limits", &self.slot.limits)
            .finish_non_exhaustive()
    }
}

impl<K: Kind> Handle<K> {
    /// Prepares a loaded plugin as kind `K`.
    pub(super) fn new(plugin: &LoadedPlugin) -> Result<Self> {
        let (pre, slot) = K::prepare(plugin)?;
        Ok(Self { pre, slot: slot.with_bindings(), allowed_hosts: plugin.manifest.allowed_hosts.clone() })
    }

    /// The plugin's id.
    pub(super) fn id(&self) -> &str {
        &self.slot.id
    }

    /// The SHA-256 of its `.wasm`, in hex.
    pub(super) fn sha256(&self) -> &str {
        &self.slot.sha256
    }

    /// What its calls have used so far.
    pub(super) fn usage(&self) -> super::Usage {
        self.slot.usage
    }

    /// The end of what its calls wrote to stderr (redacted, escaped; empty when nothing).
    pub(super) fn stderr(&self) -> &str {
        &self.slot.stderr
    }

    /// Its limits.
    pub(super) fn limits(&self) -> super::Limits {
        self.slot.limits
    }

    /// Hosts its manifest allows requests to.
    pub(super) fn allowed_hosts(&self) -> &[String] {
        &self.allowed_hosts
    }

    /// Texts its log lines and panic messages never show.
    pub(super) fn redact(&mut self, secrets: Vec<String>) {
        self.slot.redact(secrets);
    }

    /// The prepared instance (which contract version it speaks).
    pub(super) fn pre(&self) -> &K::Pre {
        &self.pre
    }

    /// Runs one call into the guest with the sandbox's accounting; a trap drops the instance.
    pub(super) fn call<R>(
        &mut self,
        f: impl FnOnce(
            &mut Store<State<K::Host>>,
            &K::Bound,
        ) -> wasmtime::Result<std::result::Result<R, super::bindings::v0_1::wit::Error>>,
    ) -> Result<R> {
        let pre = &self.pre;
        self.slot.call(|s| K::instantiate(pre, s), f)
    }

    /// Instantiates now (normally done lazily by the first call).
    pub(super) fn warm(&mut self) -> Result<()> {
        self.call(|_, _| Ok(Ok(())))
    }

    /// The plugin's output was not valid: an error naming it.
    pub(super) fn invalid(&self, message: String) -> Error {
        Error::InvalidOutput { plugin: self.slot.id.clone(), message }
    }

    /// Whether an instance is live (a trap drops it).
    pub(super) fn is_live(&self) -> bool {
        self.slot.is_live()
    }

    /// Frees a guest resource of the live instance (see `Slot::drop_resource`).
    pub(super) fn drop_resource(&mut self, resource: wasmtime::component::ResourceAny) {
        self.slot.drop_resource(resource);
    }
}

/// A kind that speaks contracts 0.1.0, 0.2.0, 0.3.0 and 0.4.0: `$name` gets [`Kind`] with one linker per
/// version, each built once per process, and the prepared instance of the plugin's version.
macro_rules! versioned_kind {
    ($(#[$doc:meta])* $name:ident: $kind:expr, host $host:ty, v0_1 ($b1:ty, $p1:ty), v0_2 ($b2:ty, $p2:ty), v0_3 ($b3:ty, $p3:ty), v0_4 ($b4:ty, $p4:ty)) => {
        $(#[$doc])*
        pub(super) enum $name {}

        impl $crate::plugins::handle::Kind for $name {
            const KIND: $crate::plugins::PluginKind = $kind;
            type Host = $host;
            type Pre = $crate::plugins::bindings::Versioned<$p1, $p2, $p3, $p4>;
            type Bound = $crate::plugins::bindings::Versioned<$b1, $b2, $b3, $b4>;

            fn prepare(
                plugin: &$crate::plugins::LoadedPlugin,
            ) -> $crate::plugins::Result<$crate::plugins::handle::Prepared<Self>> {
                type L = wasmtime::component::Linker<$crate::plugins::sandbox::State<$host>>;
                fn v0_1() -> wasmtime::Result<&'static L> {
                    static LINKER: std::sync::OnceLock<L> = std::sync::OnceLock::new();
                    $crate::plugins::sandbox::linker(&LINKER, |l| {
                        <$b1>::add_to_linker::<_, wasmtime::component::HasSelf<_>>(l, |s| s)
                    })
                }
                fn v0_2() -> wasmtime::Result<&'static L> {
                    static LINKER: std::sync::OnceLock<L> = std::sync::OnceLock::new();
                    $crate::plugins::sandbox::linker(&LINKER, |l| {
                        <$b2>::add_to_linker::<_, wasmtime::component::HasSelf<_>>(l, |s| s)
                    })
                }
                fn v0_3() -> wasmtime::Result<&'static L> {
                    static LINKER: std::sync::OnceLock<L> = std::sync::OnceLock::new();
                    $crate::plugins::sandbox::linker(&LINKER, |l| {
                        <$b3>::add_to_linker::<_, wasmtime::component::HasSelf<_>>(l, |s| s)
                    })
                }
                fn v0_4() -> wasmtime::Result<&'static L> {
                    static LINKER: std::sync::OnceLock<L> = std::sync::OnceLock::new();
                    $crate::plugins::sandbox::linker(&LINKER, |l| {
                        <$b4>::add_to_linker::<_, wasmtime::component::HasSelf<_>>(l, |s| s)
                    })
                }
                $crate::plugins::sandbox::prepare_versioned(
                    plugin,
                    $kind,
                    (v0_1, <$p1>::new),
                    (v0_2, <$p2>::new),
                    (v0_3, <$p3>::new),
                    (v0_4, <$p4>::new),
                )
            }

            fn instantiate(
                pre: &Self::Pre,
                store: &mut wasmtime::Store<$crate::plugins::sandbox::State<$host>>,
            ) -> wasmtime::Result<Self::Bound> {
                $crate::plugins::bindings::instantiate_versioned!(pre, store)
            }
        }
    };
}
pub(super) use versioned_kind;

/// The public accessors every plugin type has, delegated to its `handle` field: `new`, `id`,
/// `sha256`, `usage`, `allowed_hosts`, `redact_logs`, `warm`, and `Debug`.
macro_rules! shared_accessors {
    ($ty:ident) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.handle.fmt(f)
            }
        }

        impl $ty {
            /// Prepares a loaded plugin as this kind, type-checking its imports and exports once.
            pub fn new(plugin: &$crate::plugins::LoadedPlugin) -> $crate::plugins::Result<Self> {
                Ok(Self { handle: $crate::plugins::handle::Handle::new(plugin)? })
            }

            /// The plugin's id.
            pub fn id(&self) -> &str {
                self.handle.id()
            }

            /// The SHA-256 of its `.wasm`, in hex.
            pub fn sha256(&self) -> &str {
                self.handle.sha256()
            }

            /// What its calls have used so far: calls, guest time and peak memory.
            pub fn usage(&self) -> $crate::plugins::Usage {
                self.handle.usage()
            }

            /// The end of what its calls wrote to stderr, at most 4 KiB, redacted and with control
            /// characters escaped (empty when it wrote nothing).
            pub fn stderr(&self) -> &str {
                self.handle.stderr()
            }

            /// Hosts its manifest allows requests to (none for a kind that makes no requests).
            pub fn allowed_hosts(&self) -> &[String] {
                self.handle.allowed_hosts()
            }

            /// Texts its log lines and panic messages never show (the host passes a credential).
            pub fn redact_logs(&mut self, secrets: Vec<String>) {
                self.handle.redact(secrets);
            }

            /// Instantiates now (normally done lazily by the first call).
            pub fn warm(&mut self) -> $crate::plugins::Result<()> {
                self.handle.warm()
            }
        }
    };
}
pub(super) use shared_accessors;
