"""{{name}}: a Seshat memory extractor plugin, in Python.

After each turn (or when a session ends, as config.toml says), Seshat hands its extractor what the
session said since it last asked, and the extractor proposes what long-term memory should keep.
Seshat writes each proposal as its memory tools would (recording the message it came from),
skips what memory already holds, and keeps a replaced observation as history.

This one reads only the user's own words, never the assistant's or a tool's, and proposes what
the user stated as lasting:
  * what they ask to be remembered: "remember: I prefer tabs over spaces", "remember that the
    staging database is read-only", "note that we deploy on Fridays";
  * their preferences and habits: "I prefer ...", "I'd rather ...", "I always/never ...",
    "I use/like/hate ...", "my editor is ...", "call me ...".
A statement about the user goes to the user's memory (in every project), in the third person
("The user prefers tabs over spaces."); anything else asked to be remembered goes to the project's.
A statement that corrects one memory holds ("actually, I prefer spaces over tabs") names the
observation it replaces.

Change it: the patterns (REMEMBER, ABOUT_ME, CORRECTION), third_person(), or call the session's
model through `model.complete` (imported below) to read what rules cannot. The options, set in
config.toml and handed over as the `extra` JSON:

    [plugins.options.extractor]
    min_words = 3             # shorter observations are left out ("remember this")
    user_entity = "user"      # the entities observations are written on
    project_entity = "project"

Select it in config.toml:

    [memory]
    extract = "{{name}}"
"""

import json
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import extract
from wit_world.imports import log, model, types  # model.complete: the session's model, if wanted

DEFAULTS = {"min_words": 3, "user_entity": "user", "project_entity": "project"}
# Context a hook added is stored as a user message starting with this: not the user's words.
HOOK_CONTEXT = "[context from hooks]"
# Seshat takes at most this many proposals per call and refuses the rest.
MAX_PROPOSALS = 64

# Words a sentence may start with before what it states ("And remember: ...", "OK, I prefer ...").
LEAD = r"^(?:(?:and|also|oh|btw|ok|okay|so|yes|no|actually|please|from now on)\b[\s,:;-]*)*"
REMEMBER = re.compile(LEAD + r"(?:remember|note|keep in mind|don'?t forget)(?:\s+that)?\b[\s,:;-]*(?P<fact>.+)$",
                      re.IGNORECASE)
ABOUT_ME = re.compile(
    LEAD + r"(?P<fact>(?:i\s+(?:(?:always|never|usually|generally|really)\s+)*"
    r"(?:prefer|like|love|hate|dislike|use|would rather)\b"
    r"|i'?d\s+rather\b|i\s+always\b|i\s+never\b|my\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are)\b|call\s+me\b).+)$",
    re.IGNORECASE,
)
CORRECTION = re.compile(r"\b(?:actually|instead|no longer|not anymore|changed my mind|from now on)\b", re.IGNORECASE)
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i'd|i've|my|me|mine)\b", re.IGNORECASE)


def invalid_options(message):
    """The contract's error for options that do not fit: Seshat shows the code and message."""
    return Err(types.Error(code="invalid_options", message=message))


def read_options(extra):
    """The user's options (`[plugins.options.extractor]`), checked, over the defaults."""
    try:
        given = json.loads(extra or "{}")
    except ValueError as e:
        raise invalid_options(f"the options are not JSON ({e}): fix [plugins.options.extractor] in config.toml")
    if not isinstance(given, dict):
        raise invalid_options("the options must be a table: [plugins.options.extractor] in config.toml")
    options = dict(DEFAULTS)
    for key, value in given.items():
        if key not in DEFAULTS:
            raise invalid_options(f"unknown option `{key}` under [plugins.options.extractor]; this extractor reads "
                              + ", ".join(DEFAULTS))
        if key == "min_words":
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            kind = "a whole number, 1 or more"
        else:
            ok, kind = isinstance(value, str) and value.strip() != "", "a name (a non-empty string)"
        if not ok:
            raise invalid_options(f"option `{key}` under [plugins.options.extractor] must be {kind}, "
                              f"not {json.dumps(value)}")
        options[key] = value
    return options


def sentences(text):
    """The sentences of a message's text, outside code blocks and quoted lines."""
    fenced = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith(">"):
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", line.strip()):
            if sentence:
                yield sentence


def third_person_verb(verb):
    """prefer -> prefers, use -> uses, go -> goes, try -> tries."""
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(fact):
    """A first-person statement as a sentence about the user: "I prefer tabs" -> "The user prefers tabs"."""
    words = fact.split()
    low = [w.lower() for w in words]
    if low[:2] == ["call", "me"]:
        text = "The user wants to be called " + " ".join(words[2:])
    elif low[:1] == ["my"]:
        text = "The user's " + " ".join(words[1:])
    elif low[:1] == ["i'd"]:
        text = "The user would " + " ".join(words[1:])
    elif low[:1] == ["i"]:
        rest = words[1:]
        # The first verb takes the third person: "I always use" -> "The user always uses".
        i = 0
        while i < len(rest) and rest[i].lower() in ("always", "never", "usually", "generally", "really", "also"):
            i += 1
        if i < len(rest) and rest[i].lower() != "would":
            rest[i] = third_person_verb(rest[i])
        text = "The user " + " ".join(rest)
    else:
        text = fact
    # What is left in the first person: "my" -> "their", "me" -> "them", "I" -> "they".
    text = re.sub(r"\bmy\b", "their", text, flags=re.IGNORECASE)
    text = re.sub(r"\bme\b", "them", text, flags=re.IGNORECASE)
    text = re.sub(r"\bI\b", "they", text)
    return text


def finish(text):
    """A sentence that stands on its own: a capital first letter and a full stop."""
    text = text.strip().rstrip(".!;,:")
    return text[:1].upper() + text[1:] + "." if text else ""


def same(a, b):
    """Whether two observations say the same, whatever their case, spacing and final stop."""
    norm = lambda t: " ".join(t.lower().rstrip(". ").split())
    return norm(a) == norm(b)


def replaced(observation, known, scope, entity):
    """The observation memory holds that a correction replaces: the same entity's, starting with the
    same three words ("The user prefers"), sharing a word of what it is about."""
    lead = observation.lower().split()[:3]
    words = {w for w in re.findall(r"[a-z0-9]+", observation.lower()[len(" ".join(lead)):]) if len(w) > 3}
    for k in known:
        if k.scope == scope and k.entity == entity and k.observation.lower().split()[:3] == lead:
            if words & set(re.findall(r"[a-z0-9]+", k.observation.lower())):
                return k.observation
    return None


def statement(sentence):
    """What a sentence states as lasting, or None: a question states nothing."""
    if sentence.rstrip().endswith("?"):
        return None
    match = REMEMBER.match(sentence) or ABOUT_ME.match(sentence)
    return match.group("fact").strip() if match else None


def text_of(message):
    return "\n".join(p.value for p in message.parts if isinstance(p, types.Part_Text))


class Extract(exports.Extract):
    def extract(self, request: extract.ExtractRequest) -> list:
        options = read_options(request.extra)
        proposals = []
        for message in request.messages:
            # Only the user's own words: never the assistant's (it may repeat, guess or be wrong)
            # nor a tool's output, nor context a hook added.
            if message.role != types.Role.USER:
                continue
            text = text_of(message)
            if text.lstrip().startswith(HOOK_CONTEXT):
                continue
            for sentence in sentences(text):
                fact = statement(sentence)
                if not fact:
                    continue
                about_user = bool(FIRST_PERSON.search(fact))
                observation = finish(third_person(fact) if about_user else fact)
                if len(observation.split()) < options["min_words"]:
                    continue
                scope = extract.Scope.USER if about_user else extract.Scope.PROJECT
                entity = options["user_entity"] if about_user else options["project_entity"]
                # Known already (in memory, or proposed from an earlier message): nothing to write.
                if any(same(observation, k.observation) for k in request.known) or \
                        any(same(observation, p.observation) for p in proposals):
                    continue
                replaces = replaced(observation, request.known, scope, entity) if CORRECTION.search(sentence) else None
                proposals.append(extract.Proposal(
                    scope=scope, entity=entity, entity_type="person" if about_user else "project",
                    observation=observation, replaces=replaces, source_seq=message.id))
        if len(proposals) > MAX_PROPOSALS:
            log.log(log.Level.WARN, f"{len(proposals)} proposals: only the first {MAX_PROPOSALS} are kept")
        return proposals[:MAX_PROPOSALS]
