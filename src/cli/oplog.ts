/**
 * `turnstate serve`'s operational log: one stderr line per failure an operator must see, never a
 * secret. Each 5xx the server answers (startServer's `onError`) and each failed model call (the
 * ModelPort decorated by `loggingModel`); nothing for a request that succeeds.
 *
 * Contract: every line starts `turnstate: <ISO time> ` and is one line (line breaks in a message
 * become spaces, and a long message is cut); every secret serve knows (the API keys of
 * TURNSTATE_API_KEYS, ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN) is replaced with `[redacted]`.
 */
import type { ModelPort } from '../api.js';
import { ModelError } from '../errors.js';
import { pairSafeEnd, redact } from '../text.js';
import type { ServerErrorEvent } from '../transports/server.js';
import { envValue } from './args.js';

/** The longest message a line carries (the rest is cut, marked with `…`). */
const MAX_MESSAGE = 2000;

export type OpLog = (line: string) => void;

/** The secrets serve holds: the API keys of TURNSTATE_API_KEYS and the model's credentials. */
export function secretsOf(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']) {
    const v = envValue(env, name);
    if (v !== undefined) out.push(v);
  }
  const keys = envValue(env, 'TURNSTATE_API_KEYS');
  if (keys !== undefined) {
    try {
      const parsed = JSON.parse(keys) as unknown;
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) out.push(...Object.keys(parsed));
    } catch {
      // Refused at startup (authFromEnv) before anything is logged.
    }
  }
  // Longest first: a key that contains another is redacted whole.
  return [...new Set(out.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
}

/** `text` on one line, cut to MAX_MESSAGE characters, with every secret replaced by `[redacted]`. */
export function redactLine(text: string, secrets: readonly string[]): string {
  const out = redact(text, secrets).replace(/[\r\n\u2028\u2029]+/g, ' ');
  // After redacting: a cut never leaves part of a secret.
  return out.length > MAX_MESSAGE ? `${out.slice(0, pairSafeEnd(out, MAX_MESSAGE))}…` : out;
}

/** A writer of operational lines (default: stderr), each stamped and redacted. */
export function createOpLog(secrets: readonly string[], write: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): OpLog {
  return (line) => write(`turnstate: ${new Date().toISOString()} ${redactLine(line, secrets)}`);
}

/** startServer's `onError` for serve: `POST /sessions/x/turns answered 500 internal: <message>`. */
export function logServerError(log: OpLog): (e: ServerErrorEvent) => void {
  return (e) => log(`${e.method} ${e.path} answered ${e.status} ${e.code ?? '(no code)'}${e.message === undefined ? '' : `: ${e.message}`}`);
}

/**
 * The model, logging each call that fails as its stream throws: `model call failed:
 * model.authentication: <message>`. A call stopped by its signal (an interrupt, a shutdown) is
 * not a failure. The error is rethrown as it was.
 */
export function loggingModel(model: ModelPort, log: OpLog): ModelPort {
  return {
    get name() {
      return model.name;
    },
    async *stream(req, signal) {
      try {
        yield* model.stream(req, signal);
      } catch (e) {
        if (!signal.aborted) {
          const code = e instanceof ModelError ? e.code : 'model.unknown';
          log(`model call failed (${model.name}): ${code}: ${e instanceof Error ? e.message : String(e)}`);
        }
        throw e;
      }
    },
  };
}
