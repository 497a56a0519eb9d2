"""{{name}}: a Seshat provider plugin, in Python, for the OpenAI Chat Completions API
(`POST {base_url}/chat/completions`), which OpenAI-compatible servers (vLLM, llama.cpp's
llama-server, Ollama, LM Studio, OpenRouter) speak too.

A provider is a pure translator. Seshat calls it to turn each message into the API's JSON
(`encode_message`, once per message: Seshat caches the fragment), to build the HTTP request around
them (`build_request`), and to read the answer: a whole one (`parse_response`) or a stream of
server-sent events (`Decoder`). Seshat sends the requests itself, adds the API key (the plugin
never sees it), and only to the hosts that plugin.toml's `allowed_hosts` and the user's
configuration both allow. The plugin also tells Seshat how to ask a server for a model's window
(`probes`, `parse_probe`), how many tokens a request is (`counters`, `parse_count`), and what a
"too long" refusal says (`refusal_limit`).

Change it:
  * the API's name, base URL, key and models: PROVIDER_ID, DEFAULT_BASE_URL, KEY_ENV, MODELS;
  * the wire format: encode_message(), build_request(), parse_response() and Decoder for another API.

Use it, once installed, under a name of your choice in config.toml:

    [providers.local]
    plugin = "{{name}}"
    base_url = "http://localhost:8000/v1"

Options a program embedding Seshat passes (`extra`, a JSON object) are added to the request's body
(e.g. {"temperature": 0.2}); they may not replace what Seshat sets.
"""

import json
import re
import sys
from urllib.parse import urlsplit

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import translate
from wit_world.imports import log, types

PROVIDER_ID = "{{name}}"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"
# (id, context window, largest answer), in tokens. A server's other models work too: Seshat asks
# the server (probes below) or reads the window from config.toml.
MODELS = [
    ("gpt-4.1", 1_047_576, 32_768),
    ("gpt-4.1-mini", 1_047_576, 32_768),
    ("gpt-4o", 128_000, 16_384),
    ("gpt-4o-mini", 128_000, 16_384),
]
# What the request body holds that options may not replace.
OWN_FIELDS = {"model", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options", "tools"}

# Compact JSON: Seshat caches each encoded message and sends the same bytes on every turn (a
# server's prompt cache matches on them), so the same message must always encode the same way.
def to_json(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def fail(code, message):
    """The contract's error: raise it (`raise fail(...)`) from a function whose result can fail."""
    return Err(types.Error(code=code, message=message))


# An HTTP status as a stable code and a hint, as Seshat's own providers name them.
STATUS = {
    400: ("invalid_request", "the request was rejected as invalid"),
    401: ("auth_failed", f"check the API key: ${KEY_ENV}, or api_key_env in config.toml"),
    403: ("permission_denied", "the key may not use this model"),
    404: ("not_found", "check the model id and the base URL"),
    413: ("request_too_large", "the request is larger than the server accepts"),
    422: ("invalid_request", "the request was rejected as invalid"),
    429: ("rate_limited", "wait and retry, or lower the request rate"),
}


def http_error(status, body):
    """An error answer as the contract's error: the status's code, and the server's own message."""
    code, hint = STATUS.get(status, ("server_error", "a server error; retry later") if status >= 500
                            else ("http_error", "an unexpected answer"))
    try:
        said = json.loads(body).get("error")
        said = said.get("message") if isinstance(said, dict) else said
    except (ValueError, AttributeError):
        said = None
    said = said or bytes(body[:500]).decode(errors="replace").strip() or "no message"
    return fail(code, f"HTTP {status}: {said} ({hint})")


def read_options(extra):
    """The options as extra body fields, checked."""
    try:
        options = json.loads(extra or "{}")
    except ValueError as e:
        raise fail("invalid_options", f"the provider options are not JSON ({e}): pass a JSON object")
    if not isinstance(options, dict):
        raise fail("invalid_options", 'the provider options must be a JSON object of body fields, '
                                  'e.g. {"temperature": 0.2}')
    taken = sorted(OWN_FIELDS & options.keys())
    if taken:
        raise fail("invalid_options", f"provider option `{taken[0]}` is set by Seshat and cannot be replaced: remove it")
    return options


def root_of(base_url):
    """The base URL without its API path: `http://host:8000/v1` -> `http://host:8000`."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def get(name, url):
    """A probe: a GET the host sends, its answer handed to parse_probe with `name`."""
    request = translate.HttpRequest(method="GET", url=url, headers=[("accept", "application/json")], body=b"",
                                    splice=None)
    return translate.Probe(name=name, request=request)


# --- Reading answers --------------------------------------------------------------------------


def stop_reason(reason, made_calls):
    if reason == "tool_calls" or reason == "function_call" or (reason == "stop" and made_calls):
        # Some servers say "stop" after tool calls: the calls are what matters.
        return types.StopReason_ToolUse()
    if reason == "stop":
        return types.StopReason_EndTurn()
    if reason == "length":
        return types.StopReason_MaxTokens()
    if reason == "content_filter":
        return types.StopReason_Refusal()
    return types.StopReason_Other(str(reason))


def usage_of(u):
    """The API's usage as Seshat's: cached prompt tokens are counted apart from the others."""
    prompt = u.get("prompt_tokens") or 0
    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return types.Usage(input_tokens=max(prompt - cached, 0), output_tokens=u.get("completion_tokens") or 0,
                       cache_read_tokens=cached, cache_creation_tokens=0, context_tokens=prompt)


def text_of(content):
    """A message's content: a string, or (some servers) a list of text parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def number_after(text, marker):
    match = re.search(re.escape(marker) + r"\D{0,12}?([0-9][0-9,_]*)", text)
    return int(re.sub(r"[,_]", "", match.group(1))) if match else None


class Translate(exports.Translate):
    def info(self) -> translate.ProviderInfo:
        models = [types.ModelInfo(id=m, context_window=w, max_output_tokens=o, extra="{}") for m, w, o in MODELS]
        # Bearer: Seshat adds `Authorization: Bearer <key>` when a key is configured, nothing when
        # none is (a local server).
        return translate.ProviderInfo(id=PROVIDER_ID, default_base_url=DEFAULT_BASE_URL, auth=translate.Auth_Bearer(),
                                      key_env=KEY_ENV, models=models)

    def encode_message(self, message: types.Message, options: translate.EncodeOptions) -> str:
        texts, calls, items = [], [], []
        for part in message.parts:
            if isinstance(part, types.Part_Text):
                if part.value:
                    texts.append(part.value)
            elif isinstance(part, types.Part_ToolCall):
                call = part.value
                # `arguments` stays the JSON text the model wrote: the API wants a string here.
                calls.append({"id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": call.arguments}})
            elif isinstance(part, types.Part_ToolResult):
                result = part.value
                # The API has no error flag for tool results: say it in the content.
                content = f"Error: {result.content}" if result.is_error else result.content
                items.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
            # Thinking and redacted thinking are not sent back: Chat Completions takes none. (An API
            # that does may take them only when options.same_model says this model wrote them.)
        text = "\n".join(texts)
        if message.role == types.Role.ASSISTANT:
            if text or calls:
                item = {"role": "assistant", "content": text or None}
                if calls:
                    item["tool_calls"] = calls
                items.append(item)
        elif message.role in (types.Role.USER, types.Role.SYSTEM) and text:
            items.append({"role": "user" if message.role == types.Role.USER else "system", "content": text})
        # Several API messages may stand for one of Seshat's (a tool message with several results):
        # the fragment is spliced into the body's `messages` array as it is, so join them with ",".
        # An empty fragment sends nothing of the message. options.cache_breakpoint marks the last
        # message, for APIs with explicit prompt-cache markers; OpenAI caches by itself.
        return ",".join(to_json(item) for item in items)

    def build_request(self, request: translate.ChatRequest) -> translate.HttpRequest:
        extra = read_options(request.extra)
        body = {"model": request.model}
        # OpenAI's reasoning models take max_completion_tokens and refuse max_tokens.
        reasoning = request.model.startswith(("o1", "o3", "o4", "gpt-5"))
        body["max_completion_tokens" if reasoning else "max_tokens"] = request.max_tokens
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            tools = []
            for tool in request.tools:
                try:
                    schema = json.loads(tool.parameters)
                except ValueError as e:
                    raise fail("invalid_request", f"tool `{tool.name}` has a parameters schema that is not JSON: {e}")
                tools.append({"type": "function",
                              "function": {"name": tool.name, "description": tool.description, "parameters": schema}})
            body["tools"] = tools
        body.update(extra)
        # The body ends with the `messages` array, the system prompt in it: Seshat splices the
        # encoded messages in where the splice says, after the system prompt (`lead`: a separator
        # goes before the first of them).
        head = to_json(body)[:-1] + ',"messages":['
        if request.system:
            head += to_json({"role": "system", "content": request.system})
        # The splice offset counts BYTES of the body, not Python characters: measure it encoded.
        head_bytes = head.encode()
        splice = translate.Splice(offset=len(head_bytes), separator=",", lead=bool(request.system))
        accept = "text/event-stream" if request.stream else "application/json"
        url = request.base_url.rstrip("/") + "/chat/completions"
        return translate.HttpRequest(method="POST", url=url,
                                     headers=[("content-type", "application/json"), ("accept", accept)],
                                     body=head_bytes + b"]}", splice=splice)

    def parse_response(self, status: int, body: bytes) -> translate.Response:
        if status >= 300:
            raise http_error(status, body)
        try:
            answer = json.loads(body)
        except ValueError as e:
            raise fail("invalid_response", f"the server's answer is not JSON: {e}")
        if not isinstance(answer, dict):
            raise fail("invalid_response", "the server's answer is not a JSON object")
        if answer.get("error"):
            raise http_error(status, body)
        choices = answer.get("choices") or [{}]
        said = choices[0].get("message") or {}
        parts = []
        reasoning = said.get("reasoning_content") or said.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            parts.append(types.Part_Thinking(types.Thinking(text=reasoning, signature=None)))
        if text_of(said.get("content")):
            parts.append(types.Part_Text(text_of(said.get("content"))))
        for call in said.get("tool_calls") or []:
            function = call.get("function") or {}
            parts.append(types.Part_ToolCall(types.ToolCall(id=call.get("id") or f"call_{len(parts)}",
                                                            name=function.get("name") or "",
                                                            arguments=function.get("arguments") or "{}")))
        made_calls = any(isinstance(p, types.Part_ToolCall) for p in parts)
        usage = usage_of(answer["usage"]) if isinstance(answer.get("usage"), dict) else None
        log.log(log.Level.DEBUG, f"an answer of {len(parts)} parts, finish_reason {choices[0].get('finish_reason')}")
        message = types.Message(id=0, role=types.Role.ASSISTANT, parts=parts)
        return translate.Response(message=message, usage=usage,
                                  stop_reason=stop_reason(choices[0].get("finish_reason") or "stop", made_calls))

    def probes(self, model, base_url: str) -> list:
        # `model` None: Seshat wants the server's list of models. Else the model's window: vLLM,
        # LM Studio and OpenRouter say it in /models, llama.cpp's llama-server in /props.
        found = [get("models", base_url.rstrip("/") + "/models")]
        if model is not None and "api.openai.com" not in base_url:
            found.append(get("llama.cpp-props", root_of(base_url) + "/props"))
        return found

    def parse_probe(self, name: str, model, status: int, body: bytes) -> translate.Discovery:
        # An answer that does not say (a 404, another server's shape) is all empty: Seshat then
        # tries the next probe. This function cannot fail, so nothing here may raise.
        found = translate.Discovery(context_window=None, max_output_tokens=None, models=[])
        try:
            answer = json.loads(body) if 200 <= status < 300 else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            return found
        if name == "models":
            listed = [m for m in answer.get("data") or [] if isinstance(m, dict) and isinstance(m.get("id"), str)]
            found.models = [m["id"] for m in listed]
            for m in listed:
                window = m.get("max_model_len") or m.get("context_length") or m.get("loaded_context_length")
                if m["id"] == model and isinstance(window, int) and window > 0:
                    found.context_window = window
        elif name == "llama.cpp-props":
            window = (answer.get("default_generation_settings") or {}).get("n_ctx")
            if isinstance(window, int) and window > 0:
                found.context_window = window
        return found

    def refusal_limit(self, status: int, body: bytes):
        # Only a refusal for the request's length or its max_tokens says something of the limits;
        # None for any other error.
        if status not in (400, 413, 422):
            return None
        try:
            said = json.loads(body).get("error") or {}
        except (ValueError, AttributeError):
            said = {}
        if not isinstance(said, dict):
            said = {"message": str(said)}
        if isinstance(said.get("n_ctx"), int):  # llama.cpp: exceed_context_size_error
            return translate.Limit_TooLong(translate.TooLong(window=said["n_ctx"],
                                                             requested=said.get("n_prompt_tokens")))
        text = str(said.get("message") or bytes(body[:2000]).decode(errors="replace")).lower()
        most = number_after(text, "supports at most")
        if most is not None and "completion tokens" in text:
            return translate.Limit_MaxOutput(most)
        window = number_after(text, "maximum context length is")
        if window is None:
            return None
        if "in the messages" in text:
            # "you requested 5000 tokens (3000 in the messages, 2000 in the completion)"
            input_tokens = number_after(text, "tokens (")
            max_tokens = number_after(text, "messages,")
            if input_tokens is not None and max_tokens is not None:
                return translate.Limit_InputAndOutput(translate.InputAndOutput(input=input_tokens,
                                                                               max_tokens=max_tokens, window=window))
        requested = number_after(text, "resulted in") or number_after(text, "you requested")
        return translate.Limit_TooLong(translate.TooLong(window=window, requested=requested))

    def counters(self, request: translate.ChatRequest, messages: list) -> list:
        # vLLM counts a chat request's tokens at POST /tokenize. Seshat sends this only near the
        # compaction threshold and remembers whether it answered; OpenAI's own API has no such
        # endpoint (Seshat counts its models locally), so none there.
        if "api.openai.com" in request.base_url:
            return []
        options = translate.EncodeOptions(model=request.model, same_model=False, cache_breakpoint=False)
        items = [to_json({"role": "system", "content": request.system})] if request.system else []
        for message in messages:
            try:
                fragment = self.encode_message(message, options)
            except Err:
                return []
            if fragment:
                items.append(fragment)
        body = '{"model":' + to_json(request.model) + ',"messages":[' + ",".join(items) + "]}"
        post = translate.HttpRequest(method="POST", url=root_of(request.base_url) + "/tokenize",
                                     headers=[("content-type", "application/json"), ("accept", "application/json")],
                                     body=body.encode(), splice=None)
        return [translate.Probe(name="vllm-tokenize", request=post)]

    def parse_count(self, name: str, status: int, body: bytes):
        # None, never 0, when the answer does not say: Seshat then tries the next counter.
        try:
            count = json.loads(body).get("count") if 200 <= status < 300 else None
        except (ValueError, AttributeError):
            return None
        return count if isinstance(count, int) and count > 0 else None


class Decoder(translate.Decoder):
    """Decodes one streamed answer. Seshat frames the server-sent events and pushes each event's
    name and data, in order; push() and finish() return the events they make of them."""

    def __init__(self) -> None:
        self.started = set()  # the indexes of the tool calls begun
        self.reason = None  # the finish_reason, once the server gave it
        self.usage = None
        self.stopped = False

    def push(self, event: str, data: str) -> list:
        if self.stopped or not data.strip():
            return []
        if data.strip() == "[DONE]":
            return self.finish()
        try:
            chunk = json.loads(data)
        except ValueError as e:
            raise fail("invalid_response", f"a streamed event is not JSON ({e}): {data[:200]}")
        if not isinstance(chunk, dict):
            return []
        out = []
        if chunk.get("error"):
            said = chunk["error"]
            message = said.get("message") if isinstance(said, dict) else str(said)
            return [translate.StreamEvent_Error(types.Error(code="stream_error", message=message or "an error"))]
        # The usage comes in a last chunk with no choices (stream_options.include_usage): it is
        # given with the stop, at the end.
        if isinstance(chunk.get("usage"), dict):
            self.usage = usage_of(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out.append(translate.StreamEvent_ThinkingDelta(reasoning))
            if text_of(delta.get("content")):
                out.append(translate.StreamEvent_TextDelta(text_of(delta.get("content"))))
            for call in delta.get("tool_calls") or []:
                index = call.get("index", 0)
                function = call.get("function") or {}
                if index not in self.started:
                    # A call begins with its id and name; its arguments follow in pieces (or all
                    # at once, from some servers).
                    self.started.add(index)
                    out.append(translate.StreamEvent_ToolCallStart(translate.ToolCallStart(
                        index=index, id=call.get("id") or f"call_{index}", name=function.get("name") or "")))
                if function.get("arguments"):
                    out.append(translate.StreamEvent_ToolCallDelta(translate.ToolCallDelta(
                        index=index, arguments=function["arguments"])))
            if choice.get("finish_reason"):
                self.reason = choice["finish_reason"]
        return out

    def finish(self) -> list:
        if self.stopped:
            return []
        self.stopped = True
        out = [translate.StreamEvent_Usage(self.usage)] if self.usage else []
        # No finish_reason: the answer was cut off. No stop event, and Seshat reports the answer
        # as incomplete.
        if self.reason is not None:
            out.append(translate.StreamEvent_Stop(stop_reason(self.reason, bool(self.started))))
        return out


# componentize-py looks for an exported interface's resources (here `decoder`) in a module named
# after the interface (`translate`), not in app.py. This line makes app.py that module too, so
# the plugin stays one file; or move the Decoder class into a file translate.py beside app.py.
sys.modules.setdefault("translate", sys.modules[__name__])
