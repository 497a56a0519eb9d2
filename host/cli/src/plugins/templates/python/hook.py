"""{{name}}: a Seshat hook plugin, in Python: a guard for shell commands.

Seshat tells a hook the moments of a session's life it is configured for (config.toml chooses the
events and, for tool events, the tools) and the hook answers: go on, block, or add context. This
one, told of a tool call before it runs (`pre-tool`), blocks a shell command that deletes files
recursively, force-pushes, resets or cleans a git work tree, formats a disk, or pipes a download
into a shell; the model reads the reason as the tool's error result. At a session's start it tells
the model so. Every other event goes on.

Change it: the rules are RULES and dangerous() below (a hook gets no options: the contract hands it
the payload only, so what it checks is written here).

Select it in config.toml (it is told only of the events and tools named there):

    [[hooks.pre_tool]]
    plugin = "{{name}}"
    matcher = "bash|shell*"
    required = true        # if the plugin fails, block rather than run the command

    [[hooks.session_start]]
    plugin = "{{name}}"
"""

import json
import shlex

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import on_event
from wit_world.imports import log, types

HOOK_ID = "{{name}}"

# Programs run through another one: `sudo rm -rf x` is `rm -rf x`.
WRAPPERS = {"sudo", "doas", "env", "command", "exec", "nohup", "time", "nice", "xargs"}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby", "node"}
OPERATOR_CHARS = set(";&|()")


def flags(words):
    """The single-letter flags and the long options among `words`: -rf gives r and f."""
    short = {c for w in words if w.startswith("-") and not w.startswith("--") for c in w[1:]}
    return short, {w for w in words if w.startswith("--")}


def rm_recursive(words):
    short, long = flags(words[1:])
    return ("r" in short or "R" in short or "--recursive" in long) and "deletes files recursively"


def git_danger(words):
    rest = words[1:]
    while rest and rest[0].startswith("-"):  # git's own options: -C <dir>, -c <name=value>, ...
        rest = rest[2:] if rest[0] in ("-C", "-c") else rest[1:]
    sub = rest[0] if rest else ""
    short, long = flags(rest[1:])
    if sub == "push" and ("f" in short or "--force" in long):
        return "force-pushes, which can destroy commits on the remote (--force-with-lease is allowed)"
    if sub == "reset" and "--hard" in long:
        return "discards uncommitted changes (git reset --hard)"
    if sub == "clean" and "f" in short:
        return "deletes untracked files (git clean -f)"
    return None


def dd_device(words):
    return any(w.startswith("of=/dev/") for w in words) and "writes to a device"


def chmod_everyone(words):
    short, long = flags(words[1:])
    return ("R" in short or "--recursive" in long) and "777" in words and "opens files to everyone, recursively"


# The program's name -> a check of its words, giving why it is dangerous or a false value.
RULES = {
    "rm": rm_recursive,
    "git": git_danger,
    "dd": dd_device,
    "chmod": chmod_everyone,
    "mkfs": lambda words: "formats a disk",
}


def commands(text):
    """The simple commands of a shell command line, each a list of words, with the operator that
    came before it: `a | b && c` gives [("", [a]), ("|", [b]), ("&&", [c])]."""
    text = text.replace("\n", " ; ")  # a new line separates commands too
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: split at blanks instead
        tokens = text.replace(";", " ; ").replace("|", " | ").replace("&", " & ").split()
    out, current, before = [], [], ""
    for token in tokens:
        if set(token) <= OPERATOR_CHARS:
            if current:
                out.append((before, current))
            current, before = [], token
        else:
            current.append(token)
    if current:
        out.append((before, current))
    return out


def program(words):
    """The words of the program a command runs, past wrappers (and their flags) and VAR=value."""
    while words:
        if words[0] in WRAPPERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif "=" in words[0] and not words[0].startswith(("-", "=")):
            words = words[1:]
        else:
            break
    return words


def dangerous(command):
    """Why `command` should not run unasked, or None."""
    previous = None
    for operator, words in commands(command):
        words = program(words)
        if not words:
            continue
        name = words[0].rsplit("/", 1)[-1]  # /bin/rm is rm
        if name.startswith("mkfs"):
            name = "mkfs"
        check = RULES.get(name)
        why = check(words) if check else None
        if why:
            return why
        # A download piped into a shell runs code nobody has read.
        if operator in ("|", "|&") and name in SHELLS and previous in ("curl", "wget"):
            return f"pipes a download ({previous}) into {name}"
        previous = name
    return None


def command_of(arguments):
    """The command line in a tool call's arguments (a shell tool's `command`, `cmd` or `script`)."""
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, dict):
        for key in ("command", "cmd", "script"):
            value = arguments.get(key)
            if isinstance(value, list):
                value = " ".join(shlex.quote(str(v)) for v in value)
            if isinstance(value, str):
                return value
    return ""


def decision(verdict=on_event.Verdict.PROCEED, reason=None, context=None):
    return on_event.Decision(verdict=verdict, reason=reason, context=context, instructions=None, skip=False)


class OnEvent(exports.OnEvent):
    def handle(self, payload: on_event.Payload) -> on_event.Decision:
        if payload.event == on_event.Event.PRE_TOOL:
            # payload.json is the whole payload a command hook reads on its standard input: the
            # fields of `payload` and the event's own (here the call's `arguments`). It is read
            # only for the events that need it: a post-tool payload holds the tool's whole result.
            try:
                fields = json.loads(payload.json)
            except ValueError as e:
                # The contract's error. Seshat reports it and goes on as if the hook had not
                # been asked (the command runs!) unless the hook is marked `required = true`.
                raise Err(types.Error(code="invalid_payload", message=f"the payload is not JSON: {e}"))
            command = command_of(fields.get("arguments"))
            why = dangerous(command) if command else None
            if why:
                log.log(log.Level.INFO, f"blocked {payload.tool}: {command[:200]}")
                return decision(on_event.Verdict.BLOCK, reason=(
                    f"Blocked by the {HOOK_ID} hook: `{command[:300]}` {why}. Ask the user to run it "
                    f"themselves, or do it another way."))
        elif payload.event == on_event.Event.SESSION_START:
            return decision(context=(
                "Shell commands that delete files recursively, force-push, reset or clean a git work tree, "
                "write to a device or pipe a download into a shell are blocked here: ask the user to run them."))
        return decision()
