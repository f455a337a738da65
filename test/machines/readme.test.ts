/**
 * docs/machines/README.md, "In code": the example that draws a session machine with your own
 * turn states runs as written against the package's public API, and prints what the export
 * script writes for the same machine.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { initialContext, README_FILE, REPRESENTATIVE_SESSION_INPUT, toStatelyConfig } from '../../scripts/export-machines.js';
import { createRegistries } from '../../src/create-registries.js';
import { createSessionMachine } from '../../src/machines/session.machine.js';

const EXAMPLE = 'test/machines/stately-readme.example.ts';

describe('docs/machines/README.md: the "In code" example', () => {
  it('machines:readme:in-code — "the JSON runs as it is once the named implementations are supplied": the example runs from the package and prints the export of the same machine', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=turnstate-source', '--import', 'tsx', EXAMPLE], { timeout: 60_000 });
    const lines = stdout.trimEnd().split('\n');
    expect(lines.at(-1)).toBe('{"turn":{"awaiting":"ready"}}');
    const printed = JSON.parse(lines.slice(0, -1).join('\n')) as unknown;
    const registries = createRegistries();
    registries.turnStates.register({
      id: 'awaiting-review',
      meta: { description: 'The draft waits for a reviewer.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'review' },
    });
    const machine = createSessionMachine(registries.turnStates);
    expect(printed).toEqual(toStatelyConfig(machine, { context: initialContext(machine, REPRESENTATIVE_SESSION_INPUT) }));
  });

  it('machines:readme:in-sync — the README shows the example verbatim and imports only from the package (nothing from scripts/ or src/, which it does not ship)', () => {
    const readme = readFileSync(README_FILE, 'utf8');
    expect(readme).toContain(readFileSync(EXAMPLE, 'utf8').trim());
    const imports = [...readme.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    for (const from of imports) expect(from, `README imports from ${from}`).toMatch(/^(turnstate(\/[a-z]+)?|xstate|@statelyai\/[a-z-]+(\/[a-z-]+)?|node:[a-z/]+)$/);
  });
});
