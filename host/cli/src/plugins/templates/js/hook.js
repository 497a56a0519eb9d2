// {{name}}: a Seshat hook plugin, written in JavaScript: a guard against dangerous shell commands.
//
// What it does. Seshat tells a hook the moments of a session's life — the same events and JSON
// payloads a command hook reads on its standard input — and the hook answers go on or block. This
// one, told a tool call before it runs (`pre-tool`), blocks a shell command that deletes
// recursively, formats a disk, writes onto a device, pipes a download into a shell, force-pushes
// or resets hard; the model reads the reason as the tool's error result. At `session-start` it
// adds a line of context saying so. Every other event goes on.
//
// How to change it. RULES is the list of what it blocks (a test on the command's words, and the
// reason the model reads). Which events and tools it hears is the user's config, not the plugin's:
//
//   [[hooks.pre_tool]]
//   plugin = "{{name}}"
//   matcher = "bash|shell*"      # the tools whose calls it is told of
//   # required = true            # an error or a crash of the hook then blocks the call
//
//   [[hooks.session_start]]
//   plugin = "{{name}}"
//
// A hook gets no options: nothing in its payload comes from `[plugins.options]`, so what it
// checks is written here.
//
// Build with `npm run build`, try it with `npm test` (see README.md).

import { log } from 'seshat:plugin/log@0.4.0';

/// What it blocks: `test(words, command)` on one simple command (split at ; && || | and newlines),
/// its words with any `sudo`/`env`/`command` prefix dropped.
const RULES = [
  {
    test: (w) => isCommand(w[0], 'rm') && w.slice(1).some((a) => /^-[a-zA-Z]*[rR]/.test(a) || a === '--recursive'),
    reason: 'deletes recursively',
  },
  { test: (w) => /^mkfs(\.|$)/.test(base(w[0])), reason: 'formats a file system' },
  { test: (w) => isCommand(w[0], 'dd') && w.some((a) => /^of=\/dev\//.test(a)), reason: 'writes onto a device' },
  {
    test: (w) =>
      isCommand(w[0], 'git') && w[1] === 'push' && w.some((a) => a === '--force' || a === '-f' || a.startsWith('--force-with-lease')),
    reason: 'force-pushes, rewriting shared history',
  },
  { test: (w) => isCommand(w[0], 'git') && w[1] === 'reset' && w.includes('--hard'), reason: 'throws away uncommitted work' },
  {
    test: (w) => isCommand(w[0], 'chmod') && w.includes('-R') && w.some((a) => a === '/' || a === '777'),
    reason: 'changes permissions recursively and widely',
  },
];

/// A download piped straight into a shell is checked on the whole command line.
const PIPED_INTO_SHELL = /\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da)?sh\b/;

export const onEvent = {
  /// `payload.event` is a kebab-case string ('pre-tool', 'session-start', ...); `payload.tool`
  /// is the tool's name (undefined outside the tool events); `payload.seq` a BigInt (u64);
  /// `payload.json` the whole payload as a command hook reads it (a tool's `arguments`, ...).
  handle(payload) {
    try {
      switch (payload.event) {
        case 'pre-tool': {
          const fields = parsePayload(payload.json);
          const command = commandOf(fields.arguments);
          if (command === undefined) return proceed();
          const why = verdictOn(command);
          if (why === undefined) return proceed();
          log('info', `{{name}}: blocked \`${command}\` (${why}) in session ${payload.session} at seq ${payload.seq}`);
          return block(`\`${command}\` ${why}: {{name}} does not let it run. Ask the user to run it themselves, or to allow it.`);
        }
        case 'session-start':
          return withContext(
            'Commands that delete recursively, format disks, write onto devices, pipe downloads into a shell, ' +
              'force-push or reset hard are blocked: ask the user to run them.',
          );
        default:
          return proceed();
      }
    } catch (e) {
      // `handle` returns `result<decision, error>`: an error is THROWN AS A PLAIN OBJECT
      // `{ code, message }`. Seshat reports it and passes over the event (it blocks only when the
      // user marked the hook `required`). An `Error` that escapes (a TypeError from a bug) has no
      // `code`: the bindings abort ("expected a string, received [undefined]" on stderr) and
      // Seshat reports a crash without your message, so it is turned into one here. Never return
      // `{ tag: 'err', val }`: a return value is always the `ok` side.
      if (e && typeof e.code === 'string' && typeof e.message === 'string') throw { code: e.code, message: e.message };
      const where = e instanceof Error && e.stack ? ` (at ${e.stack.split('\n').slice(0, 3).join(' < ')})` : '';
      const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      throw { code: 'internal_error', message: `{{name}} failed: ${what}${where}` };
    }
  },
};

/// Why `command` is blocked, or undefined.
function verdictOn(command) {
  if (PIPED_INTO_SHELL.test(command)) return 'pipes a download into a shell';
  for (const simple of command.split(/;|&&|\|\||\||\n/)) {
    const words = dropPrefixes(shellWords(simple));
    if (!words.length) continue;
    const rule = RULES.find((r) => r.test(words, simple));
    if (rule) return rule.reason;
  }
  return undefined;
}

/// The shell command in a tool's arguments: `command`, `cmd` or `script`, a string or a list of
/// words (tools differ).
function commandOf(args) {
  for (const key of ['command', 'cmd', 'script']) {
    const v = args?.[key];
    if (typeof v === 'string') return v;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(' ');
  }
  return undefined;
}

/// Words split at blanks, quotes removed (good enough for a guard; not a full shell parser).
function shellWords(text) {
  const words = [];
  for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3]);
  return words;
}

function dropPrefixes(words) {
  let i = 0;
  const prefix = (w) => ['sudo', 'env', 'command', 'exec', 'nohup', 'time'].includes(base(w)) || /^\w+=/.test(w);
  while (i < words.length && prefix(words[i])) i++;
  return words.slice(i);
}

const base = (word) => (word ?? '').split('/').pop();
const isCommand = (word, name) => base(word) === name;

function parsePayload(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw { code: 'invalid_payload', message: `the payload is not JSON (${e.message}): this is Seshat's doing, please report it` };
  }
}

// The answers. `verdict` is 'proceed' or 'block'; the options are undefined when unused; `skip`
// (pre-compact only: do not compact this time) is a boolean and must be given.
function proceed() {
  return { verdict: 'proceed', reason: undefined, context: undefined, instructions: undefined, skip: false };
}

function block(reason) {
  return { ...proceed(), verdict: 'block', reason };
}

/// Go on, adding `text` to the request (session-start, user-prompt, post-tool).
function withContext(text) {
  return { ...proceed(), context: text };
}
