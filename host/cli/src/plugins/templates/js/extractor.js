// {{name}}: a Seshat memory extractor plugin, written in JavaScript.
//
// What it does. After each turn (or when a session ends) Seshat hands an extractor the messages
// it has not read yet and what long-term memory already holds; the extractor proposes what memory
// should keep, and Seshat writes each proposal as its memory tools would (noting the message it
// came from) and skips what memory holds already. This one keeps what the user states as lasting,
// in the user's own messages only — never the assistant's words or tool output:
//
//   "remember that CI runs on Node 20"   -> the project's memory: "CI runs on Node 20."
//   "remember that I work nights"        -> the user's memory (it speaks of the user)
//   "I prefer small commits"             -> the user's memory: "The user prefers small commits."
//   "call me Sam" / "my name is Sam"     -> the user's memory: "The user's name is Sam."
//                                           (replacing the name memory held, if it differs)
//
// How to change it. Add a rule to `statements`; an extractor may also ask the session's model
// (`import { complete } from 'seshat:plugin/model@0.4.0'`, as the summariser template does),
// within the calls the host allows per call of `extract`. Options come from config.toml:
//
//   [memory]
//   extract = "{{name}}"
//   [plugins.options.extractor]
//   remember = true          # "remember that …"
//   prefer = true            # "I prefer …"
//   name = true              # "call me …", "my name is …"
//   max_proposals = 16       # at most this many a call (the host takes 64 at most)
//
// Build with `npm run build`, try it with `npm test` (see README.md).

import { log } from 'seshat:plugin/log@0.4.0';

const DEFAULTS = { remember: true, prefer: true, name: true, max_proposals: 16 };

export const extract = {
  /// `request.moment` is 'turn' or 'session-end'; `request.messages` the messages to read, oldest
  /// first, each with its seq in `id` (a BigInt); `request.known` what memory holds now (scope
  /// 'user' or 'project', entity, observation, and `seq` — a BigInt, or undefined).
  extract: guarded((request) => {
    const options = readOptions(request.extra);
    const known = new Set(request.known.map((k) => normalise(k.observation)));
    const project = projectName(request.project);
    const out = [];
    for (const message of request.messages) {
      if (message.role !== 'user') continue; // only what the user said
      const text = message.parts.filter((p) => p.tag === 'text').map((p) => p.val).join('\n');
      for (const s of statements(text, options)) {
        const aboutUser = speaksOfUser(s.observation);
        const scope = s.scope ?? (project && !aboutUser ? 'project' : 'user');
        // "I work nights" would not stand on its own in memory: quote who said it.
        const observation = s.scope === undefined && aboutUser ? `The user said: "${s.observation}"` : s.observation;
        const proposal = {
          scope,
          entity: scope === 'user' ? 'user' : project,
          entityType: scope === 'user' ? 'person' : 'project',
          observation,
          replaces: s.replacing ? replaced(request.known, s.replacing, s.observation) : undefined,
          sourceSeq: message.id, // the message it comes from: keep the BigInt as it came
        };
        if (known.has(normalise(proposal.observation))) continue; // memory holds it already
        known.add(normalise(proposal.observation));
        // A later statement of the same kind in this batch ("call me Sam", then "call me Sue")
        // wins: the earlier proposal goes.
        if (s.replacing) {
          const earlier = out.findIndex((p) => s.replacing.test(p.observation));
          if (earlier >= 0) out.splice(earlier, 1);
        }
        out.push(proposal);
      }
    }
    if (out.length > options.max_proposals) out.length = options.max_proposals;
    log('debug', `{{name}}: ${out.length} proposals from ${request.messages.length} messages`);
    return out;
  }),
};

/// The lasting statements in one user message: `{ observation, scope?, replacing? }`, where
/// `replacing` matches the kind of observation a new one replaces (a name replaces a name).
function* statements(text, options) {
  for (const sentence of sentences(text)) {
    let m;
    if (options.remember && (m = /^(?:please\s+)?(?:also\s+)?remember(?:\s+that|:)?\s+(.+)$/i.exec(sentence))) {
      // "remember: I prefer tabs" is a preference: the other rules read what is to be remembered.
      const inner = [...statements(m[1], { ...options, remember: false })];
      if (inner.length) yield* inner;
      else yield { observation: asSentence(m[1]) };
    } else if (options.prefer && (m = /^I\s+(?:(?:really|usually|always)\s+)?prefer\s+(.+)$/i.exec(sentence))) {
      yield { observation: `The user prefers ${finish(m[1])}`, scope: 'user' };
    } else if (options.name && (m = /\b(?:[Cc]all me|[Mm]y name is)\s+([^\s,;.!?]+(?:\s+[^\s,;.!?]+)?)/.exec(sentence))) {
      // The name: one or two capitalised words. (No `\p{Lu}` here: the engine's regexes have no
      // Unicode property escapes, so capitals are told by toUpperCase/toLowerCase instead.)
      const words = m[1].split(/\s+/).filter(isCapitalised);
      if (words.length && isCapitalised(m[1].split(/\s+/)[0])) {
        yield { observation: `The user's name is ${words.join(' ')}.`, scope: 'user', replacing: /^The user's name is /i };
      }
    }
  }
}

/// A message's sentences: split at line ends and after . ! ? followed by a blank.
function sentences(text) {
  return text
    .split(/\n+|(?<=[.!?])\s+/)
    .map((s) => s.trim().replace(/^(?:[-*>]\s*|(?:ok|okay|also|and|so|fine|great|thanks)[,.!]?\s+)+/i, ''))
    .filter((s) => s.length > 3);
}

/// The observation a new one replaces: the current one of the same kind that says otherwise.
function replaced(known, kind, observation) {
  const old = known.find(
    (k) => k.scope === 'user' && kind.test(k.observation) && normalise(k.observation) !== normalise(observation),
  );
  return old?.observation; // its exact text, as in `known`
}

function speaksOfUser(text) {
  return /\b(I|I'm|I've|me|my|mine)\b/i.test(text);
}

function asSentence(text) {
  const t = finish(text);
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function finish(text) {
  const t = text.trim().replace(/[,;:]+$/, '');
  return /[.!?]$/.test(t) ? t : `${t}.`;
}

const isCapitalised = (word) => word[0] !== word[0].toLowerCase() && word[0] === word[0].toUpperCase();

/// For comparing observations: lower case, ASCII punctuation and blanks as one space.
function normalise(text) {
  return text.toLowerCase().replace(/[\s!-\/:-@[-`{-~]+/g, ' ').trim();
}

/// The project's name: the last part of its key (a path), or '' when the session has none.
function projectName(key) {
  return key.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? '';
}

/// The user's options (`request.extra`, a JSON object from `[plugins.options.extractor]`),
/// checked against DEFAULTS: a wrong one is the contract's `invalid_options` error, never a crash.
function readOptions(extra) {
  let given;
  try {
    given = JSON.parse(extra || '{}');
  } catch (e) {
    fail('invalid_options', `the options are not JSON (${e.message}): check [plugins.options.extractor] in config.toml`);
  }
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    fail('invalid_options', 'the options must be a table: [plugins.options.extractor] in config.toml');
  }
  const options = { ...DEFAULTS };
  for (const [key, value] of Object.entries(given)) {
    if (!(key in DEFAULTS)) {
      fail('invalid_options', `unknown option \`${key}\` under [plugins.options.extractor]: {{name}} reads ${Object.keys(DEFAULTS).join(', ')}`);
    }
    const want = typeof DEFAULTS[key];
    const ok = want === 'boolean' ? typeof value === 'boolean' : Number.isSafeInteger(value) && value >= 0;
    if (!ok) {
      const what = want === 'boolean' ? 'true or false' : 'a whole number, 0 or more';
      fail('invalid_options', `option \`${key}\` under [plugins.options.extractor] is ${JSON.stringify(value)}: make it ${what}`);
    }
    options[key] = value;
  }
  return options;
}

// ---- Errors ------------------------------------------------------------------------------------
//
// `extract` returns `result<list<proposal>, error>`: return the proposals (an empty list is a fine
// answer), or THROW A PLAIN OBJECT `{ code, message }` for the contract's error (these messages
// are then passed over). Do not throw an `Error` (or let one escape, e.g. a TypeError from a
// bug): it has no `code`, so the bindings abort ("expected a string, received [undefined]" on
// stderr) and Seshat reports the plugin as crashed, without your message. Never return
// `{ tag: 'err', val }`: a return value is always the `ok` side. A host function's error
// (`complete`, if you call the model) is thrown as an Error whose `payload` is `{ code, message }`.

function fail(code, message) {
  throw { code, message };
}

function guarded(fn) {
  return (...args) => {
    try {
      return fn(...args);
    } catch (e) {
      const p = e && typeof e.payload === 'object' && e.payload !== null ? e.payload : e;
      if (p && typeof p.code === 'string' && typeof p.message === 'string') throw { code: p.code, message: p.message };
      const where = e instanceof Error && e.stack ? ` (at ${e.stack.split('\n').slice(0, 3).join(' < ')})` : '';
      const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      throw { code: 'internal_error', message: `{{name}} failed: ${what}${where}` };
    }
  };
}
