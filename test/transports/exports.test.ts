/**
 * What the transport docs tell an embedder to import resolves through the package's export map:
 * "`startServer({ runtime, transports })` does the same for your own app" (docs/transports/sse.md),
 * with `createArtifactsTransport` (docs/concepts/artifacts.md) and `healthTransport`.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const DOCS = ['docs/transports/sse.md', 'docs/transports/websocket.md', 'docs/transports/aap.md', 'docs/concepts/artifacts.md', 'docs/guide/serve.md'];

/** Runs an ES module as an embedder's code would (`import ... from 'turnstate'`, resolved by the package's exports). */
async function asEmbedder(source: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['--conditions=turnstate-source', '--import', 'tsx', '--input-type=module', '-e', source], { cwd: ROOT, timeout: 60_000 });
  return stdout.trim();
}

describe('package exports for embedders', () => {
  it('exports:server — "startServer({ runtime, transports }) does the same for your own app": startServer, healthTransport and createArtifactsTransport are exported by the package, and compose a server as the docs show', async () => {
    const out = await asEmbedder(`
      import { createRuntime, createScriptedModel, createMemoryArtifactStore, startServer, healthTransport, createArtifactsTransport } from 'turnstate';
      import { createStreamsTransport } from 'turnstate/streams';
      const runtime = createRuntime({ model: createScriptedModel({ rules: [] }), artifacts: createMemoryArtifactStore() });
      const server = await startServer({ runtime, port: 0, transports: [healthTransport(), createArtifactsTransport({ runtime, artifacts: runtime.artifacts }), createStreamsTransport({ runtime })] });
      const health = await (await fetch(server.url + '/healthz')).json();
      const artifact = await fetch(server.url + '/artifacts/art_AAAAAAAAAAAAAAAAAAAAAA');
      console.log(JSON.stringify({ health, artifact: [artifact.status, (await artifact.json()).error.code] }));
      await server.close();`);
    expect(JSON.parse(out)).toEqual({ health: { ok: true }, artifact: [404, 'artifact.not_found'] });
  });

  it('exports:docs-imports — every name the transport and serving docs import from a turnstate entry is exported by that entry', async () => {
    const imports = new Map<string, Set<string>>();
    for (const doc of DOCS) {
      for (const m of readFileSync(resolve(ROOT, doc), 'utf8').matchAll(/^import (?:type )?\{([^}]+)\} from '(turnstate(?:\/[a-z]+)?)';$/gm)) {
        const names = imports.get(m[2]!) ?? new Set<string>();
        for (const n of m[1]!.split(',')) if (!/^\s*type\s/.test(n) && n.trim() !== '') names.add(n.trim().split(/\s+as\s+/)[0]!);
        imports.set(m[2]!, names);
      }
    }
    expect([...(imports.get('turnstate') ?? [])]).toEqual(expect.arrayContaining(['startServer', 'createArtifactsTransport']));
    const wanted = Object.fromEntries([...imports].map(([entry, names]) => [entry, [...names].sort()]));
    const out = await asEmbedder(`
      const wanted = ${JSON.stringify(wanted)};
      const missing = [];
      for (const [entry, names] of Object.entries(wanted)) {
        const mod = await import(entry);
        for (const n of names) if (mod[n] === undefined) missing.push(entry + ': ' + n);
      }
      console.log(JSON.stringify(missing));`);
    expect(JSON.parse(out)).toEqual([]);
  });
});
