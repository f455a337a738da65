/**
 * ScriptedModel: deterministic model behaviour from a JSON script (see script.ts and
 * docs/concepts/scripted-model.md). No network, no code per scenario. It streams the same
 * ModelEvents a real model port does, so the runtime cannot tell the difference.
 */
import { ModelError, type ModelErrorCode } from '../errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../api.js';
import type { ContentBlock, ModelMessage, ModelStopReason, Usage } from '../types.js';
import type { ModelScript, ScriptBlock, ScriptMatch, ScriptResponse, ScriptRule } from './script.js';

export interface ScriptedModelOptions {
  name?: string;
  /** Keep the last 100 requests in `requests` (default true; benchmarks turn it off). */
  record?: boolean;
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
/** Tool-use ids: a random per-process prefix plus a counter, unique across restarts of a session. */
const ID_PREFIX = Math.floor(Math.random() * 36 ** 8).toString(36).padStart(8, '0');
let idCounter = 0;

export function createScriptedModel(script: ModelScript, opts: ScriptedModelOptions = {}): ScriptedModel {
  let compiled = compile(script);
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
      return play(compiled, req, signal);
    },
  };
  return model;
}

interface CompiledRule {
  rule: ScriptRule;
  text: RegExp | undefined;
  used: number;
  /** Whether any block uses `$1`..`$9` / `$user` (else inputs are shared, never copied). */
  templated: boolean;
}
interface CompiledScript {
  rules: CompiledRule[];
  fallback: ScriptResponse | undefined;
}

const WHEN_ON: readonly string[] = ['user', 'tool_result', 'handoff', 'rejection', 'nudge', 'any'];

function compile(script: ModelScript): CompiledScript {
  if (!script || !Array.isArray(script.rules)) {
    throw new TypeError('ModelScript: `rules` must be an array of { when?, respond }');
  }
  return {
    rules: script.rules.map((rule, i) => {
      const name = `ModelScript: rules[${i}]${rule?.id ? ` (${rule.id})` : ''}`;
      if (!rule?.respond || !Array.isArray(rule.respond.blocks)) {
        throw new TypeError(`${name} needs respond.blocks (an array)`);
      }
      // A `when` that can never match is refused, not left to be silently skipped.
      const on = rule.when?.on;
      if (on !== undefined && !WHEN_ON.includes(on)) {
        throw new TypeError(`${name}: when.on ${JSON.stringify(on)} is not one of ${WHEN_ON.map((k) => `"${k}"`).join(', ')}`);
      }
      let text: RegExp | undefined;
      try {
        text = rule.when?.text === undefined ? undefined : new RegExp(rule.when.text, 'i');
      } catch (e) {
        throw new TypeError(`${name}: when.text is not a regular expression (${(e as Error).message})`);
      }
      return {
        rule,
        text,
        used: 0,
        templated: /\$(user|[1-9])/.test(JSON.stringify(rule.respond.blocks)),
      };
    }),
    fallback: script.fallback,
  };
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

function matches(when: ScriptMatch | undefined, re: RegExp | undefined, req: ModelRequest, latest: LatestEntry, call: number): RegExpExecArray | null | true {
  if (!when) return true;
  if (when.actor !== undefined && when.actor !== req.actor) return null;
  if (when.on !== undefined && when.on !== 'any' && when.on !== latest.kind) return null;
  if (when.tool !== undefined && when.tool !== latest.tool) return null;
  if (when.call !== undefined && when.call !== call) return null;
  if (re) return re.exec(latest.text);
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

function substitute(value: unknown, groups: RegExpExecArray | null, user: string): unknown {
  if (typeof value === 'string') {
    if (value.indexOf('$') < 0) return value;
    return value.replace(/\$(user|[1-9])/g, (_, g: string) => (g === 'user' ? user : (groups?.[Number(g)] ?? '')));
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, groups, user));
  if (value && typeof value === 'object') {
    // Defined, not assigned: a "__proto__" member of parsed script data stays a member.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, groups, user)]));
  }
  return value;
}

async function* play(script: CompiledScript, req: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
  if (signal.aborted) throw new ModelError('model.aborted', 'model call aborted');
  const latest = latestOf(req.messages);
  const call = callIndex(req);
  let chosen: ScriptResponse | undefined;
  let templated = true;
  let groups: RegExpExecArray | null = null;
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
    throw new ModelError(chosen.fail.code as ModelErrorCode, chosen.fail.message, { retryable: chosen.fail.retryable ?? false });
  }
  const user = templated ? lastUserText(req.messages) : '';
  const content: ContentBlock[] = [];
  let index = 0;
  for (const sb of chosen.blocks) {
    const block = toBlock(sb, groups, user, templated);
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
  const usage = chosen.usage ? { inputTokens: chosen.usage.inputTokens, outputTokens: chosen.usage.outputTokens } : EMPTY_USAGE;
  yield { type: 'message.stop', stopReason, usage, content };
}

function toBlock(sb: ScriptBlock, groups: RegExpExecArray | null, user: string, templated: boolean): ContentBlock {
  switch (sb.type) {
    case 'tool_use':
      return {
        type: 'tool_use',
        id: sb.id ?? `toolu_${ID_PREFIX}${(++idCounter).toString(36)}`,
        name: sb.name,
        input: templated ? substitute(sb.input, groups, user) : sb.input,
      };
    case 'text':
      return { type: 'text', text: templated ? (substitute(sb.text, groups, user) as string) : sb.text };
    case 'thinking':
      return { type: 'thinking', thinking: sb.thinking, signature: sb.signature ?? 'scripted' };
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
