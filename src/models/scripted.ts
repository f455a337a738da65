/**
 * ScriptedModel: deterministic model behaviour from a JSON script (see script.ts and
 * docs/concepts/scripted-model.md). No network, no code per scenario. It streams the same
 * ModelEvents a real model port does, so the runtime cannot tell the difference.
 */
import { MODEL_ERROR_CODES, ModelError, TurnstateError, isModelErrorCode } from '../errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../api.js';
import type { ContentBlock, ModelMessage, ModelStopReason, Usage } from '../types.js';
import { randomBytes } from 'node:crypto';
import { RE2JS } from 're2js';
import { formatValue } from '../limits.js';
import type { ModelScript, ScriptBlock, ScriptMatch, ScriptResponse, ScriptRule } from './script.js';

export interface ScriptedModelOptions {
  name?: string | undefined;
  /** Keep the last 100 requests in `requests` (default true; benchmarks turn it off). */
  record?: boolean | undefined;
  /**
   * The id of each `tool_use` block whose script gives none, called as `newId('toolu')` (a
   * runtime's `newId` fits). Default: `toolu_` + a random prefix drawn per model + that model's own
   * counter, so no two models share ids (in one process or across restarts). A counter makes them
   * deterministic for tests; it repeats a session's earlier ids if the session is continued
   * after a restart (docs/concepts/scripted-model.md).
   */
  newId?: ((prefix: string) => string) | undefined;
}

export interface ScriptedModel extends ModelPort {
  /** Every request received, in order (for assertions). Bounded to the last 100. */
  readonly requests: ModelRequest[];
  /** Replace the script (e.g. a new scenario in the same runtime). */
  setScript(script: ModelScript): void;
}

interface LatestEntry {
  kind: 'user' | 'tool_result' | 'handoff' | 'rejection' | 'nudge' | 'none';
  text: string;
  tool?: string;
}

const EMPTY_USAGE: Usage = { inputTokens: 0, outputTokens: 0 };
/** A script or option the model cannot use (the message names the script's rule or the option). */
const invalidOption = (message: string): TurnstateError => new TurnstateError('options.invalid', message);
/**
 * The default tool-use ids of one model: `toolu_` + 8 random base-36 characters (41 bits from the
 * CSPRNG, drawn when the model is made) + the model's own counter. Unique across models and
 * processes, so a session continued after a restart never gets an id its earlier turns used.
 */
function defaultToolUseIds(): () => string {
  const prefix = (randomBytes(8).readBigUInt64BE() % 36n ** 8n).toString(36).padStart(8, '0');
  let counter = 0;
  return () => `toolu_${prefix}${(++counter).toString(36)}`;
}

/** `opts.newId` as the model's id source: each id it returns must be a non-empty string. */
function toolUseIds(newId: ScriptedModelOptions['newId']): () => string {
  if (newId === undefined) return defaultToolUseIds();
  if (typeof newId !== 'function') throw invalidOption(`ScriptedModel: newId must be a function (prefix) => id, got ${newId === null ? 'null' : typeof newId}`);
  return () => {
    const id: unknown = newId('toolu');
    if (typeof id !== 'string' || id === '') throw invalidOption(`ScriptedModel: newId('toolu') must return a non-empty string, got ${formatValue(id)}`);
    return id;
  };
}

export function createScriptedModel(script: ModelScript, opts: ScriptedModelOptions = {}): ScriptedModel {
  let compiled = compile(script);
  const nextId = toolUseIds(opts.newId);
  const requests: ModelRequest[] = [];
  const model: ScriptedModel = {
    name: opts.name ?? 'scripted',
    requests,
    setScript(next) {
      compiled = compile(next);
    },
    stream(req, signal) {
      if (opts.record !== false) {
        if (requests.length >= 100) requests.shift();
        // Copied: the runtime's history array is valid only for the call (ModelRequest.messages).
        requests.push({ ...req, messages: req.messages.slice() });
      }
      return play(compiled, req, signal, nextId);
    },
  };
  return model;
}

interface CompiledRule {
  rule: ScriptRule;
  /** `when.text` compiled with RE2 (linear time in the input: no catastrophic backtracking). */
  text: RE2JS | undefined;
  used: number;
  /** Whether any block uses `$1`..`$9` / `$user` / `$$` (else inputs are shared, never copied). */
  templated: boolean;
}
interface CompiledScript {
  rules: CompiledRule[];
  fallback: ScriptResponse | undefined;
}
/** Capture groups of a match: index 0 is the whole match; null for a group that took no part. */
type Groups = readonly (string | null)[];

const WHEN_ON: readonly string[] = ['user', 'tool_result', 'handoff', 'rejection', 'nudge', 'any'];
const WHEN_KEYS: readonly string[] = ['actor', 'on', 'text', 'tool', 'call'];
const BLOCK_TYPES: readonly string[] = ['tool_use', 'text', 'thinking'];
const TEMPLATE = /\$(\$|user\b|[1-9])/g;
/** TEMPLATE without the global flag (its `test` keeps no lastIndex between scripts). */
const TEMPLATED = new RegExp(TEMPLATE.source);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const list = (xs: readonly string[]): string => xs.map((k) => `"${k}"`).join(', ');

/** Checks a response's shape (a rule's `respond` or the `fallback`); `at` names it in errors. */
function checkResponse(r: unknown, at: string, fail: (msg: string) => never): void {
  if (!isObject(r) || !Array.isArray(r.blocks)) fail(`${at} needs blocks (an array)`);
  const res = r as Record<string, unknown> & { blocks: unknown[] };
  res.blocks.forEach((b, j) => {
    const bp = `${at}.blocks[${j}]`;
    if (!isObject(b)) fail(`${bp} must be an object`);
    const blk = b as Record<string, unknown>;
    if (typeof blk.type !== 'string' || !BLOCK_TYPES.includes(blk.type)) fail(`${bp}.type ${JSON.stringify(blk.type)} is not one of ${list(BLOCK_TYPES)}`);
    if (blk.type === 'tool_use') {
      if (typeof blk.name !== 'string' || blk.name === '') fail(`${bp}.name must be a non-empty string`);
      if (!isObject(blk.input)) fail(`${bp}.input must be an object`);
      if (blk.id !== undefined && (typeof blk.id !== 'string' || blk.id === '')) fail(`${bp}.id must be a non-empty string`);
    } else if (blk.type === 'text') {
      if (typeof blk.text !== 'string') fail(`${bp}.text must be a string`);
    } else {
      if (typeof blk.thinking !== 'string') fail(`${bp}.thinking must be a string`);
      if (blk.signature !== undefined && typeof blk.signature !== 'string') fail(`${bp}.signature must be a string`);
    }
  });
  // stopReason is not checked: runtime tests play unknown stop reasons through this model.
  if (res.chunkSize !== undefined && !(isCount(res.chunkSize) && (res.chunkSize as number) > 0)) fail(`${at}.chunkSize must be a positive integer`);
  if (res.usage !== undefined) {
    if (!isObject(res.usage)) fail(`${at}.usage must be an object`);
    const u = res.usage as Record<string, unknown>;
    for (const k of ['inputTokens', 'outputTokens']) {
      if (u[k] !== undefined && !isCount(u[k])) fail(`${at}.usage.${k} must be a non-negative integer`);
    }
  }
  if (res.fail !== undefined) {
    if (!isObject(res.fail)) fail(`${at}.fail must be an object`);
    const f = res.fail as Record<string, unknown>;
    if (typeof f.code !== 'string' || f.code === '') fail(`${at}.fail.code must be a non-empty string`);
    // Thrown as a ModelError's code: only the codes a model port can fail with (retry and turn settlement decide by them).
    if (!isModelErrorCode(f.code)) fail(`${at}.fail.code ${formatValue(f.code)} is not a ModelError code (one of ${list(MODEL_ERROR_CODES)})`);
    if (f.message !== undefined && typeof f.message !== 'string') fail(`${at}.fail.message must be a string`);
    if (f.retryable !== undefined && typeof f.retryable !== 'boolean') fail(`${at}.fail.retryable must be a boolean`);
  }
}

function compile(script: ModelScript): CompiledScript {
  if (!script || !Array.isArray(script.rules)) {
    throw invalidOption('ModelScript: `rules` must be an array of { when?, respond }');
  }
  const rules = script.rules.map((rule: ScriptRule, i): CompiledRule => {
    const name = `ModelScript: rules[${i}]${rule?.id !== undefined && rule?.id !== null && rule?.id !== '' ? ` (${String(rule.id)})` : ''}`;
    const fail = (msg: string): never => {
      throw invalidOption(`${name}: ${msg}`);
    };
    if (!rule?.respond || !Array.isArray(rule.respond.blocks)) {
      throw invalidOption(`${name} needs respond.blocks (an array)`);
    }
    checkResponse(rule.respond, 'respond', fail);
    if (rule.times !== undefined && !isCount(rule.times)) fail('times must be a non-negative integer');
    // A `when` that can never match is refused, not left to be silently skipped.
    const when: unknown = rule.when;
    if (when !== undefined && !isObject(when)) fail('when must be an object');
    if (isObject(when)) {
      for (const k of Object.keys(when)) if (!WHEN_KEYS.includes(k)) fail(`when.${k} is not one of ${list(WHEN_KEYS)}`);
      if (when.actor !== undefined && typeof when.actor !== 'string') fail('when.actor must be a string');
      if (when.tool !== undefined && typeof when.tool !== 'string') fail('when.tool must be a string');
      if (when.call !== undefined && !isCount(when.call)) fail('when.call must be a non-negative integer');
      if (when.text !== undefined && typeof when.text !== 'string') fail('when.text must be a string');
    }
    const on = rule.when?.on;
    if (on !== undefined && !WHEN_ON.includes(on)) {
      fail(`when.on ${JSON.stringify(on)} is not one of ${list(WHEN_ON)}`);
    }
    if (rule.when?.tool !== undefined && on !== undefined && on !== 'tool_result' && on !== 'any') {
      fail(`when.tool needs when.on "tool_result" (only a tool result names a tool; on is ${JSON.stringify(on)})`);
    }
    let text: RE2JS | undefined;
    const source = rule.when?.text;
    if (source !== undefined) {
      try {
        // Syntax check only (compiling does not run the pattern): JavaScript's message for a non-regex.
        new RegExp(source, 'i');
      } catch (e) {
        fail(`when.text is not a regular expression (${(e as Error).message})`);
      }
      try {
        text = RE2JS.compile(source, RE2JS.CASE_INSENSITIVE);
      } catch (e) {
        fail(`when.text ${JSON.stringify(source)} is not supported by RE2, the engine patterns run on (${(e as Error).message})`);
      }
    }
    return {
      rule,
      text,
      used: 0,
      templated: TEMPLATED.test(JSON.stringify(rule.respond.blocks)),
    };
  });
  if (script.fallback !== undefined) {
    checkResponse(script.fallback, 'fallback', (msg) => {
      throw invalidOption(`ModelScript: ${msg}`);
    });
  }
  return { rules, fallback: script.fallback };
}

/** Runs a compiled `when.text` against the entry's text: the capture groups, or null for no match. */
function exec(re: RE2JS, input: string): Groups | null {
  const m = re.matcher(input);
  if (!m.find()) return null;
  const groups: (string | null)[] = [];
  for (let g = 0; g <= m.groupCount(); g++) groups.push(m.group(g));
  return groups;
}

/** The latest entry of the request's history, classified for matching. */
function latestOf(messages: ModelMessage[]): LatestEntry {
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user') return { kind: 'none', text: '' };
  // A user message may hold tool_results (first) and then text; the last block decides.
  const blocks = last.content;
  for (let i = blocks.length - 1; i >= 0; i--) {
    const b = blocks[i]!;
    if (b.type === 'tool_result') {
      if (b.is_error) return { kind: 'rejection', text: b.content };
      return { kind: 'tool_result', text: b.content, tool: toolNameFor(messages, b.tool_use_id) };
    }
    if (b.type === 'text') {
      if (b.text.startsWith('[handoff')) return { kind: 'handoff', text: b.text };
      if (b.text.startsWith('[runtime]')) return { kind: 'nudge', text: b.text };
      return { kind: 'user', text: b.text };
    }
  }
  return { kind: 'none', text: '' };
}

function toolNameFor(messages: ModelMessage[], toolUseId: string): string | undefined {
  for (let m = messages.length - 1; m >= 0; m--) {
    const msg = messages[m]!;
    if (msg.role !== 'assistant') continue;
    for (const b of msg.content) if (b.type === 'tool_use' && b.id === toolUseId) return b.name;
  }
  return undefined;
}

function lastUserText(messages: ModelMessage[]): string {
  for (let m = messages.length - 1; m >= 0; m--) {
    const msg = messages[m]!;
    if (msg.role !== 'user') continue;
    for (const b of msg.content) {
      if (b.type === 'text' && !b.text.startsWith('[handoff') && !b.text.startsWith('[runtime]')) return b.text;
    }
  }
  return '';
}

function matches(when: ScriptMatch | undefined, re: RE2JS | undefined, req: ModelRequest, latest: LatestEntry, call: number): Groups | null | true {
  if (!when) return true;
  if (when.actor !== undefined && when.actor !== req.actor) return null;
  if (when.on !== undefined && when.on !== 'any' && when.on !== latest.kind) return null;
  if (when.tool !== undefined && when.tool !== latest.tool) return null;
  if (when.call !== undefined && when.call !== call) return null;
  if (re) return exec(re, latest.text);
  return true;
}

/** Model calls already made in this turn by this actor = assistant messages since the turn's user text. */
function callIndex(req: ModelRequest): number {
  let n = 0;
  for (let m = req.messages.length - 1; m >= 0; m--) {
    const msg = req.messages[m]!;
    if (msg.role === 'assistant') n++;
    else if (msg.content.some((b) => b.type === 'text' && !b.text.startsWith('[runtime]'))) break;
  }
  return n;
}

/**
 * `$$` is a literal `$`; `$user` (a whole word) is the latest user text; `$1`..`$9` are capture
 * groups (empty for a group that took no part; left as written when the pattern has no such group).
 */
function substitute(value: unknown, groups: Groups | null, user: string): unknown {
  if (typeof value === 'string') {
    if (value.indexOf('$') < 0) return value;
    return value.replace(TEMPLATE, (whole: string, g: string) => {
      if (g === '$') return '$';
      if (g === 'user') return user;
      const n = Number(g);
      return groups && n < groups.length ? (groups[n] ?? '') : whole;
    });
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, groups, user));
  if (value && typeof value === 'object') {
    // Defined, not assigned: a "__proto__" member of parsed script data stays a member.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, groups, user)]));
  }
  return value;
}

async function* play(script: CompiledScript, req: ModelRequest, signal: AbortSignal, nextId: () => string): AsyncGenerator<ModelEvent> {
  if (signal.aborted) throw new ModelError('model.aborted', 'model call aborted');
  const latest = latestOf(req.messages);
  const call = callIndex(req);
  let chosen: ScriptResponse | undefined;
  let templated = true;
  let groups: Groups | null = null;
  for (const c of script.rules) {
    if (c.rule.times !== undefined && c.used >= c.rule.times) continue;
    const m = matches(c.rule.when, c.text, req, latest, call);
    if (m === null) continue;
    groups = m === true ? null : m;
    c.used++;
    chosen = c.rule.respond;
    templated = c.templated;
    break;
  }
  if (!chosen) chosen = script.fallback ?? missResponse(req, latest);
  if (chosen.fail) {
    throw new ModelError(chosen.fail.code, chosen.fail.message, { retryable: chosen.fail.retryable ?? false });
  }
  const user = templated ? lastUserText(req.messages) : '';
  const content: ContentBlock[] = [];
  let index = 0;
  for (const sb of chosen.blocks) {
    const block = toBlock(sb, groups, user, templated, nextId);
    if (block.type === 'tool_use') {
      yield { type: 'block.start', index, block: { type: 'tool_use', id: block.id, name: block.name } };
      if (chosen.chunkSize && chosen.chunkSize > 0) {
        const json = JSON.stringify(block.input);
        for (let i = 0; i < json.length; i += chosen.chunkSize) {
          if (signal.aborted) throw new ModelError('model.aborted', 'model call aborted');
          yield { type: 'input.delta', index, partialJson: json.slice(i, i + chosen.chunkSize) };
          // Yield to the event loop (a macrotask: a resolved promise is a microtask, which runs
          // before any timer or I/O), so consumers observe streaming and aborts land mid-call.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
    } else if (block.type === 'text') {
      yield { type: 'block.start', index, block: { type: 'text' } };
      yield { type: 'text.delta', index, text: block.text };
    } else if (block.type === 'thinking') {
      yield { type: 'block.start', index, block: { type: 'thinking' } };
      yield { type: 'thinking.delta', index, text: block.thinking };
    }
    if (signal.aborted) throw new ModelError('model.aborted', 'model call aborted');
    yield { type: 'block.stop', index, block };
    content.push(block);
    index++;
  }
  const stopReason: ModelStopReason =
    chosen.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  // A count the script leaves out is 0.
  const usage = chosen.usage ? { inputTokens: chosen.usage.inputTokens ?? 0, outputTokens: chosen.usage.outputTokens ?? 0 } : EMPTY_USAGE;
  yield { type: 'message.stop', stopReason, usage, content };
}

function toBlock(sb: ScriptBlock, groups: Groups | null, user: string, templated: boolean, nextId: () => string): ContentBlock {
  switch (sb.type) {
    case 'tool_use':
      return {
        type: 'tool_use',
        id: sb.id ?? nextId(),
        name: sb.name,
        input: templated ? substitute(sb.input, groups, user) : sb.input,
      };
    case 'text':
      return { type: 'text', text: templated ? (substitute(sb.text, groups, user) as string) : sb.text };
    case 'thinking':
      return { type: 'thinking', thinking: templated ? (substitute(sb.thinking, groups, user) as string) : sb.thinking, signature: sb.signature ?? 'scripted' };
  }
}

function missResponse(req: ModelRequest, latest: LatestEntry): ScriptResponse {
  return {
    blocks: [
      {
        type: 'tool_use',
        name: 'respond',
        input: {
          parts: [
            {
              metadata: { partType: 'error' },
              text: `The scripted model has no rule for actor "${req.actor}" after a ${latest.kind} entry.`,
            },
          ],
          turnState: 'error',
        },
      },
    ],
  };
}
