// {{name}}: a Seshat provider plugin, written in JavaScript, for an OpenAI-compatible
// chat-completions API (`POST {base}/chat/completions`: OpenAI, Ollama, llama.cpp's server, vLLM,
// LM Studio, OpenRouter, ...).
//
// What it does. A provider is a pure translator: Seshat hands it messages and requests in its own
// terms, it returns bytes and HTTP requests in the API's, and decodes the answers. It never sends
// anything and never sees the API key: the host adds the key (as `info().auth` says) and sends
// the request, only to hosts that plugin.toml's `allowed_hosts` and the user's config both allow.
//
//   info            what it serves: its id, default base URL, auth, models
//   encodeMessage   one message as a fragment of the body's `messages` array (cached by the host)
//   buildRequest    the request's body without the conversation, and where the messages go
//   parseResponse   a whole (non-streamed) answer, or an error body
//   Decoder         a streamed answer, one server-sent event at a time
//   probes / parseProbe      asking the server for a model's window and its models
//   refusalLimit    what a "too long" refusal says of the model's limits
//   counters / parseCount    asking the server how many tokens a request's input is
//
// How to change it. Edit MODELS and DEFAULT_BASE_URL for your API; `encodeMessage`, `buildRequest`
// and the decoders are where an API that is not OpenAI-shaped differs. The user configures it:
//
//   [providers.myapi]
//   plugin = "{{name}}"
//   base_url = "http://localhost:8080/v1"
//   api_key_env = "MYAPI_KEY"                # if the server needs a key
//
// A chat request's `extra` is a JSON object of options (Seshat sends `{}` today: its config has
// no place for a provider's options yet); this template adds its fields to the request's body.
//
// Build with `npm run build`, try it with `npm test` (see README.md).

import { log } from 'seshat:plugin/log@0.4.0';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/// Models it knows: id, context window, largest answer (others the server lists are found by the
/// probes). The two numbers are u64: BigInts (`128000n`), not numbers.
const MODELS = [
  ['gpt-4.1', 1047576n, 32768n],
  ['gpt-4.1-mini', 1047576n, 32768n],
  ['gpt-4o', 128000n, 16384n],
  ['gpt-4o-mini', 128000n, 16384n],
];

/// Body fields the plugin sets, which the user's options may not override.
const OWN_FIELDS = ['model', 'messages', 'stream', 'stream_options', 'tools', 'max_tokens', 'max_completion_tokens'];

const encoder = new TextEncoder();
const decoder = new TextDecoder(); // bodies are list<u8>: Uint8Arrays in, Uint8Arrays out

export const translate = {
  info() {
    return {
      id: '{{name}}',
      defaultBaseUrl: DEFAULT_BASE_URL,
      // Variants are `{ tag, val }`; a case without a payload is just `{ tag }`.
      auth: { tag: 'bearer' }, // or { tag: 'none' }, or { tag: 'header', val: 'x-api-key' }
      keyEnv: 'OPENAI_API_KEY', // an option<string>: undefined for none
      models: MODELS.map(([id, contextWindow, maxOutputTokens]) => ({ id, contextWindow, maxOutputTokens, extra: '{}' })),
    };
  },

  /// One message as the API's JSON, without the brackets: the host caches the fragment (by
  /// message, plugin and model) and splices it into every later request, so it must depend on the
  /// message and options only (no clock, no counters), byte for byte. Several items (one tool
  /// message answering several calls) are joined by the splice's separator, ",". Return "" to send
  /// nothing of the message.
  encodeMessage: guarded((message, options) => {
    const texts = [];
    const calls = [];
    const items = [];
    for (const part of message.parts) {
      switch (part.tag) {
        case 'text':
          if (part.val) texts.push(part.val);
          break;
        case 'tool-call': {
          const { id, name, arguments: args } = part.val;
          calls.push({ id, type: 'function', function: { name, arguments: args } });
          break;
        }
        case 'tool-result': {
          const { callId, content, isError } = part.val;
          items.push({ role: 'tool', tool_call_id: callId, content: isError ? `Error: ${content}` : content });
          break;
        }
        default:
          // 'thinking' / 'redacted-thinking': chat completions takes no reasoning back. An API
          // that does may send it only when `options.sameModel` is true (this provider and model
          // wrote it), with its signature; `options.cacheBreakpoint` marks the request's last
          // message, where an API with explicit prompt caching puts its marker.
          break;
      }
    }
    const text = texts.join('\n');
    if (message.role === 'assistant') {
      if (text || calls.length) {
        const m = { role: 'assistant', content: text || null };
        if (calls.length) m.tool_calls = calls;
        items.push(m);
      }
    } else if (text) {
      items.push({ role: message.role === 'system' ? 'system' : 'user', content: text });
    }
    return items.map((item) => JSON.stringify(item)).join(',');
  }),

  /// The body with an empty `messages` array, and the splice saying where the host puts the
  /// encoded messages. `splice.offset` counts BYTES of the UTF-8 body (not JS characters: a
  /// system prompt with "é" or "→" makes them differ) and is a u64: a BigInt.
  buildRequest: guarded((request) => {
    const options = readOptions(request.extra);
    const fields = { model: request.model };
    fields[/^(o\d|gpt-5)/.test(request.model) ? 'max_completion_tokens' : 'max_tokens'] = request.maxTokens;
    if (request.stream) {
      fields.stream = true;
      fields.stream_options = { include_usage: true };
    }
    if (request.tools.length) {
      fields.tools = request.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: schema(t) },
      }));
    }
    Object.assign(fields, options);
    // The system prompt is the array's first item; the messages follow it.
    const lead = request.system ? JSON.stringify({ role: 'system', content: request.system }) : '';
    const head = `${JSON.stringify(fields).slice(0, -1)},"messages":[${lead}`;
    const body = encoder.encode(`${head}]}`);
    return {
      method: 'POST',
      url: `${trimSlash(request.baseUrl)}/chat/completions`,
      headers: [
        ['content-type', 'application/json'],
        ['accept', request.stream ? 'text/event-stream' : 'application/json'],
      ], // never credentials: the host adds them
      body,
      splice: { offset: BigInt(encoder.encode(head).length), separator: ',', lead: lead !== '' },
    };
  }),

  /// A whole answer, or an error body (for any status).
  parseResponse: guarded((status, body) => {
    const value = json(body);
    if (status < 200 || status >= 300 || value?.error) throw httpError(status, value, body);
    if (value === undefined) fail('invalid_response', "the server's answer is not JSON");
    const choice = value.choices?.[0] ?? {};
    const m = choice.message ?? {};
    const parts = [];
    const reasoning = m.reasoning_content ?? m.reasoning;
    if (typeof reasoning === 'string' && reasoning) parts.push({ tag: 'thinking', val: { text: reasoning, signature: undefined } });
    if (typeof m.content === 'string' && m.content) parts.push({ tag: 'text', val: m.content });
    for (const c of m.tool_calls ?? []) {
      parts.push({ tag: 'tool-call', val: { id: str(c.id), name: str(c.function?.name), arguments: str(c.function?.arguments) } });
    }
    return {
      message: { id: 0n, role: 'assistant', parts },
      usage: value.usage ? usage(value.usage) : undefined,
      stopReason: stopReason(choice.finish_reason ?? 'stop'),
    };
  }),

  /// A streamed answer's decoder: one instance per answer (the host's `constructor()`), told
  /// each server-sent event in order (`event` is the SSE event name, "" when none), then
  /// `finish()`. A resource is exported as a class named after it.
  Decoder: class Decoder {
    constructor() {
      this.started = new Set(); // tool call indexes already announced
      this.stop = undefined; // the finish reason, held until [DONE]: usage comes after it
      this.done = false;
    }

    push(event, data) {
      return attempt(() => {
        if (data.trim() === '[DONE]') {
          this.done = true;
          return [{ tag: 'stop', val: this.stop ?? { tag: 'end-turn' } }];
        }
        const v = json(data);
        if (v === undefined) fail('bad_stream', `the server sent an event that is not JSON: ${data.slice(0, 200)}`);
        if (v.error) {
          // A mid-stream error is an event, not a thrown error: what arrived so far is kept.
          const message = `the server reported an error mid-answer: ${v.error.message ?? JSON.stringify(v.error)}`;
          return [{ tag: 'error', val: { code: 'server_error', message } }];
        }
        const out = [];
        for (const choice of v.choices ?? []) {
          const d = choice.delta ?? {};
          const reasoning = d.reasoning_content ?? d.reasoning;
          if (typeof reasoning === 'string' && reasoning) out.push({ tag: 'thinking-delta', val: reasoning });
          if (typeof d.content === 'string' && d.content) out.push({ tag: 'text-delta', val: d.content });
          (d.tool_calls ?? []).forEach((c, i) => {
            const index = Number.isInteger(c.index) ? c.index : i; // u32: a plain number
            if (!this.started.has(index)) {
              this.started.add(index);
              out.push({ tag: 'tool-call-start', val: { index, id: str(c.id), name: str(c.function?.name) } });
            }
            if (c.function?.arguments) out.push({ tag: 'tool-call-delta', val: { index, arguments: c.function.arguments } });
          });
          if (choice.finish_reason) this.stop = stopReason(choice.finish_reason);
        }
        if (v.usage) out.push({ tag: 'usage', val: usage(v.usage) });
        return out;
      });
    }

    finish() {
      return attempt(() => {
        if (this.done) return [];
        // Some servers end the stream after the finish reason, without [DONE].
        if (this.stop) return [{ tag: 'stop', val: this.stop }];
        fail('incomplete_stream', "the server's stream ended before the answer did: retry");
      });
    }
  },

  // The functions below return no `result`: they cannot report an error, and an exception in them
  // crashes the plugin. `quietly` answers "nothing known" instead (and logs why).

  /// Asking the server for `model`'s window (or, with `model` undefined, its models), in order.
  probes: quietly([], (model, baseUrl) => {
    const base = trimSlash(baseUrl);
    const probes = [get('models', `${base}/models`)];
    if (model !== undefined && !base.startsWith('https://api.openai.com')) {
      probes.push(get('llama.cpp-props', `${base.replace(/\/v1$/, '')}/props`));
    }
    return probes;
  }),

  /// What a probe's answer says; all empty when it says nothing (the host tries the next).
  parseProbe: quietly({ contextWindow: undefined, maxOutputTokens: undefined, models: [] }, (name, model, status, body) => {
    const found = { contextWindow: undefined, maxOutputTokens: undefined, models: [] };
    const v = json(body);
    if (status < 200 || status >= 300 || v === undefined) return found;
    if (name === 'models') {
      const data = Array.isArray(v.data) ? v.data : [];
      found.models = data.map((m) => m.id).filter((id) => typeof id === 'string');
      const entry = data.find((m) => m.id === model);
      // vLLM says `max_model_len`, OpenRouter `context_length`: the window the model runs with.
      found.contextWindow = u64(entry?.max_model_len ?? entry?.context_length);
    } else if (name === 'llama.cpp-props') {
      found.contextWindow = u64(v.default_generation_settings?.n_ctx ?? v.n_ctx);
    }
    return found;
  }),

  /// Whether an error answer refuses the request for its length, and what it says of the limits.
  refusalLimit: quietly(undefined, (status, body) => {
    if (status < 400 || status >= 500) return undefined;
    const v = json(body);
    const e = v?.error && typeof v.error === 'object' ? v.error : v ?? {};
    const message = String(e.message ?? decoder.decode(body)).toLowerCase();
    const completion = numberAfter(message, 'supports at most');
    if (completion !== undefined && message.includes('completion tokens')) return { tag: 'max-output', val: completion };
    const window = numberAfter(message, 'maximum context length is') ?? u64(e.n_ctx);
    // "you requested N tokens (a in the messages, b in the completion)": when the messages alone
    // fit, asking for a smaller answer does too (no need to compact).
    const input = numberAfter(message, 'tokens (');
    const asked = numberAfter(message, 'in the messages,');
    if (window !== undefined && input !== undefined && asked !== undefined && input < window) {
      return { tag: 'input-and-output', val: { input, maxTokens: asked, window } };
    }
    if (window !== undefined || e.code === 'context_length_exceeded') {
      const requested = numberAfter(message, 'you requested') ?? numberAfter(message, 'resulted in') ?? u64(e.n_prompt_tokens);
      return { tag: 'too-long', val: { window, requested } };
    }
    return undefined;
  }),

  /// Asking the server how many tokens `request`'s input is (`messages` its whole conversation):
  /// vLLM's `POST /tokenize` takes the chat messages and answers `{"count": N}`. OpenAI's own API
  /// has no such endpoint: return [] and the host counts or estimates.
  counters: quietly([], (request, messages) => {
    const base = trimSlash(request.baseUrl);
    if (base.startsWith('https://api.openai.com')) return [];
    const encoded = messages
      .map((m) => translate.encodeMessage(m, { model: request.model, sameModel: false, cacheBreakpoint: false }))
      .filter((f) => f !== '');
    if (request.system) encoded.unshift(JSON.stringify({ role: 'system', content: request.system }));
    const head = `{"model":${JSON.stringify(request.model)},"add_generation_prompt":true`;
    const body = `${head},"messages":[${encoded.join(',')}]}`;
    return [{
      name: 'vllm-tokenize',
      request: {
        method: 'POST',
        url: `${base.replace(/\/v1$/, '')}/tokenize`,
        headers: [['content-type', 'application/json']],
        body: encoder.encode(body),
        splice: undefined, // a probe's request has no splice
      },
    }];
  }),

  /// A counter's answer: the input tokens, or undefined when it does not say (never 0 for that).
  parseCount: quietly(undefined, (name, status, body) => {
    if (status < 200 || status >= 300) return undefined;
    const count = u64(json(body)?.count);
    return count ? count : undefined;
  }),
};

/// A tool's JSON Schema, parsed.
function schema(tool) {
  try {
    return JSON.parse(tool.parameters);
  } catch (e) {
    fail('invalid_request', `tool \`${tool.name}\` has parameters that are not JSON: ${e.message}`);
  }
}

/// The request's options (`request.extra`, a JSON object): fields added to the body, which may
/// not replace the ones the plugin sets.
function readOptions(extra) {
  const options = json(extra || '{}');
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    fail('invalid_options', `the provider's options must be a JSON object of body fields, not ${extra}`);
  }
  for (const key of Object.keys(options)) {
    if (OWN_FIELDS.includes(key)) {
      fail('invalid_options', `option \`${key}\` is set by {{name}} itself and cannot be overridden: remove it from the options`);
    }
  }
  return options;
}

/// Usage as Seshat counts it: every field a u64, so BigInts.
function usage(u) {
  const prompt = u64(u.prompt_tokens) ?? 0n;
  let cached = u64(u.prompt_tokens_details?.cached_tokens) ?? 0n;
  if (cached > prompt) cached = prompt;
  return {
    inputTokens: prompt - cached,
    outputTokens: u64(u.completion_tokens) ?? 0n,
    cacheReadTokens: cached,
    cacheCreationTokens: 0n,
    contextTokens: prompt,
  };
}

function stopReason(reason) {
  switch (reason) {
    case 'stop': return { tag: 'end-turn' };
    case 'tool_calls': case 'function_call': return { tag: 'tool-use' };
    case 'length': return { tag: 'max-tokens' };
    case 'content_filter': return { tag: 'refusal' };
    default: return { tag: 'other', val: String(reason) };
  }
}

/// An error answer as the contract's error, with a stable code and what to do.
function httpError(status, value, body) {
  const detail = value?.error?.message ?? (typeof value?.error === 'string' ? value.error : decoder.decode(body.slice(0, 500)));
  const [code, hint] = {
    400: ['invalid_request', 'the request was rejected as invalid'],
    401: ['auth_failed', 'check the API key (OPENAI_API_KEY or the provider\'s api_key_env)'],
    403: ['permission_denied', 'the key may not use this model'],
    404: ['not_found', 'check the model id and the base URL (it usually ends in /v1)'],
    413: ['request_too_large', 'the request is larger than the server accepts'],
    429: ['rate_limited', 'wait and retry, or lower the request rate'],
  }[status] ?? (status >= 500 ? ['server_error', 'a server error; retry later'] : ['http_error', 'unexpected answer']);
  return { code, message: `the server answered HTTP ${status}: ${detail} (${hint})` };
}

function get(name, url) {
  const headers = [['accept', 'application/json']];
  return { name, request: { method: 'GET', url, headers, body: new Uint8Array(0), splice: undefined } };
}

/// Parsed JSON from a string or bytes, or undefined.
function json(input) {
  try {
    return JSON.parse(typeof input === 'string' ? input : decoder.decode(input));
  } catch {
    return undefined;
  }
}

/// A non-negative whole number as a u64 (BigInt), or undefined.
function u64(n) {
  return Number.isSafeInteger(n) && n >= 0 ? BigInt(n) : undefined;
}

/// The first number after `marker` in `text` ("1,024" and "1_024" allowed), as a BigInt.
function numberAfter(text, marker) {
  const at = text.indexOf(marker);
  if (at < 0) return undefined;
  const m = /^[\s:="]*([\d,_]+)/.exec(text.slice(at + marker.length));
  const digits = m ? m[1].replace(/[,_]/g, '') : '';
  return digits ? BigInt(digits) : undefined;
}

const str = (v) => (typeof v === 'string' ? v : '');
const trimSlash = (url) => url.replace(/\/+$/, '');

// ---- Errors ------------------------------------------------------------------------------------
//
// A function returning `result<_, error>` reports an error by THROWING A PLAIN OBJECT
// `{ code, message }`. Do not throw an `Error` (or let one escape, e.g. a TypeError from a bug):
// it has no `code`, so the bindings abort ("expected a string, received [undefined]" on stderr)
// and Seshat reports the plugin as crashed, without your message. Never return
// `{ tag: 'err', val }`: a return value is always the `ok` side. Functions without a result
// (`info`, `probes`, ...) cannot report an error at all: never throw from them.

function fail(code, message) {
  throw { code, message };
}

/// Runs `fn`; anything unexpected it throws (a bug) becomes the contract's error, naming it.
function attempt(fn) {
  try {
    return fn();
  } catch (e) {
    if (e && typeof e.code === 'string' && typeof e.message === 'string') throw { code: e.code, message: e.message };
    const where = e instanceof Error && e.stack ? ` (at ${e.stack.split('\n').slice(0, 3).join(' < ')})` : '';
    const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    throw { code: 'internal_error', message: `{{name}} failed: ${what}${where}` };
  }
}

function guarded(fn) {
  return (...args) => attempt(() => fn(...args));
}

/// For functions without a result: `fallback` (and a warning in the log) instead of a crash.
function quietly(fallback, fn) {
  return (...args) => {
    try {
      return fn(...args);
    } catch (e) {
      log('warn', `{{name}}: ${e instanceof Error ? `${e.name}: ${e.message}` : JSON.stringify(e)}`);
      return fallback;
    }
  };
}
