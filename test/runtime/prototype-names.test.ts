/**
 * Names that come from outside (model output, registrations, options, recordings) are looked up
 * as a table's own entries only: a name that happens to be an Object.prototype member
 * (`constructor`, `toString`, `__proto__`, `hasOwnProperty`) is an ordinary unknown name, never
 * the inherited member. Each case once found the member (a review reproduced them).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { ModelError, type ModelErrorCode } from '../../src/errors.js';
import { markdownToPlainText } from '../../src/envelope/plain-text.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRegistries } from '../../src/create-registries.js';
import { replaySession } from '../../src/replay/index.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { answer, harness, part, respond } from './helpers.js';

const PROTO_NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];
const dir = mkdtempSync(join(tmpdir(), 'turnstate-proto-names-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('names named like Object.prototype members are ordinary unknown names', () => {
  it('delivery:plain-text:entities — "others stay as written": &constructor; in model text is not replaced by a function\'s source on SMS or email', () => {
    // The named references are lower-case letters: constructor is the member such a name can reach.
    expect(markdownToPlainText('Use the &constructor; field, not &amp;.')).toBe('Use the &constructor; field, not &.');
    expect(markdownToPlainText('&valueof; &tostring; &lt;b&gt;')).toBe('&valueof; &tostring; <b>');
  });

  it('model:stop:unknown — "max_tokens and refusal stops settle error": a stop reason named constructor or toString is no cut; the turn completes with its answer', async () => {
    for (const stopReason of PROTO_NAMES) {
      const { rt } = harness({ rules: [{ respond: { ...answer(respond([part('response', 'All done.')], 'complete')), stopReason: stopReason as 'end_turn' } }] });
      rt.registries.actors.register({ name: 'a' });
      const s = await rt.createSession({ actor: 'a' });
      const out = await (await s.send('hi')).settled;
      expect(out.error, stopReason).toBeUndefined();
      expect(out.finalizedBy).toBe('complete');
      expect(out.parts.map((p) => p.text)).toContain('All done.');
      await rt.close();
    }
  });

  it('runtime:options:limits — "limits.X is not a runtime limit": limits named constructor, toString or __proto__ are refused like any unknown limit', () => {
    const model = createScriptedModel({ rules: [] });
    for (const name of PROTO_NAMES) {
      const limits = JSON.parse(`{"${name}": 3}`) as Record<string, number>;
      expect(() => createRuntime({ model, limits }), name).toThrow(new RegExp(`limits\\.${name} is not a runtime limit`));
    }
  });

  it('tools:schema:draft — "is not a supported JSON Schema draft": a $schema of constructor or toString is refused by name, not by an ajv TypeError', () => {
    for (const $schema of PROTO_NAMES) {
      const r = createRegistries().tools;
      let err: unknown;
      try {
        r.register({ name: 'x', description: 'x', inputSchema: { $schema, type: 'object' }, scope: 'generalist', handler: () => 1 });
      } catch (e) {
        err = e;
      }
      expect((err as Error).message, $schema).toContain(`$schema ${JSON.stringify($schema)} is not a supported JSON Schema draft`);
    }
  });

  it('replay:options:limits — "the result names the budget and the option": a turn that failed with a model error coded constructor gets no note about a limit', async () => {
    const path = join(dir, 'proto.db');
    // A model port of the embedder's own (a script may only fail with MODEL_ERROR_CODES).
    const model = {
      name: 'proto',
      // eslint-disable-next-line require-yield
      async *stream(): AsyncGenerator<never> {
        throw new ModelError('constructor' as ModelErrorCode, 'provider said no');
      },
    };
    const rt = createRuntime({ store: createSqliteStore({ path }), model });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ id: 'p1', actor: 'a' });
    const out = await (await s.send('go')).settled;
    expect(out.error?.code).toBe('constructor');
    await rt.close();
    const store = createSqliteStore({ path, readonly: true });
    try {
      const r = await replaySession(store, 'p1');
      expect(r.notes.join('\n')).not.toMatch(/ran out of limits|function Object/);
    } finally {
      store.close();
    }
  });
});
