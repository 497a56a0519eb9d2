// {{name}}: a Seshat embedder plugin, written in JavaScript, for an OpenAI-compatible
// `POST {base}/embeddings` API (OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio).
//
// What it does. Seshat's knowledge index (and, when turned on, history and memory search) turns
// texts into vectors through this plugin. It is a pure translator: `buildRequest` turns a batch of
// texts into an HTTP request, `parseResponse` the answer into one vector per text. The host
// batches the texts (at most `maxBatch`, each within the model's input), adds the API key, sends
// the request only to hosts plugin.toml's `allowed_hosts` and the user's config allow, and checks
// the vectors: one per text, in order, all of the model's length, all finite.
//
// How to change it. Edit MODELS and DEFAULT_BASE_URL for your API, and `buildRequest` /
// `parseResponse` for one that is not OpenAI-shaped. The user selects it and sets options:
//
//   [plugins]
//   embedder = "{{name}}"
//   [knowledge]
//   model = "nomic-embed-text"
//   base_url = "http://localhost:11434/v1"
//   [plugins.options.embedder]
//   query_prefix = "search_query: "          # prepended to search queries (some models want it)
//   document_prefix = "search_document: "    # prepended to what is indexed
//   fields = { truncate = false }            # added to every request's body
//
// Build with `npm run build`, try it with `npm test` (see README.md).

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/// Models it knows: id, vector length, longest input in tokens (the host splits longer texts,
/// never cuts them). All three are u32: plain numbers. The user may configure others.
const MODELS = [
  ['text-embedding-3-small', 1536, 8191],
  ['text-embedding-3-large', 3072, 8191],
  ['nomic-embed-text', 768, 2048],
  ['mxbai-embed-large', 1024, 512],
  ['all-minilm', 384, 256],
];

const DEFAULTS = { query_prefix: '', document_prefix: '', fields: {} };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const embed = {
  info() {
    return {
      id: '{{name}}',
      defaultBaseUrl: DEFAULT_BASE_URL,
      auth: { tag: 'bearer' }, // or { tag: 'none' }, or { tag: 'header', val: 'x-api-key' }
      keyEnv: 'OPENAI_API_KEY', // undefined for none
      maxBatch: 64, // the host never sends more texts than this in one request
      models: MODELS.map(([id, dimensions, maxInputTokens]) => ({ id, dimensions, maxInputTokens })),
    };
  },

  /// One batch as a request. `purpose` is 'document' (to be found) or 'query' (a search):
  /// enum cases are kebab-case strings. `dimensions` is undefined unless the user asked for
  /// shorter vectors.
  buildRequest: guarded((request) => {
    const options = readOptions(request.extra);
    const prefix = request.purpose === 'query' ? options.query_prefix : options.document_prefix;
    const body = {
      model: request.model,
      input: request.texts.map((t) => prefix + t),
      encoding_format: 'float', // base64 vectors would need decoding
    };
    if (request.dimensions !== undefined) body.dimensions = request.dimensions;
    for (const [key, value] of Object.entries(options.fields)) {
      if (key in body) fail('invalid_options', `\`fields.${key}\` under [plugins.options.embedder] is set by {{name}} itself: remove it`);
      body[key] = value;
    }
    return {
      method: 'POST',
      url: `${request.baseUrl.replace(/\/+$/, '')}/embeddings`,
      headers: [['content-type', 'application/json'], ['accept', 'application/json']], // never credentials
      body: encoder.encode(JSON.stringify(body)), // list<u8>: a Uint8Array
    };
  }),

  /// The answer (or an error body, for any status): one vector per text, in the batch's order.
  /// A vector may be a Float32Array or an array of numbers.
  parseResponse: guarded((status, body) => {
    let value;
    try {
      value = JSON.parse(decoder.decode(body));
    } catch (e) {
      if (status >= 200 && status < 300) fail('invalid_response', `the embeddings answer is not JSON: ${e.message}`);
    }
    if (status < 200 || status >= 300) throw httpError(status, value, body);
    if (!Array.isArray(value?.data)) fail('invalid_response', 'the embeddings answer has no `data` list');
    // Each item names its input's index: servers may answer out of order.
    const out = new Array(value.data.length);
    value.data.forEach((item, at) => {
      const index = Number.isInteger(item.index) ? item.index : at;
      if (!Array.isArray(item.embedding)) {
        const why = 'was encoding_format "float" honoured?';
        fail('invalid_response', `item ${at} of the embeddings answer has no \`embedding\` list (${why})`);
      }
      if (index < 0 || index >= out.length || out[index] !== undefined) {
        fail('invalid_response', `item ${at} has index ${index}, which is out of range or repeated`);
      }
      out[index] = Float32Array.from(item.embedding);
    });
    return out;
  }),
};

/// The user's options (`request.extra`, a JSON object from `[plugins.options.embedder]`),
/// checked: a wrong one is the contract's `invalid_options` error, never a crash.
function readOptions(extra) {
  let given;
  try {
    given = JSON.parse(extra || '{}');
  } catch (e) {
    fail('invalid_options', `the options are not JSON (${e.message}): check [plugins.options.embedder] in config.toml`);
  }
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    fail('invalid_options', 'the options must be a table: [plugins.options.embedder] in config.toml');
  }
  const options = { ...DEFAULTS };
  for (const [key, value] of Object.entries(given)) {
    if (!(key in DEFAULTS)) {
      fail('invalid_options', `unknown option \`${key}\` under [plugins.options.embedder]: {{name}} reads ${Object.keys(DEFAULTS).join(', ')}`);
    }
    const isTable = value !== null && typeof value === 'object' && !Array.isArray(value);
    if (key === 'fields' ? !isTable : typeof value !== 'string') {
      const want = key === 'fields' ? 'a table of body fields' : 'a string';
      fail('invalid_options', `option \`${key}\` under [plugins.options.embedder] is ${JSON.stringify(value)}: make it ${want}`);
    }
    options[key] = value;
  }
  return options;
}

/// An error answer as the contract's error, with a stable code and what to do.
function httpError(status, value, body) {
  const detail = value?.error?.message ?? (typeof value?.error === 'string' ? value.error : decoder.decode(body.slice(0, 500)));
  const [code, hint] = {
    400: ['invalid_request', 'the request was rejected as invalid'],
    401: ['auth_failed', 'check the API key (OPENAI_API_KEY or [knowledge] api_key_env)'],
    403: ['permission_denied', 'the key may not use this model'],
    404: ['not_found', 'check [knowledge] model and base_url (it usually ends in /v1)'],
    413: ['request_too_large', 'the batch is larger than the server accepts: lower maxBatch'],
    429: ['rate_limited', 'wait and retry, or lower the request rate'],
  }[status] ?? (status >= 500 ? ['server_error', 'a server error; retry later'] : ['http_error', 'unexpected answer']);
  return { code, message: `the embeddings server answered HTTP ${status}: ${detail} (${hint})` };
}

// ---- Errors ------------------------------------------------------------------------------------
//
// `buildRequest` and `parseResponse` return `result<_, error>`: return the value, or THROW A PLAIN
// OBJECT `{ code, message }` for the contract's error. Do not throw an `Error` (or let one escape,
// e.g. a TypeError from a bug): it has no `code`, so the bindings abort ("expected a string,
// received [undefined]" on stderr) and Seshat reports the plugin as crashed, without your message.
// Never return `{ tag: 'err', val }`: a return value is always the `ok` side. `info` has no
// result: never throw from it.

function fail(code, message) {
  throw { code, message };
}

/// Wraps an export: the contract's errors pass on; anything else thrown (a bug) becomes one
/// naming the exception and where it was thrown, rather than a crash that says nothing.
function guarded(fn) {
  return (...args) => {
    try {
      return fn(...args);
    } catch (e) {
      if (e && typeof e.code === 'string' && typeof e.message === 'string') throw { code: e.code, message: e.message };
      const where = e instanceof Error && e.stack ? ` (at ${e.stack.split('\n').slice(0, 3).join(' < ')})` : '';
      const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      throw { code: 'internal_error', message: `{{name}} failed: ${what}${where}` };
    }
  };
}
