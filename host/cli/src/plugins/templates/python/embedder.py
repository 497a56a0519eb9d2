"""{{name}}: a Seshat embedder plugin, in Python, for the OpenAI embeddings API
(`POST {base_url}/embeddings`), which OpenAI-compatible servers (vLLM, Ollama, llama.cpp's
llama-server, LM Studio) speak too.

An embedder turns texts into vectors for Seshat's search of documents, messages and memory. It is
a pure translator: Seshat hands it a batch of texts (at most `max_batch`, each within the model's
input length: longer texts are split by Seshat, never cut), the plugin builds the HTTP request
(`build_request`), Seshat sends it (adding the API key, only to the hosts plugin.toml's
`allowed_hosts` and the configuration allow), and the plugin reads the vectors out of the answer
(`parse_response`). Seshat then checks them: one per text, in the batch's order, all of the
model's length, all finite.

Change it:
  * the API's name, base URL, key, batch size and models: EMBEDDER_ID ... MODELS;
  * the wire format: build_request() and parse_response() for another API;
  * the options, set in config.toml and handed over as the `extra` JSON:

        [plugins.options.embedder]
        query_prefix = "search_query: "        # put before a search query (some models want one:
        document_prefix = "search_document: "  # nomic-embed-text these, e5 "query: "/"passage: ")
        encoding_format = "base64"             # "float" (default) or "base64" (smaller answers;
                                               # not every server has it)
"""

import base64
import json
import struct

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import embed
from wit_world.imports import log, types

EMBEDDER_ID = "{{name}}"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"
# The most texts one request carries: Seshat never sends more at once.
MAX_BATCH = 64
# (id, vector length, longest input in tokens). Other models can be configured in config.toml.
MODELS = [
    ("text-embedding-3-small", 1536, 8191),
    ("text-embedding-3-large", 3072, 8191),
    ("nomic-embed-text", 768, 2048),
]
DEFAULTS = {"query_prefix": "", "document_prefix": "", "encoding_format": "float"}

STATUS = {
    400: ("invalid_request", "the request was rejected as invalid"),
    401: ("auth_failed", f"check the API key: ${KEY_ENV}, or api_key_env in config.toml"),
    403: ("permission_denied", "the key may not use this model"),
    404: ("not_found", "check the model id and the base URL"),
    413: ("request_too_large", "the batch is larger than the server accepts"),
    422: ("invalid_request", "the request was rejected as invalid"),
    429: ("rate_limited", "wait and retry, or lower the request rate"),
}


def fail(code, message):
    """The contract's error: raise it (`raise fail(...)`) from a function whose result can fail."""
    return Err(types.Error(code=code, message=message))


def read_options(extra):
    """The user's options (`[plugins.options.embedder]`), checked, over the defaults."""
    try:
        given = json.loads(extra or "{}")
    except ValueError as e:
        raise fail("invalid_options", f"the options are not JSON ({e}): fix [plugins.options.embedder] in config.toml")
    if not isinstance(given, dict):
        raise fail("invalid_options", "the options must be a table: [plugins.options.embedder] in config.toml")
    options = dict(DEFAULTS)
    for key, value in given.items():
        if key not in DEFAULTS:
            raise fail("invalid_options", f"unknown option `{key}` under [plugins.options.embedder]; this embedder reads "
                                      + ", ".join(DEFAULTS))
        if not isinstance(value, str):
            raise fail("invalid_options", f"option `{key}` under [plugins.options.embedder] must be a string, "
                                      f"not {json.dumps(value)}")
        options[key] = value
    if options["encoding_format"] not in ("float", "base64"):
        raise fail("invalid_options", f"encoding_format under [plugins.options.embedder] must be \"float\" or "
                                  f"\"base64\", not {json.dumps(options['encoding_format'])}")
    return options


def http_error(status, body):
    code, hint = STATUS.get(status, ("server_error", "a server error; retry later") if status >= 500
                            else ("http_error", "an unexpected answer"))
    try:
        said = json.loads(body).get("error")
        said = said.get("message") if isinstance(said, dict) else said
    except (ValueError, AttributeError):
        said = None
    said = said or bytes(body[:500]).decode(errors="replace").strip() or "no message"
    return fail(code, f"HTTP {status}: {said} ({hint})")


def vector(item, i):
    """One vector of the answer: a list of numbers, or (encoding_format "base64") little-endian
    32-bit floats, base64-encoded."""
    value = item.get("embedding") if isinstance(item, dict) else None
    if isinstance(value, str):
        raw = base64.b64decode(value)
        if len(raw) % 4:
            raise fail("invalid_response", f"vector {i} is {len(raw)} bytes, not a whole number of 32-bit floats")
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return [float(x) for x in value]
    raise fail("invalid_response", f"item {i} of the answer's `data` has no vector under `embedding`")


class Embed(exports.Embed):
    def info(self) -> embed.EmbedderInfo:
        models = [embed.EmbeddingModel(id=m, dimensions=d, max_input_tokens=n) for m, d, n in MODELS]
        # Bearer: Seshat adds `Authorization: Bearer <key>` when a key is configured, nothing when
        # none is (a local server).
        return embed.EmbedderInfo(id=EMBEDDER_ID, default_base_url=DEFAULT_BASE_URL, auth=embed.Auth_Bearer(),
                                  key_env=KEY_ENV, max_batch=MAX_BATCH, models=models)

    def build_request(self, request: embed.EmbedRequest) -> embed.EmbedHttp:
        options = read_options(request.extra)
        prefix = options["query_prefix"] if request.purpose == embed.Purpose.QUERY else options["document_prefix"]
        body = {"model": request.model, "input": [prefix + text for text in request.texts],
                "encoding_format": options["encoding_format"]}
        # Only when the user asked for shorter vectors, and the model can give them.
        if request.dimensions is not None:
            body["dimensions"] = request.dimensions
        return embed.EmbedHttp(method="POST", url=request.base_url.rstrip("/") + "/embeddings",
                               headers=[("content-type", "application/json"), ("accept", "application/json")],
                               body=json.dumps(body, ensure_ascii=False).encode())

    def parse_response(self, status: int, body: bytes) -> list:
        if status >= 300:
            raise http_error(status, body)
        try:
            answer = json.loads(body)
        except ValueError as e:
            raise fail("invalid_response", f"the server's answer is not JSON: {e}")
        if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
            raise fail("invalid_response", "the server's answer has no `data` list of vectors")
        items = answer["data"]
        # The vectors must come in the batch's order: the API numbers them (`index`).
        if all(isinstance(item, dict) and isinstance(item.get("index"), int) for item in items):
            items = sorted(items, key=lambda item: item["index"])
        vectors = [vector(item, i) for i, item in enumerate(items)]
        log.log(log.Level.DEBUG, f"{len(vectors)} vectors of {len(vectors[0]) if vectors else 0} numbers")
        return vectors
