// docs/concepts/scripted-model.md: "A rule that could never work is refused when the model is made,
// naming it (`rules[<i>]` and its `id`)", `when.text` runs on RE2, and the `$` templates.
import { describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { MODEL_ERROR_CODES, ModelError, TurnstateError } from '../../src/errors.js';
import type { ModelEvent } from '../../src/machines/ports.js';
import type { ModelScript } from '../../src/models/script.js';

async function lastEvent(script: ModelScript, text: string): Promise<Extract<ModelEvent, { type: 'message.stop' }>> {
  const model = createScriptedModel(script);
  let last: ModelEvent | undefined;
  const req = { system: '', messages: [{ role: 'user', content: [{ type: 'text', text }] }], tools: [], actor: 'a' };
  for await (const ev of model.stream(req as never, new AbortController().signal) as AsyncIterable<ModelEvent>) last = ev;
  return last as Extract<ModelEvent, { type: 'message.stop' }>;
}
const T = (text: string) => ({ type: 'text' as const, text });
/**
 * Makes the model from `s`, expecting a refusal: a refusal that is not TurnstateError
 * options.invalid (a bare TypeError) is turned into one no message assertion matches.
 */
const bad = (s: unknown) => () => {
  try {
    createScriptedModel(s as ModelScript);
  } catch (e) {
    // Its message left out: the callers' message patterns must not match a refusal of the wrong kind.
    if (!(e instanceof TurnstateError) || e.code !== 'options.invalid') throw new Error(`refused with a ${(e as Error)?.name ?? typeof e}, not TurnstateError options.invalid`);
    throw e;
  }
};

describe('ScriptedModel rules', () => {
  it('scripted:text:re2 — "`text` is a case-insensitive regular expression … run on RE2 (linear time in the input)": ^(a+)+$ answers at once on "a"×40+"!" and on "A"×40', async () => {
    const script = { rules: [{ id: 'evil', when: { text: '^(a+)+$' }, respond: { blocks: [T('matched $1')] } }, { respond: { blocks: [T('fallthrough')] } }] };
    expect((await lastEvent(script, 'a'.repeat(40) + '!')).content).toEqual([T('fallthrough')]);
    expect((await lastEvent(script, 'A'.repeat(40))).content).toEqual([T(`matched ${'A'.repeat(40)}`)]);
  });

  it('scripted:text:re2 — "a pattern RE2 does not support (a backreference) is refused": (a)\\1 is refused naming rules[<i>] and its id', () => {
    expect(bad({ rules: [{ respond: { blocks: [] } }, { id: 'backref', when: { text: '(a)\\1' }, respond: { blocks: [] } }] })).toThrow(/rules\[1\] \(backref\): when\.text .* not supported by RE2/);
    // Nor a lookahead: no pattern falls back to a backtracking engine.
    expect(bad({ rules: [{ id: 'ahead', when: { text: '^(?!hi)(a+)+$' }, respond: { blocks: [] } }] })).toThrow(/rules\[0\] \(ahead\): when\.text .* not supported by RE2/);
  });

  it('scripted:text:unicode — "`\\p{L}` and other Unicode classes work, and `.` is one character": \\p{L}+ matches Zürich, ^(.) captures a whole emoji', async () => {
    expect((await lastEvent({ rules: [{ when: { text: '^(\\p{L}+)$' }, respond: { blocks: [T('letters:$1')] } }] }, 'Zürich')).content).toEqual([T('letters:Zürich')]);
    expect((await lastEvent({ rules: [{ when: { text: '^(.)' }, respond: { blocks: [T('$1')] } }] }, '😀 hi')).content).toEqual([T('😀')]);
  });

  it('scripted:rules:refused — "A rule that could never work is refused when the model is made, naming it (`rules[<i>]` and its `id`)": bad blocks, when, fallback, fail, usage, chunkSize, times', () => {
    const r = (respond: unknown, when?: unknown) => ({ rules: [{ id: 'r', when, respond }] });
    expect(bad(r({ blocks: [null] }))).toThrow(/rules\[0\] \(r\): respond\.blocks\[0\] must be an object/);
    expect(bad({ rules: [{ respond: { blocks: [] } }, { id: 'r', respond: { blocks: [{ type: 'image' }] } }] })).toThrow(/rules\[1\] \(r\): respond\.blocks\[0\]\.type "image"/);
    expect(bad(r({ blocks: [{ type: 'tool_use', input: {} }] }))).toThrow(/respond\.blocks\[0\]\.name must be a non-empty string/);
    expect(bad(r({ blocks: [{ type: 'tool_use', name: 'x', input: 'oops' }] }))).toThrow(/respond\.blocks\[0\]\.input must be an object/);
    expect(bad(r({ blocks: [{ type: 'text', text: 42 }] }))).toThrow(/respond\.blocks\[0\]\.text must be a string/);
    expect(bad(r({ blocks: [{ type: 'thinking' }] }))).toThrow(/respond\.blocks\[0\]\.thinking must be a string/);
    expect(bad(r({ blocks: [], fail: { message: 'x' } }))).toThrow(/respond\.fail\.code/);
    expect(bad(r({ blocks: [], usage: { inputTokens: -1 } }))).toThrow(/respond\.usage\.inputTokens must be a non-negative integer/);
    expect(bad(r({ blocks: [], chunkSize: '8' }))).toThrow(/respond\.chunkSize must be a positive integer/);
    expect(bad(r({ blocks: [] }, { text: 5 }))).toThrow(/rules\[0\] \(r\): when\.text must be a string/);
    expect(bad(r({ blocks: [] }, 'user'))).toThrow(/rules\[0\] \(r\): when must be an object/);
    expect(bad(r({ blocks: [] }, { onn: 'user' }))).toThrow(/rules\[0\] \(r\): when\.onn is not one of/);
    expect(bad(r({ blocks: [] }, { call: -1 }))).toThrow(/when\.call must be a non-negative integer/);
    expect(bad(r({ blocks: [] }, { call: '1' }))).toThrow(/when\.call must be a non-negative integer/);
    expect(bad({ rules: [{ id: 'r', times: -1, respond: { blocks: [] } }] })).toThrow(/rules\[0\] \(r\): times must be a non-negative integer/);
    expect(bad({ rules: [], fallback: {} })).toThrow(/ModelScript: fallback needs blocks/);
    expect(bad({ rules: [], fallback: { blocks: [{ type: 'text' }] } })).toThrow(/ModelScript: fallback\.blocks\[0\]\.text must be a string/);
  });

  it('scripted:fail:code — "a rule that could never work is refused when the model is made, naming it": a fail.code outside MODEL_ERROR_CODES (the ModelErrorCode union) is refused naming the rule and the code; every code of the union is accepted and thrown as that ModelError', async () => {
    const r = (code: unknown) => ({ rules: [{ id: 'boom', respond: { blocks: [], fail: { code, message: 'x' } } }] });
    expect(bad(r('model.bogus_code'))).toThrow(/rules\[0\] \(boom\): respond\.fail\.code "model\.bogus_code" is not a ModelError code \(one of "model\.rate_limited", .*"model\.unknown"\)/);
    expect(bad(r('constructor'))).toThrow(/respond\.fail\.code "constructor" is not a ModelError code/);
    expect(bad({ rules: [], fallback: { blocks: [], fail: { code: 'overloaded', message: 'x' } } })).toThrow(/ModelScript: fallback\.fail\.code "overloaded" is not a ModelError code/);
    for (const code of MODEL_ERROR_CODES) {
      const err = await lastEvent(r(code) as ModelScript, 'hi').then(() => undefined, (e: unknown) => e);
      expect(err, code).toBeInstanceOf(ModelError);
      expect((err as ModelError).code).toBe(code);
    }
  });

  it('scripted:options:code — "one code for a factory given an option it cannot use": every refusal of a ModelScript (createScriptedModel and setScript alike) and of a bad newId is TurnstateError options.invalid naming the rule or option, not a bare TypeError', async () => {
    const refusal = (f: () => unknown): unknown => {
      try {
        f();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    const cases: [() => unknown, string | RegExp][] = [
      [() => createScriptedModel({} as ModelScript), 'ModelScript: `rules` must be an array of { when?, respond }'],
      [() => createScriptedModel({ rules: [{ id: 'r' }] } as never), 'ModelScript: rules[0] (r) needs respond.blocks (an array)'],
      [() => createScriptedModel({ rules: [{ id: 'r', when: { on: 'usr' }, respond: { blocks: [] } }] } as never), /^ModelScript: rules\[0\] \(r\): when\.on "usr" is not one of "user"/],
      [() => createScriptedModel({ rules: [], fallback: { blocks: 'x' } } as never), 'ModelScript: fallback needs blocks (an array)'],
      [() => createScriptedModel({ rules: [] }).setScript({ rules: [{ times: -1, respond: { blocks: [] } }] }), 'ModelScript: rules[0]: times must be a non-negative integer'],
      [() => createScriptedModel({ rules: [] }, { newId: 42 as never }), 'ScriptedModel: newId must be a function (prefix) => id, got number'],
    ];
    for (const [f, message] of cases) {
      const e = refusal(f);
      expect(e, String(message)).toBeInstanceOf(TurnstateError);
      expect(e, String(message)).toMatchObject({ code: 'options.invalid', message: typeof message === 'string' ? message : expect.stringMatching(message) });
    }
  });

  it('scripted:rules:refused — "naming it (`rules[<i>]` and its `id`)": an id of 0 is named', () => {
    expect(bad({ rules: [{ id: 0, when: { on: 'tool' }, respond: { blocks: [] } }] })).toThrow(/rules\[0\] \(0\): when\.on "tool"/);
  });

  it('scripted:rules:never — "`tool` … for on: \'tool_result\'": a tool with any other `on` can never match and is refused', () => {
    expect(bad({ rules: [{ id: 'r', when: { on: 'rejection', tool: 'search_flights' }, respond: { blocks: [] } }] })).toThrow(/rules\[0\] \(r\): when\.tool needs when\.on "tool_result"/);
    expect(() => createScriptedModel({ rules: [{ when: { tool: 'search_flights' }, respond: { blocks: [] } }] })).not.toThrow();
  });

  it('scripted:usage:missing — "a count left out is 0": usage { inputTokens: 5 } reports outputTokens 0', async () => {
    expect((await lastEvent({ rules: [{ respond: { usage: { inputTokens: 5 }, blocks: [T('u')] } }] }, 'x')).usage).toEqual({ inputTokens: 5, outputTokens: 0 });
  });

  it('scripted:templates — "Strings in a rule\'s blocks may use `$1`..`$9` … and `$user`": $$ is a literal $, a missing group stays as written, $user is a whole word, thinking is templated', async () => {
    const ev = await lastEvent({ rules: [{ when: { text: '(\\w+) costs (\\d+)' }, respond: { blocks: [
      T('A:$1 B:$2 C:$3 E:$$1 G:$username H:US$$5 U:$user.'),
      { type: 'thinking', thinking: 'about $1 / $user' },
    ] } }] }, 'Ticket costs 99');
    expect(ev.content).toEqual([T('A:Ticket B:99 C:$3 E:$1 G:$username H:US$5 U:Ticket costs 99.'), { type: 'thinking', thinking: 'about Ticket / Ticket costs 99', signature: 'scripted' }]);
    // No `when.text`: no groups, so $1 stays as written.
    expect((await lastEvent({ rules: [{ respond: { blocks: [T('$1 costs $25')] } }] }, 'x')).content).toEqual([T('$1 costs $25')]);
  });
});
