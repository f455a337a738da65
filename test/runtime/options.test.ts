/**
 * createRuntime's options and send()'s client tools, checked before anything is accepted: "Bad
 * input gets a clear error that names what was wrong, and nothing already accepted is lost"
 * (session-events.md "What the session API accepts", tools.md `tools:client:schema`).
 */
import { describe, expect, it, vi } from 'vitest';
import { createRegistries } from '../../src/create-registries.js';
import { DEFAULT_LIMITS, MAX_TIMER_MS, TIMER_LIMITS } from '../../src/limits.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createMemoryArtifactStore } from '../../src/stores/artifacts-memory.js';
import { answer, harness, part, respond } from './helpers.js';

const refused = (opts: unknown, message: RegExp | string): void => {
  expect(() => createRuntime(opts as never), String(message)).toThrow(
    expect.objectContaining({ code: 'options.invalid', message: typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message) }),
  );
};

describe('createRuntime: the options', () => {
  it('inputs:runtime:options — "A limit that becomes a timer (llmContextTimeoutMs) is at most 2^31-1 ms (MAX_TIMER_MS): Node would fire a longer timer after 1 ms", refused naming the limit and the maximum; every millisecond limit is one', async () => {
    const model = createScriptedModel({ rules: [] });
    for (const ms of [MAX_TIMER_MS + 1, 2 ** 40]) {
      refused({ model, limits: { llmContextTimeoutMs: ms } }, `limits.llmContextTimeoutMs must be an integer from 1 to ${MAX_TIMER_MS}`);
    }
    const rt = createRuntime({ model, limits: { llmContextTimeoutMs: MAX_TIMER_MS } });
    await rt.close();
    // Every limit counted in milliseconds is timer-backed, so none can slip past the check.
    expect([...TIMER_LIMITS].sort()).toEqual(Object.keys(DEFAULT_LIMITS).filter((k) => /Ms$/.test(k)).sort());
  });

  it('inputs:runtime:passivate-range — "passivateAfterMs is a whole number of milliseconds (0: never)", as the CLI\'s --passivate-after: a fraction, a value past a safe integer or a string is refused naming the value received; an idle time longer than a timer can count (30 days) is taken, since no timer waits for it', async () => {
    const model = createScriptedModel({ rules: [] });
    for (const [v, shown] of [[1.5, '1.5'], [2 ** 53 + 2, '9007199254740994'], [1e300, '1e+300'], ['1000', '"1000"'], [-1, '-1'], [Number.NaN, 'NaN']] as const) {
      refused({ model, passivateAfterMs: v }, `createRuntime: \`passivateAfterMs\` must be an integer of at least 0, got ${shown}`);
    }
    for (const passivateAfterMs of [0, -0, MAX_TIMER_MS, 30 * 24 * 3600 * 1000]) await createRuntime({ model, passivateAfterMs }).close();
  });

  it('inputs:runtime:unknown-option — "any other key (passivateAfterMS) is refused naming it and the option it resembles, never ignored", an artifacts that is no ArtifactStore and an inspect that is neither a function nor an observer are refused; every documented option is accepted', async () => {
    const model = createScriptedModel({ rules: [] });
    refused({ model, passivateAfterMS: 1000 }, '`passivateAfterMS` is not an option (did you mean `passivateAfterMs`?); the options are model, contextModel, artifacts, store, registries, inspect, limits, canAnswerApproval, passivateAfterMs, reasoningTraces, now, newId');
    refused({ model, limit: {} }, /`limit` is not an option \(did you mean `limits`\?\)/);
    refused({ model, tracing: true }, /`tracing` is not an option; the options are/);
    refused({ model, artifacts: {} }, '`artifacts` must be an ArtifactStore (put, head, read: see docs/concepts/artifacts.md); it lacks put(), head(), read()');
    refused({ model, artifacts: { ...createMemoryArtifactStore(), read: undefined } }, 'it lacks read()');
    refused({ model, artifacts: { ...createMemoryArtifactStore(), close: 'now' } }, '`artifacts.close` must be a function when given, got string');
    refused({ model, artifacts: 'memory' }, '`artifacts` must be an ArtifactStore');
    refused({ model, inspect: 'yes' }, '`inspect` must be a function (event) => void or an observer { next(event) }, got string');
    refused({ model, inspect: { next: true } }, '`inspect.next` must be a function');
    refused({ model, newId: null }, '`newId` must be a function, got null');
    refused(null, 'options must be an object');
    const everything = createRuntime({
      model,
      contextModel: model,
      artifacts: createMemoryArtifactStore(),
      store: createMemoryStore(),
      registries: createRegistries(),
      inspect: { next: () => undefined },
      limits: { maxModelCallsPerTurn: 4 },
      canAnswerApproval: () => true,
      passivateAfterMs: 0,
      reasoningTraces: 'drop',
      now: () => 0,
      newId: (p) => `${p}_1`,
    });
    await everything.close();
    await createRuntime({ model, inspect: () => undefined }).close();
  });
});

describe('send(): client tools follow the rules of a registered tool\'s inputSchema', () => {
  it('tools:client:schema — "a client tool\'s parameters … follow the same rules as an inputSchema: type: \'object\' at the root and a valid JSON Schema of a supported draft; anything else is refused by send() (message.invalid) naming the tool and the problem, before the model is shown it"', async () => {
    const { rt, model } = harness({ rules: [{ respond: answer(respond([part('response', 'done')], 'complete')) }] });
    rt.registries.actors.register({ name: 'desk' });
    const s = await rt.createSession({ actor: 'desk' });
    const pick = (parameters: Record<string, unknown>) => ({ clientTools: [{ name: 'ok_tool', description: 'Fine.', parameters: { type: 'object' } }, { name: 'pick_file', description: 'Pick a file.', parameters }] });
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ type: 'string' }, /opts\.clientTools\[1\]\.parameters \(client tool "pick_file"\) must have type: 'object' at its root.*got "string"/],
      [{ properties: {} }, /must have type: 'object' at its root.*got no type/],
      [{ type: 'object', properties: { a: { type: 'strnig' } } }, /\(client tool "pick_file"\) is not a valid JSON Schema: .*properties\/a\/type/],
      [{ type: 'object', required: 'a' }, /is not a valid JSON Schema: .*required must be array/],
      [{ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }, /is not a supported JSON Schema draft/],
      // As a registered inputSchema: it must compile, so its $refs resolve and its patterns are regular expressions.
      [{ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } }, /is not a valid JSON Schema: .*can't resolve reference #\/definitions\/missing/],
      [{ type: 'object', properties: { a: { type: 'string', pattern: '(' } } }, /is not a valid JSON Schema: .*Invalid regular expression/],
    ];
    for (const [parameters, msg] of bad) {
      // Twice: the second answer comes from the cache and says the same.
      for (let i = 0; i < 2; i++) {
        await expect(s.send('hi', pick(parameters)), String(msg)).rejects.toMatchObject({ code: 'message.invalid', message: expect.stringMatching(msg) });
      }
    }
    expect(model.requests).toHaveLength(0);
    // The same $id on every message is not a clash; 2020-12 is understood.
    const good = { $id: 'https://client.test/pick.json', $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { path: { type: 'string' } } };
    for (let i = 0; i < 2; i++) {
      const out = await (await s.send('pick one', pick(good))).settled;
      expect(out.finalizedBy).toBe('complete');
    }
    expect(model.requests.at(-1)!.tools!.find((t) => t.name === 'pick_file')!.input_schema).toEqual(good);
    await rt.close();
  });

  it('tools:client:schema — a client\'s schema is checked, not compiled: its unknown format writes nothing to the server\'s console, and no $id it declares stays taken', async () => {
    const { rt } = harness({ rules: [{ respond: answer(respond([part('response', 'done')], 'complete')) }] });
    rt.registries.actors.register({ name: 'desk' });
    const s = await rt.createSession({ actor: 'desk' });
    const logged: unknown[] = [];
    const spies = (['log', 'warn', 'error'] as const).map((m) => vi.spyOn(console, m).mockImplementation((...a) => void logged.push(a)));
    try {
      const phone = { type: 'object', properties: { to: { type: 'string', format: 'client-phone-\u001b[31mred' } } };
      const out = await (await s.send('call', { clientTools: [{ name: 'dial', description: 'Dial.', parameters: phone }] })).settled;
      expect(out.finalizedBy).toBe('complete');
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(logged).toEqual([]);
    // A server tool may take the $id a client's schema declared.
    const id = 'https://client.test/dial-args.json';
    await (await s.send('call', { clientTools: [{ name: 'dial', description: 'Dial.', parameters: { $id: id, type: 'object' } }] })).settled;
    expect(() => rt.registries.tools.register({ name: 'server_dial', description: 'Dials.', inputSchema: { $id: id, type: 'object' }, scope: 'generalist', handler: () => ({}) })).not.toThrow();
    await rt.close();
  });
});
