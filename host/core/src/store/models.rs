//! What Seshat learnt about models from the servers that run them: the window a server reported
//! when asked, or one a refusal or a silent truncation revealed. Keyed by (base URL, model), so
//! the same model id on two servers is two entries.

use super::db::params;
use serde::Serialize;

use super::{Result, Store};

/// How a [`ModelWindow`] was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowOrigin {
    /// Asked of the server (stale after [`DISCOVERY_TTL_MS`]).
    Discovered,
    /// Revealed by a refusal or a truncation (kept until replaced by another).
    Learnt,
}

impl WindowOrigin {
    fn as_str(self) -> &'static str {
        match self {
            WindowOrigin::Discovered => "discovered",
            WindowOrigin::Learnt => "learnt",
        }
    }
}

/// A discovered window is asked again after this long (24 hours).
pub const DISCOVERY_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// What is known of one model on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelWindow {
    /// The window the server runs the model with.
    pub context_window: Option<u64>,
    /// The model's largest answer.
    pub max_output_tokens: Option<u64>,
    /// How it was learnt.
    pub origin: WindowOrigin,
    /// When (ms since the epoch).
    pub learnt_at: i64,
}

impl ModelWindow {
    /// Whether a discovered entry is too old to trust at `now` (learnt ones never are).
    pub fn is_stale(&self, now: i64) -> bool {
        self.origin == WindowOrigin::Discovered && now.saturating_sub(self.learnt_at) >= DISCOVERY_TTL_MS
    }
}

impl Store {
    /// What is known of `model` at `base_url`, stale or not.
    pub fn model_window(&self, base_url: &str, model: &str) -> Result<Option<ModelWindow>> {
        on_db!(self, "read a model window", {
            self.db.query_opt(
                "SELECT context_window, max_output_tokens, source, learnt_at FROM model_windows \
                 WHERE base_url = ?1 AND model = ?2",
                params![base_url, model],
                |r| {
                    let source: String = r.get(2)?;
                    Ok(ModelWindow {
                        context_window: r.get(0)?,
                        max_output_tokens: r.get(1)?,
                        origin: if source == "learnt" { WindowOrigin::Learnt } else { WindowOrigin::Discovered },
                        learnt_at: r.get(3)?,
                    })
                },
            )
        })
    }

    /// The model last used with the server at `base_url`, if any.
    pub fn last_model_at(&self, base_url: &str) -> Result<Option<String>> {
        on_db!(self, "read the model last used with a server", {
            self.db.query_opt("SELECT model FROM server_models WHERE base_url = ?1", params![base_url], |r| r.get(0))
        })
    }

    /// Remembers `model` as the one last used with the server at `base_url`.
    pub fn remember_model_at(&mut self, base_url: &str, model: &str) -> Result<()> {
        on_db!(self, "remember the model used with a server", {
            self.db.execute(
                "INSERT INTO server_models (base_url, model, used_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (base_url) DO UPDATE SET model = excluded.model, used_at = excluded.used_at",
                params![base_url, model, super::now_ms()],
            )?;
            Ok(())
        })
    }

    /// Records what was learnt of `model` at `base_url`. A discovery never replaces a learnt
    /// window (the refusal was the server's own word); fields left `None` keep their value, and an
    /// entry without a window (an output limit alone) keeps the existing window's origin and age.
    pub fn record_model_window(&mut self, base_url: &str, model: &str, window: &ModelWindow) -> Result<()> {
        on_db!(self, "record a model window", {
            self.db.execute(
            "INSERT INTO model_windows (base_url, model, context_window, max_output_tokens, source, learnt_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT (base_url, model) DO UPDATE SET \
               context_window = CASE WHEN (model_windows.source = 'learnt' AND model_windows.context_window IS NOT NULL \
                 AND excluded.source = 'discovered') OR excluded.context_window IS NULL \
                 THEN model_windows.context_window ELSE excluded.context_window END, \
               max_output_tokens = coalesce(excluded.max_output_tokens, model_windows.max_output_tokens), \
               source = CASE WHEN (model_windows.source = 'learnt' AND model_windows.context_window IS NOT NULL \
                 AND excluded.source = 'discovered') OR excluded.context_window IS NULL THEN model_windows.source ELSE excluded.source END, \
               learnt_at = CASE WHEN (model_windows.source = 'learnt' AND model_windows.context_window IS NOT NULL \
                 AND excluded.source = 'discovered') OR excluded.context_window IS NULL THEN model_windows.learnt_at ELSE excluded.learnt_at END",
            params![
                base_url,
                model,
                window.context_window,
                window.max_output_tokens,
                window.origin.as_str(),
                window.learnt_at
            ],
        )?;
            Ok(())
        })
    }
}
