/**
 * What callers hand the session API is checked at its edge (src/host/input-checks.ts): "bad input
 * gets a clear error that names what was wrong, and nothing already accepted is lost".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRegistries } from '../../src/create-registries.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { Recorder, addTool, answer, harness, part, respond, toolUse } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cyclic(): Record<string, unknown> {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
}

describe('inputs: the session API refuses what it cannot keep or honour', () => {
  it('inputs:send:options — SendOptions of the wrong shape are message.invalid naming the field, before anything is accepted: a string standingApprovals never approves a tool whose name is part of it', async () => {
    const { rt } = harness({ rules: [{ when: { on: 'user' }, respond: answer(toolUse('delete', { q: 'all' })) }, { respond: answer(respond([part('response', 'done')], 'complete')) }] });
    let ran = 0;
    addTool(rt.registries, 'delete', () => (ran++, { ok: true }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'desk', tools: ['delete'] });
    const s = await rt.createSession({ actor: 'desk' });
    const bad: [unknown, RegExp][] = [
      [{ standingApprovals: 'undelete_preview' }, /opts\.standingApprovals must be an array of tool names, got string/],
      [{ enabledTools: 'deleted' }, /opts\.enabledTools must be an array of tool names/],
      [{ standingApprovals: ['delete', 7] }, /opts\.standingApprovals must be an array of tool names, got an array with a non-string/],
      [{ howToEnableTools: 42 }, /opts\.howToEnableTools must be a string/],
      [{ clientTools: { name: 'x' } }, /opts\.clientTools must be an array/],
      [{ clientTools: [{ name: 'my tool!', description: 'd', parameters: {} }] }, /opts\.clientTools\[0\]\.name must be 1-64 letters/],
      [{ clientTools: [{ name: 'pick', description: 'd' }] }, /opts\.clientTools\[0\]\.parameters must be a JSON Schema object/],
      [null, /options must be an object, got null/],
      [{ principal: 'ana' }, /opts\.principal must be a plain object/],
    ];
    for (const [opts, msg] of bad) {
      await expect(s.send('delete it', opts as never)).rejects.toMatchObject({ code: 'message.invalid', message: expect.stringMatching(msg) });
    }
    expect(await rt.history(s.id)).toEqual([]);
    expect(ran).toBe(0);
    // The right shape still asks a human.
    expect((await (await s.send('delete it', { standingApprovals: ['undelete_preview'] })).settled).finalizedBy).toBe('suspended');
    expect(ran).toBe(0);
  });

  it('inputs:send:json — on SQLite, a message whose metadata or principal is not JSON (a cycle, a BigInt, a Map) is message.invalid naming the path; the turn already running is not disturbed and completes', async () => {
    const rt = createRuntime({
      model: createScriptedModel({ rules: [{ when: { on: 'user', text: '^slow' }, respond: answer(toolUse('slow', { q: 'x' })) }, { respond: answer(respond([part('response', 're: $user')], 'complete')) }] }),
      store: createSqliteStore({ path: join(dir, 'send.db') }),
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    addTool(rt.registries, 'slow', async () => (await gate, { ok: 1 }));
    rt.registries.actors.register({ name: 'desk', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'desk' });
    const rec = new Recorder(s);
    const first = await s.send('slow one');
    await rec.waitFor((e) => e.type === 'tool.called');
    const bad: [unknown, RegExp][] = [
      [{ text: 'two', metadata: cyclic() }, /message\.metadata\.self refers back to an object that contains it/],
      [{ text: 'two', metadata: { id: 10n } }, /message\.metadata\.id is a BigInt/],
      [{ text: 'two', metadata: { tags: new Map() } }, /message\.metadata\.tags is a Map/],
      [{ text: 'two', principal: { userId: 'u', n: Number.NaN } }, /message\.principal\.n is NaN/],
    ];
    for (const [m, msg] of bad) await expect(s.send(m as never)).rejects.toMatchObject({ code: 'message.invalid', message: expect.stringMatching(msg) });
    release();
    const out = await first.settled;
    expect(out).toMatchObject({ finalizedBy: 'complete' });
    expect(out.error).toBeUndefined();
    expect((await s.executions()).map((x) => x.tool)).toEqual(['slow']);
    expect((await (await s.send('three')).settled).parts.map((p) => p.text)).toEqual(['re: three']);
    await rt.close();
  });

  it('inputs:createSession — on SQLite, an id that is not a non-empty string, a tenantId that is not a string or metadata that is not JSON is session.invalid naming it; nothing is created and listSessions keeps working for everyone', async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [] }), store: createSqliteStore({ path: join(dir, 'create.db') }) });
    rt.registries.actors.register({ name: 'desk' });
    const bad: [unknown, RegExp][] = [
      [{ actor: 'desk', id: '' }, /id must be a non-empty string/],
      [{ actor: 'desk', id: 42 }, /id must be a non-empty string, got 42/],
      [{ actor: 'desk', tenantId: 10n }, /tenantId must be a string, got bigint/],
      [{ actor: 'desk', metadata: cyclic() }, /metadata\.self refers back/],
      [{ actor: 'desk', metadata: { since: new Date(0) } }, /metadata\.since is a Date/],
      [{ actor: 'desk', metadata: 'x' }, /metadata must be a plain object/],
    ];
    for (const [opts, msg] of bad) await expect(rt.createSession(opts as never)).rejects.toMatchObject({ code: 'session.invalid', message: expect.stringMatching(msg) });
    await new Promise((r) => setImmediate(r));
    expect(await rt.listSessions()).toEqual([]);
    const ok = await rt.createSession({ actor: 'desk', tenantId: 'acme', metadata: { plan: { seats: 3 } } });
    expect((await rt.listSessions({ tenantId: 'acme' })).map((r) => r.id)).toEqual([ok.id]);
    await rt.close();
  });

  it('inputs:listSessions — a filter key other than tenantId, or a tenantId that is not a string, is session.invalid_filter: a typo never lists every tenant\'s sessions', async () => {
    const { rt } = harness({ rules: [] });
    rt.registries.actors.register({ name: 'desk' });
    await rt.createSession({ actor: 'desk', tenantId: 'acme' });
    await expect(rt.listSessions({ tenant: 'x' } as never)).rejects.toMatchObject({ code: 'session.invalid_filter', message: expect.stringContaining('unknown filter "tenant"') });
    await expect(rt.listSessions('acme' as never)).rejects.toMatchObject({ code: 'session.invalid_filter' });
    await expect(rt.listSessions({ tenantId: 7 } as never)).rejects.toMatchObject({ code: 'session.invalid_filter' });
    expect(await rt.listSessions({ tenantId: 'other' })).toEqual([]);
  });

  it('inputs:runtime:options — createRuntime refuses a model that is not a ModelPort, a store that is not a SessionStore, non-function hooks, unknown or out-of-range limits and a bad passivateAfterMs, naming them (options.invalid); a limit given as undefined keeps its default', () => {
    const model = createScriptedModel({ rules: [] });
    const bad: [unknown, RegExp][] = [
      [{ model: {} }, /needs a `model` \(a ModelPort/],
      [{ model: 'claude' }, /needs a `model`/],
      [{ model, store: {} }, /`store` must be a SessionStore/],
      [{ model, now: 'today' }, /`now` must be a function, got string/],
      [{ model, canAnswerApproval: 'yes' }, /`canAnswerApproval` must be a function/],
      [{ model, limits: { maxModelCalls: 3 } }, /limits\.maxModelCalls is not a runtime limit/],
      [{ model, limits: { maxModelCallsPerTurn: 0 } }, /limits\.maxModelCallsPerTurn must be an integer of at least 1, got 0/],
      [{ model, limits: { maxRespondRetries: -1 } }, /limits\.maxRespondRetries must be an integer of at least 0, got -1/],
      [{ model, limits: { maxFreeTextNudges: Number.NaN } }, /limits\.maxFreeTextNudges must be an integer of at least 0, got NaN/],
      [{ model, limits: { maxHandoffsPerTurn: '5' } }, /limits\.maxHandoffsPerTurn must be an integer of at least 0, got "5"/],
      [{ model, passivateAfterMs: -5 }, /`passivateAfterMs` must be an integer of at least 0, got -5/],
    ];
    for (const [opts, msg] of bad) expect(() => createRuntime(opts as never), String(msg)).toThrow(expect.objectContaining({ code: 'options.invalid', message: expect.stringMatching(msg) }));
    expect(() => createRuntime({ model, limits: { maxModelCallsPerTurn: undefined } as never })).not.toThrow();
  });

  it('inputs:runtime:registries — "bad input gets a clear error that names what was wrong": createRuntime refuses registries that are not the runtime\'s (createRegistries()) shape, naming the missing registry, method or canonical entry (options.invalid), instead of a bare TypeError at the first session', () => {
    const model = createScriptedModel({ rules: [] });
    const { turnStates: _t, ...noTurnStates } = createRegistries();
    const full = createRegistries();
    const withTurnStates = (turnStates: unknown) => ({ ...createRegistries(), turnStates });
    const canonical = createRegistries().turnStates;
    const missing = (id: string) => {
      const keep = canonical.list().filter((d) => d.id !== id);
      return withTurnStates({ get: (k: string) => keep.find((d) => d.id === k), has: (k: string) => keep.some((d) => d.id === k), list: () => keep, ids: () => keep.map((d) => d.id), register: () => undefined });
    };
    const bad: [unknown, string | RegExp][] = [
      ['registries', /`registries` must be the runtime's registries \(createRegistries\(\)\), got string/],
      [{}, '`registries.partTypes` is missing (registries: partTypes, turnStates, tools, actors, surfaceTemplates; see createRegistries())'],
      [noTurnStates, '`registries.turnStates` is missing'],
      [{ ...full, tools: [] }, '`registries.tools` is missing its get() method'],
      [withTurnStates({ get: () => undefined, list: () => [], has: () => false, register() {} }), '`registries.turnStates` is missing its ids() method'],
      [{ ...full, partTypes: { get: () => undefined, has: () => false, list: () => [], ids: () => [], register() {} } }, '`registries.partTypes` is missing its deliveryFor() method'],
      [missing('complete'), '`registries.turnStates` lacks the canonical turn state "complete"'],
      [missing('suspended'), '`registries.turnStates` lacks the canonical turn state "suspended"'],
    ];
    for (const [registries, msg] of bad) {
      expect(() => createRuntime({ model, registries: registries as never }), String(msg)).toThrow(
        expect.objectContaining({ code: 'options.invalid', message: typeof msg === 'string' ? expect.stringContaining(msg) : expect.stringMatching(msg) }),
      );
    }
    expect(() => createRuntime({ model, registries: createRegistries() })).not.toThrow();
  });

  it('tools:unknown:lists-model-tools — an unknown tool\'s result lists the tools the model was given: a compatibility actor is pointed to respond_to_user and mark_work_complete, not respond', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('nope', { q: 'x' })) },
        { respond: { blocks: [{ type: 'tool_use', name: 'mark_work_complete', input: { summary: 'done' } }] } },
      ],
    });
    addTool(rt.registries, 'search');
    rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user', tools: ['search'] });
    const s = await rt.createSession({ actor: 'voice' });
    await (await s.send('hi')).settled;
    const results = (await s.mailbox()).flatMap((m) => (m.kind === 'tool_result' && m.tool === 'nope' ? [m.content] : []));
    expect(results).toEqual(['Unknown tool "nope". Tools available to you: search, respond_to_user, mark_work_complete.']);
    expect(model.requests.length).toBeGreaterThan(1);
  });
});
