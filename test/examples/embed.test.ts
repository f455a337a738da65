import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('the README embedding example', () => {
  it('readme:embed:runs-as-written — examples/embed.ts runs and prints ack, response and the settled envelope', async () => {
    const { stdout } = await run(process.execPath, ['--conditions=turnstate-source', '--import', 'tsx', 'examples/embed.ts'], { timeout: 60_000 });
    expect(stdout.split('\n').filter(Boolean)).toEqual([
      'ack: Looking up flights to Corfu.',
      'response: Two direct flights found.',
      'settled: complete; envelope parts: response, domain-data',
    ]);
  });

  it('readme:embed:in-sync — the README shows examples/embed.ts verbatim', () => {
    const readme = readFileSync('README.md', 'utf8');
    const example = readFileSync('examples/embed.ts', 'utf8').trim();
    expect(readme).toContain(example);
    expect(example.split('\n').length).toBeLessThanOrEqual(36);
  });
});
