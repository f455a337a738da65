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
