// {{name}}: a Seshat summariser plugin, written in JavaScript.
//
// What it does. When a compaction drops older messages from the live view, Seshat asks this
// summariser for the summary that replaces them. It writes them out as a plain transcript (after
// the previous summary, if an earlier compaction left one), each long tool result cut to its head,
// its tail and the lines that carry its outcome, and asks the summary model (`complete`, which the
// host sends) to summarise it. A transcript too long for the model's window is summarised in
// chunks, each call given the summary so far.
//
// How to change it. `PROMPT` is what the model is told (a user's own prompt, `[compaction]
// prompt_file`, replaces it; their `--instructions` are added to either); `render` is how the
// messages are written out; the options below come from config.toml.
//
//   [plugins.options.summariser]
//   result_lines = 12        # lines kept from the start and from the end of a long tool result
//   outcome_lines = 20       # outcome lines (errors, failures, ...) kept in between
//   line_chars = 300         # longer lines are cut to this
//   bytes_per_token = 3      # how the window is counted (3 is cautious for code and logs)
//   max_calls = 6            # model calls at most (the host allows 8 per compaction by default)
//
// Build with `npm run build`, try it with `npm test` (see README.md).

import { log } from 'seshat:plugin/log@0.4.0';
import { complete } from 'seshat:plugin/model@0.4.0';

const PROMPT = `You summarise the older part of a conversation between a user and a coding agent, so
that the agent can carry on without it. Write a concise summary in sections:
- Constraints and preferences the user stated (never, always, must, prefer), in their words.
- The user's requests still active, in their words when short.
- Decisions made and why; a decision that was later replaced only as its replacement, saying what it replaced.
- Tool outcomes that still matter, quoted exactly from the lines that carry them: errors, failures,
  warnings, test summaries, figures with their units, paths written, path:line locations.
- Unfinished work and next steps, even those mentioned in passing.
Keep names, paths, numbers and identifiers exactly. Say each thing once. Invent nothing. If a
summary so far is given, fold it in: yours replaces it.`;

const DEFAULTS = { result_lines: 12, outcome_lines: 20, line_chars: 300, bytes_per_token: 3, max_calls: 6 };

/// Lines that say something failed (`error` is matched inside words too: `AssertionError`), and
/// lines that say how a run went otherwise (kept unless they make up a quarter of the output).
const FAILURE =
  /(?:error|exception)s?\b|\b(?:failed|failure|failures|fail|panic|panicked|fatal|traceback|assertion|aborted|segfault)\b|^not ok\b/i;
const NOTABLE = /warnings?\b|\b(?:passed|deprecated|skipped)\b|test result:/i;

export const summarise = {
  /// `request.messages`: the dropped messages (never the whole history); `previousSummary`,
  /// `instructions`, `prompt`: strings or undefined; `maxTokens` a number (u32);
  /// `modelWindow` a BigInt (u64).
  summarise: guarded((request) => {
    const options = readOptions(request.extra);
    let system = request.prompt ?? PROMPT;
    if (request.instructions && request.instructions.trim()) {
      system += `\n\nThe user's instructions for this summary (follow them): ${request.instructions.trim()}`;
    }

    // What one call may send: the window less the answer, the system prompt and a margin.
    const window = Number(request.modelWindow);
    const room = window - request.maxTokens - tokens(system, options) - 512;
    if (room < 1024) {
      fail(
        'window_too_small',
        `the summary model's window (${window} tokens) leaves no room for a transcript after ${request.maxTokens} ` +
          'tokens of answer: choose a summary model with a larger window',
      );
    }
    // The summary so far rides along with every chunk: leave it room too.
    const chunkRoom = Math.floor(room * 0.6);
    // The host allows a few model calls per compaction (8 unless the limits say otherwise): when
    // the transcript needs more chunks than `max_calls`, tool results are cut harder; as a last
    // resort the oldest chunks after the first are left out (the summary says so).
    let cut = options;
    let chunks = chunked(render(request.messages, cut), chunkRoom, cut);
    for (let k = 0; chunks.length > options.max_calls && k < 3; k++) {
      const half = (n) => Math.ceil(n / 2);
      cut = { ...cut, result_lines: half(cut.result_lines), outcome_lines: half(cut.outcome_lines), line_chars: half(cut.line_chars) };
      chunks = chunked(render(request.messages, cut), chunkRoom, cut);
    }
    if (chunks.length > options.max_calls) {
      const left = chunks.length - options.max_calls;
      log('warn', `{{name}}: the transcript needs ${chunks.length} calls; ${left} chunks of the middle are left out`);
      chunks = [chunks[0], `[… ${left} parts of the conversation left out …]\n${chunks[left + 1]}`, ...chunks.slice(left + 2)];
    }

    let summary = request.previousSummary;
    for (const [i, chunk] of chunks.entries()) {
      const ask = summary === undefined
        ? `Conversation to summarise:\n\n${chunk}`
        : `Summary so far:\n\n${summary}\n\nConversation since:\n\n${chunk}`;
      // `complete` throws the host's error (e.g. the model failed, or the calls allowed per
      // compaction ran out); `guarded` passes it on as this summariser's error.
      const answer = complete({
        system,
        // A message's `id` is a u64: a BigInt (0n for one not stored), never a plain 0.
        messages: [{ id: 0n, role: 'user', parts: [{ tag: 'text', val: ask }] }],
        maxTokens: request.maxTokens,
        extra: '{}',
      });
      if (answer.stopReason.tag === 'max-tokens') {
        log('warn', `{{name}}: the summary of chunk ${i + 1} of ${chunks.length} hit max-tokens and may be cut short`);
      }
      summary = answer.text.trim();
    }
    if (!summary) fail('empty_summary', 'the summary model answered with no text: try again, or another summary model');
    log('debug', `{{name}}: ${request.messages.length} messages summarised in ${chunks.length} calls`);
    return summary;
  }),
};

/// The messages as a transcript, one entry per part. Thinking is left out.
function render(messages, options) {
  const out = [];
  for (const m of messages) {
    for (const part of m.parts) {
      switch (part.tag) {
        case 'text':
          out.push(`[${m.role}] ${part.val}`);
          break;
        case 'tool-call':
          out.push(`[${m.role} calls ${part.val.name}] ${clip(part.val.arguments, 4 * options.line_chars)}`);
          break;
        case 'tool-result':
          out.push(`[${part.val.isError ? 'error' : 'result'} of ${part.val.callId}] ${outcome(part.val.content, options)}`);
          break;
        default: // 'thinking', 'redacted-thinking'
          break;
      }
    }
  }
  return out;
}

/// A tool result as the transcript keeps it: whole when short, else its first and last lines and
/// the lines that carry its outcome between them. Lines split at "\n", as Seshat splits them.
function outcome(content, options) {
  const lines = content.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop(); // a final "\n" starts no line
  const keep = 2 * options.result_lines + options.outcome_lines;
  if (lines.length <= keep) return lines.map((l) => clip(l, options.line_chars)).join('\n');
  const last = lines.length - options.result_lines;
  const inMiddle = (re) => {
    const found = [];
    for (let i = options.result_lines; i < last; i++) if (re.test(lines[i])) found.push(i);
    return found;
  };
  const failures = inMiddle(FAILURE);
  const notable = inMiddle(NOTABLE);
  // Failures first (the last ones when there are too many), then notable lines in the room left.
  const middle = failures.slice(-options.outcome_lines);
  const room = options.outcome_lines - middle.length;
  if (room > 0 && notable.length <= lines.length / 4) {
    middle.push(...notable.filter((i) => !middle.includes(i)).slice(-room));
  }
  middle.sort((a, b) => a - b);
  const kept = [];
  let next = 0;
  const head = Array.from({ length: options.result_lines }, (_, k) => k);
  const tail = Array.from({ length: options.result_lines }, (_, k) => last + k);
  for (const i of [...head, ...middle, ...tail]) {
    if (i > next) kept.push(`[… ${i - next} lines left out …]`);
    kept.push(clip(lines[i], options.line_chars));
    next = i + 1;
  }
  return kept.join('\n');
}

/// The transcript's entries in chunks of about `room` tokens each (an entry longer than that is
/// cut). Beyond what the host allows per compaction, calls fail: keep the chunks few.
function chunked(entries, room, options) {
  const chunks = [];
  let current = [];
  let size = 0;
  for (let entry of entries) {
    let t = tokens(entry, options);
    if (t > room) {
      entry = clip(entry, room * options.bytes_per_token);
      t = tokens(entry, options);
    }
    if (size + t > room && current.length) {
      chunks.push(current.join('\n'));
      current = [];
      size = 0;
    }
    current.push(entry);
    size += t;
  }
  if (current.length) chunks.push(current.join('\n'));
  return chunks.length ? chunks : ['(no messages)'];
}

/// Estimated tokens of a text: its UTF-8 bytes over `bytes_per_token`.
function tokens(text, options) {
  return Math.ceil(utf8Bytes(text) / options.bytes_per_token);
}

function clip(text, chars) {
  return text.length <= chars ? text : `${text.slice(0, chars)}[… ${text.length - chars} characters left out]`;
}

function utf8Bytes(s) {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    if (u < 0x80) bytes += 1;
    else if (u < 0x800) bytes += 2;
    else if (u >= 0xd800 && u < 0xdc00 && i + 1 < s.length) { bytes += 4; i++; }
    else bytes += 3;
  }
  return bytes;
}

/// The user's options (`request.extra`, a JSON object from `[plugins.options.summariser]`),
/// checked against DEFAULTS: a wrong one is the contract's `invalid_options` error, never a crash.
function readOptions(extra) {
  let given;
  try {
    given = JSON.parse(extra || '{}');
  } catch (e) {
    fail('invalid_options', `the options are not JSON (${e.message}): check [plugins.options.summariser] in config.toml`);
  }
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    fail('invalid_options', 'the options must be a table: [plugins.options.summariser] in config.toml');
  }
  const options = { ...DEFAULTS };
  for (const [key, value] of Object.entries(given)) {
    if (!(key in DEFAULTS)) {
      fail('invalid_options', `unknown option \`${key}\` under [plugins.options.summariser]: {{name}} reads ${Object.keys(DEFAULTS).join(', ')}`);
    }
    if (!Number.isSafeInteger(value) || value < 1) {
      const is = JSON.stringify(value);
      fail('invalid_options', `option \`${key}\` under [plugins.options.summariser] is ${is}: make it a whole number, 1 or more`);
    }
    options[key] = value;
  }
  return options;
}

// ---- Errors ------------------------------------------------------------------------------------
//
// `summarise` returns `result<string, error>`: return the summary (a string), or THROW A PLAIN
// OBJECT `{ code, message }` for the contract's error. Do not throw an `Error` (or let one escape,
// e.g. a TypeError from a bug): it has no `code`, so the bindings abort ("expected a string,
// received [undefined]" on stderr) and Seshat reports the plugin as crashed, without your message.
// Never return `{ tag: 'err', val }`: a return value is always the `ok` side.
//
// A host function returning a result (`complete`) gives back its `ok` value and throws its `err`
// side: an Error whose `payload` is the `{ code, message }` record.

function fail(code, message) {
  throw { code, message };
}

/// Wraps an export: the contract's errors (yours, or a host function's `payload`) pass on as
/// they are; anything else thrown (a bug) becomes one naming the exception and where it was.
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
