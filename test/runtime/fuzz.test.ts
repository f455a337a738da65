/**
 * Random interleavings through the public API (STYLE: property tests over action sequences):
 * several sessions at once, random model behaviour, double-texted messages under every policy,
 * approvals answered at random moments (also while the turn is still being suspended),
 * held turns resumed by injections. Invariants are checked at the end of every run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SessionHandle, TurnOutcome } from '../../src/api.js';
import type { DoubleTextingPolicy } from '../../src/types.js';
import type { ModelPort, ModelRequest } from '../../src/machines/ports.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ScriptResponse } from '../../src/models/script.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { Recorder, checkHistory, checkStream, part, respond, toolUse } from './helpers.js';

type Kind =
  | 'progress'
  | 'lookup'
  | 'gated'
  | 'gated+lookup'
  | 'complete'
  | 'clarifying'
  | 'error'
  | 'passed'
  | 'free-text'
  | 'rejected'
  | 'fail'
  | 'delegated'
  | 'max-tokens'
  | 'streamed'
  | 'client'
  | 'on-hold';

/** The states that hold the actor here, and what resumes each (the rest are working or ended). */
const HELD: Record<string, string | undefined> = { suspended: 'approval-response', delegated: 'peer-envelope', 'on-hold': 'human' };
const kinds: Kind[] = ['progress', 'lookup', 'gated', 'gated+lookup', 'complete', 'clarifying', 'error', 'passed', 'free-text', 'rejected', 'fail', 'delegated', 'max-tokens', 'streamed', 'client', 'on-hold'];

function response(kind: Kind, n: number, actor: string): ScriptResponse {
  const other = actor === 'a' ? 'b' : 'a';
  switch (kind) {
    case 'progress':
      return { blocks: [respond([part('thinking', `working ${n}`)], 'awaiting')] };
    case 'lookup':
      return { blocks: [respond([part('ack', `looking ${n}`)], 'awaiting'), toolUse('lookup', { q: `q${n}` })] };
    case 'gated':
      return { blocks: [toolUse('gated', { q: `g${n}` })] };
    case 'gated+lookup':
      return { blocks: [toolUse('lookup', { q: `l${n}` }), toolUse('gated', { q: `g${n}` })] };
    case 'complete':
      return { blocks: [respond([part('response', `answer ${n}`)], 'complete')] };
    case 'clarifying':
      return { blocks: [respond([part('clarify', `which one ${n}?`)], 'clarifying')] };
    case 'error':
      return { blocks: [respond([part('error', `cannot ${n}`)], 'error')] };
    case 'passed':
      return { blocks: [respond([part('thinking', `to ${other}`)], 'passed', { passTo: other })] };
    case 'free-text':
      return { blocks: [{ type: 'text', text: `prose ${n}` }] };
    case 'rejected':
      return { blocks: [respond([{ text: 'x', metadata: { partType: 'nope' } }], 'complete')] };
    case 'fail':
      return { blocks: [], fail: { code: 'model.overloaded', message: 'busy' } };
    case 'delegated':
      return { blocks: [respond([part('ack', `asking a peer ${n}`)], 'delegated')] };
    case 'max-tokens':
      return { blocks: [toolUse('lookup', { q: `cut${n}` })], stopReason: 'max_tokens' };
    case 'client':
      return { blocks: [respond([part('ack', `asking you ${n}`)], 'awaiting'), toolUse('ask_user', { question: `q${n}` })] };
    case 'on-hold':
      return { blocks: [respond([part('thinking', `holding ${n}`)], 'on-hold')] };
    case 'streamed':
      return { chunkSize: 5, blocks: [respond([part('response', `a streamed answer number ${n} with some length`)], 'complete')] };
  }
}

/** Each session plays its own random sequence of responses, built for the calling actor. */
function perSessionModel(requests: Map<string, ModelRequest[]>, plan: Kind[][]): ModelPort {
  const next = new Map<string, { seq: Kind[]; i: number }>();
  let n = 0;
  return {
    name: 'per-session',
    stream(req, signal) {
      let st = next.get(req.sessionId);
      if (!st) {
        st = { seq: plan[next.size % plan.length]!, i: 0 };
        next.set(req.sessionId, st);
      }
      const list = requests.get(req.sessionId) ?? [];
      list.push(req);
      requests.set(req.sessionId, list);
      const kind = st.seq[st.i++];
      const r: ScriptResponse = kind ? response(kind, n++, req.actor) : { blocks: [respond([part('response', 'fallback done')], 'complete')] };
      return createScriptedModel({ rules: [{ respond: r }] }).stream(req, signal);
    },
  };
}

interface SessionPlan {
  policy: DoubleTextingPolicy;
  sends: { delayMs: number }[];
  approve: boolean[];
}

const planArb = fc.record({
  scripts: fc.array(fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }),
  sessions: fc.array(
    fc.record({
      policy: fc.constantFrom<DoubleTextingPolicy>('queue', 'interrupt', 'reject'),
      sends: fc.array(fc.record({ delayMs: fc.integer({ min: 0, max: 4 }) }), { minLength: 1, maxLength: 4 }),
      approve: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  answerEagerly: fc.boolean(),
});

async function runPlan(p: { scripts: Kind[][]; sessions: SessionPlan[]; answerEagerly: boolean }, storeKind: 'memory' | 'sqlite'): Promise<void> {
  const requests = new Map<string, ModelRequest[]>();
  const model = perSessionModel(requests, p.scripts);
  const rt = createRuntime({ model, limits: { maxModelCallsPerTurn: 6, maxHandoffsPerTurn: 2 }, ...(storeKind === 'sqlite' ? { store: createSqliteStore({ path: ':memory:' }) } : {}) });
  const ran = new Map<string, number>();
  const count = (ctxCall: string) => ran.set(ctxCall, (ran.get(ctxCall) ?? 0) + 1);
  rt.registries.tools.register({
    name: 'lookup',
    description: 'lookup',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    scope: 'generalist',
    handler: async (a: { q: string }, ctx) => {
      count(`${ctx.sessionId}/${ctx.callId}`);
      await new Promise((r) => setTimeout(r, a.q.length % 3));
      return { found: a.q };
    },
  });
  rt.registries.tools.register({
    name: 'gated',
    description: 'gated',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    scope: 'generalist',
    requiresApproval: true,
    handler: (a: { q: string }, ctx) => {
      count(`${ctx.sessionId}/${ctx.callId}`);
      return { done: a.q };
    },
  });
  rt.registries.turnStates.register({ id: 'on-hold', meta: { description: 'Waits for a human.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'human' } });
  rt.registries.actors.register({ name: 'a', tools: ['lookup', 'gated'], handoffs: ['b'] });
  rt.registries.actors.register({ name: 'b', tools: ['lookup', 'gated'], handoffs: ['a'] });

  const runs = p.sessions.map(async (sp, si) => {
    const s: SessionHandle = await rt.createSession({ actor: 'a', doubleTexting: sp.policy });
    let ai = 0;
    const answered = new Set<string>();
    const answer = (approvalId: string) => {
      if (answered.has(approvalId)) return undefined;
      answered.add(approvalId);
      const approved = sp.approve[ai++ % sp.approve.length]!;
      return s.answerApproval(approvalId, { approved, ...(approved ? {} : { reason: 'no' }) }, {}, 'api');
    };
    const eager: Promise<unknown>[] = [];
    const rec = new Recorder(s, (e) => {
      // Answer in the same tick the request is published: before the turn has even stopped.
      if (p.answerEagerly && e.type === 'approval.requested') {
        const r = answer(e.approvalId);
        if (r) eager.push(r);
      }
    });
    const accepted: string[] = [];
    const outcomes: Promise<TurnOutcome>[] = [];
    const rejected: string[] = [];
    const sends: Promise<unknown>[] = [];
    for (const [i, x] of sp.sends.entries()) {
      await new Promise((r) => setTimeout(r, x.delayMs));
      const text = `s${si}-m${i}`;
      sends.push(
        s.send(text, { clientTools: [{ name: 'ask_user', description: 'Ask the user in the browser', parameters: { type: 'object' } }] }).then(
          (ref) => {
            accepted.push(text);
            outcomes.push(ref.settled);
          },
          (e: { code?: string }) => {
            expect(e.code).toBe('session.busy');
            rejected.push(text);
          },
        ),
      );
    }
    await Promise.all(sends);
    // Drive every held turn to its end.
    for (let guard = 0; guard < 200; guard++) {
      const snap = await s.snapshot();
      if (snap.state === 'idle' && snap.queued === 0) break;
      // session-api:held — the snapshot says what resumes a held turn, and only a held one.
      expect(snap.held, `snapshot.held in "${snap.state}"`).toEqual(HELD[snap.state] === undefined ? undefined : { resumeOn: HELD[snap.state] });
      if (snap.state === 'suspended') {
        for (const a of snap.pendingApprovals) await answer(a.approvalId);
        for (const c of snap.pendingClientCalls) await s.inject({ kind: 'client-tool-result', callId: c.callId, content: 'the user said yes' }).catch(() => undefined);
      } else if (snap.state === 'on-hold') {
        await s.inject({ kind: 'resume', resumeOn: 'human', payload: { ok: true } }).catch(() => undefined);
      } else if (snap.state === 'delegated') {
        await s.inject({ kind: 'peer-envelope', envelope: { role: 'agent', parts: [part('response', 'peer')], meta: { sessionId: 'p', turnId: 'p', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' } } }).catch(() => undefined);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(eager);
    await s.idle();
    // session-api:held — a turn that stopped to wait says what resumes it; a turn that ended does not.
    for (const o of await Promise.all(outcomes)) {
      expect(o.held, `outcome.held for "${o.finalizedBy}"`).toEqual(HELD[o.finalizedBy] === undefined ? undefined : { resumeOn: HELD[o.finalizedBy] });
    }
    const snap = await s.snapshot();
    expect(snap.state, `session ${si} ends idle`).toBe('idle');

    // Invariants.
    checkStream(rec.events, rt.registries, { settledTurns: rec.of('turn.started').map((e) => e.turnId) });
    const users = (await s.mailbox()).filter((m) => m.kind === 'user' && !m.text.startsWith('[')).map((m) => (m as { text: string }).text);
    expect(users.sort(), 'every accepted message is recorded once').toEqual([...accepted].sort());
    for (const r of rejected) expect(JSON.stringify(await s.mailbox())).not.toContain(`"${r}"`);
    if (sp.policy === 'reject' || sp.policy === 'queue') expect(rec.of('turn.started').map((e) => e.input.text).sort()).toEqual([...accepted].sort());
    for (const r of rec.of('approval.resolved')) expect(rec.of('approval.resolved').filter((x) => x.approvalId === r.approvalId)).toHaveLength(1);
    const reqs = requests.get(s.id) ?? [];
    for (const req of reqs) checkHistory(req);
    // Every accepted message reached a model request that came after it (nothing left unanswered).
    if (reqs.length && accepted.length) {
      const last = reqs.at(-1)!;
      for (const a of accepted) expect(JSON.stringify(last.messages), `${a} reached the model`).toContain(a);
    }
    rec.close();
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(async () => {
      const snaps = await Promise.all((await rt.listSessions()).map(async (r) => (await rt.session(r.id))?.snapshot()));
      reject(new Error(`a run hung: ${JSON.stringify(snaps.map((x) => x && { state: x.state, queued: x.queued, pending: x.pendingApprovals.length, lastSeq: x.lastSeq }))}`));
    }, 8000);
  });
  try {
    await Promise.race([Promise.all(runs), hang]);
  } finally {
    clearTimeout(timer);
  }
  for (const [k, n] of ran) expect(n, `${k} ran once`).toBe(1);
  await rt.close();
}

describe('random interleavings through the public API', () => {
  for (const storeKind of ['memory', 'sqlite'] as const) {
    it(`fuzz:api:${storeKind} — sessions, double-texting, approvals and injections in random order keep every invariant`, async () => {
      await fc.assert(
        fc.asyncProperty(planArb, async (p) => {
          await runPlan(p, storeKind);
        }),
        { numRuns: Number(process.env.FUZZ_RUNS ?? (storeKind === 'memory' ? 60 : 30)), endOnFailure: true },
      );
    }, 120_000);
  }
});
