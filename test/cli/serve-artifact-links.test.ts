/**
 * `turnstate serve` makes signed artifact links (docs/concepts/artifacts.md "Links and channels"):
 * from its listening URL, or `TURNSTATE_PUBLIC_URL`, with a secret it keeps in the data directory,
 * so a link sent before a restart still opens after it.
 */
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serve } from '../../src/cli/serve.js';
import type { TurnstateRuntime } from '../../src/runtime.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-serve-links-'));
  dirs.push(d);
  return d;
};

describe('turnstate serve: artifact links', () => {
  it('artifacts:link:serve — "turnstate serve makes its links from its listening URL … and a secret it keeps in <data-dir>/artifact-links.key (made on first start, owner-only)": a link opens without a credential, before and after a restart', async () => {
    const dataDir = tempDir();
    const env = { TURNSTATE_API_KEYS: JSON.stringify({ ka: { userId: 'alice', tenantId: 'A' } }) };
    const first = await serve({ port: 0, host: '127.0.0.1', dataDir, env, log: () => {} });
    let link: string;
    let sessionId: string;
    try {
      const session = await first.runtime.createSession({ actor: 'triage', tenantId: 'A' });
      sessionId = session.id;
      const r = await (first.runtime as TurnstateRuntime).artifacts.put({ data: new TextEncoder().encode('secret,A\n'), mimeType: 'text/csv', name: 'a.csv', sessionId, tenantId: 'A' });
      link = first.artifactLinks.url(r.artifactId);
      expect(link.startsWith(`${first.url}/artifacts/${r.artifactId}?exp=`)).toBe(true);
      expect((await fetch(link)).status).toBe(200);
      expect((await fetch(`${first.url}/artifacts/${r.artifactId}`)).status).toBe(401);
      expect(statSync(join(dataDir, 'artifact-links.key')).mode & 0o777).toBe(0o600);
    } finally {
      await first.close();
    }
    const second = await serve({ port: 0, host: '127.0.0.1', dataDir, env: { ...env, TURNSTATE_PUBLIC_URL: 'https://desk.example.com' }, log: () => {} });
    try {
      const again = new URL(link);
      const opened = await fetch(`${second.url}${again.pathname}${again.search}`);
      expect(opened.status).toBe(200);
      expect(await opened.text()).toBe('secret,A\n');
      expect(second.artifactLinks.url('art_AAAAAAAAAAAAAAAAAAAAAA')).toMatch(/^https:\/\/desk\.example\.com\/artifacts\/art_AAAAAAAAAAAAAAAAAAAAAA\?exp=\d+&sig=/);
    } finally {
      await second.close();
    }
  });

  it('artifacts:link:serve — "made on first start, owner-only": a key file others may read, or one that is not 32 bytes of base64url, stops serve saying what to do; a new one is 32 bytes and leaves no temporary behind', async () => {
    const dataDir = tempDir();
    const first = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    await first.close();
    const key = join(dataDir, 'artifact-links.key');
    expect(Buffer.from(readFileSync(key, 'utf8'), 'base64url').byteLength).toBe(32);
    expect(readdirSync(dataDir).filter((f) => f.startsWith('artifact-links.key.'))).toEqual([]);
    chmodSync(key, 0o644);
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} })).rejects.toThrow(`${key} may be read by other users (mode 644): whoever reads it can make artifact links; chmod 600 it`);
    chmodSync(key, 0o600);
    for (const text of ['', 'A'.repeat(42), 'correct horse battery staple, correct horse battery staple']) {
      writeFileSync(key, text, { mode: 0o600 });
      await expect(serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} }), JSON.stringify(text)).rejects.toThrow(`${key}: not an artifact link key (32 bytes, base64url); delete it to make a new one`);
    }
    rmSync(key);
    const fresh = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    await fresh.close();
    // A key another user owns (mode 600 or not) is theirs to sign with: refused. Only root can give a file away.
    if (process.getuid?.() === 0) {
      chownSync(key, 1234, 1234);
      await expect(serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} })).rejects.toThrow(`${key} belongs to another user (uid 1234)`);
    }
  });

  it('artifacts:link:serve — a TURNSTATE_PUBLIC_URL that is not an http(s) URL stops serve naming the variable; one with a trailing slash makes the links (and the banner) without a double slash', async () => {
    const dataDir = tempDir();
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir, env: { TURNSTATE_PUBLIC_URL: 'desk.example.com' }, log: () => {} })).rejects.toThrow(/^TURNSTATE_PUBLIC_URL "desk\.example\.com": baseUrl must be an http\(s\) URL/);
    const lines: string[] = [];
    const s = await serve({ port: 0, host: '127.0.0.1', dataDir, env: { TURNSTATE_PUBLIC_URL: 'https://desk.example.com/' }, log: (l) => lines.push(l) });
    try {
      expect(lines.find((l) => l.includes('artifact links:'))).toContain('https://desk.example.com/artifacts/{id}?exp=');
      expect(s.artifactLinks.url('art_x')).toMatch(/^https:\/\/desk\.example\.com\/artifacts\/art_x\?exp=/);
    } finally {
      await s.close();
    }
  });
});
