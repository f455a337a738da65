/**
 * The shape issue 11 left, kept: one job per file. No source file over 500 lines (type
 * declarations aside), the session facade under 300, and a median source file of about 150
 * lines or less. A file that grows past these is split before it lands.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const lines = (file: string): number => readFileSync(file, 'utf8').split('\n').length - 1;
/** Files that only declare types (the vocabulary, the ports): exempt from the size rule. */
const TYPE_DECLARATIONS = new Set(['types.ts', 'registries/types.ts', 'api.ts', 'machines/ports.ts']);

describe('source layout', () => {
  const files = sourceFiles(SRC).map((f) => ({ path: relative(SRC, f), lines: lines(f) }));

  it('layout:file-size — no file under src/ over 500 lines except type declarations', () => {
    const over = files.filter((f) => f.lines > 500 && !TYPE_DECLARATIONS.has(f.path)).map((f) => `${f.path} (${f.lines})`);
    expect(over).toEqual([]);
  });

  it('layout:facade — the session facade (host/session-host.ts) is under 300 lines', () => {
    expect(files.find((f) => f.path === 'host/session-host.ts')!.lines).toBeLessThan(300);
  });

  it('layout:median — the median source file is about 150 lines or less', () => {
    const sorted = files.map((f) => f.lines).sort((a, b) => a - b);
    expect(sorted.length).toBeGreaterThan(50);
    expect(sorted[Math.floor((sorted.length - 1) / 2)]).toBeLessThanOrEqual(150);
  });
});
