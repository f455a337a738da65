/**
 * "Nothing accepted is lost": a session AAP answered 201 for exists after the server is killed
 * right after the answer (found by a review session: group commit wrote the record only at the
 * end of the event-loop turn, after the 201).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/stores/sqlite.js';

const SERVER = (db: string) => `
  import http from 'node:http';
  import { createRuntime, createScriptedModel, startServer } from ${JSON.stringify(new URL('../../src/index.ts', import.meta.url).pathname)};
  import { createSqliteStore } from ${JSON.stringify(new URL('../../src/stores/sqlite.ts', import.meta.url).pathname)};
  import { createAapTransport } from ${JSON.stringify(new URL('../../src/transports/aap/index.ts', import.meta.url).pathname)};
  const runtime = createRuntime({ model: createScriptedModel({ rules: [] }), store: createSqliteStore({ path: ${JSON.stringify(db)} }) });
  runtime.registries.actors.register({ name: 'desk' });
  // Killed as soon as a 201 has been handed to the socket: nothing later in this event-loop turn runs.
  const end = http.ServerResponse.prototype.end;
  http.ServerResponse.prototype.end = function (...a) {
    const r = end.apply(this, a);
    if (this.statusCode === 201) process.nextTick(() => process.kill(process.pid, 'SIGKILL'));
    return r;
  };
  const srv = await startServer({ runtime, transports: [createAapTransport({ runtime })], port: 0 });
  console.log('PORT ' + new URL(srv.url).port);
`;

describe('AAP session creation is durable', () => {
  it('durability:aap:create — a session answered 201 survives a SIGKILL right after the answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-aap-create-'));
    try {
      const db = join(dir, 's.db');
      const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=turnstate-source', '--input-type=module', '-e', SERVER(db)], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise((r) => child.on('exit', (code, signal) => r(signal ?? code)));
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d.toString();
          const m = /PORT (\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.on('exit', () => reject(new Error(`server exited before listening: ${out}`)));
      });
      const r = await fetch(`http://127.0.0.1:${port}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"agent":{"name":"desk"}}' });
      expect(r.status).toBe(201);
      const { sessionId } = (await r.json()) as { sessionId: string };
      expect(await exited).toBe('SIGKILL');
      const store = createSqliteStore({ path: db, readonly: true });
      try {
        expect(await store.getSession(sessionId)).toMatchObject({ id: sessionId, actor: 'desk' });
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
