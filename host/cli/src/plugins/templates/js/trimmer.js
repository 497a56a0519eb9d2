// {{name}}: a Seshat trimmer plugin, written in JavaScript.
//
// What it does. Before a model call, when the request is over the compaction target, Seshat asks
// this trimmer which tool results to shorten. It sees sizes, never content, until it asks: it
// picks the large tool results of unprotected messages, oldest first, until the tokens they free
// cover what the request is over its target; only those are read (`readPart`), and each keeps
// whole lines: a head, a tail and the lines that carry its outcome (errors, failures, warnings,
// test summaries). Seshat puts a placeholder where lines were cut, saying how to read them back.
// A result made of a few very long lines (minified code, one-line JSON) keeps a head and a tail
// of bytes instead.
//
// How to change it. The options below come from config.toml; `FAILURE` and `NOTABLE` are what
// make a line worth keeping; `choose` is the policy (which results), `keepLines` the cut (which
// lines of one).
//
//   [plugins.options.trimmer]
//   min_bytes = 16384        # results smaller than this are left alone
//   head_lines = 30          # lines kept from the start of a result ...
//   tail_lines = 30          # ... and from its end
//   edge_bytes = 4096        # at most this many bytes each for the head and the tail
//   outcome_lines = 60       # at most this many outcome lines in between
//   max_line_bytes = 400     # an outcome line longer than this is not kept
//   always = false           # true: trim every large result, even under the target
//
// Build with `npm run build`, try it with `npm test` (see README.md).

import { log } from 'seshat:plugin/log@0.4.0';
import { readPart } from 'seshat:plugin/trim-host@0.4.0';

/// Lines that say something failed: always worth keeping. Matched case-insensitively, per line;
/// `error` is matched inside words too, for `AssertionError`, `TypeError`, ...
const FAILURE =
  /(?:error|exception)s?\b|\b(?:failed|failure|failures|fail|panic|panicked|fatal|traceback|assertion|aborted|segfault)\b|^not ok\b/gim;
/// Lines that say how a run went otherwise (warnings, test counts): kept unless they make up
/// more than a quarter of the lines (a verbose test run's PASSED lines are what it is made of,
/// not how it ended).
const NOTABLE = /warnings?\b|\b(?:passed|deprecated|skipped)\b|^# (?:tests|pass|fail)|test result:/gim;

const DEFAULTS = {
  min_bytes: 16384,
  head_lines: 30,
  tail_lines: 30,
  edge_bytes: 4096,
  outcome_lines: 60,
  max_line_bytes: 400,
  always: false,
};

/// Part kinds and roles arrive as small numbers (the history comes as columns: see the WIT).
const TOOL_RESULT = 2;

export const trim = {
  /// `history` is columns: entry i of every `message*` array describes message i, entry j of every
  /// `part*` array part j. The u64 columns are BigUint64Arrays (their entries are BigInts), the
  /// u8 ones Uint8Arrays, `partIndexes` a Uint32Array. `budget`'s token counts are BigInts too.
  trim: guarded((history, budget) => {
    const options = readOptions(budget.extra);
    // BigInt arithmetic: `budget.currentTokens - 1` throws a TypeError; write `1n`, or convert
    // with Number() (exact below 2^53, which token counts and sizes always are).
    const over = Number(budget.currentTokens - budget.targetTokens);
    if (over <= 0 && !options.always) return [];

    const edits = [];
    let freed = 0;
    for (const c of choose(history, options)) {
      if (!options.always && freed >= over) break;
      const content = readPart(c.message, c.part); // a string, or undefined if there is no such part
      if (content === undefined) continue;
      const edit = keepLines(c, content, options);
      if (edit === undefined) continue;
      edits.push(edit);
      freed += c.tokens * (1 - edit.keptBytes / c.bytes);
      delete edit.keptBytes;
    }
    log('debug', `{{name}}: ${edits.length} edits, about ${Math.round(freed)} tokens freed of ${over} over`);
    return edits;
  }),
};

/// The tool results worth trimming, oldest first: unprotected messages, at least `min_bytes`.
function choose(history, options) {
  const protectedIds = new Set();
  for (let i = 0; i < history.messageIds.length; i++) {
    if (history.messageProtected[i] !== 0) protectedIds.add(history.messageIds[i]);
  }
  const out = [];
  for (let j = 0; j < history.partMessages.length; j++) {
    const message = history.partMessages[j]; // a BigInt: keep it one, edits name messages by it
    const bytes = Number(history.partBytes[j]);
    if (history.partKinds[j] !== TOOL_RESULT || protectedIds.has(message) || bytes < options.min_bytes) continue;
    out.push({ message, part: history.partIndexes[j], bytes, tokens: Number(history.partTokens[j]) });
  }
  return out;
}

/// The edit keeping `content`'s head, tail and outcome lines, or a head and a tail of bytes when
/// whole lines cannot make it much shorter; undefined when nothing is worth cutting.
///
/// THE LINE RULE (the host's, which the line numbers must follow): lines are split at "\n" only;
/// a final "\n" ends the last line and starts no new one; "" has no lines. So "a\nb\n" has two
/// lines and "a\r\nb" two ("a\r" and "b"). `content.split("\n")` gives a trailing "" for a final
/// "\n" (one line too many), and `split(/\r?\n/)` or a regex's `^`/`$` (which also break at "\r",
/// U+2028 and U+2029) number lines differently from the host. Line ranges are 0-based, `end`
/// exclusive, non-empty, sorted and disjoint, and the result (with Seshat's placeholders) must be
/// shorter than the content, or the whole answer is rejected.
function keepLines(c, content, options) {
  const starts = lineStarts(content);
  const n = starts.length;
  const keep = new Uint8Array(n);
  const line = (i) => content.slice(starts[i], i + 1 < n ? starts[i + 1] - 1 : endOfLast(content));
  // Sizes are UTF-8 bytes, as the host counts them (`bytes`, placeholders, "shorter"); a JS
  // string's `length` counts UTF-16 units, which differs for anything beyond ASCII.
  const size = (i) => utf8Bytes(line(i)) + 1;

  let head = 0;
  for (let i = 0, used = 0; i < n && i < options.head_lines; i++) {
    used += size(i);
    if (used > options.edge_bytes) break;
    keep[i] = 1;
    head = i + 1;
  }
  for (let i = n - 1, used = 0, k = 0; i >= head && k < options.tail_lines; i--, k++) {
    used += size(i);
    if (used > options.edge_bytes) break;
    keep[i] = 1;
  }
  // The outcome lines: failures first, then the notable lines in the room left. Too many (a log
  // of errors)? Keep the first and the last.
  const failures = matchingLines(content, starts, FAILURE);
  let notable = matchingLines(content, starts, NOTABLE);
  if (notable.length > n / 4) notable = [];
  let room = options.outcome_lines;
  for (const found of [failures, notable]) {
    const fits = found.filter((i) => !keep[i] && utf8Bytes(line(i)) < options.max_line_bytes);
    const half = Math.ceil(room / 2);
    const picked = fits.length <= room ? fits : fits.slice(0, half).concat(fits.slice(fits.length - (room - half)));
    for (const i of picked) keep[i] = 1;
    room -= picked.length;
  }

  // Ranges from the marks: sorted and disjoint by construction.
  const lines = [];
  let kept = 0;
  for (let i = 0; i < n; i++) {
    if (!keep[i]) continue;
    kept += size(i);
    if (lines.length && lines[lines.length - 1].end === i) lines[lines.length - 1].end = i + 1;
    else lines.push({ start: i, end: i + 1 });
  }
  // What Seshat writes where lines went: about 150 bytes for the first cut, 40 for the others.
  const gaps = lines.length + 1;
  const after = kept + 150 + 40 * gaps;
  if (lines.length && after < c.bytes * 0.8) {
    return { tag: 'keep-lines', val: { message: c.message, part: c.part, lines }, keptBytes: after };
  }
  // Few, long lines: keep bytes instead. `head` and `tail` are u64: BigInts, not numbers.
  // head + tail + 96 (the placeholder) must stay below the size, or the answer is rejected.
  const edge = Math.min(options.edge_bytes, Math.floor((c.bytes - 200) / 4));
  if (edge < 64) return undefined;
  return {
    tag: 'head-tail',
    val: { message: c.message, part: c.part, head: BigInt(edge), tail: BigInt(edge) },
    keptBytes: 2 * edge + 96,
  };
}

/// The lines (their indexes) where `re` matches: one regex pass over the whole content (fast,
/// even on megabytes), each match mapped to its line by the host's rule, one match per line.
function matchingLines(content, starts, re) {
  const out = [];
  re.lastIndex = 0;
  for (let m; (m = re.exec(content)) !== null; ) {
    const i = lineOf(starts, m.index);
    out.push(i);
    if (i + 1 >= starts.length) break;
    re.lastIndex = starts[i + 1];
  }
  return out;
}

/// Where each line starts (UTF-16 offsets), by the line rule: "" has none; after every "\n"
/// a new line starts, unless that "\n" ends the content.
function lineStarts(content) {
  const starts = content.length ? [0] : [];
  for (let at = content.indexOf('\n'); at !== -1 && at + 1 < content.length; at = content.indexOf('\n', at + 1)) {
    starts.push(at + 1);
  }
  return starts;
}

function endOfLast(content) {
  return content.endsWith('\n') ? content.length - 1 : content.length;
}

/// The line holding offset `at` (binary search in `starts`).
function lineOf(starts, at) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/// A string's size in UTF-8 bytes (what the host's sizes count).
function utf8Bytes(s) {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    if (u < 0x80) bytes += 1;
    else if (u < 0x800) bytes += 2;
    else if (u >= 0xd800 && u < 0xdc00 && i + 1 < s.length) { bytes += 4; i++; } // a surrogate pair
    else bytes += 3;
  }
  return bytes;
}

/// The user's options (`budget.extra`, a JSON object from `[plugins.options.trimmer]`), checked
/// against DEFAULTS: a wrong one is the contract's `invalid_options` error, never a crash.
function readOptions(extra) {
  let given;
  try {
    given = JSON.parse(extra || '{}');
  } catch (e) {
    fail('invalid_options', `the options are not JSON (${e.message}): check [plugins.options.trimmer] in config.toml`);
  }
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    fail('invalid_options', 'the options must be a table: [plugins.options.trimmer] in config.toml');
  }
  const options = { ...DEFAULTS };
  for (const [key, value] of Object.entries(given)) {
    if (!(key in DEFAULTS)) {
      fail('invalid_options', `unknown option \`${key}\` under [plugins.options.trimmer]: {{name}} reads ${Object.keys(DEFAULTS).join(', ')}`);
    }
    const want = typeof DEFAULTS[key];
    const ok = want === 'boolean' ? typeof value === 'boolean' : Number.isSafeInteger(value) && value >= 0;
    if (!ok) {
      const what = want === 'boolean' ? 'true or false' : 'a whole number, 0 or more';
      fail('invalid_options', `option \`${key}\` under [plugins.options.trimmer] is ${JSON.stringify(value)}: make it ${what}`);
    }
    options[key] = value;
  }
  return options;
}

// ---- Errors ------------------------------------------------------------------------------------
//
// A function whose WIT result is `result<_, error>` reports an error by THROWING A PLAIN OBJECT
// `{ code, message }`: the bindings turn whatever is thrown into the `error` record. Do not throw
// an `Error` (or let one escape, e.g. a TypeError from a bug): it has no `code`, so the bindings
// abort ("expected a string, received [undefined]" on stderr) and Seshat reports the plugin as
// crashed, without your message. Never return `{ tag: 'err', val }` either: a return value is
// always the `ok` side, so that would be taken as (an empty) answer.

/// Stops with the contract's error.
function fail(code, message) {
  throw { code, message };
}

/// Wraps an export so that anything unexpected thrown in it (a bug) becomes the contract's error,
/// naming the exception and where it was thrown, rather than a crash that says nothing.
function guarded(fn) {
  return (...args) => {
    try {
      return fn(...args);
    } catch (e) {
      // Already the contract's error (or an Error you gave a string `code`): pass it on as one.
      if (e && typeof e.code === 'string' && typeof e.message === 'string') throw { code: e.code, message: e.message };
      const where = e instanceof Error && e.stack ? ` (at ${e.stack.split('\n').slice(0, 3).join(' < ')})` : '';
      const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      throw { code: 'internal_error', message: `{{name}} failed: ${what}${where}` };
    }
  };
}
