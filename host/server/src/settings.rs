//! A service's configuration, read once at start and replaced whole on reload (SIGHUP): every
//! connection, session and probe reads the current one when it next needs it, so a reload drops
//! no connection. Each replacement has a new generation; what was built from an older one (a
//! connection's environment, a session's agent) is built again before its next use.

use std::sync::{Arc, RwLock};

use seshat::config::Config;

/// The configuration in force and its generation: see the [module](self) documentation.
#[derive(Debug)]
pub struct Settings {
    current: RwLock<(u64, Arc<Config>)>,
}

impl Settings {
    /// Settings starting with `config` (generation 1).
    pub fn new(config: Config) -> Arc<Settings> {
        Arc::new(Settings { current: RwLock::new((1, Arc::new(config))) })
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).1.clone()
    }

    /// The configuration in force and its generation.
    pub fn current(&self) -> (u64, Arc<Config>) {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Puts `config` in force; returns its generation.
    pub fn replace(&self, config: Config) -> u64 {
        let mut current = self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *current = (current.0 + 1, Arc::new(config));
        current.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_is_read_with_a_new_generation() {
        let settings = Settings::new(Config::default());
        assert_eq!(settings.current().0, 1);
        let mut next = Config::default();
        next.serve.max_connections = Some(7);
        assert_eq!(settings.replace(next), 2);
        let (generation, config) = settings.current();
        assert_eq!((generation, config.serve.max_connections), (2, Some(7)));
        assert_eq!(settings.config().serve.max_connections, Some(7));
    }
}
