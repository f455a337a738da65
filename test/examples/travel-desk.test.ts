/**
 * The travel desk is an app of the package's, not of its source tree: it imports only the
 * package's public entries (`turnstate`, `turnstate/<subpath>`), so it compiles against the
 * published package and runs from dist/ (the tarball has no src/), and its README's snippet
 * imports what an app can import.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as desk from '../../examples/travel-desk/app.js';
import { MAX_FLIGHT_ROWS, registerTravelDeskSurfaces } from '../../examples/travel-desk/surfaces.js';
import * as turnstate from '../../src/index.js';

const DESK = resolve(import.meta.dirname, '..', '..', 'examples', 'travel-desk');
const importsOf = (source: string) => [...source.matchAll(/^import (.*?) from '([^']+)';/gms)].map((m) => ({ names: m[1]!, from: m[2]! }));

describe('the travel desk', () => {
  it('examples:travel-desk:public-imports — "It imports only the package\'s public entry (`turnstate`), as an app of your own would": app.ts and surfaces.ts import only the package\'s public entries (never ../../src), Node built-ins and each other', () => {
    for (const file of ['app.ts', 'surfaces.ts']) {
      const imports = importsOf(readFileSync(join(DESK, file), 'utf8'));
      expect(imports.length, file).toBeGreaterThan(0);
      for (const { from } of imports) expect(from, `${file} imports ${from}`).toMatch(/^(turnstate(\/[a-z]+)?|node:[a-z/]+|\.\/[a-z-]+\.js)$/);
    }
  });

  it('examples:travel-desk:replay-surfaces — "Both are built from what the template receives … never from state a tool handler left in the process: a replay runs no handler and renders the same surfaces": a recorded search and two bookings replay identically with the desk\'s own templates registered', async () => {
    const store = turnstate.createMemoryStore();
    const rt = turnstate.createRuntime({ model: turnstate.createScriptedModel(desk.travelDeskScript()), store });
    desk.createTravelDesk(rt);
    const s = await rt.createSession({ actor: 'triage' });
    expect((await (await s.send('flights to Corfu')).settled).finalizedBy).toBe('complete');
    for (const [text, approved] of [['book TS205', true], ['book TS101', false]] as const) {
      expect((await (await s.send(text)).settled).finalizedBy).toBe('suspended');
      await s.answerApproval((await s.snapshot()).pendingApprovals[0]!.approvalId, { approved }, { userId: 'u' }, 'test');
      await s.idle();
    }
    const booking = (await rt.history(s.id)).filter((e) => e.type === 'part.received' && e.part.metadata.kind === 'approval:book_flight');
    expect(booking).toHaveLength(2);
    // The replay registers the desk's tools and templates again (in a new process, a new desk): it runs no handler.
    const r = await turnstate.replaySession(store, s.id, { setup: (registries) => void desk.createTravelDesk({ registries } as unknown as turnstate.Runtime) });
    expect(r.diff.differences).toEqual([]);
    expect(r.servedResults).toBe(2); // the search and the approved booking (a denied call is answered, not served)
    await rt.close();
  });

  it('examples:travel-desk:flights-bound — "A surface MUST draw at most 5,000 components … a List\'s template counts once per element of its data" (surfaces:a2ui:drawn): the flights surface lists the first MAX_FLIGHT_ROWS flights a search returns (about 500 components) and says how many were found, so a search of 30,000 flights still builds a valid surface; the desk\'s own search (2 flights) draws 23', () => {
    const templates = new turnstate.SurfaceTemplateRegistry();
    registerTravelDeskSurfaces(templates, () => undefined);
    const flight = (i: number) => ({ id: `TS${i}`, from: 'London', to: 'Corfu', departs: '2026-06-12T07:40:00Z', price: i, currency: 'EUR' });
    const build = (n: number) => turnstate.buildSurfaces(templates, [{ kind: 'flights', data: { flights: Array.from({ length: n }, (_, i) => flight(i)) }, sessionId: 'S', turnId: 'T', callId: 'c' }]);
    for (const [n, title, rows] of [[2, '2 flights found', 2], [30_000, `30000 flights found, the first ${MAX_FLIGHT_ROWS} shown`, MAX_FLIGHT_ROWS]] as const) {
      const { parts, errors } = build(n);
      expect(errors).toEqual([]);
      const messages = (parts[0]!.data as { messages: { updateComponents?: { components: { id: string; text?: unknown }[] }; updateDataModel?: { value: { flights: unknown[] } } }[] }).messages;
      expect(messages.find((m) => m.updateComponents)!.updateComponents!.components.find((c) => c.id === 'title')!.text).toBe(title);
      expect(messages.find((m) => m.updateDataModel)!.updateDataModel!.value.flights).toHaveLength(rows);
      // root, title and the List, and the rest a row's: MAX_FLIGHT_ROWS rows stay far below the bound.
      const drawn = 3 + (messages.find((m) => m.updateComponents)!.updateComponents!.components.length - 3) * rows;
      expect(drawn).toBeLessThanOrEqual(n === 2 ? 23 : 503);
    }

  });

  it('examples:travel-desk:readme-imports — the README snippet imports from \'turnstate\' and this folder (not ./src or ./examples paths that work only from the repository root), and each name it imports is exported there', () => {
    const readme = readFileSync(join(DESK, 'README.md'), 'utf8');
    const snippet = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
    const modules: Record<string, Record<string, unknown>> = { turnstate, './app.js': desk };
    const imports = importsOf(snippet);
    expect(imports.map((i) => i.from)).toEqual(['turnstate', './app.js']);
    for (const { names, from } of imports) {
      for (const name of names.replace(/[{}]/g, '').split(',').map((n) => n.trim()).filter(Boolean)) {
        expect(modules[from]![name], `${from}: ${name}`).toBeTypeOf('function');
      }
    }
  });
});
