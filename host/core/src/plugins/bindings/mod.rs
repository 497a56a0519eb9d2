//! Generated bindings, one private module per WIT version (the frozen 0.1.0, 0.2.0 and 0.3.0, and
//! 0.4.0, unstable).
//! Nothing outside `plugins` sees them.

pub(super) mod v0_1;
pub(super) mod v0_2;
pub(super) mod v0_3;
pub(super) mod v0_4;

/// The contract version a plugin was built for, as the host serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// `seshat:plugin@0.1.x`, frozen.
    V0_1,
    /// `seshat:plugin@0.2.x`, frozen.
    V0_2,
    /// `seshat:plugin@0.3.x`, frozen.
    V0_3,
    /// `seshat:plugin@0.4.x`, unstable.
    V0_4,
}

impl Version {
    /// The version a component's export names (`0.1.0`, `0.2.0`, …), if this host serves it.
    pub(crate) fn parse(version: &str) -> Option<Self> {
        let minor = |m: &str| version == m || version.starts_with(&format!("{m}."));
        if minor("0.1") {
            Some(Version::V0_1)
        } else if minor("0.2") {
            Some(Version::V0_2)
        } else if minor("0.3") {
            Some(Version::V0_3)
        } else if minor("0.4") {
            Some(Version::V0_4)
        } else {
            None
        }
    }
}

/// One value per contract version: a kind's prepared instance, or its live bindings.
pub(crate) enum Versioned<A, B, C, D> {
    /// For a `0.1.x` plugin.
    V0_1(A),
    /// For a `0.2.x` plugin.
    V0_2(B),
    /// For a `0.3.x` plugin.
    V0_3(C),
    /// For a `0.4.x` plugin.
    V0_4(D),
}

/// Instantiates a [`Versioned`] prepared instance into the matching [`Versioned`] bindings.
macro_rules! instantiate_versioned {
    ($pre:expr, $store:expr) => {
        match $pre {
            $crate::plugins::bindings::Versioned::V0_1(p) => {
                p.instantiate($store).map($crate::plugins::bindings::Versioned::V0_1)
            }
            $crate::plugins::bindings::Versioned::V0_2(p) => {
                p.instantiate($store).map($crate::plugins::bindings::Versioned::V0_2)
            }
            $crate::plugins::bindings::Versioned::V0_3(p) => {
                p.instantiate($store).map($crate::plugins::bindings::Versioned::V0_3)
            }
            $crate::plugins::bindings::Versioned::V0_4(p) => {
                p.instantiate($store).map($crate::plugins::bindings::Versioned::V0_4)
            }
        }
    };
}
pub(crate) use instantiate_versioned;
