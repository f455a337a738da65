/**
 * Tool settings (`agent.tools` trust and enablement) sent while a turn runs govern the rest of
 * that turn: with the answers of a re-submission, or with a message that joins the turn
 * (double-texting `interrupt`). Spec 004: "For server-side tools where trust: false, the server
 * stops and the client submits a permission decision for each untrusted server-side tool call."
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/api.js';
import { createSqliteStore } from '../../../src/stores/sqlite.js';
import { api, createSession, history, startHarness, stopReason, textOf, toolCalls, toolResults, turn, user, type Harness } from './helpers.js';

const respond = (text: string, turnState: string, partType = 'response') => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType } }], turnState } });

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function register(ran: string[], extra: (rt: Runtime) => void = () => {}) {
  return (rt: Runtime) => {
    for (const name of ['gated', 'wire_money']) {
      rt.registries.tools.register({ name, description: name, inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: async () => { ran.push(name); return `${name} ran`; } });
    }
    extra(rt);
  };
}

/** A tool that runs until the turn is interrupted; `started` is told each time it starts. */
function registerSlow(rt: Runtime, started: () => void): void {
  rt.registries.tools.register({
    name: 'slow',
    description: 'slow',
    inputSchema: { type: 'object' },
    scope: 'generalist',
    handler: async (_args: unknown, ctx: { signal: AbortSignal }) => {
      started();
      await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
      return 'stopped';
    },
  });
}

/** An agent that calls gated on 'go', then wire_money (of `amount`) once gated's result is in. */
function gatedThenWire(ran: string[], amount: number): Promise<Harness> {
  return startHarness({
    script: {
      rules: [
        { when: { on: 'user', text: 'go' }, respond: { blocks: [{ type: 'tool_use', name: 'gated', input: {} }] } },
        { when: { on: 'tool_result', tool: 'gated' }, respond: { blocks: [{ type: 'tool_use', name: 'wire_money', input: { amount } }] } },
        { respond: { blocks: [respond('Done.', 'complete')] } },
      ],
    },
    setup: register(ran, (rt) => rt.registries.actors.register({ name: 'assistant', tools: ['gated', 'wire_money'] })),
    agents: [{ name: 'assistant' }],
  });
}

describe('AAP tool settings sent while a turn runs', () => {
  it('aap:resubmit:trust-removed — "where trust: false, the server stops and the client submits a permission decision": trust removed with a tool_permission answer is not given to the turn\'s next call; a tool disabled there does not run', async () => {
    const ran: string[] = [];
    h = await gatedThenWire(ran, 1000);
    for (const [label, tools] of [
      ['untrusted', [{ name: 'gated' }, { name: 'wire_money' }]],
      ['disabled', [{ name: 'gated' }]],
    ] as const) {
      ran.length = 0;
      const sid = await createSession(h.url, { name: 'assistant', tools: [{ name: 'gated' }, { name: 'wire_money', trust: true }] });
      const first = await turn(h.url, sid, user('go', 'message'));
      expect(stopReason(first), label).toBe('tool_use');
      const gated = toolCalls(first).find((c) => c.name === 'gated')!;
      const r = await turn(h.url, sid, { stream: 'message', agent: { tools }, messages: [{ role: 'tool_permission', toolCallId: gated.toolCallId, granted: true }] });
      expect(r.status, label).toBe(200);
      expect(ran, label).toEqual(['gated']);
      if (label === 'untrusted') {
        // wire_money now waits for a permission, as an untrusted tool does.
        expect(stopReason(r), label).toBe('tool_use');
        expect(toolCalls(r).map((c) => c.name), label).toEqual(['wire_money']);
        expect(toolResults(r).map((x) => x.toolCallId), label).not.toContain(toolCalls(r)[0]!.toolCallId);
      } else {
        // The model was told wire_money is not enabled, and finished.
        expect(stopReason(r), label).toBe('end_turn');
      }
    }
  });

  it('aap:resubmit:trust-given — trust given with a tool_permission answer holds for the turn\'s next call: it runs inline, with no second stop', async () => {
    const ran: string[] = [];
    h = await gatedThenWire(ran, 5);
    const sid = await createSession(h.url, { name: 'assistant', tools: [{ name: 'gated' }, { name: 'wire_money' }] });
    const first = await turn(h.url, sid, user('go', 'message'));
    const gated = toolCalls(first).find((c) => c.name === 'gated')!;
    const r = await turn(h.url, sid, { stream: 'message', agent: { tools: [{ name: 'gated' }, { name: 'wire_money', trust: true }] }, messages: [{ role: 'tool_permission', toolCallId: gated.toolCallId, granted: true }] });
    expect(stopReason(r)).toBe('end_turn');
    expect(ran).toEqual(['gated', 'wire_money']);
  });

  it('aap:interrupt:trust-removed — a message that joins the running turn (doubleTexting interrupt) removing trust: the turn\'s next call of that tool stops for a permission', async () => {
    const ran: string[] = [];
    let release!: () => void;
    const slowStarted = new Promise<void>((r) => (release = r));
    h = await startHarness({
      script: {
        rules: [
          { when: { on: 'user', text: 'first' }, respond: { blocks: [respond('Working.', 'awaiting', 'ack'), { type: 'tool_use', name: 'slow', input: {} }] } },
          { when: { on: 'user', text: 'stop trusting' }, respond: { blocks: [{ type: 'tool_use', name: 'wire_money', input: { amount: 1000 } }] } },
          { respond: { blocks: [respond('Done.', 'complete')] } },
        ],
      },
      setup: register(ran, (rt) => {
        registerSlow(rt, release);
        rt.registries.actors.register({ name: 'assistant', tools: ['slow', 'wire_money'] });
      }),
      agents: [{ name: 'assistant', doubleTexting: 'interrupt' }],
    });
    // slow needs no approval, so it is not exposed: it always runs.
    const sid = await createSession(h.url, { name: 'assistant', tools: [{ name: 'wire_money', trust: true }] });
    const first = turn(h.url, sid, user('first', 'message'));
    await slowStarted;
    const r = await turn(h.url, sid, user('stop trusting wire_money', 'message', { agent: { tools: [{ name: 'wire_money' }] } }));
    await first;
    expect(ran).toEqual([]);
    expect(stopReason(r)).toBe('tool_use');
    expect(toolCalls(r).map((c) => c.name)).toContain('wire_money');
  });
});

describe('AAP: a message that joins the running turn (doubleTexting interrupt)', () => {
  it('aap:interrupt:joined — "The server appends the message to its history, runs the agent": the joined message is in history as a user message, the first response ends at the join and only the joining response carries the answer; its overrides are kept across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-aap-join-'));
    const path = join(dir, 's.db');
    let release!: () => void;
    const slowStarted = new Promise<void>((r) => (release = r));
    const script = {
      rules: [
        { when: { on: 'user' as const, text: 'first' }, respond: { blocks: [respond('Working on the first.', 'awaiting', 'ack'), { type: 'tool_use' as const, name: 'slow', input: {} }] } },
        { when: { on: 'user' as const, text: 'second' }, respond: { blocks: [respond('Second answered.', 'complete')] } },
        { respond: { blocks: [respond('First finished.', 'complete')] } },
      ],
    };
    const setup = (rt: Runtime) => {
      registerSlow(rt, release);
      rt.registries.actors.register({ name: 'assistant', tools: ['slow'] });
    };
    const agents = [{ name: 'assistant', doubleTexting: 'interrupt' as const }];
    try {
      h = await startHarness({ script, setup, agents, store: createSqliteStore({ path }) });
      const sid = await createSession(h.url, { name: 'assistant' });
      const first = turn(h.url, sid, user('first', 'message'));
      await slowStarted;
      const tools = [{ name: 'get_location', description: 'Where the user is', parameters: { type: 'object', properties: {} } }];
      const second = await turn(h.url, sid, user('second', 'message', { tools }));
      const one = await first;
      expect(stopReason(one)).toBe('end_turn');
      expect(textOf(one)).not.toContain('Second answered.');
      expect(textOf(second)).toContain('Second answered.');
      const users = (await history(h.url, sid)).filter((m) => m.role === 'user').map((m) => m.content);
      expect(users).toEqual(['first', 'second']);
      await h.close();
      h = await startHarness({ script, setup, agents, store: createSqliteStore({ path }) });
      expect((await api(h.url, `/sessions/${sid}`)).json.tools).toEqual(tools);
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('AAP: the same text sent twice under interrupt', () => {
  it('aap:interrupt:same-text — a second request with the very text of the first (a retry, "go on") still ends the first response at its join; only the joining response carries the answer', async () => {
    let release!: () => void;
    const slowStarted = new Promise<void>((r) => (release = r));
    let calls = 0;
    h = await startHarness({
      script: {
        rules: [
          { id: 'first', times: 1, when: { on: 'user' as const }, respond: { blocks: [respond('Working on it.', 'awaiting', 'ack'), { type: 'tool_use' as const, name: 'slow', input: {} }] } },
          { respond: { blocks: [respond('Second answered.', 'complete')] } },
        ],
      },
      setup: (rt: Runtime) => {
        registerSlow(rt, () => {
          calls++;
          release();
        });
        rt.registries.actors.register({ name: 'assistant', tools: ['slow'] });
      },
      agents: [{ name: 'assistant', doubleTexting: 'interrupt' }],
    });
    const sid = await createSession(h.url, { name: 'assistant' });
    const first = turn(h.url, sid, user('go on', 'message'));
    await slowStarted;
    const second = await turn(h.url, sid, user('go on', 'message'));
    const one = await first;
    expect(calls).toBe(1);
    expect(stopReason(one)).toBe('end_turn');
    expect(textOf(one)).not.toContain('Second answered.');
    expect(textOf(second)).toContain('Second answered.');
  });
});

/** An assistant whose tool `steady` runs `ms` to its end whatever happens (it ignores its signal); `started` is told when it starts. */
function registerSteady(rt: Runtime, ms: number, started: () => void): void {
  rt.registries.tools.register({
    name: 'steady',
    description: 'Runs to its end whatever happens.',
    inputSchema: { type: 'object' },
    scope: 'generalist',
    handler: async () => {
      started();
      await new Promise((r) => setTimeout(r, ms));
      return 'done';
    },
  });
  rt.registries.actors.register({ name: 'assistant', tools: ['steady'] });
}

describe('AAP: two messages join one turn', () => {
  it('aap:interrupt:two-joiners — "the joining request\'s response carries the rest": with two messages joined while a tool ran, the first response ends at the joins, the earlier joiner\'s ends at the later one, and the last joiner\'s carries the answer', async () => {
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    h = await startHarness({
      script: {
        rules: [
          { id: 'first', times: 1, when: { on: 'user' as const }, respond: { blocks: [respond('Working on it.', 'awaiting', 'ack'), { type: 'tool_use' as const, name: 'steady', input: {} }] } },
          { respond: { blocks: [respond('All three answered.', 'complete')] } },
        ],
      },
      setup: (rt: Runtime) => registerSteady(rt, 600, started),
      agents: [{ name: 'assistant', doubleTexting: 'interrupt' }],
    });
    const sid = await createSession(h.url, { name: 'assistant' });
    const first = turn(h.url, sid, user('slow one', 'message'));
    await toolStarted;
    const second = turn(h.url, sid, user('second joins', 'message'));
    await new Promise((r) => setTimeout(r, 150));
    const third = turn(h.url, sid, user('third joins', 'message'));
    const [one, two, three] = await Promise.all([first, second, third]);
    expect(stopReason(one)).toBe('end_turn');
    expect(textOf(one)).not.toContain('All three answered.');
    expect(stopReason(two)).toBe('end_turn');
    expect(textOf(two)).not.toContain('All three answered.');
    expect(textOf(three)).toContain('All three answered.');
    expect(stopReason(three)).toBe('end_turn');
    const users = (await history(h.url, sid)).filter((m: { role: string }) => m.role === 'user').map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(users.join()).toMatch(/slow one.*second joins.*third joins/);
  });

  it('aap:interrupt:requeued — "the joining request\'s response carries the rest": a message that joined a turn which then failed (its model-call budget spent) before the model saw it runs as its own turn, and its request\'s response carries that turn\'s answer', async () => {
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    h = await startHarness({
      limits: { maxModelCallsPerTurn: 1 },
      script: {
        rules: [
          { id: 'first', times: 1, when: { on: 'user' as const }, respond: { blocks: [respond('Working on it.', 'awaiting', 'ack'), { type: 'tool_use' as const, name: 'steady', input: {} }] } },
          { respond: { blocks: [respond('Answered the joiner.', 'complete')] } },
        ],
      },
      setup: (rt: Runtime) => registerSteady(rt, 300, started),
      agents: [{ name: 'assistant', doubleTexting: 'interrupt' }],
    });
    const sid = await createSession(h.url, { name: 'assistant' });
    const first = turn(h.url, sid, user('slow one', 'message'));
    await toolStarted;
    const second = turn(h.url, sid, user('second joins', 'message'));
    const [one, two] = await Promise.all([first, second]);
    // The first turn spent its one model call: it fails, and its response says so.
    expect(stopReason(one)).toBe('error');
    expect(textOf(one)).not.toContain('Answered the joiner.');
    // The joined message was answered as a turn of its own, and the response of its request carries it.
    expect(textOf(two)).toContain('Answered the joiner.');
    expect(stopReason(two)).toBe('end_turn');
    const users = (await history(h.url, sid)).filter((m: { role: string }) => m.role === 'user').map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(users.join()).toMatch(/slow one.*second joins/);
  });
});

describe('AAP: tool settings sent with a re-submission outlive a restart', () => {
  it('aap:resubmit:persisted — "The server must persist these for the lifetime of the session": trust removed with a tool_permission answer is still removed after a restart; the next turn\'s call of that tool stops for a permission', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-aap-resubmit-'));
    const path = join(dir, 's.db');
    const ran: string[] = [];
    const script = {
      rules: [
        { when: { on: 'user' as const, text: 'go' }, respond: { blocks: [{ type: 'tool_use' as const, name: 'gated', input: {} }] } },
        { when: { on: 'user' as const, text: 'wire' }, respond: { blocks: [{ type: 'tool_use' as const, name: 'wire_money', input: { amount: 5 } }] } },
        { respond: { blocks: [respond('Done.', 'complete')] } },
      ],
    };
    const setup = register(ran, (rt) => rt.registries.actors.register({ name: 'assistant', tools: ['gated', 'wire_money'] }));
    try {
      h = await startHarness({ script, setup, agents: [{ name: 'assistant' }], store: createSqliteStore({ path }) });
      const sid = await createSession(h.url, { name: 'assistant', tools: [{ name: 'gated' }, { name: 'wire_money', trust: true }] });
      const first = await turn(h.url, sid, user('go', 'message'));
      const gated = toolCalls(first).find((c) => c.name === 'gated')!;
      const untrusted = [{ name: 'gated' }, { name: 'wire_money' }];
      const r = await turn(h.url, sid, { stream: 'message', agent: { tools: untrusted }, messages: [{ role: 'tool_permission', toolCallId: gated.toolCallId, granted: true }] });
      expect(stopReason(r)).toBe('end_turn');
      await h.close();
      h = await startHarness({ script, setup, agents: [{ name: 'assistant' }], store: createSqliteStore({ path }) });
      expect((await api(h.url, `/sessions/${sid}`)).json.agent.tools).toEqual(untrusted);
      const next = await turn(h.url, sid, user('wire', 'message'));
      expect(stopReason(next)).toBe('tool_use');
      expect(toolCalls(next).map((c) => c.name)).toEqual(['wire_money']);
      expect(ran).toEqual(['gated']);
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
