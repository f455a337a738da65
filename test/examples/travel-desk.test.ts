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
