import { describe, expect, it } from 'vitest';
import { RegistrationError } from '../../src/errors.js';
import { ActorRegistry } from '../../src/registries/actors.js';
import type { ActorDefinition } from '../../src/registries/types.js';

function expectRule(fn: () => unknown, rule: string, ...mentions: string[]): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(RegistrationError);
  expect((err as RegistrationError).rule).toBe(rule);
  for (const m of mentions) expect((err as RegistrationError).message).toContain(m);
}

const triage: ActorDefinition = {
  name: 'triage',
  system: 'Sort incoming requests.',
  tools: ['task_get', 'task_list'],
  handoffs: ['drafter'],
};

describe('ActorRegistry', () => {
  it('actors:register — an actor registers with tools and handoffs to not-yet-registered names', () => {
    const r = new ActorRegistry();
    const def = r.register(triage);
    expect(def).toEqual(triage);
    expect(r.get('triage')).toBe(def);
    expect(r.has('triage')).toBe(true);
    expect(r.has('drafter')).toBe(false);
    expect(r.list()).toEqual([def]);
  });

  it('actors:register:copied — the stored definition is a frozen copy', () => {
    const r = new ActorRegistry();
    const input: ActorDefinition = { name: 'triage', tools: ['a'] };
    const def = r.register(input);
    input.tools!.push('b');
    expect(def.tools).toEqual(['a']);
    expect(() => {
      (def.tools as string[]).push('c');
    }).toThrow(TypeError);
  });

  it('actors:name:invalid — names must start with a letter and use letters, digits, _ or -', () => {
    const r = new ActorRegistry();
    for (const name of ['', '1st', 'has space', 'a.b', 'x'.repeat(65)]) expectRule(() => r.register({ name }), 'actors:name:invalid');
  });

  it('actors:duplicate:rejected — a second actor with the same name is rejected naming it', () => {
    const r = new ActorRegistry();
    r.register(triage);
    expectRule(() => r.register({ name: 'triage' }), 'actors:duplicate:rejected', "'triage'");
    expect(r.get('triage')!.tools).toEqual(['task_get', 'task_list']);
  });

  it('actors:handoffs:not-self — an actor listing itself in handoffs is rejected', () => {
    expectRule(() => new ActorRegistry().register({ name: 'triage', handoffs: ['drafter', 'triage'] }), 'actors:handoffs:not-self', "'triage'");
  });

  it('actors:tools:duplicate — a tool name listed twice is rejected naming it', () => {
    expectRule(() => new ActorRegistry().register({ name: 'triage', tools: ['task_get', 'task_list', 'task_get'] }), 'actors:tools:duplicate', "'task_get'");
  });

  it('actors:handoffs:duplicate — a handoff target listed twice is rejected', () => {
    expectRule(() => new ActorRegistry().register({ name: 'triage', handoffs: ['drafter', 'drafter'] }), 'actors:handoffs:duplicate', "'drafter'");
  });

  it('actors:tools:reserved — respond, respond_to_user and mark_work_complete are provided by the runtime, not listed', () => {
    for (const t of ['respond', 'respond_to_user', 'mark_work_complete']) {
      expectRule(() => new ActorRegistry().register({ name: 'triage', tools: [t] }), 'actors:tools:reserved', `'${t}'`);
    }
  });

  it('actors:fields — malformed fields are rejected naming the field', () => {
    const r = new ActorRegistry();
    expectRule(() => r.register({ name: 'a', tools: 'task_get' as never }), 'actors:tools:strings');
    expectRule(() => r.register({ name: 'a', tools: ['bad name'] }), 'actors:tools:invalid-name');
    expectRule(() => r.register({ name: 'a', handoffs: ['9x'] }), 'actors:handoffs:invalid-name');
    expectRule(() => r.register({ name: 'a', maxTokens: 0 }), 'actors:maxTokens:positive-integer');
    expectRule(() => r.register({ name: 'a', maxModelCalls: 1.5 }), 'actors:maxModelCalls:positive-integer');
    expectRule(() => r.register({ name: 'a', maxRespondRetries: -1 }), 'actors:maxRespondRetries:non-negative-integer');
    expectRule(() => r.register({ name: 'a', thinking: { budgetTokens: 0 } }), 'actors:thinking:budget');
    // The Messages API: budget_tokens "Must be ≥1024" (every turn of such an actor failed 400).
    expectRule(() => r.register({ name: 'a', thinking: { budgetTokens: 500 } }), 'actors:thinking:budget', 'at least 1024', 'got 500');
    expectRule(() => r.register({ name: 'a', compat: 'openai' as never }), 'actors:compat:invalid');
    expectRule(() => r.register({ name: 'a', compat: { mode: 'speak' } as never }), 'actors:compat:invalid', 'mode "speak"');
    expectRule(() => r.register({ name: 'a', compat: { mode: 'respond_to_user', deliverDrafts: 'yes' } as never }), 'actors:compat:invalid', 'deliverDrafts must be a boolean');
    expectRule(() => r.register({ name: 'a', compat: { mode: 'respond_to_user', drafts: true } as never }), 'actors:compat:invalid', "'drafts'");
    expectRule(() => r.register({ name: 'a', system: 42 as never }), 'actors:system:string');
    expectRule(() => r.register({ name: 'a', tool: ['x'] } as never), 'actors:field:unknown', "'tool'");
    expect(r.has('a')).toBe(false);
    expect(r.register({ name: 'a', maxRespondRetries: 0, compat: 'respond_to_user', thinking: { budgetTokens: 1024 } }).name).toBe('a');
    expect(r.register({ name: 'b', compat: { mode: 'respond_to_user', deliverDrafts: true } }).compat).toEqual({ mode: 'respond_to_user', deliverDrafts: true });
  });

  it('actors:bounds:safe-integers — "maxModelCalls / maxRespondRetries take the place of the runtime\'s limits": like limits.maxModelCallsPerTurn and limits.maxRespondRetries they are safe integers (2^53+2 and 1e300 are refused, as maxTokens), and a refusal shows the value received', () => {
    const r = new ActorRegistry();
    for (const key of ['maxTokens', 'maxModelCalls'] as const) {
      for (const [v, shown] of [[2 ** 53 + 2, '9007199254740994'], [1e300, '1e+300'], ['1000', '"1000"'], [-0, '-0'], [Number.NaN, 'NaN']] as const) {
        expectRule(() => r.register({ name: 'a', [key]: v } as never), `actors:${key}:positive-integer`, `${key} must be an integer of at least 1, got ${shown}`);
      }
    }
    for (const [v, shown] of [[2 ** 53 + 2, '9007199254740994'], [-1, '-1'], ['2', '"2"'], [1.5, '1.5']] as const) {
      expectRule(() => r.register({ name: 'a', maxRespondRetries: v as number }), 'actors:maxRespondRetries:non-negative-integer', `maxRespondRetries must be an integer of at least 0, got ${shown}`);
    }
    expect(r.has('a')).toBe(false);
    expect(r.register({ name: 'a', maxTokens: Number.MAX_SAFE_INTEGER, maxModelCalls: Number.MAX_SAFE_INTEGER, maxRespondRetries: -0 }).name).toBe('a');
  });

  it('actors:compat:no-handoffs — "passTo names a known handoff target": a compatibility actor has no respond() to pass the turn with, so handoffs on it are refused naming both fields (AAP /meta and its card would advertise what it can never reach)', () => {
    const r = new ActorRegistry();
    expectRule(() => r.register({ name: 'voice', compat: 'respond_to_user', handoffs: ['flights'] }), 'actors:compat:no-handoffs', 'handoffs', 'compat');
    expectRule(() => r.register({ name: 'voice', compat: { mode: 'respond_to_user', deliverDrafts: true }, handoffs: ['flights'] }), 'actors:compat:no-handoffs');
    expect(r.has('voice')).toBe(false);
    // An empty list asks for nothing; a compatibility actor may still be a hand-off target.
    expect(r.register({ name: 'voice', compat: 'respond_to_user', handoffs: [] }).name).toBe('voice');
    expect(r.register({ name: 'front', handoffs: ['voice'] }).handoffs).toEqual(['voice']);
  });

  it('registries:per-instance — an actor registered in one registry is not in another', () => {
    const a = new ActorRegistry();
    a.register(triage);
    expect(new ActorRegistry().has('triage')).toBe(false);
  });
});
