import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const GUIDE = 'docs/guide/claude.md';
const OFFLINE = 'test/integration/anthropic/guide-offline.ts';
const LIVE = 'test/integration/anthropic/guide-claude.ts';

describe('docs/guide/claude.md', () => {
  it('guide:claude:in-sync — the guide shows both snippets verbatim', () => {
    const guide = readFileSync(GUIDE, 'utf8');
    for (const f of [OFFLINE, LIVE]) expect(guide).toContain(`\`\`\`ts\n${readFileSync(f, 'utf8').trim()}\n\`\`\``);
  });

  it('guide:claude:offline-runs — the offline snippet runs as written and prints what the guide says', async () => {
    const { stdout } = await run(process.execPath, ['--conditions=turnstate-source', '--import', 'tsx', OFFLINE], { timeout: 60_000 });
    const guide = readFileSync(GUIDE, 'utf8');
    const shown = guide.split('guide-offline.ts\n')[1]!.split('```')[0]!.trim();
    expect(stdout.trim()).toBe(shown);
  });

  // Runs only where a key is configured; it calls the real API.
  it.skipIf(!process.env.ANTHROPIC_API_KEY)('guide:claude:live — the Claude snippet completes a turn against the API', async () => {
    const { stdout } = await run(process.execPath, ['--conditions=turnstate-source', '--import', 'tsx', LIVE, 'concierge', 'Name one sight, in five words.'], { timeout: 120_000 });
    expect(stdout).toMatch(/settled: complete/);
  });
});
