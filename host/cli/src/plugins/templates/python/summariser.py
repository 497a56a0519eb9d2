"""{{name}}: a Seshat summariser plugin, in Python.

When a session outgrows its window, Seshat drops its older messages from what the model sees and
asks the summariser for the summary that stands in for them. This one writes the dropped messages
out as a plain transcript (after the previous summary, when an earlier compaction wrote one) and
asks the summary model for the summary through `model.complete`. Long tool results go into the
transcript as their head, their tail and the lines that carry their outcome (errors, failures,
warnings, test summaries), so the model reads what each tool call came to, not a wall of log. A
transcript too long for the model's window is summarised in parts, each part's summary carried
into the next.

Change it:
  * what the model is told: SYSTEM_PROMPT (a user's own prompt, `[compaction] prompt_file`,
    replaces it; what they ask one compaction to keep, `--instructions`, is added to either);
  * how the transcript is written: render();
  * the options, set in config.toml and handed over as the `extra` JSON:

        [plugins.options.summariser]
        result_bytes = 2000    # a tool result longer than this goes in as head, outcome lines, tail
        max_calls = 4          # model calls at most (Seshat allows 8 unless
                               # [plugins.limits.summariser] complete_calls says otherwise)
        bytes_per_token = 3    # how many bytes of transcript to count as one token

Time spent waiting for the model does not count against the plugin's time budget.
"""

import json
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import summarise
from wit_world.imports import log, model, types

SYSTEM_PROMPT = """\
You are summarising the earlier part of a conversation between a user and a coding agent, so that \
the agent can carry on without it. Write a compact summary with these parts:
1. The user's requests, constraints and preferences, quoted word for word when short.
2. Decisions made and why; when a decision was changed later, only the newer one, saying what it replaced.
3. What the tools found that still matters: quote error messages, failing tests, file paths with \
line numbers and final figures exactly.
4. Work still open and the next steps.
Keep names, paths, numbers and identifiers exactly as written. Say each thing once. Invent nothing. \
If a previous summary is given, fold it in: your summary replaces it."""

DEFAULTS = {"result_bytes": 2000, "max_calls": 4, "bytes_per_token": 3}

# Room kept free in the window besides the answer: the request's framing and the estimate's error.
MARGIN_TOKENS = 1024

# The lines of a tool result that carry its outcome: a word saying something went wrong (at the
# start of a word: "warning", not "overspend_warning"), or a count of tests. They are matched in
# lower case, and neither starts with \b: re.IGNORECASE or a leading \b make Python's regular
# expressions several times slower on a long log.
OUTCOME_WORD = re.compile(
    r"(?:errors?|failed|failures?|fatal|panic|panicked|exception|traceback|assert\w*|warnings?|deprecated)\b"
)
OUTCOME_COUNT = re.compile(r"[0-9] (?:passed|failed|skipped|tests?)\b")
HEAD_LINES, TAIL_LINES, MAX_OUTCOME_LINES = 4, 6, 30


def invalid_options(message):
    """The contract's error for options that do not fit: Seshat shows the code and message."""
    return Err(types.Error(code="invalid_options", message=message))


def read_options(extra):
    """The user's options (`[plugins.options.summariser]`), checked, over the defaults."""
    try:
        given = json.loads(extra or "{}")
    except ValueError as e:
        raise invalid_options(f"the options are not JSON ({e}): fix [plugins.options.summariser] in config.toml")
    if not isinstance(given, dict):
        raise invalid_options("the options must be a table: [plugins.options.summariser] in config.toml")
    options = dict(DEFAULTS)
    for key, value in given.items():
        if key not in DEFAULTS:
            known = ", ".join(DEFAULTS)
            raise invalid_options(f"unknown option `{key}` under [plugins.options.summariser]; "
                              f"this summariser reads {known}")
        # JSON's true is a Python bool, and bool is a kind of int: refuse it apart.
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise invalid_options(f"option `{key}` under [plugins.options.summariser] must be a whole number, 1 or more, "
                              f"not {json.dumps(value)}")
        options[key] = value
    return options


def lines_of(text):
    """The text's lines, split at "\\n" only (str.splitlines() also splits at "\\r" and others)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def cut_middle(text, limit):
    """`text` within about `limit` bytes: its start and its end, saying how much went between."""
    data = text.encode()
    if len(data) <= limit:
        return text
    half = max(limit // 2 - 40, 0)
    # errors="ignore" drops a character cut in two at either edge.
    head = data[:half].decode(errors="ignore")
    tail = data[len(data) - half:].decode(errors="ignore")
    return f"{head}\n[… {len(data) - 2 * half} bytes left out …]\n{tail}"


def is_outcome(line):
    """Whether a line carries its output's outcome."""
    low = line.lower()
    if OUTCOME_COUNT.search(low):
        return True
    match = OUTCOME_WORD.search(low)
    while match:
        at = match.start()
        if at == 0 or not (low[at - 1].isalnum() or low[at - 1] == "_"):
            return True
        match = OUTCOME_WORD.search(low, at + 1)
    return False


def outcome(content, limit):
    """A tool result as the transcript shows it: whole when short, else its head, tail and
    outcome lines, each run of lines left out marked."""
    if len(content.encode()) <= limit:
        return content
    lines = lines_of(content)
    keep = set(range(min(HEAD_LINES, len(lines))))
    keep |= set(range(max(len(lines) - TAIL_LINES, 0), len(lines)))
    found = [i for i, line in enumerate(lines) if is_outcome(line)]
    keep |= set(found[:MAX_OUTCOME_LINES // 2] + found[-(MAX_OUTCOME_LINES // 2):])
    out, previous = [], -1
    for i in sorted(keep):
        if i > previous + 1:
            out.append(f"[… {i - previous - 1} lines left out …]")
        out.append(lines[i])
        previous = i
    # A result of a few very long lines is still long: cut it in the middle as well.
    return cut_middle("\n".join(out), 4 * limit)


ROLES = {types.Role.SYSTEM: "system", types.Role.USER: "user", types.Role.ASSISTANT: "assistant",
         types.Role.TOOL: "tool"}


def render(request, result_bytes):
    """The entries of the transcript, oldest first: the previous summary, then one per part."""
    entries = []
    if request.previous_summary:
        entries.append(f"Summary of the conversation before:\n{request.previous_summary}")
    for message in request.messages:
        role = ROLES[message.role]
        for part in message.parts:
            if isinstance(part, types.Part_Text):
                if part.value.strip():
                    entries.append(f"[{role}] {part.value}")
            elif isinstance(part, types.Part_ToolCall):
                call = part.value
                entries.append(f"[{role} calls {call.name} ({call.id})] {cut_middle(call.arguments, 1000)}")
            elif isinstance(part, types.Part_ToolResult):
                result = part.value
                what = "error from" if result.is_error else "result of"
                entries.append(f"[{what} {result.call_id}]\n{outcome(result.content, result_bytes)}")
            # Thinking and redacted thinking stay out: the model's private reasoning, often long.
    return entries


def chunks(entries, chunk_bytes):
    """The entries packed in order into parts of at most about `chunk_bytes`; an entry too long
    for one part on its own is cut in the middle."""
    parts, current, size = [], [], 0
    for entry in entries:
        entry = cut_middle(entry, chunk_bytes)
        length = len(entry.encode()) + 2
        if current and size + length > chunk_bytes:
            parts.append("\n\n".join(current))
            current, size = [], 0
        current.append(entry)
        size += length
    if current:
        parts.append("\n\n".join(current))
    return parts


def system_prompt(request):
    """The user's own prompt when they set one, else ours; then what they asked this compaction to keep."""
    prompt = request.prompt if request.prompt and request.prompt.strip() else SYSTEM_PROMPT
    if request.instructions and request.instructions.strip():
        prompt += f"\n\nThe user's instructions for this summary (follow them): {request.instructions.strip()}"
    return prompt


def ask(system, text, max_tokens):
    """One call of the summary model. An error it raises (Err with the contract's error: the host's
    limit on calls, the provider's failure) is let through: Seshat reports it as this plugin's."""
    message = types.Message(id=0, role=types.Role.USER, parts=[types.Part_Text(text)])
    answer = model.complete(model.CompletionRequest(system=system, messages=[message], max_tokens=max_tokens,
                                                    extra="{}"))
    if isinstance(answer.stop_reason, types.StopReason_MaxTokens):
        log.log(log.Level.WARN, f"the summary model stopped at max_tokens ({max_tokens}): the summary may be cut")
    return answer.text.strip()


class Summarise(exports.Summarise):
    def summarise(self, request: summarise.SummaryRequest) -> str:
        options = read_options(request.extra)
        system = system_prompt(request)
        # The model's window holds the system prompt, a part of the transcript (with the summary
        # so far, up to max_tokens) and the answer (max_tokens): what is left is one part's room.
        window = request.model_window or 32000
        per_token = options["bytes_per_token"]
        room = window - 2 * request.max_tokens - len(system.encode()) // per_token - MARGIN_TOKENS
        if room < 1000:
            raise Err(types.Error(code="window_too_small", message=(
                f"the summary model's window ({window} tokens) leaves no room for the transcript beside a "
                f"{request.max_tokens}-token summary: choose a summary model with a larger window")))
        result_bytes = options["result_bytes"]
        while True:
            parts = chunks(render(request, result_bytes), room * per_token)
            if len(parts) <= options["max_calls"] or result_bytes <= 250:
                break
            result_bytes //= 2  # Too many parts: shorten the tool results and try again.
        if len(parts) > options["max_calls"]:
            raise Err(types.Error(code="too_long", message=(
                f"the dropped messages need {len(parts)} model calls to summarise, more than max_calls = "
                f"{options['max_calls']}: raise it under [plugins.options.summariser] (and complete_calls under "
                f"[plugins.limits.summariser] if it is above 8)")))
        summary = ""
        for i, part in enumerate(parts):
            text = "Summarise this conversation.\n\n" if len(parts) == 1 else (
                f"Summarise this conversation, part {i + 1} of {len(parts)}.\n\n"
                + (f"Summary of the parts before:\n{summary}\n\n" if summary else ""))
            summary = ask(system, text + part, request.max_tokens)
        if not summary:
            raise Err(types.Error(code="empty_summary", message="the summary model answered with no text"))
        return summary
