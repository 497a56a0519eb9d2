"""{{name}}: a Seshat trimmer plugin, in Python.

Before a model call, when the request grows too large for the window, Seshat asks its trimmer
which tool results to shorten. This one keeps whole lines of each large tool result that may be
trimmed: its first lines, its last lines, and the lines that carry its outcome (errors, failures,
panics, tracebacks, warnings, test summaries such as "2 failed, 450 passed"), each with a line of
context either side. Seshat replaces every run of lines cut with a placeholder saying how many
went and how to read them back. It trims the oldest large results first and stops once the
request is estimated to be back under the target.

Change it:
  * what counts as an outcome line: ERROR, SUMMARY and WARNING below;
  * how much is kept: the options, set in config.toml and handed over as the `extra` JSON:

        [plugins.options.trimmer]
        min_bytes = 16384          # leave results smaller than this alone
        head_lines = 20            # lines kept from the start
        tail_lines = 20            # lines kept from the end
        context_lines = 1          # lines kept either side of each outcome line
        max_outcome_lines = 80     # at most this many outcome lines (the first and last half)
        stop_at_target = true      # false: trim every large result, not just enough of them

The plugin sees sizes, never content, unless it asks: `trim_host.read_part` fetches one part's
content. Ask only for the parts you will edit; a history can hold megabytes.
"""

import json
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, trim_host, trim_types, types

# The part kinds and roles come as small integers (columns of numbers cross into the plugin
# cheaply): part kind 2 is a tool result. See `trim-types.history` in wit/seshat-plugin.wit.
TOOL_RESULT = 2

DEFAULTS = {
    "min_bytes": 16384,
    "head_lines": 20,
    "tail_lines": 20,
    "context_lines": 1,
    "max_outcome_lines": 80,
    "stop_at_target": True,
}

# What makes a line an outcome, strongest first; a line takes the first class it matches. They are
# matched against the line in lower case, and ERROR and WARNING only at the start of a word (see
# starts_word): re.IGNORECASE or a leading \b make Python's regular expressions several times
# slower on a long log, while a pattern that starts with a letter or [0-9] lets the engine skip
# quickly to where a match can start.
ERROR = re.compile(
    r"(?:errors?|failed|failures?|fail|fatal|panic|panicked|exception|traceback|aborted|abort|assert\w*"
    r"|segfault|denied|refused|timeout|timed out)\b"
)
SUMMARY = re.compile(r"[0-9] (?:passed|failed|errors?|skipped|ignored|xfailed|xpassed|deselected|tests?)\b")
WARNING = re.compile(r"(?:warnings?|warn|deprecated|deprecation\w*)\b")

# Seshat puts a placeholder where lines were cut: about 120 bytes for the first run cut (it names
# the original size and how to read it back), about 32 for each other. The edited result must be
# shorter than the original, placeholders included, or the whole answer is refused.
FIRST_PLACEHOLDER = 120
OTHER_PLACEHOLDER = 32
# A head-tail edit (the fallback for results made of a few very long lines) keeps these many
# bytes; the host needs at least 96 bytes cut for its placeholder.
HEAD_BYTES = 2048
TAIL_BYTES = 1024


def invalid_options(message):
    """The contract's error for options that do not fit: Seshat shows the code and message."""
    return Err(types.Error(code="invalid_options", message=message))


def read_options(extra):
    """The user's options (`[plugins.options.trimmer]`), checked, over the defaults."""
    try:
        given = json.loads(extra or "{}")
    except ValueError as e:
        raise invalid_options(f"the options are not JSON ({e}): fix [plugins.options.trimmer] in config.toml")
    if not isinstance(given, dict):
        raise invalid_options("the options must be a table: [plugins.options.trimmer] in config.toml")
    options = dict(DEFAULTS)
    for key, value in given.items():
        if key not in DEFAULTS:
            known = ", ".join(DEFAULTS)
            raise invalid_options(f"unknown option `{key}` under [plugins.options.trimmer]; this trimmer reads {known}")
        # JSON's true is a Python bool, and bool is a kind of int: check bools apart.
        if isinstance(DEFAULTS[key], bool):
            ok, kind = isinstance(value, bool), "true or false"
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            kind = "a whole number, 0 or more"
        if not ok:
            raise invalid_options(f"option `{key}` under [plugins.options.trimmer] must be {kind}, not {json.dumps(value)}")
        options[key] = value
    return options


def lines_of(content):
    """The content's lines, as Seshat counts them (the line numbers of a keep-lines edit).

    Lines are split at "\\n" only, and a final "\\n" ends the last line without starting a new one:
    "a\\nb\\n" has 2 lines, "a\\nb" has 2, "" has none. Python's str.splitlines() would also split
    at "\\r", "\\x0b", "\\x0c", "\\x1c", "\\x85", "\\u2028", ... and number the lines differently
    from Seshat, so use split("\\n") and drop the empty piece a final "\\n" leaves.
    """
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def starts_word(pattern, low):
    """Whether `pattern` matches `low` at the start of a word ("warning", not "overspend_warning")."""
    match = pattern.search(low)
    while match:
        at = match.start()
        if at == 0 or not (low[at - 1].isalnum() or low[at - 1] == "_"):
            return True
        match = pattern.search(low, at + 1)
    return False


def outcome_lines(lines):
    """The indexes of the lines that carry the outcome.

    A class of lines making up more than a quarter of the output (a verbose test run prints
    "PASSED" on every line) is what the output is made of, not how it ended: it is left out.
    Errors are always kept.
    """
    found = {"error": [], "summary": [], "warning": []}
    for i, line in enumerate(lines):
        low = line.lower()
        if starts_word(ERROR, low):
            found["error"].append(i)
        elif SUMMARY.search(low):
            found["summary"].append(i)
        elif starts_word(WARNING, low):
            found["warning"].append(i)
    keep = list(found["error"])
    for kind in ("summary", "warning"):
        if len(found[kind]) * 4 <= len(lines):
            keep += found[kind]
    return sorted(keep)


def ranges_to_keep(n, outcomes, options):
    """Sorted, disjoint, non-empty [start, end) line ranges: head, outcomes in context, tail."""
    cap = options["max_outcome_lines"]
    if len(outcomes) > cap:
        outcomes = outcomes[: cap // 2] + outcomes[len(outcomes) - (cap - cap // 2):]
    context = options["context_lines"]
    wanted = [(0, min(options["head_lines"], n)), (max(n - options["tail_lines"], 0), n)]
    wanted += [(max(i - context, 0), min(i + context + 1, n)) for i in outcomes]
    merged = []
    for start, end in sorted(r for r in wanted if r[0] < r[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def keep_lines_edit(message, part, lines, size, options):
    """A keep-lines edit of a tool result of `size` bytes made of `lines`, or a head-tail one when
    whole lines cannot shorten it (a result of a few very long lines), or None when neither would."""
    n = len(lines)
    if n == 0:
        return None, size
    # A keep-lines edit keeps at least one range: with no head, no tail and no outcome, the last line.
    ranges = ranges_to_keep(n, outcome_lines(lines), options) or [(n - 1, n)]
    kept = sum(len(line.encode()) + 1 for start, end in ranges for line in lines[start:end])
    # Runs of lines cut: before the first range, between ranges (merged ranges never touch), after
    # the last.
    gaps = (ranges[0][0] > 0) + (len(ranges) - 1) + (ranges[-1][1] < n)
    estimate = kept + (FIRST_PLACEHOLDER + (gaps - 1) * OTHER_PLACEHOLDER if gaps else 0)
    if gaps and estimate < size:
        line_ranges = [trim_types.LineRange(start=s, end=e) for s, e in ranges]
        return trim_types.Edit_KeepLines(trim_types.KeepLines(message=message, part=part, lines=line_ranges)), estimate
    if HEAD_BYTES + TAIL_BYTES + 96 < size:
        edit = trim_types.HeadTail(message=message, part=part, head=HEAD_BYTES, tail=TAIL_BYTES)
        return trim_types.Edit_HeadTail(edit), HEAD_BYTES + TAIL_BYTES + 96
    return None, size


class Trim(exports.Trim):
    def trim(self, history: trim_types.History, budget: trim_types.Budget) -> list:
        options = read_options(budget.extra)
        # Column i of every message_* list describes message i; column j of every part_* list
        # describes part j. Parts name their message by its seq (its id), not by its column.
        protected = dict(zip(history.message_ids, history.message_protected))
        edits = []
        current = budget.current_tokens
        for j, kind in enumerate(history.part_kinds):
            if options["stop_at_target"] and current <= budget.target_tokens:
                break
            message, part = history.part_messages[j], history.part_indexes[j]
            size = history.part_bytes[j]
            # Only tool results of unprotected messages may be edited (the latest two user turns
            # and pinned messages are protected), and only made shorter: one edit that breaks a
            # rule and Seshat refuses the whole answer.
            if kind != TOOL_RESULT or protected.get(message, 1) or size < options["min_bytes"]:
                continue
            content = trim_host.read_part(message, part)
            if content is None:
                continue
            lines = lines_of(content)
            # The lines hold the text now: let the whole string go (it can be megabytes, and a
            # Python string takes up to 4 bytes a character).
            del content
            edit, estimate = keep_lines_edit(message, part, lines, size, options)
            if edit is None:
                continue
            edits.append(edit)
            # Tokens are roughly proportional to bytes: what this edit saves, estimated.
            current -= history.part_tokens[j] * (size - estimate) // max(size, 1)
            log.log(log.Level.DEBUG, f"message {message} part {part}: {size} bytes -> about {estimate}")
        return edits
