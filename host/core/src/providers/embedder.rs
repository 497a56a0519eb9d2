//! The host side of embedder plugins, as [`super::Provider`] is of provider plugins: the plugin
//! builds and decodes, this module sends — in batches of at most the plugin's `max-batch`, to a
//! destination both the manifest and the user's `[knowledge] base_url` allow, with the credential
//! added here, retries and the response cap of the shared [`Transport`].

use std::time::Duration;

use super::transport::{self, Cancel, Settings, Transport};
use super::{Credentials, Error, Result, destination};
use crate::config::KnowledgeConfig;
use crate::plugins::{EmbedPurpose, EmbedRequest, EmbedderInfo, EmbedderPlugin, EmbeddingModel, LoadedPlugin};

/// The input length assumed for a model neither the plugin nor the configuration describes.
pub(crate) const DEFAULT_MAX_INPUT_TOKENS: u32 = 512;

/// An embedder plugin bound to the user's `[knowledge]` settings and credential.
pub struct Embedder {
    plugin: EmbedderPlugin,
    info: EmbedderInfo,
    model: String,
    /// The vector length asked of the server, when the user set one.
    dimensions_asked: Option<u32>,
    /// The vector length expected: configured, from the plugin's table, or learnt from the first
    /// answer.
    dimensions: Option<u32>,
    max_input_tokens: u32,
    base_url: String,
    base_configured: bool,
    credentials: Credentials,
    transport: Transport,
    extra: String,
    /// HTTP requests sent, for tests and benchmarks.
    requests: u64,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("plugin", &self.plugin.id())
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Binds a loaded embedder plugin to `config` (`[knowledge]`), with `extra` its options as a
    /// JSON object. The model is the configuration's, else the plugin's first.
    pub fn new(plugin: &LoadedPlugin, config: &KnowledgeConfig, extra: String) -> Result<Self> {
        let mut p = EmbedderPlugin::new(plugin).map_err(|e| Error::Plugin(e.to_string()))?;
        let info = p.info().map_err(|e| Error::Plugin(e.to_string()))?;
        // The same rule as the provider's: `[knowledge] base_url`, else the variable the official
        // SDKs read (`OPENAI_BASE_URL`), else the plugin's default.
        let (base_url, base_configured) = super::base_url(&info.id, config.base_url.as_deref(), &info.default_base_url);
        let credentials = Credentials::for_scheme(
            &info.id,
            &info.auth,
            info.key_env.as_deref(),
            config.api_key_env.as_deref(),
            base_configured,
        )
        .map_err(|m| Error::NotConfigured(format!("no API key for the embedder `{}`: {m}", p.id())))?;
        p.redact_logs(credentials.key_text().map(str::to_string).into_iter().collect());
        let model = match config.model.clone().or_else(|| info.models.first().map(|m| m.id.clone())) {
            Some(m) => m,
            None => {
                return Err(Error::NotConfigured(format!(
                    "the embedder `{}` knows no models: set `model` under [knowledge] in config.toml",
                    p.id()
                )));
            }
        };
        let known: Option<&EmbeddingModel> = info.models.iter().find(|m| m.id == model);
        let dimensions_asked = config.dimensions;
        let dimensions = config.dimensions.or(known.map(|m| m.dimensions));
        let max_input_tokens =
            config.max_input_tokens.or(known.map(|m| m.max_input_tokens)).unwrap_or(DEFAULT_MAX_INPUT_TOKENS).max(16);
        let d = Settings::default();
        let settings = Settings {
            first_byte: Duration::from_secs(config.timeout_secs.unwrap_or(120)),
            max_retries: config.max_retries.unwrap_or(d.max_retries),
            ..d
        };
        let transport = Transport::new(settings).map_err(Error::NotConfigured)?;
        Ok(Embedder {
            plugin: p,
            info,
            model,
            dimensions_asked,
            dimensions,
            max_input_tokens,
            base_url,
            base_configured,
            credentials,
            transport,
            extra,
            requests: 0,
        })
    }

    /// Replaces the transport settings (tests use short backoffs).
    pub fn set_transport(&mut self, settings: Settings) -> Result<()> {
        self.transport = Transport::new(settings).map_err(Error::NotConfigured)?;
        Ok(())
    }

    /// The plugin's id.
    pub(crate) fn plugin_id(&self) -> &str {
        self.plugin.id()
    }

    /// The model vectors are made with.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vectors' length, when known (before the first answer for a model nobody describes, it
    /// is not).
    pub fn dimensions(&self) -> Option<u32> {
        self.dimensions
    }

    /// The longest text the model takes, in tokens (longer ones are split by the caller).
    pub fn max_input_tokens(&self) -> u32 {
        self.max_input_tokens
    }

    /// The most texts one request carries.
    pub fn max_batch(&self) -> usize {
        self.info.max_batch as usize
    }

    /// HTTP requests sent so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Embeds `texts` (each within [`max_input_tokens`](Self::max_input_tokens)), in batches of
    /// at most [`max_batch`](Self::max_batch); one vector per text, in order.
    ///
    /// A batch the server refuses for its length teaches the model's real limit: the input limit
    /// is lowered to what the refusal names (or by a third when it names nothing), and a batch of
    /// several texts is sent again once, in halves. A single text refused stays refused
    /// ([`Error::Refused`]): the caller cuts it again to the lowered limit.
    pub fn embed(&mut self, texts: &[String], purpose: EmbedPurpose, cancel: &Cancel) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.max_batch().max(1)) {
            match self.embed_batch(batch, purpose, cancel) {
                Ok(vectors) => out.extend(vectors),
                Err(Error::Refused { limit, .. }) if batch.len() > 1 => {
                    self.learn_input_limit(batch, limit);
                    let (a, b) = batch.split_at(batch.len() / 2);
                    out.extend(self.embed_batch(a, purpose, cancel)?);
                    out.extend(self.embed_batch(b, purpose, cancel)?);
                }
                Err(Error::Refused { code, message, limit }) => {
                    self.learn_input_limit(batch, limit);
                    return Err(Error::Refused { code, message, limit });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Lowers the input limit after a refusal of `batch`: to the window it names, scaled by how
    /// much denser the server counted than the estimate, with a tenth to spare; by a third when
    /// it names nothing.
    fn learn_input_limit(&mut self, batch: &[String], limit: crate::plugins::Limit) {
        let largest = batch.iter().map(|t| crate::window::estimate_text(t)).max().unwrap_or(0).max(1);
        let learnt = match limit {
            crate::plugins::Limit::TooLong { window: Some(window), requested: Some(requested) } if requested > 0 => {
                // The largest text is the one over the window; it counted `requested`.
                let per_estimate = requested as f64 / largest as f64;
                (window as f64 / per_estimate.max(1.0) * 0.9) as u64
            }
            crate::plugins::Limit::TooLong { window: Some(window), requested: None } => window * 9 / 10,
            _ => u64::from(self.max_input_tokens) * 2 / 3,
        };
        let learnt = u32::try_from(learnt).unwrap_or(u32::MAX).clamp(8, self.max_input_tokens);
        self.max_input_tokens = if learnt < self.max_input_tokens { learnt } else { self.max_input_tokens * 2 / 3 };
    }

    fn embed_batch(&mut self, texts: &[String], purpose: EmbedPurpose, cancel: &Cancel) -> Result<Vec<Vec<f32>>> {
        let request = EmbedRequest {
            model: self.model.clone(),
            texts: texts.to_vec(),
            purpose,
            dimensions: self.dimensions_asked,
            base_url: self.base_url.clone(),
            extra: self.extra.clone(),
        };
        let http = self.plugin.build_request(&request).map_err(|e| self.plugin_error(&e))?;
        self.credentials
            .refuse_plugin_credentials(&format!("embedder `{}`", self.plugin.id()), &http.headers)
            .map_err(Error::Plugin)?;
        let to = destination::check(
            self.plugin.id(),
            &http.url,
            self.plugin.allowed_hosts(),
            &self.base_url,
            self.base_configured,
        )
        .map_err(Error::HostNotAllowed)?;
        let out = transport::Outgoing {
            to: &to,
            method: &http.method,
            headers: &http.headers,
            body: &http.body,
            credentials: &self.credentials,
        };
        let (attempts, answer) = self.transport.fetch(out, cancel);
        self.requests += u64::from(attempts);
        let (status, body) = answer.map_err(|f| {
            // The embedder's one timeout is `[knowledge] timeout_secs`, not a provider's three.
            let said = match &f {
                transport::Failure::Timeout { after, .. } => format!(
                    "timed out after {}s waiting for the embeddings server (raise timeout_secs under [knowledge] in \
                     config.toml)",
                    after.as_secs()
                ),
                other => other.describe(),
            };
            Error::Transport {
                provider: format!("embedder `{}`", self.plugin.id()),
                message: self.credentials.redact(&said),
                code: f.code(),
            }
        })?;
        let vectors = self.plugin.parse_response(status, &body, texts.len(), self.dimensions).map_err(|e| match e {
            crate::plugins::Error::Plugin { code, message, .. } => {
                let message = super::bounded_message(&self.credentials.redact(&message)).into_owned();
                match length_refusal(status, &message) {
                    Some(limit) => Error::Refused { code, message, limit },
                    None => Error::Api { code, message },
                }
            }
            other => self.plugin_error(&other),
        })?;
        if status != 200 && !(200..300).contains(&status) {
            return Err(Error::Api {
                code: "http_error".into(),
                message: format!("the embeddings server answered HTTP {status}"),
            });
        }
        if self.dimensions.is_none() {
            self.dimensions = vectors.first().map(|v| v.len() as u32);
        }
        Ok(vectors)
    }

    fn plugin_error(&self, e: &crate::plugins::Error) -> Error {
        Error::Plugin(self.credentials.redact(&e.to_string()))
    }
}

/// Whether an embeddings server's error says the input was too long, and what it names: OpenAI's
/// "maximum context length is N tokens, however you requested M tokens" and "Invalid 'input':
/// maximum context length is N tokens", vLLM's "… you requested M tokens in the input for
/// embedding generation", llama.cpp's "input is too large to process". (Embedder plugins of
/// contract 0.2.0 cannot say; the wordings are the servers' own.)
pub(crate) fn length_refusal(status: u16, message: &str) -> Option<crate::plugins::Limit> {
    if !matches!(status, 400 | 413 | 422 | 500) {
        return None;
    }
    let lower = message.to_lowercase();
    let said = ["maximum context length", "too large to process", "too long", "exceeds the maximum", "input length"]
        .iter()
        .any(|w| lower.contains(w));
    if !said {
        return None;
    }
    let number_after = |lead: &str| {
        let at = lower.find(lead)? + lead.len();
        lower[at..].split(|c: char| !c.is_ascii_digit()).find(|w| !w.is_empty())?.parse::<u64>().ok()
    };
    let window = number_after("maximum context length is");
    let requested = number_after("you requested").or_else(|| number_after("resulted in"));
    Some(crate::plugins::Limit::TooLong { window, requested })
}
