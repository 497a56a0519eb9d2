//! The host side of provider plugins: the plugin translates, this module sends.
//!
//! A [`Provider`] is a provider plugin bound to the user's settings: its base URL, its credential
//! (read from the environment, never shown to the plugin), the [`transport`] that sends requests
//! only to a [`destination`] both the manifest and the configuration allow, and a cache of encoded
//! messages so each message crosses into the plugin once and the request prefix stays
//! byte-stable for prompt caching.

pub(crate) mod counter;
pub mod counting;
pub mod credentials;
pub(crate) mod destination;
pub mod embedder;
pub mod sse;
pub mod transport;

use std::collections::HashMap;
use std::time::Duration;

use crate::compaction::pairing::Msg;
use crate::config::ModelConfig;
use crate::config::ProviderConfig;
use crate::conversation::{Part, Usage};
use crate::plugins::{
    ChatRequest, Completion, CompletionRequest, Discovery, EncodeOptions, LoadedPlugin, ModelError, ModelInfo,
    PluginMessage, ProviderInfo, ProviderPlugin, StopReason, StreamEvent, ToolSpec,
};
pub use counter::Counting;
pub use credentials::{Credentials, REDACTED, Secret};
pub use embedder::Embedder;
pub use transport::{Cancel, Failure, Settings, Transport};

/// Errors of a provider call. Every text here has been scrubbed of the credential.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Nothing is configured to talk to, or no key: says exactly what to set.
    #[error("{0}")]
    NotConfigured(String),
    /// The request would go to a host that is not allowed; nothing was sent.
    #[error("{0}")]
    HostNotAllowed(String),
    /// The plugin failed or returned something invalid.
    #[error("{0}")]
    Plugin(String),
    /// The API refused the request for its length or its `max_tokens`; `limit` is what the
    /// refusal says of the model's limits (parsed by the plugin).
    #[error("{code}: {message}")]
    Refused {
        /// The plugin's code for the error.
        code: String,
        /// What the server said.
        message: String,
        /// The limit it names.
        limit: crate::plugins::Limit,
    },
    /// The API answered with an error (mapped by the plugin), or the stream reported one.
    #[error("{code}: {message}")]
    Api {
        /// The plugin's stable code (`auth_failed`, `rate_limited`, `server_error`, …).
        code: String,
        /// What happened and what to do.
        message: String,
    },
    /// Sending or receiving failed.
    #[error("{provider}: {message}")]
    Transport {
        /// The provider's name.
        provider: String,
        /// What went wrong (see [`Failure::describe`]).
        message: String,
        /// [`Failure::code`].
        code: &'static str,
    },
}

impl Error {
    /// A plugin's failure: an error it reported (with its code) is the API's; anything else (a
    /// trap, a timeout, invalid output) is the plugin's. Not yet redacted.
    fn from_plugin(e: crate::plugins::Error) -> Self {
        match e {
            crate::plugins::Error::Plugin { code, message, .. } => Error::Api { code, message },
            other => Error::Plugin(other.to_string()),
        }
    }

    /// A stable code for scripts.
    pub fn code(&self) -> &str {
        match self {
            Error::NotConfigured(_) => "provider_not_configured",
            Error::HostNotAllowed(_) => "host_not_allowed",
            Error::Plugin(_) => "plugin_failed",
            Error::Api { code, .. } | Error::Refused { code, .. } => code,
            Error::Transport { code, .. } => code,
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One model call's input.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The model.
    pub model: &'a str,
    /// The system prompt.
    pub system: Option<&'a str>,
    /// Tools offered.
    pub tools: &'a [ToolSpec],
    /// The conversation (paired, in order).
    pub messages: &'a [Msg],
    /// Largest answer.
    pub max_tokens: u32,
    /// Stream the answer.
    pub stream: bool,
    /// Stored messages after this seq were written with this provider and model (their
    /// reasoning may be passed back); `None` for none.
    pub same_model_after: Option<u64>,
    /// Provider options, a JSON object.
    pub extra: &'a str,
}

/// What came back. A cut-short answer keeps what arrived, with `error` saying why it stopped.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The answer's parts in arrival order.
    pub parts: Vec<Part>,
    /// Usage, when the provider reported it.
    pub usage: Option<Usage>,
    /// Why the model stopped, when it said.
    pub stop_reason: Option<StopReason>,
    /// Set when the answer was cut short (interrupted, dropped, stalled, a mid-stream error).
    pub error: Option<Error>,
    /// HTTP attempts made.
    pub attempts: u32,
}

impl Answer {
    /// Applies one streamed event.
    fn apply(&mut self, event: StreamEvent, tools: &mut HashMap<u32, usize>) {
        match event {
            StreamEvent::TextDelta { text } => match self.parts.last_mut() {
                Some(Part::Text { text: t }) => t.push_str(&text),
                _ => self.parts.push(Part::Text { text }),
            },
            StreamEvent::ThinkingDelta { text } => match self.parts.last_mut() {
                Some(Part::Thinking { text: t, signature: None }) => t.push_str(&text),
                _ => self.parts.push(Part::Thinking { text, signature: None }),
            },
            StreamEvent::ThinkingSignature { signature } => {
                match self.parts.iter_mut().rev().find(|p| matches!(p, Part::Thinking { .. })) {
                    Some(Part::Thinking { signature: s, .. }) => s.get_or_insert_with(String::new).push_str(&signature),
                    _ => self.parts.push(Part::Thinking { text: String::new(), signature: Some(signature) }),
                }
            }
            StreamEvent::RedactedThinking { data } => self.parts.push(Part::RedactedThinking { data }),
            StreamEvent::ToolCallStart { index, id, name } => {
                tools.insert(index, self.parts.len());
                self.parts.push(Part::ToolCall { id, name, arguments: String::new() });
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                if let Some(Part::ToolCall { arguments: a, .. }) =
                    tools.get(&index).and_then(|&i| self.parts.get_mut(i))
                {
                    a.push_str(&arguments);
                }
            }
            StreamEvent::Usage { usage } => self.usage = Some(usage),
            StreamEvent::Stop { reason } => self.stop_reason = Some(reason),
            StreamEvent::Error { code, message } => {
                self.error.get_or_insert(Error::Api { code, message });
            }
        }
    }

    /// The answer's text parts joined.
    pub fn text(&self) -> String {
        crate::conversation::text_of(&self.parts)
    }
}

/// Key of an encoded message: (seq, content bytes — trims only shrink — , cache breakpoint,
/// same model).
type EncodeKey = (u64, usize, bool, bool);

/// An encoded message: in the cache, or made for this request only.
enum Fragment {
    Cached(EncodeKey),
    Fresh(String),
}

/// How long the server's list of its models is waited for, unless configured
/// (`models_timeout_secs`).
const DEFAULT_MODELS_WAIT: Duration = Duration::from_secs(60);

/// A provider plugin bound to its settings and credential.
pub struct Provider {
    name: String,
    plugin: ProviderPlugin,
    /// The plugin as loaded (another instance of it serves [`Provider::duplicate`]).
    loaded: LoadedPlugin,
    info: ProviderInfo,
    base_url: String,
    base_configured: bool,
    credentials: Credentials,
    transport: Transport,
    /// Probes are sent without retries and with short timeouts (made on first use).
    probe_transport: Option<Transport>,
    /// How long the server's list of its models is waited for.
    models_wait: Duration,
    /// What stops the calls made outside a turn's own request — summaries, counts, probes — when
    /// the user stops the turn (the front end's cancel; see [`Provider::watch_cancel`]).
    watched: Cancel,
    /// The transport for that list (made on first use).
    list_transport: Option<Transport>,
    models: Vec<ModelInfo>,
    /// The configuration's per-model values (`[providers.<name>.models.<id>]`).
    configured: std::collections::BTreeMap<String, ModelConfig>,
    /// Encoded messages of the current session and model.
    encoded: HashMap<EncodeKey, String>,
    encoded_for: Option<String>,
    /// Messages encoded by the plugin (not from the cache), for tests and benchmarks.
    encode_calls: u64,
    /// Warnings for the user (plain http to a remote host).
    pub warnings: Vec<String>,
    /// Each model's counter on this server, once tried.
    counters: HashMap<String, counter::Counter>,
    /// Counts the server made, by (model, content hash).
    counts: HashMap<u64, u64>,
    /// Requests sent to counters.
    count_requests: u64,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("name", &self.name).field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

/// `model` without a snapshot date at its end (`-20250929`, `-2025-09-29`), if it has one.
fn undated(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, date)) = model.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return Some(head);
    }
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    if let [day, month, year, head] = parts.as_slice()
        && year.len() == 4
        && month.len() == 2
        && day.len() == 2
        && [day, month, year].iter().all(|p| digits(p))
    {
        return Some(head);
    }
    None
}

/// The environment variable the official SDKs read for a provider's (or an embedder's) base URL.
fn base_url_env(id: &str) -> Option<&'static str> {
    match id {
        "anthropic" => Some("ANTHROPIC_BASE_URL"),
        "openai" => Some("OPENAI_BASE_URL"),
        _ => None,
    }
}

/// Where a plugin of API `id` sends its requests: the configured base URL, else the one the
/// official SDKs' variable names, else the plugin's `default`; and whether the user chose it.
pub(crate) fn base_url(id: &str, configured: Option<&str>, default: &str) -> (String, bool) {
    let env = base_url_env(id).and_then(|v| std::env::var(v).ok()).filter(|v| !v.trim().is_empty());
    let chosen = configured.map(str::to_string).or(env);
    let base_configured = chosen.is_some();
    (chosen.unwrap_or_else(|| default.to_string()).trim_end_matches('/').to_string(), base_configured)
}

impl Provider {
    /// Binds a loaded provider plugin to the configuration `config` under `name`.
    pub fn new(name: &str, plugin: &LoadedPlugin, config: &ProviderConfig) -> Result<Self> {
        let mut p = ProviderPlugin::new(plugin).map_err(|e| Error::Plugin(e.to_string()))?;
        let info = p.info().map_err(|e| Error::Plugin(e.to_string()))?;
        let (base_url, base_configured) = base_url(&info.id, config.base_url.as_deref(), &info.default_base_url);
        let credentials = Credentials::from_env(&info, config.api_key_env.as_deref(), base_configured)
            .map_err(|m| Error::NotConfigured(format!("no API key for provider `{name}`: {m}")))?;
        // The plugin never sees the key; were it to meet it anyway, its logs would not show it.
        p.redact_logs(credentials.key_text().map(str::to_string).into_iter().collect());
        let d = Settings::default();
        let secs = |v: Option<u64>, d: Duration| v.map_or(d, Duration::from_secs);
        let settings = Settings {
            connect: secs(config.connect_timeout_secs, d.connect),
            first_byte: secs(config.first_byte_timeout_secs, d.first_byte),
            idle: secs(config.idle_timeout_secs, d.idle),
            max_retries: config.max_retries.unwrap_or(d.max_retries),
            max_response: config.max_response_mib.map_or(d.max_response, |m| m << 20),
            ..d
        };
        let transport = Transport::new(settings).map_err(Error::NotConfigured)?;
        let mut models = info.models.clone();
        // An entry that only prices a model adds none.
        for (id, m) in config.models.iter().filter(|(_, m)| m.sizes()) {
            match models.iter_mut().find(|x| &x.id == id) {
                Some(x) => {
                    x.context_window = m.context_window.unwrap_or(x.context_window);
                    x.max_output_tokens = m.max_output_tokens.unwrap_or(x.max_output_tokens);
                }
                None => models.push(ModelInfo {
                    id: id.clone(),
                    context_window: m.context_window.unwrap_or(0),
                    max_output_tokens: m.max_output_tokens.unwrap_or(4_096),
                    extra: "{}".into(),
                }),
            }
        }
        Ok(Provider {
            name: name.to_string(),
            plugin: p,
            loaded: plugin.clone(),
            info,
            base_url,
            base_configured,
            credentials,
            transport,
            probe_transport: None,
            models_wait: secs(config.models_timeout_secs, DEFAULT_MODELS_WAIT),
            list_transport: None,
            watched: Cancel::default(),
            counters: HashMap::new(),
            counts: HashMap::new(),
            count_requests: 0,
            models,
            configured: config.models.clone(),
            encoded: HashMap::new(),
            encoded_for: None,
            encode_calls: 0,
            warnings: Vec::new(),
        })
    }

    /// Another connection to the same server, with its own instance of the plugin: for calls made
    /// while this one is busy (a summary written in the background while the turn streams). It
    /// knows the models this one knows (their windows included) and nothing of its caches.
    pub fn duplicate(&self) -> Result<Self> {
        let mut plugin = ProviderPlugin::new(&self.loaded).map_err(|e| Error::Plugin(e.to_string()))?;
        plugin.redact_logs(self.credentials.key_text().map(str::to_string).into_iter().collect());
        Ok(Provider {
            name: self.name.clone(),
            plugin,
            loaded: self.loaded.clone(),
            info: self.info.clone(),
            base_url: self.base_url.clone(),
            base_configured: self.base_configured,
            credentials: self.credentials.clone(),
            transport: self.transport.clone(),
            probe_transport: None,
            models_wait: self.models_wait,
            list_transport: None,
            watched: Cancel::default(),
            counters: HashMap::new(),
            counts: HashMap::new(),
            count_requests: 0,
            models: self.models.clone(),
            configured: self.configured.clone(),
            encoded: HashMap::new(),
            encoded_for: None,
            encode_calls: 0,
            warnings: Vec::new(),
        })
    }

    /// Replaces the transport settings (tests use short timeouts and backoffs).
    pub fn set_transport(&mut self, settings: Settings) -> Result<()> {
        self.transport = Transport::new(settings).map_err(Error::NotConfigured)?;
        Ok(())
    }

    /// The name it was configured under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the plugin serves.
    pub fn info(&self) -> &ProviderInfo {
        &self.info
    }

    /// Known models, with the configuration's additions and overrides.
    pub fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    /// A known model.
    pub fn model(&self, id: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.id == id)
    }

    /// Whether the user chose the base URL (in config or `ANTHROPIC_BASE_URL`/`OPENAI_BASE_URL`).
    pub(crate) fn base_configured(&self) -> bool {
        self.base_configured
    }

    /// Whether the plugin can ask the server about its models (a 0.2.0 provider).
    pub(crate) fn discovers(&self) -> bool {
        self.plugin.discovers()
    }

    /// A model as the plugin's own table has it (without the configuration's changes).
    pub(crate) fn table_model(&self, id: &str) -> Option<&ModelInfo> {
        let found = |id: &str| self.info.models.iter().find(|m| m.id == id);
        // A dated snapshot (`claude-sonnet-4-5-20250929`) is its family's model.
        found(id).or_else(|| undated(id).and_then(found))
    }

    /// The models the configuration names for this provider (`[providers.<name>.models.<id>]`).
    pub(crate) fn configured_models(&self) -> Vec<String> {
        // (An entry that only prices a model does not make it one to talk to.)
        self.configured.iter().filter(|(_, m)| m.sizes()).map(|(id, _)| id.clone()).collect()
    }

    /// The configuration's values for model `id`, if it has any.
    pub(crate) fn configured_model(&self, id: &str) -> Option<ModelConfig> {
        self.configured.get(id).copied()
    }

    /// Asks the server what it runs `model` with (or, for `None`, which models it serves), trying
    /// the plugin's probes in order until one tells a window. Probes go only where chat requests
    /// may (the same destination and credential rules); an answer that does not tell — a 404,
    /// another server's shape, a refused connection — moves on to the next. Returns what was
    /// learnt and how many requests were sent.
    pub fn discover(&mut self, model: Option<&str>) -> Result<(Discovery, u32)> {
        let probes = self.plugin.probes(model, &self.base_url).map_err(|e| self.plugin_error(&e))?;
        let mut found = Discovery::default();
        let mut sent = 0;
        for probe in probes {
            sent += 1;
            let (status, body) = match self.ask(&probe)? {
                Ok(answer) => answer,
                Err(f) => {
                    tracing::debug!(provider = %self.name, probe = %probe.name, failure = %self.redact(&f.describe()), "probe failed");
                    continue;
                }
            };
            let d = self.plugin.parse_probe(&probe.name, model, status, &body).map_err(|e| self.plugin_error(&e))?;
            if found.models.is_empty() {
                found.models = d.models;
            }
            found.max_output_tokens = found.max_output_tokens.or(d.max_output_tokens);
            if d.context_window.is_some() {
                found.context_window = d.context_window;
                break;
            }
        }
        Ok((found, sent))
    }

    /// Has the calls made outside a turn's own request (summaries, counts, probes) stop when
    /// `cancel` is cancelled.
    pub fn watch_cancel(&mut self, cancel: &Cancel) {
        self.watched = cancel.clone();
    }

    /// How long [`Provider::list_models`] waits for the server's answer.
    pub fn models_wait(&self) -> Duration {
        self.models_wait
    }

    /// Whether the server can be asked which models it serves (a 0.2.0 provider whose plugin has
    /// a way to ask it).
    pub fn can_list_models(&mut self) -> Result<bool> {
        if !self.plugin.discovers() {
            return Ok(false);
        }
        Ok(!self.plugin.probes(None, &self.base_url).map_err(|e| self.plugin_error(&e))?.is_empty())
    }

    /// Asks the server which models it serves, waiting up to [`Provider::models_wait`] for each
    /// of the plugin's probes: the models, or why none were listed (a timeout, a refused
    /// connection, a 404, an answer without a list).
    pub fn list_models(&mut self) -> Result<std::result::Result<Vec<String>, String>> {
        let probes = self.plugin.probes(None, &self.base_url).map_err(|e| self.plugin_error(&e))?;
        if self.list_transport.is_none() {
            let settings = Settings { max_retries: 0, first_byte: self.models_wait, ..*self.transport.settings() };
            self.list_transport = Some(Transport::new(settings).map_err(Error::NotConfigured)?);
        }
        let mut why = "its provider plugin has no way to ask".to_string();
        for probe in probes {
            let (status, body) = match self.ask_by(&probe, self.list_transport.as_ref().expect("made above"))? {
                Ok(answer) => answer,
                Err(f) => {
                    why = self.redact(&f.describe());
                    continue;
                }
            };
            match self.plugin.parse_probe(&probe.name, None, status, &body) {
                Ok(d) if !d.models.is_empty() => return Ok(Ok(d.models)),
                Ok(_) if (200..300).contains(&status) => why = "its answer listed no model".into(),
                Ok(_) => why = format!("it answered HTTP {status}"),
                Err(e) => why = self.redact(&e.to_string()),
            }
        }
        Ok(Err(why))
    }

    /// Sends a probe or a counter under the chat destination and credential rules, without
    /// retries and with short timeouts: its answer (status and body), or why none came.
    fn ask(&mut self, probe: &crate::plugins::Probe) -> Result<std::result::Result<(u16, Vec<u8>), Failure>> {
        self.quick_transport()?;
        self.ask_by(probe, self.probe_transport.as_ref().expect("made by quick_transport"))
    }

    /// Sends `probe` by `transport`, under the chat destination and credential rules.
    fn ask_by(
        &self,
        probe: &crate::plugins::Probe,
        transport: &Transport,
    ) -> Result<std::result::Result<(u16, Vec<u8>), Failure>> {
        self.credentials
            .refuse_plugin_credentials(&format!("provider `{}`", self.name), &probe.request.headers)
            .map_err(Error::Plugin)?;
        let to = self.destination(&probe.request.url)?;
        let out = transport::Outgoing {
            to: &to,
            method: &probe.request.method,
            headers: &probe.request.headers,
            body: &probe.request.body,
            credentials: &self.credentials,
        };
        Ok(transport.fetch(out, &self.watched).1)
    }

    /// The transport for probes and counters: no retries, short timeouts (made on first use).
    fn quick_transport(&mut self) -> Result<()> {
        if self.probe_transport.is_none() {
            let settings = Settings {
                max_retries: 0,
                first_byte: self.transport.settings().first_byte.min(Duration::from_secs(15)),
                idle: self.transport.settings().idle.min(Duration::from_secs(15)),
                ..*self.transport.settings()
            };
            self.probe_transport = Some(Transport::new(settings).map_err(Error::NotConfigured)?);
        }
        Ok(())
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether the server is on this machine or its own network (a local model server: filling
    /// its prompt cache costs nothing but its time).
    pub fn is_local(&self) -> bool {
        url::Url::parse(&self.base_url).is_ok_and(|u| destination::is_local(&u))
    }

    /// How many messages the plugin has encoded (cache misses).
    pub fn encode_calls(&self) -> u64 {
        self.encode_calls
    }

    /// Scrubs the credential from a text.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.credentials.redact(text)
    }

    /// Where a request the plugin built may go: only where both its manifest and the user's
    /// base URL allow (chat requests and probes alike); otherwise nothing is sent.
    fn destination(&self, url: &str) -> Result<destination::Destination> {
        destination::check(&self.name, url, self.plugin.allowed_hosts(), &self.base_url, self.base_configured)
            .map_err(Error::HostNotAllowed)
    }

    fn plugin_error(&self, e: &crate::plugins::Error) -> Error {
        match e {
            // What the plugin found wrong with the server's answer keeps the plugin's code
            // (`invalid_response`): the plugin did its job.
            crate::plugins::Error::Plugin { code, message, .. } => {
                Error::Api { code: code.clone(), message: self.redact(&format!("{}: {message}", self.name)) }
            }
            other => Error::Plugin(self.redact(&other.to_string())),
        }
    }

    /// Encodes the conversation: stored messages once (then from the cache), others each time.
    fn encode(&mut self, call: &Call<'_>) -> Result<Vec<Fragment>> {
        if self.encoded_for.as_deref() != Some(call.model) {
            self.encoded.clear();
            self.encoded_for = Some(call.model.to_string());
        }
        let last = call.messages.len().saturating_sub(1);
        let mut out = Vec::with_capacity(call.messages.len());
        for (i, m) in call.messages.iter().enumerate() {
            let same_model = matches!((m.seq, call.same_model_after), (Some(s), Some(after)) if s > after);
            let breakpoint = i == last;
            let key = m.seq.map(|s| (s, m.parts.iter().map(Part::byte_size).sum(), breakpoint, same_model));
            if let Some(k) = key.filter(|k| self.encoded.contains_key(k)) {
                out.push(Fragment::Cached(k));
                continue;
            }
            let message = PluginMessage { id: m.seq.unwrap_or(0), role: m.role, parts: m.parts.clone() };
            let options = EncodeOptions { model: call.model.to_string(), same_model, cache_breakpoint: breakpoint };
            let fragment = self.plugin.encode_message(&message, &options).map_err(|e| self.plugin_error(&e))?;
            self.encode_calls += 1;
            match key {
                Some(k) => {
                    self.encoded.insert(k, fragment);
                    out.push(Fragment::Cached(k));
                }
                None => out.push(Fragment::Fresh(fragment)),
            }
        }
        if self.encoded.len() > 2 * out.len() + 64 {
            // Messages compacted away are not sent again: forget them.
            let used: std::collections::HashSet<EncodeKey> =
                out.iter().filter_map(|f| if let Fragment::Cached(k) = f { Some(*k) } else { None }).collect();
            self.encoded.retain(|k, _| used.contains(k));
        }
        Ok(out)
    }

    /// Sends one model call; `on_event` sees each streamed event as it is decoded. Returns `Err`
    /// when no answer arrived at all; a cut-short answer is `Ok` with [`Answer::error`] set.
    pub fn send(&mut self, call: &Call<'_>, cancel: &Cancel, on_event: &mut dyn FnMut(&StreamEvent)) -> Result<Answer> {
        let fragments = self.encode(call)?;
        let request = ChatRequest {
            model: call.model.to_string(),
            system: call.system.map(str::to_string),
            tools: call.tools.to_vec(),
            max_tokens: call.max_tokens,
            stream: call.stream,
            base_url: self.base_url.clone(),
            extra: call.extra.to_string(),
        };
        let http = self.plugin.build_request(&request).map_err(|e| self.plugin_error(&e))?;
        self.credentials
            .refuse_plugin_credentials(&format!("provider `{}`", self.name), &http.headers)
            .map_err(Error::Plugin)?;
        let to = self.destination(&http.url)?;
        if to.insecure_remote {
            let w = format!("sending to {} over plain http (not encrypted)", destination::origin(&to.url));
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        let body = http.body_with(fragments.iter().map(|f| match f {
            Fragment::Cached(k) => self.encoded.get(k).map_or("", String::as_str),
            Fragment::Fresh(s) => s.as_str(),
        }));
        tracing::trace!(provider = %self.name, bytes = body.len(), "request built");

        let out = transport::Outgoing {
            to: &to,
            method: &http.method,
            headers: &http.headers,
            body: &body,
            credentials: &self.credentials,
        };
        let mut st = Decoding { answer: Answer::default(), tools: HashMap::new(), error: None };
        let mut raw = Vec::new();
        let outcome = if call.stream {
            let mut framer = sse::Framer::default();
            let mut decoder = self.plugin.decoder().map_err(|e| Error::Plugin(e.to_string()))?;
            let outcome = self.transport.send(out, cancel, &mut |bytes| {
                for e in framer.push(bytes) {
                    st.push(&mut decoder, &e, on_event);
                }
            });
            if outcome.failure.is_none() && st.error.is_none() {
                if let Some(e) = framer.finish() {
                    st.push(&mut decoder, &e, on_event);
                }
                if st.answer.error.is_none() && st.error.is_none() {
                    let events = decoder.finish();
                    st.take(events, on_event);
                }
            }
            outcome
        } else {
            self.transport.send(out, cancel, &mut |bytes| raw.extend_from_slice(bytes))
        };
        let mut answer = st.answer;
        if let Some(e) = st.error {
            answer.error.get_or_insert(e);
        }
        answer.attempts = outcome.attempts;
        match outcome.failure {
            Some(Failure::Status { status, body }) => {
                let e = match self.plugin.parse_response(status, &body) {
                    Err(e) => Error::from_plugin(e),
                    Ok(_) => Error::Api { code: "http_error".into(), message: format!("HTTP {status}") },
                };
                let e = match (e, self.plugin.refusal_limit(status, &body)) {
                    (Error::Api { code, message }, Ok(Some(limit))) => Error::Refused { code, message, limit },
                    (e, _) => e,
                };
                return Err(self.scrub(e));
            }
            Some(f) => {
                let e = Error::Transport {
                    provider: self.name.clone(),
                    message: self.redact(&f.describe()),
                    code: f.code(),
                };
                if !outcome.received {
                    return Err(e);
                }
                answer.error.get_or_insert(e);
            }
            None if !call.stream => match self.plugin.parse_response(200, &raw) {
                Ok(r) => {
                    answer.parts = r.message.parts;
                    answer.usage = r.usage;
                    answer.stop_reason = Some(r.stop_reason);
                }
                Err(e) => return Err(self.scrub(self.plugin_error(&e))),
            },
            None => {}
        }
        if let Some(e) = answer.error.take() {
            answer.error = Some(self.scrub(e));
        }
        if answer.error.is_none() && answer.stop_reason.is_none() {
            answer.error = Some(Error::Api {
                code: "incomplete_stream".into(),
                message: format!("{}: the answer ended without a stop reason", self.name),
            });
        }
        Ok(answer)
    }

    fn scrub(&self, e: Error) -> Error {
        // Redacted whole, then cut: a cut could split a key the redaction would no longer know.
        let clean = |m: &str| bounded_message(&self.redact(m)).into_owned();
        match e {
            Error::Api { code, message } => Error::Api { code, message: clean(&message) },
            Error::Refused { code, message, limit } => Error::Refused { code, message: clean(&message), limit },
            Error::Plugin(m) => Error::Plugin(clean(&m)),
            other => other,
        }
    }
}

/// The most of a server's error message an error carries: an HTML error page or a huge body is
/// cut (the status and the start say what happened).
const MAX_ERROR_MESSAGE_BYTES: usize = 2_000;

/// `message` within [`MAX_ERROR_MESSAGE_BYTES`]: a longer one keeps its start and its end (where
/// the plugin's hint is), cut at character boundaries.
pub(crate) fn bounded_message(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_ERROR_MESSAGE_BYTES {
        return message.into();
    }
    let head = message.floor_char_boundary(MAX_ERROR_MESSAGE_BYTES * 3 / 4);
    let tail = message.ceil_char_boundary(message.len() - MAX_ERROR_MESSAGE_BYTES / 4);
    format!("{} […{} bytes left out…] {}", &message[..head], tail - head, &message[tail..]).into()
}

/// A streamed answer being decoded.
struct Decoding {
    answer: Answer,
    tools: HashMap<u32, usize>,
    /// The decoder failed: the rest of the stream is ignored.
    error: Option<Error>,
}

impl Decoding {
    fn push(
        &mut self,
        decoder: &mut crate::plugins::StreamDecoder<'_>,
        event: &sse::Event,
        on_event: &mut dyn FnMut(&StreamEvent),
    ) {
        if self.error.is_none() {
            let events = decoder.push(&event.event, &event.data);
            self.take(events, on_event);
        }
    }

    fn take(&mut self, events: crate::plugins::Result<Vec<StreamEvent>>, on_event: &mut dyn FnMut(&StreamEvent)) {
        match events {
            Ok(events) => {
                for d in events {
                    on_event(&d);
                    self.answer.apply(d, &mut self.tools);
                }
            }
            Err(e) => self.error = Some(Error::from_plugin(e)),
        }
    }
}

/// A [`Provider`] shared between the chat loop and the compaction pipeline (summary calls).
#[derive(Debug, Clone)]
pub struct SharedProvider(pub std::sync::Arc<std::sync::Mutex<Provider>>);

impl SharedProvider {
    /// Shares `provider`.
    pub fn new(provider: Provider) -> Self {
        SharedProvider(std::sync::Arc::new(std::sync::Mutex::new(provider)))
    }

    /// Locks it (a panic while locked does not make it unusable).
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Provider> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl crate::compaction::ModelClient for SharedProvider {
    fn complete(&self, model: &str, request: CompletionRequest) -> std::result::Result<Completion, ModelError> {
        let mut p = self.lock();
        let messages: Vec<Msg> =
            request.messages.into_iter().map(|m| Msg { seq: None, role: m.role, parts: m.parts }).collect();
        let call = Call {
            model,
            system: request.system.as_deref(),
            tools: &[],
            messages: &messages,
            max_tokens: request.max_tokens,
            stream: false,
            same_model_after: None,
            extra: "{}",
        };
        let cancel = p.watched.clone();
        let answer = p.send(&call, &cancel, &mut |_| {}).map_err(|e| match &e {
            Error::Refused { limit, .. } => ModelError::refused(e.code(), e.to_string(), *limit),
            _ => ModelError::new(e.code(), e.to_string()),
        })?;
        if let Some(e) = &answer.error {
            return Err(ModelError::new(e.code(), e.to_string()));
        }
        Ok(Completion {
            text: answer.text(),
            usage: answer.usage,
            stop_reason: answer.stop_reason.unwrap_or(StopReason::EndTurn),
        })
    }

    fn complete_shared(
        &self,
        model: &str,
        request: &crate::compaction::SharedRequest<'_>,
    ) -> Option<std::result::Result<Completion, ModelError>> {
        let mut p = self.lock();
        let call = Call {
            model,
            system: Some(request.system),
            tools: request.specs,
            messages: request.messages,
            max_tokens: request.max_tokens,
            stream: false,
            same_model_after: request.shape.same_model_after,
            extra: &request.shape.extra,
        };
        let cancel = p.watched.clone();
        let answer = match p.send(&call, &cancel, &mut |_| {}) {
            Ok(a) => a,
            Err(e) => {
                let failed = match &e {
                    Error::Refused { limit, .. } => ModelError::refused(e.code(), e.to_string(), *limit),
                    _ => ModelError::new(e.code(), e.to_string()),
                };
                return Some(Err(failed));
            }
        };
        if let Some(e) = &answer.error {
            return Some(Err(ModelError::new(e.code(), e.to_string())));
        }
        Some(Ok(Completion {
            text: answer.text(),
            usage: answer.usage,
            stop_reason: answer.stop_reason.unwrap_or(StopReason::EndTurn),
        }))
    }

    fn context_window(&self, model: &str) -> Option<u64> {
        self.lock().model(model).map(|m| m.context_window).filter(|&w| w > 0)
    }

    fn count(&self, model: &str, text: &str) -> Option<u64> {
        counting::count(model, text)
    }

    fn count_request(&self, model: &str, request: &crate::compaction::CountRequest<'_>) -> Option<u64> {
        self.lock()
            .count_input(model, request.system, request.specs, &request.messages)
            .or_else(|| request.size_with(&|t: &str| counting::count(model, t)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_dated_snapshot_is_its_familys_model() {
        assert_eq!(super::undated("claude-sonnet-4-5-20250929"), Some("claude-sonnet-4-5"));
        assert_eq!(super::undated("gpt-4o-2024-08-06"), Some("gpt-4o"));
        assert_eq!(super::undated("claude-sonnet-4-5"), None);
        assert_eq!(super::undated("qwen3:8b"), None);
    }
}
