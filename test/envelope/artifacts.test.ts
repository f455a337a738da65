/**
 * Artifacts end to end (docs/concepts/artifacts.md): a tool stores one through ctx.artifacts,
 * the actor refers to it in an `artifact` part (checked against the store), the HTTP server
 * serves it to the session's tenant only.
 */
import { describe, expect, it } from 'vitest';
import type { ArtifactRef } from '../../src/registries/types.js';
import type { ArtifactStore } from '../../src/machines/ports.js';
import { createMemoryArtifactStore } from '../../src/stores/artifacts-memory.js';
import { replaySession } from '../../src/replay/index.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createArtifactsTransport } from '../../src/transports/artifacts.js';
import { startServer } from '../../src/transports/server.js';
import type { Authenticate } from '../../src/transports/types.js';
import { answer, dataPart, harness, part, respond, toolUse } from '../runtime/helpers.js';
import { registerExportFares } from './turn.fixture.js';

const CSV = 'flight,price\nTS205,42\nTS101,94\n';
const CSV_BYTES = Buffer.byteLength(CSV);

/** A travel-desk-like runtime: `export_fares` writes a CSV artifact; the actor refers to it by the id it got back. */
function setup(artifactPart: (id: string) => Record<string, unknown>, opts: { artifacts?: ArtifactStore; store?: ReturnType<typeof createMemoryStore> } = {}) {
  const script = {
    rules: [
      { when: { on: 'user' as const }, respond: answer(toolUse('export_fares', {})) },
      {
        when: { on: 'tool_result' as const, tool: 'export_fares', text: '"artifactId":"(art_[A-Za-z0-9_-]+)"' },
        respond: answer(respond([part('response', 'Here are the fares.'), dataPart('artifact', artifactPart('$1'))], 'complete')),
      },
      { when: { on: 'rejection' as const }, respond: answer(respond([part('response', 'I could not attach the file.')], 'complete')) },
    ],
  };
  const h = harness(script, { ...(opts.artifacts ? { artifacts: opts.artifacts } : {}), ...(opts.store ? { store: opts.store } : {}) });
  const refs: ArtifactRef[] = [];
  const register = (registries: typeof h.rt.registries) => registerExportFares(registries, CSV, refs);
  register(h.rt.registries);
  return { ...h, refs, register };
}

describe('artifacts: produced by tools, referenced by parts, served over HTTP', () => {

  it('artifacts:tool:put — a tool stores an artifact with ctx.artifacts.put and gets { artifactId, mimeType, sizeBytes }; the id carries 128 random bits', async () => {
    const { rt, refs } = setup((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES }));
    const s = await rt.createSession({ actor: 'desk', tenantId: 'acme' });
    await (await s.send('export the fares')).settled;
    expect(refs).toHaveLength(1);
    const ref = refs[0]!;
    expect(ref).toEqual({ artifactId: expect.stringMatching(/^art_[A-Za-z0-9_-]{22}$/), mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' });
    expect(Buffer.from(ref.artifactId.slice(4), 'base64url')).toHaveLength(16);
    expect(rt.artifacts.head(ref.artifactId)).toMatchObject({ sessionId: s.id, tenantId: 'acme', sizeBytes: CSV_BYTES });
    expect(Buffer.from((await rt.artifacts.read(ref.artifactId))!).toString('utf8')).toBe(CSV);
    await rt.close();
  });

  it('artifacts:part:reference — an artifact part naming the tool\'s artifact with its mimeType and sizeBytes is delivered and settles in the envelope', async () => {
    const { rt, refs } = setup((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' }));
    const s = await rt.createSession({ actor: 'desk' });
    const out = await (await s.send('export the fares')).settled;
    expect(out.finalizedBy).toBe('complete');
    const artifact = out.parts.find((p) => p.metadata.partType === 'artifact');
    expect(artifact?.data).toEqual({ artifactId: refs[0]!.artifactId, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' });
    await rt.close();
  });

  const rejected: [string, (id: string) => Record<string, unknown>, string, RegExp][] = [
    ['an unknown artifactId', () => ({ artifactId: 'art_AAAAAAAAAAAAAAAAAAAAAA', mimeType: 'text/csv', sizeBytes: CSV_BYTES }), '/parts/1/data/artifactId', /no artifact "art_AAAAAAAAAAAAAAAAAAAAAA" exists/],
    ['a wrong sizeBytes', (id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: 1 }), '/parts/1/data/sizeBytes', new RegExp(`is ${CSV_BYTES} bytes, not 1`)],
    ['a wrong mimeType', (id) => ({ artifactId: id, mimeType: 'text/html', sizeBytes: CSV_BYTES }), '/parts/1/data/mimeType', /is "text\/csv", not "text\/html"/],
  ];
  for (const [what, make, path, message] of rejected) {
    it(`artifacts:part:checked — an artifact part with ${what} is a respond() rule violation (respond:artifact:known) naming ${path}; the model is told and retries`, async () => {
      const { rt } = setup(make);
      const s = await rt.createSession({ actor: 'desk' });
      const out = await (await s.send('export the fares')).settled;
      expect(out.parts.some((p) => p.metadata.partType === 'artifact')).toBe(false);
      expect(out.parts.map((p) => p.text).filter(Boolean)).toEqual(['I could not attach the file.']);
      const rejection = (await s.mailbox()).find((m) => m.kind === 'tool_result' && m.tool === 'respond' && m.isError);
      expect(rejection?.kind === 'tool_result' && rejection.content).toContain(`${path}: `);
      expect(rejection?.kind === 'tool_result' && rejection.content).toMatch(message);
      expect(rejection?.kind === 'tool_result' && rejection.content).toContain('[respond:artifact:known]');
      await rt.close();
    });
  }

  it('artifacts:part:tenant — an artifact of another tenant is reported exactly like a missing one', async () => {
    const store = createMemoryArtifactStore();
    const other = await store.put({ data: new TextEncoder().encode(CSV), mimeType: 'text/csv', sessionId: 'elsewhere', tenantId: 'globex' });
    const { rt } = setup(() => ({ artifactId: other.artifactId, mimeType: 'text/csv', sizeBytes: CSV_BYTES }), { artifacts: store });
    const s = await rt.createSession({ actor: 'desk', tenantId: 'acme' });
    await (await s.send('export the fares')).settled;
    const rejection = (await s.mailbox()).find((m) => m.kind === 'tool_result' && m.tool === 'respond' && m.isError);
    expect(rejection?.kind === 'tool_result' && rejection.content).toContain(`/parts/1/data/artifactId: no artifact "${other.artifactId}" exists`);
    await rt.close();
  });

  it('artifacts:replay — a recorded session whose actor referred to an artifact replays identically (the replay knows the artifacts the recording named; no tool runs)', async () => {
    const store = createMemoryStore();
    const { rt, register } = setup((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES }), { store });
    const s = await rt.createSession({ actor: 'desk', tenantId: 'acme' });
    await (await s.send('export the fares')).settled;
    const r = await replaySession(store, s.id, { setup: register });
    expect(r.diff.differences).toEqual([]);
    expect(r.diff.identical).toBe(true);
    expect(r.events.some((e) => e.type === 'part.received' && e.part.metadata.partType === 'artifact')).toBe(true);
    await rt.close();
  });

  it('artifacts:http:tenant — GET /artifacts/{id} serves the bytes to the session\'s tenant; another tenant, an unknown id and a malformed id all get the same 404', async () => {
    const { rt, refs } = setup((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES }));
    const tenants: Record<string, string> = { 'key-acme': 'acme', 'key-globex': 'globex' };
    const authenticate: Authenticate = (req) => {
      const t = tenants[(req.headers.authorization ?? '').replace(/^Bearer /, '')];
      return t ? { ok: true, principal: { userId: `u-${t}`, tenantId: t } } : { ok: false, status: 401, message: 'who are you?' };
    };
    const server = await startServer({ runtime: rt, port: 0, transports: [createArtifactsTransport({ runtime: rt, artifacts: rt.artifacts, authenticate })] });
    try {
      const s = await rt.createSession({ actor: 'desk', tenantId: 'acme' });
      await (await s.send('export the fares')).settled;
      const id = refs[0]!.artifactId;
      const get = (path: string, key?: string, method = 'GET') => fetch(server.url + path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });

      const ok = await get(`/artifacts/${id}`, 'key-acme');
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toBe('text/csv');
      expect(ok.headers.get('content-length')).toBe(String(CSV_BYTES));
      expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
      expect(ok.headers.get('content-disposition')).toBe(`inline; filename="fares.csv"; filename*=UTF-8''fares.csv`);
      expect(await ok.text()).toBe(CSV);
      // RFC 5987: ' ( ) * are not attr-chars and are percent-encoded in filename*.
      const odd = await rt.artifacts.put({ data: new TextEncoder().encode('x'), mimeType: 'text/csv', name: "it's (1)*.csv", sessionId: s.id, tenantId: 'acme' });
      const oddGet = await get(`/artifacts/${odd.artifactId}`, 'key-acme');
      expect(oddGet.headers.get('content-disposition')).toBe(`inline; filename="it's (1)*.csv"; filename*=UTF-8''it%27s%20%281%29%2A.csv`);

      expect((await get(`/artifacts/${id}`)).status).toBe(401);
      const bodies: string[] = [];
      for (const [path, key] of [[`/artifacts/${id}`, 'key-globex'], ['/artifacts/art_AAAAAAAAAAAAAAAAAAAAAA', 'key-acme'], ['/artifacts/..%2Fturnstate.db', 'key-acme']] as const) {
        const r = await get(path, key);
        expect(r.status, path).toBe(404);
        bodies.push(await r.text());
      }
      expect(new Set(bodies).size).toBe(1);
      expect(JSON.parse(bodies[0]!)).toEqual({ error: { code: 'artifact.not_found', message: 'no such artifact' } });
      expect((await get(`/artifacts/${id}`, 'key-acme', 'DELETE')).status).toBe(405);
    } finally {
      await server.close();
    }
  });
});
