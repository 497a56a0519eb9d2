//! API keys: read from the environment by the host, added to requests for the allowed host only,
//! and scrubbed from every text that could reach a person, a log or the database.

use crate::plugins::{AuthScheme, ProviderInfo};

/// A credential. Its `Debug` never shows it; only [`Secret::expose`] does, at the one place a
/// header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl Secret {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Secret(key.into())
    }

    /// The key itself.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

/// What replaces a credential in text.
pub const REDACTED: &str = "[redacted]";

/// How requests of one provider are authenticated.
#[derive(Debug, Clone)]
pub struct Credentials {
    scheme: AuthScheme,
    key: Option<Secret>,
}

impl Credentials {
    /// No credential at all.
    pub fn none() -> Self {
        Credentials { scheme: AuthScheme::None, key: None }
    }

    /// Which built-in provider the environment the official SDKs read points at, when nothing is
    /// configured: `ANTHROPIC_API_KEY` → anthropic; `OPENAI_API_KEY` or `OPENAI_BASE_URL` → openai;
    /// both families set → anthropic. Returns the provider and why (for the status line).
    pub(crate) fn provider_from_env() -> Option<(&'static str, String)> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        let openai: Vec<&str> = ["OPENAI_API_KEY", "OPENAI_BASE_URL"].into_iter().filter(|n| set(n)).collect();
        if set("ANTHROPIC_API_KEY") {
            let also = if openai.is_empty() {
                String::new()
            } else {
                format!("; {} is set too: select the provider `openai` for OpenAI", openai.join(" and "))
            };
            return Some(("anthropic", format!("ANTHROPIC_API_KEY is set{also}")));
        }
        let first = openai.first()?;
        Some(("openai", format!("{first} is set")))
    }

    /// Reads the key from `env_name` (the config's `api_key_env`, else the plugin's convention).
    /// A provider whose base URL the user configured may run without one (local servers);
    /// otherwise a missing key is an error naming the variable to set.
    pub fn from_env(info: &ProviderInfo, api_key_env: Option<&str>, base_url_configured: bool) -> Result<Self, String> {
        Self::for_scheme(&info.id, &info.auth, info.key_env.as_deref(), api_key_env, base_url_configured)
    }

    /// [`from_env`](Self::from_env) for any plugin that sends requests (a provider, an
    /// embedder): `id` names it in the error, `key_env` is its convention.
    pub(crate) fn for_scheme(
        id: &str,
        scheme: &AuthScheme,
        key_env: Option<&str>,
        api_key_env: Option<&str>,
        base_url_configured: bool,
    ) -> Result<Self, String> {
        if *scheme == AuthScheme::None {
            return Ok(Self::none());
        }
        let name = api_key_env.or(key_env);
        let key = name.and_then(|n| std::env::var(n).ok()).filter(|k| !k.trim().is_empty());
        match (key, name) {
            (Some(k), _) => Ok(Credentials { scheme: scheme.clone(), key: Some(Secret::new(k.trim())) }),
            (None, _) if base_url_configured => Ok(Credentials { scheme: scheme.clone(), key: None }),
            (None, Some(n)) => Err(format!("set {n} to your {id} API key (or api_key_env in config.toml)")),
            (None, None) => Err(format!("set api_key_env for {id} in config.toml")),
        }
    }

    /// The header to add, when there is a key.
    pub(crate) fn header(&self) -> Option<(reqwest::header::HeaderName, reqwest::header::HeaderValue)> {
        let key = self.key.as_ref()?;
        let (name, value) = match &self.scheme {
            AuthScheme::None => return None,
            AuthScheme::Bearer => (reqwest::header::AUTHORIZATION, format!("Bearer {}", key.expose())),
            AuthScheme::Header(h) => {
                (reqwest::header::HeaderName::from_bytes(h.as_bytes()).ok()?, key.expose().to_string())
            }
        };
        let mut value = reqwest::header::HeaderValue::from_str(&value).ok()?;
        value.set_sensitive(true);
        Some((name, value))
    }

    /// Header names a plugin may not set (credentials are the host's).
    pub(crate) fn is_credential_header(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case("authorization")
            || name.eq_ignore_ascii_case("x-api-key")
            || name.eq_ignore_ascii_case("proxy-authorization")
            || matches!(&self.scheme, AuthScheme::Header(h) if h.eq_ignore_ascii_case(name))
    }

    /// Refuses a plugin's request that sets a credential header itself (`who` names the plugin,
    /// e.g. "provider `openai`"): only the host adds credentials.
    pub(crate) fn refuse_plugin_credentials(&self, who: &str, headers: &[(String, String)]) -> Result<(), String> {
        match headers.iter().find(|(n, _)| self.is_credential_header(n)) {
            Some((name, _)) => {
                Err(format!("{who} set the credential header `{name}` itself; only the host adds credentials"))
            }
            None => Ok(()),
        }
    }

    /// `text` with the key (if any) replaced by [`REDACTED`].
    pub(crate) fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(k) if !k.expose().is_empty() => text.replace(k.expose(), REDACTED),
            _ => text.to_string(),
        }
    }

    /// The key, for redacting it from what plugins say.
    pub(crate) fn key_text(&self) -> Option<&str> {
        self.key.as_ref().map(Secret::expose)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_redaction_never_show_the_key() {
        let c = Credentials { scheme: AuthScheme::Bearer, key: Some(Secret::new("sk-test-123456")) };
        assert!(!format!("{c:?}").contains("sk-test"));
        assert_eq!(c.redact("bad key sk-test-123456 here"), "bad key [redacted] here");
        let (name, value) = c.header().unwrap();
        assert_eq!(name, "authorization");
        assert!(value.is_sensitive());
        assert!(c.is_credential_header("Authorization") && !c.is_credential_header("content-type"));
    }
}
