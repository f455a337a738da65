/**
 * `GET /artifacts/{id}` over a real server (docs/concepts/artifacts.md): an artifact lives as long
 * as its session ("artifacts:session:owns", "artifacts:http:session"), a phone opens it through a
 * signed link ("artifacts:link:signed", "artifacts:channel:sms"), the body is streamed from the
 * store ("artifacts:http:stream") and caches revalidate ("artifacts:http:cache"). Real runtime,
 * real AAP transport, real SQLite and file stores in a temp directory.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../src/api.js';
import { createArtifactLinks } from '../../src/envelope/artifact-links.js';
import { renderForChannel } from '../../src/envelope/channels.js';
import { createDelivery } from '../../src/envelope/delivery.js';
import { TurnstateError } from '../../src/errors.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createFileArtifactStore } from '../../src/stores/artifacts-fs.js';
import { createMemoryArtifactStore } from '../../src/stores/artifacts-memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { createArtifactsTransport } from '../../src/transports/artifacts.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import type { Authenticate } from '../../src/transports/types.js';
import { answer, dataPart, part, respond, toolUse } from '../runtime/helpers.js';

const CSV = 'flight,price\nTS205,42\n';
const CSV_BYTES = Buffer.byteLength(CSV);
const SECRET = 'a-test-secret-of-at-least-32-bytes!!';
const KEYS: Record<string, { userId: string; tenantId?: string }> = { 'key-a': { userId: 'alice', tenantId: 'A' }, 'key-b': { userId: 'bob', tenantId: 'B' } };
const authenticate: Authenticate = (req) => {
  const h = req.headers.authorization;
  if (!h) return { ok: false, status: 401, message: 'need key' };
  const p = KEYS[h.replace(/^Bearer /, '')];
  return p ? { ok: true, principal: p } : { ok: false, status: 403, message: 'bad key' };
};
const A = { authorization: 'Bearer key-a' };
const B = { authorization: 'Bearer key-b' };

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-artifacts-http-'));
  dirs.push(d);
  return d;
};

/** A travel desk whose `export_fares` tool stores a CSV the actor then attaches. */
function deskRuntime(opts: { store?: ReturnType<typeof createSqliteStore>; artifacts?: ArtifactStore } = {}): TurnstateRuntime {
  const rt = createRuntime({
    model: createScriptedModel({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('export_fares', {})) },
        {
          when: { on: 'tool_result', tool: 'export_fares', text: '"artifactId":"(art_[A-Za-z0-9_-]+)"' },
          respond: answer(respond([part('response', 'Here are the fares.'), dataPart('artifact', { artifactId: '$1', mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' })], 'complete')),
        },
      ],
    }),
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.artifacts ? { artifacts: opts.artifacts } : {}),
  });
  rt.registries.tools.register({
    name: 'export_fares',
    description: 'Exports the fares as CSV.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    scope: 'generalist',
    handler: async (_args, ctx) => ctx.artifacts!.put({ mimeType: 'text/csv', data: CSV, name: 'fares.csv' }),
  });
  rt.registries.actors.register({ name: 'desk', system: 'x', tools: ['export_fares'] });
  return rt;
}

/** Runs one export turn in a new session of tenant A; the session and the artifact's id. */
async function exportFares(rt: TurnstateRuntime) {
  const s = await rt.createSession({ actor: 'desk', tenantId: 'A' });
  const outcome = await (await s.send('export the fares')).settled;
  const id = String(outcome.parts.find((p) => p.metadata.partType === 'artifact')?.data?.artifactId);
  return { session: s, outcome, id };
}

const get = (server: RunningServer, path: string, headers: Record<string, string> = {}, method = 'GET') => fetch(server.url + path, { method, headers });

describe('artifacts over HTTP: an artifact lives as long as its session', () => {
  it('artifacts:session:owns — "deleting the session (AAP DELETE /sessions/{id}) deletes its artifacts, bytes and records": GET is 404 after, the files are gone, and stay gone after a restart', async () => {
    const dir = tempDir();
    const open = () => {
      const rt = deskRuntime({ store: createSqliteStore({ path: join(dir, 'db.sqlite') }), artifacts: createFileArtifactStore({ dir: join(dir, 'artifacts') }) });
      return startServer({ runtime: rt, port: 0, transports: [createAapTransport({ runtime: rt, authenticate }), createArtifactsTransport({ runtime: rt, artifacts: rt.artifacts, authenticate })] }).then((server) => ({ rt, server }));
    };
    let { rt, server } = await open();
    const { session, id } = await exportFares(rt);
    expect(existsSync(join(dir, 'artifacts', `${id}.bin`))).toBe(true);
    const ok = await get(server, `/artifacts/${id}`, A);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe(CSV);
    expect((await get(server, `/artifacts/${id}`, B)).status).toBe(404);

    const del = await fetch(`${server.url}/sessions/${session.id}`, { method: 'DELETE', headers: A });
    expect(del.status).toBe(204);
    for (const method of ['GET', 'HEAD']) {
      const gone = await get(server, `/artifacts/${id}`, A, method);
      expect(gone.status, method).toBe(404);
      if (method === 'GET') expect(await gone.json()).toEqual({ error: { code: 'artifact.not_found', message: 'no such artifact' } });
    }
    expect(readdirSync(join(dir, 'artifacts')).filter((f) => f.startsWith(id))).toEqual([]);
    await server.close();

    ({ rt, server } = await open());
    expect((await get(server, `/artifacts/${id}`, A)).status).toBe(404);
    await server.close();
  });

  it('artifacts:http:session — "a store without deleteSession keeps working, but … nothing serves them": an artifact whose session was deleted is a 404 though the store still holds it', async () => {
    const backing = createMemoryArtifactStore();
    const plain: ArtifactStore = { kind: 'plain', put: (i) => backing.put(i), head: (id) => backing.head(id), read: (id) => backing.read(id) };
    const rt = deskRuntime({ artifacts: plain });
    const server = await startServer({ runtime: rt, port: 0, transports: [createArtifactsTransport({ runtime: rt, artifacts: plain, authenticate })] });
    try {
      const { session, id } = await exportFares(rt);
      expect((await get(server, `/artifacts/${id}`, A)).status).toBe(200);
      expect(await rt.deleteSession(session.id)).toBe(true);
      expect(plain.head(id)).toBeDefined();
      expect((await get(server, `/artifacts/${id}`, A)).status).toBe(404);
      expect((await get(server, `/artifacts/${id}`, A, 'HEAD')).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('artifacts: none outlives its session', () => {
  for (const kind of ['memory', 'file'] as const) {
    it(`artifacts:session:owns — "no artifact outlives its session": a tool still running when its session is deleted has its put refused (artifact.session_gone) and keeps nothing, ${kind} store`, async () => {
      const artifacts = kind === 'memory' ? createMemoryArtifactStore() : createFileArtifactStore({ dir: join(tempDir(), 'artifacts') });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let put: Promise<unknown> | undefined;
      const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: answer(toolUse('slow_export', {})) }] }), artifacts });
      rt.registries.tools.register({
        name: 'slow_export',
        description: 'Exports slowly.',
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        scope: 'generalist',
        handler: async (_args, ctx) => {
          await gate;
          put = ctx.artifacts!.put({ mimeType: 'text/csv', data: CSV, name: 'late.csv' });
          return put;
        },
      });
      rt.registries.actors.register({ name: 'desk', system: 'x', tools: ['slow_export'] });
      const s = await rt.createSession({ actor: 'desk', id: 'sess-late', tenantId: 'A' });
      void s.send('export');
      await expect.poll(async () => (await rt.history('sess-late')).some((e) => e.type === 'tool.called')).toBe(true);
      expect(await rt.deleteSession('sess-late')).toBe(true);
      release();
      await expect.poll(() => put !== undefined).toBe(true);
      await expect(put).rejects.toMatchObject({ code: 'artifact.session_gone', message: expect.stringContaining('sess-late') });
      // Nothing was kept: a session made again with the same id finds no artifact of the old one.
      expect(await artifacts.deleteSession!('sess-late')).toBe(0);
      await rt.close();
    });
  }

  it('artifacts:link:signed — "only while the artifact\'s session exists": with a store that cannot delete, a link stays dead when another tenant makes a session of the same id', async () => {
    const backing = createMemoryArtifactStore();
    const plain: ArtifactStore = { kind: 'plain', put: (i) => backing.put(i), head: (id) => backing.head(id), read: (id) => backing.read(id) };
    const rt = deskRuntime({ artifacts: plain });
    const links = createArtifactLinks({ baseUrl: () => server.url, secret: SECRET });
    const server: RunningServer = await startServer({ runtime: rt, port: 0, transports: [createArtifactsTransport({ runtime: rt, artifacts: plain, authenticate, artifactLinks: links })] });
    try {
      const s = await rt.createSession({ actor: 'desk', id: 'conv-42', tenantId: 'A' });
      const outcome = await (await s.send('export the fares')).settled;
      const id = String(outcome.parts.find((p) => p.metadata.partType === 'artifact')?.data?.artifactId);
      const link = links.url(id);
      expect((await fetch(link)).status).toBe(200);
      await rt.deleteSession('conv-42');
      expect((await fetch(link)).status).toBe(404);
      await rt.createSession({ actor: 'desk', id: 'conv-42', tenantId: 'B' });
      expect((await fetch(link)).status).toBe(404);
      expect((await get(server, `/artifacts/${id}`, B)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('artifacts:link:signed — ttlSeconds is at most 10 years: a lifetime whose links could never be verified is refused', () => {
    expect(() => createArtifactLinks({ baseUrl: 'https://desk.example.com', secret: SECRET, ttlSeconds: 1e12 })).toThrow(/ttlSeconds must be a whole number of seconds from 1 to 315360000/);
    const links = createArtifactLinks({ baseUrl: 'https://desk.example.com', secret: SECRET, ttlSeconds: 315_360_000 });
    const u = new URL(links.url('art_x'));
    expect(links.verify('art_x', u.searchParams.get('exp'), u.searchParams.get('sig'))).toEqual({ ok: true });
  });
});

describe('artifacts over HTTP: signed links', () => {
  it('artifacts:link:signed — "the route accepts it without an Authorization header until it expires and only while the artifact\'s session exists"; a changed id, exp or sig is 403 artifact.link_invalid, an expired one 403 artifact.link_expired', async () => {
    let clock = Date.parse('2030-01-01T00:00:00Z');
    const rt = deskRuntime();
    const links = createArtifactLinks({ baseUrl: () => server.url, secret: SECRET, ttlSeconds: 3600, now: () => clock });
    const server: RunningServer = await startServer({ runtime: rt, port: 0, transports: [createArtifactsTransport({ runtime: rt, artifacts: rt.artifacts, authenticate, artifactLinks: links })] });
    try {
      const { session, outcome, id } = await exportFares(rt);
      const { id: otherId } = await exportFares(rt);
      const delivery = createDelivery(rt.registries.partTypes);
      const sms = renderForChannel(delivery, 'sms', delivery.buffered(outcome), { artifactLinks: links });
      const link = /^Here are the fares\.\n\nfares\.csv: (\S+)$/.exec(sms.text)?.[1];
      expect(link).toMatch(new RegExp(`^${server.url}/artifacts/${id}\\?exp=${Date.parse('2030-01-01T01:00:00Z') / 1000}&sig=[A-Za-z0-9_-]{43}$`));
      const opened = await fetch(link!);
      expect(opened.status).toBe(200);
      expect(opened.headers.get('content-type')).toBe('text/csv');
      expect(await opened.text()).toBe(CSV);

      const u = new URL(link!);
      const sig = u.searchParams.get('sig')!;
      const tampered = [
        `/artifacts/${otherId}${u.search}`, // another artifact of the same tenant
        `/artifacts/${id}?exp=${Number(u.searchParams.get('exp')) + 3600}&sig=${sig}`,
        `/artifacts/${id}?exp=${u.searchParams.get('exp')}&sig=${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`,
        `/artifacts/${id}?exp=${u.searchParams.get('exp')}&sig=${sig}x`,
        `/artifacts/${id}?exp=${u.searchParams.get('exp')}`,
      ];
      for (const path of tampered) {
        const r = await get(server, path);
        expect(r.status, path).toBe(403);
        expect((await r.json()).error.code, path).toBe('artifact.link_invalid');
      }
      expect((await get(server, `/artifacts/${id}`)).status).toBe(401); // no link, no credential

      clock += 3601_000;
      const expired = await fetch(link!);
      expect(expired.status).toBe(403);
      expect((await expired.json()).error).toEqual({ code: 'artifact.link_expired', message: 'this artifact link expired at 2030-01-01T01:00:00.000Z: ask for a new one' });

      const fresh = links.url(id);
      expect((await fetch(fresh)).status).toBe(200);
      await rt.deleteSession(session.id);
      expect((await fetch(fresh)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('artifacts:channel:email — "an email attachment of an artifact part carries artifact: { artifactId, name?, mimeType, sizeBytes, url? } (url: the signed link, with link configuration)"', async () => {
    const rt = deskRuntime();
    try {
      const links = createArtifactLinks({ baseUrl: 'https://desk.example.com/agents/', secret: new Uint8Array(32).fill(9) });
      const { outcome, id } = await exportFares(rt);
      const delivery = createDelivery(rt.registries.partTypes);
      const email = renderForChannel(delivery, 'email', delivery.buffered(outcome), { artifactLinks: links });
      const file = email.attachments.find((a) => a.partType === 'artifact')?.artifact;
      expect(file).toEqual({ artifactId: id, name: 'fares.csv', mimeType: 'text/csv', sizeBytes: CSV_BYTES, url: expect.stringMatching(new RegExp(`^https://desk\\.example\\.com/agents/artifacts/${id}\\?exp=\\d+&sig=`)) });
      expect(links.verify(id, new URL(file!.url!).searchParams.get('exp'), new URL(file!.url!).searchParams.get('sig'))).toEqual({ ok: true });
    } finally {
      await rt.close();
    }
  });

  it('artifacts:link:signed — "keep the secret at least 32 bytes (artifact.links_invalid otherwise, as for a baseUrl that is not an http(s) URL)"', () => {
    expect(() => createArtifactLinks({ baseUrl: 'https://desk.example.com', secret: 'short' })).toThrow(expect.objectContaining({ code: 'artifact.links_invalid', message: expect.stringContaining('secret must be a string or bytes of at least 32 bytes') }));
    for (const baseUrl of ['desk.example.com', 'ftp://desk.example.com', 'https://desk.example.com/?x=1', 'https://user:pw@desk.example.com']) {
      expect(() => createArtifactLinks({ baseUrl, secret: SECRET }), baseUrl).toThrow(expect.objectContaining({ code: 'artifact.links_invalid', message: expect.stringContaining('baseUrl must be an http(s) URL') }));
    }
  });
});

describe('artifacts over HTTP: streaming and caching', () => {
  /** The store, with `read` (and for HEAD `open`) made to fail: what the route may not call. */
  function guarded(store: ArtifactStore, forbid: ('read' | 'open')[]): ArtifactStore {
    const g: ArtifactStore = { kind: store.kind, put: (i) => store.put(i), head: (id) => store.head(id), read: (id) => store.read(id), open: (id) => store.open!(id), deleteSession: (s) => store.deleteSession!(s) };
    for (const m of forbid) g[m] = async () => Promise.reject(new Error(`the route called ${m}()`));
    return g;
  }

  for (const kind of ['file', 'memory'] as const) {
    it(`artifacts:http:stream — "the body is streamed from the store (open) … HEAD reads no bytes": ${kind} store`, async () => {
      const store = kind === 'file' ? createFileArtifactStore({ dir: tempDir() }) : createMemoryArtifactStore();
      const rt = deskRuntime({ artifacts: store });
      const { id } = await exportFares(rt);
      const big = await store.put({ data: new Uint8Array(3 * 1024 * 1024).fill(7), mimeType: 'application/octet-stream', sessionId: (await rt.listSessions())[0]!.id, tenantId: 'A' });
      const server = await startServer({
        runtime: rt,
        port: 0,
        transports: [
          { name: 'head-only', handle: (req, res) => (req.method === 'HEAD' ? createArtifactsTransport({ runtime: rt, artifacts: guarded(store, ['read', 'open']), authenticate }).handle(req, res) : Promise.resolve(false)), close: async () => {} },
          createArtifactsTransport({ runtime: rt, artifacts: guarded(store, ['read']), authenticate }),
        ],
      });
      try {
        const r = await get(server, `/artifacts/${id}`, A);
        expect(r.status).toBe(200);
        expect(await r.text()).toBe(CSV);
        const b = await get(server, `/artifacts/${big.artifactId}`, A);
        expect(b.headers.get('content-length')).toBe(String(3 * 1024 * 1024));
        const body = Buffer.from(await b.arrayBuffer());
        expect(body.byteLength).toBe(3 * 1024 * 1024);
        expect(body.every((x) => x === 7)).toBe(true);
        const h = await get(server, `/artifacts/${big.artifactId}`, A, 'HEAD');
        expect(h.status).toBe(200);
        expect(h.headers.get('content-length')).toBe(String(3 * 1024 * 1024));
      } finally {
        await server.close();
      }
    });
  }

  it('artifacts:http:cache — "private, no-cache with the artifact id as ETag and vary: Authorization … a matching If-None-Match gets 304 (after the same checks as a GET)"', async () => {
    const rt = deskRuntime();
    const server = await startServer({ runtime: rt, port: 0, transports: [createArtifactsTransport({ runtime: rt, artifacts: rt.artifacts, authenticate })] });
    try {
      const { id } = await exportFares(rt);
      const ok = await get(server, `/artifacts/${id}`, A);
      expect(ok.headers.get('cache-control')).toBe('private, no-cache');
      expect(ok.headers.get('vary')).toBe('Authorization');
      expect(ok.headers.get('etag')).toBe(`"${id}"`);
      for (const tag of [`"${id}"`, `W/"${id}"`, `"art_x", "${id}"`, '*']) {
        const nm = await get(server, `/artifacts/${id}`, { ...A, 'if-none-match': tag });
        expect(nm.status, tag).toBe(304);
        expect(nm.headers.get('etag')).toBe(`"${id}"`);
        expect(nm.headers.get('vary')).toBe('Authorization');
        expect(await nm.text()).toBe('');
      }
      expect((await get(server, `/artifacts/${id}`, { ...A, 'if-none-match': '"art_other"' })).status).toBe(200);
      // Another tenant learns nothing from a tag: the same 404 as without one.
      expect((await get(server, `/artifacts/${id}`, { ...B, 'if-none-match': `"${id}"` })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('createArtifactsTransport: the options', () => {
  it('artifacts:options:code — "one code for a factory given an option it cannot use": createArtifactsTransport refuses a missing runtime or store, a misspelt option (named with the one it resembles, never ignored), a non-function authenticate and artifactLinks without verify() with TurnstateError options.invalid naming the option, not a bare TypeError', async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [] }) });
    const names = 'runtime, artifacts, authenticate, artifactLinks';
    try {
      const cases: [unknown, RegExp | string][] = [
        [{ artifacts: rt.artifacts }, 'createArtifactsTransport: needs a `runtime` (createRuntime()), since an artifact is served only while its session exists'],
        [{ runtime: rt }, 'createArtifactsTransport: `artifacts` must be an ArtifactStore (e.g. runtime.artifacts), got undefined'],
        [{ runtime: rt, artifacts: 'memory' }, 'createArtifactsTransport: `artifacts` must be an ArtifactStore (e.g. runtime.artifacts), got "memory"'],
        [{ runtime: rt, artifacts: rt.artifacts, artifactLink: {} }, `createArtifactsTransport: \`artifactLink\` is not an option (did you mean \`artifactLinks\`?); the options are ${names}`],
        [{ runtime: rt, artifacts: rt.artifacts, authenticate: 'bearer' }, 'createArtifactsTransport: `authenticate` must be a function, got "bearer"'],
        [{ runtime: rt, artifacts: rt.artifacts, artifactLinks: { secret: SECRET } }, /^createArtifactsTransport: `artifactLinks` must be an ArtifactLinks \(createArtifactLinks\(\)\), got /],
        [null, 'createArtifactsTransport: options must be an object { runtime, artifacts, ... }, got null'],
      ];
      for (const [opts, message] of cases) {
        let thrown: unknown;
        try {
          createArtifactsTransport(opts as never);
        } catch (e) {
          thrown = e;
        }
        expect(thrown, String(message)).toBeInstanceOf(TurnstateError);
        expect(thrown, String(message)).toMatchObject({ code: 'options.invalid', message: typeof message === 'string' ? message : expect.stringMatching(message) });
      }
      const links = createArtifactLinks({ baseUrl: 'https://desk.example.com', secret: SECRET });
      await createArtifactsTransport({ runtime: rt, artifacts: rt.artifacts, authenticate, artifactLinks: links }).close();
    } finally {
      await rt.close();
    }
  });
});
