import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { createWebSocketInspector } from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { InspectionEvent } from 'xstate';
import { exportMachines } from '../../scripts/export-machines.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RuntimeOptions } from '../../src/api.js';

/** One turn: a tool call, then respond(complete). */
function oneTurnModel() {
  return createScriptedModel({
    rules: [
      {
        when: { on: 'user' },
        respond: {
          blocks: [
            { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'lookup', input: { q: 'corfu' } },
          ],
        },
      },
      {
        when: { on: 'tool_result', tool: 'lookup' },
        respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Found it.', metadata: { partType: 'response' } }], turnState: 'complete' } }] },
      },
    ],
  });
}

function setupRuntime(inspect: NonNullable<RuntimeOptions['inspect']>) {
  const rt = createRuntime({ model: oneTurnModel(), inspect });
  rt.registries.tools.register({
    name: 'lookup',
    description: 'Looks a destination up',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    scope: 'generalist',
    handler: async (a: any) => ({ found: a.q }),
  });
  rt.registries.actors.register({ name: 'alpha', tools: ['lookup'] });
  rt.registries.actors.register({ name: 'beta', tools: ['lookup'] });
  return rt;
}

const entryActorOf = (e: InspectionEvent): unknown => (e.actorRef.getSnapshot() as { context?: { entryActor?: unknown } }).context?.entryActor;

describe('runtime: inspect', () => {
  it('runtime:inspect:every-actor — createRuntime passes inspect to every actor it creates, including a reactivated session', async () => {
    const seen: InspectionEvent[] = [];
    const rt = setupRuntime((e) => seen.push(e as InspectionEvent));
    const a = await rt.createSession({ actor: 'alpha' });
    const b = await rt.createSession({ actor: 'beta' });
    const actorEvents = () => seen.filter((e): e is InspectionEvent & { type: '@xstate.actor' } => e.type === '@xstate.actor');
    expect(actorEvents().map(entryActorOf)).toEqual(['alpha', 'beta']);
    for (const e of actorEvents()) expect((e.actorRef as any).logic.id).toBe('session');

    const out = await (await a.send('find corfu')).settled;
    expect(out.finalizedBy).toBe('complete');

    const sessionActor = actorEvents()[0]!.actorRef;
    const mine = seen.filter((e) => e.actorRef === sessionActor);
    const sent = mine.filter((e): e is InspectionEvent & { type: '@xstate.event' } => e.type === '@xstate.event').map((e) => e.event.type);
    // The turn as the machine saw it: start, two model calls around a tool dispatch, respond(complete), settle.
    expect(sent.slice(0, 2)).toEqual(['xstate.init', 'START']);
    expect(sent.at(-1)).toBe('SETTLE');
    expect(sent.filter((t) => t === 'CALL')).toHaveLength(2);
    expect(sent).toEqual(expect.arrayContaining(['MODEL_DONE', 'RESPOND']));
    const snapshots = mine.filter((e): e is InspectionEvent & { type: '@xstate.snapshot' } => e.type === '@xstate.snapshot');
    expect(snapshots.length).toBeGreaterThanOrEqual(sent.length);
    const values = snapshots.map((s) => JSON.stringify((s.snapshot as any).value));
    expect(values).toContain(JSON.stringify({ turn: { awaiting: 'calling' } }));
    expect(values).toContain(JSON.stringify({ turn: { awaiting: 'dispatching' } }));
    expect(values).toContain(JSON.stringify({ turn: 'complete' }));
    const lastSnap = snapshots.at(-1)!;
    expect(lastSnap.event.type).toBe('SETTLE');
    expect((lastSnap.snapshot as any).value).toBe('idle');
    expect((lastSnap.snapshot as any).context.lastSettled).toBe('complete');
    // Session b's actor saw no turn events.
    const bActor = actorEvents()[1]!.actorRef;
    expect(seen.filter((e) => e.actorRef === bActor && e.type === '@xstate.event').map((e) => (e as any).event.type)).toEqual(['xstate.init']);

    // Passivated and reactivated: a new actor, restored from the store, is inspected too.
    expect(rt.passivateIdle()).toBe(2);
    const again = await rt.session(a.id);
    expect(again).toBeDefined();
    const after = actorEvents();
    expect(after).toHaveLength(3);
    expect(after[2]!.actorRef).not.toBe(sessionActor);
    expect(entryActorOf(after[2]!)).toBe('alpha');
    expect((after[2]!.actorRef.getSnapshot() as any).context.lastSettled).toBe('complete');
    await rt.close();
  });

  it('runtime:inspect:machine-decides — "the machine decides, the host executes": every model response reaches the session machine as one MODEL_DONE carrying its summary, and the state change it asks for is the machine\'s own RESPOND', async () => {
    const seen: InspectionEvent[] = [];
    const rt = setupRuntime((e) => seen.push(e as InspectionEvent));
    const s = await rt.createSession({ actor: 'alpha' });
    expect((await (await s.send('find corfu')).settled).finalizedBy).toBe('complete');
    const sessionActor = seen.find((e) => e.type === '@xstate.actor')!.actorRef;
    const events = seen.filter((e): e is InspectionEvent & { type: '@xstate.event' } => e.type === '@xstate.event' && e.actorRef === sessionActor);
    const fromHost = events.filter((e) => e.sourceRef === undefined).map((e) => e.event);
    const fromMachine = events.filter((e) => e.sourceRef === sessionActor).map((e) => e.event);
    // Two model calls, two responses; the host sends each as its summary, never a RESPOND of its own.
    const responses = fromHost.filter((e) => e.type === 'MODEL_DONE');
    expect(responses).toHaveLength(2);
    // The first stays in `awaiting` (no change) and calls a tool; the second asks for `complete`.
    expect(responses.map((e) => e.change?.to)).toEqual([undefined, 'complete']);
    expect(responses.map((e) => e.toolUses)).toEqual([1, 0]);
    expect(fromHost.map((e) => e.type)).not.toContain('RESPOND');
    // The machine's guard found `complete` known: it sent itself the change, right after the response.
    expect(fromMachine.map((e) => e.type)).toEqual(['RESPOND']);
    expect(fromMachine[0]!.to).toBe('complete');
    for (const r of fromMachine) expect(events[events.findIndex((e) => e.event === r) - 1]!.event.type).toBe('MODEL_DONE');
    await rt.close();
  });

  it('runtime:inspect:statelyai-server — @statelyai/inspect\'s local inspector server relays the session actor to a connected client, offline', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}`;
    const server = createInspectorServer({ port, autoOpen: false });
    const viewer = await connect(url);
    const received: any[] = [];
    viewer.on('message', (data) => received.push(JSON.parse(String(data))));
    // The session config is deeper than the default serialization depth (10): raise it so the
    // definition reaches the inspector whole.
    const inspector = createWebSocketInspector({ url, serializationDepthLimit: 32 });
    // The observer as @statelyai/inspect makes it, typed for XState's InspectionEvent: no cast
    // (build:typecheck fails if RuntimeOptions.inspect stops taking it).
    const rt = setupRuntime(inspector.inspect);
    try {
      const s = await rt.createSession({ actor: 'alpha' });
      expect((await (await s.send('find corfu')).settled).finalizedBy).toBe('complete');
      await until(() => received.some((e) => e.type === '@xstate.snapshot' && e.event?.type === 'SETTLE'));

      const actorMsg = received.find((e) => e.type === '@xstate.actor' && e.name === 'session');
      expect(actorMsg).toBeDefined();
      // The inspector draws the session machine from its config: the exported states, exactly.
      const definition = JSON.parse(actorMsg.definition);
      const exportedSession = exportMachines().find((m) => m.file === 'docs/machines/session.machine.json')!;
      expect(definition.states).toEqual(exportedSession.config.states);
      const sid = actorMsg.sessionId;
      const events = received.filter((e) => e.type === '@xstate.event' && e.sessionId === sid).map((e) => e.event.type);
      expect(events[0]).toBe('xstate.init');
      expect(events.at(-1)).toBe('SETTLE');
      expect(events).toEqual(expect.arrayContaining(['START', 'CALL', 'MODEL_DONE', 'RESPOND']));
      const snaps = received.filter((e) => e.type === '@xstate.snapshot' && e.sessionId === sid);
      const last = snaps.at(-1);
      expect(last.event.type).toBe('SETTLE');
      expect(last.snapshot.value).toBe('idle');
      expect(last.snapshot.context.lastSettled).toBe('complete');
      expect(snaps.some((e) => JSON.stringify(e.snapshot.value) === JSON.stringify({ turn: { awaiting: 'dispatching' } }))).toBe(true);

      // The bridge page the browser opens is served locally and connects back to this server.
      const page = await get(`http://127.0.0.1:${port}/`);
      expect(page).toContain(`new WebSocket('ws://localhost:${port}')`);
      expect(page).toContain('https://stately.ai/inspect');
    } finally {
      await rt.close();
      inspector.stop();
      viewer.close();
      server.stop();
    }
  });

  it('runtime:inspect:statelyai-depth — with the default serialization depth the inspector receives a truncated session definition', async () => {
    const sent: any[] = [];
    // The same conversion path as createWebSocketInspector, with a capturing adapter.
    const { createInspector } = await import('@statelyai/inspect');
    const inspector = createInspector({ send: (e) => sent.push(e) });
    const rt = setupRuntime((e) => inspector.inspect.next?.(e as InspectionEvent));
    await rt.createSession({ actor: 'alpha' });
    await until(() => sent.some((e) => e.type === '@xstate.actor'));
    const definition = JSON.parse(sent.find((e) => e.type === '@xstate.actor').definition);
    expect(JSON.stringify(definition.states.turn.states.awaiting.states)).toContain('[Object]');
    await rt.close();
  });
  it('runtime:inspect:contained — a debugging hook changes no turn: an inspector that throws (on every event, or on one kind) neither fails createSession nor the turn, and is reported once as a warning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => { if (w.code === 'TURNSTATE_INSPECTOR_ERROR') warnings.push(w.message); };
    process.on('warning', onWarning);
    try {
      for (const throwsOn of ['every', 'MODEL_DONE'] as const) {
        warnings.length = 0;
        let calls = 0;
        const rt = setupRuntime((e) => {
          calls++;
          const ev = e as { type: string; event?: { type: string } };
          if (throwsOn === 'every' || (ev.type === '@xstate.event' && ev.event?.type === 'MODEL_DONE')) throw new Error('inspector bug');
        });
        const s = await rt.createSession({ id: `contained-${throwsOn}`, actor: 'alpha' });
        const out = await (await s.send('find corfu')).settled;
        expect(out.finalizedBy).toBe('complete');
        expect(out.envelope?.parts.map((p) => p.text ?? p.metadata.partType)).toContain('Found it.');
        expect((await rt.session(`contained-${throwsOn}`))?.id).toBe(`contained-${throwsOn}`);
        await new Promise((r) => setImmediate(r));
        expect(calls).toBeGreaterThan(5);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(/inspector threw .*inspector bug/);
        await rt.close();
      }
    } finally {
      process.off('warning', onWarning);
    }
});
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Connects once the server listens (createInspectorServer starts listening asynchronously). */
async function connect(url: string, deadline = Date.now() + 5000): Promise<WebSocket> {
  for (;;) {
    try {
      return await new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(url);
        ws.once('open', () => resolve(ws));
        ws.once('error', reject);
      });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function until(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}
