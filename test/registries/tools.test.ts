import { describe, expect, it } from 'vitest';
import { RegistrationError, TurnstateError } from '../../src/errors.js';
import { compileApprovalPolicy } from '../../src/approvals/policy.js';
import { placeholderProblem, ToolRegistry } from '../../src/registries/tools.js';
import type { PolicyContext, ToolDefinition } from '../../src/registries/types.js';
import { registrationError } from './helpers.js';

const ctx: PolicyContext = { actor: 'booker', session: { id: 's1', tenantId: 't1' }, turn: { id: 'u1' }, user: { tier: 'trusted' }, tenant: { id: 't1' } };

const schema = {
  type: 'object',
  required: ['destination'],
  properties: {
    destination: { type: 'string', minLength: 3 },
    passengers: { type: 'integer', minimum: 1 },
    email: { type: 'string', format: 'email' },
  },
  additionalProperties: false,
};

function generalist(over: Record<string, unknown> = {}): ToolDefinition {
  return {
    name: 'search_flights',
    description: 'Search direct flights between two airports.',
    inputSchema: schema,
    handler: async () => ({ flights: [] }),
    scope: 'generalist',
    ...over,
  } as ToolDefinition;
}

function specialist(over: Record<string, unknown> = {}): ToolDefinition {
  return {
    name: 'extract_dates',
    description: 'Extract travel dates from free text.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    handler: () => [],
    scope: 'specialist',
    justification: 'Only the date extractor parses raw user text; no other actor needs it.',
    ...over,
  } as ToolDefinition;
}

function bypass(over: Record<string, unknown> = {}): ToolDefinition {
  return specialist({
    name: 'imap_fetch',
    routing: 'bypass',
    bypassRouting: { reason: "Uses the IMAP client that lives inside this actor's invocation." },
    ...over,
  });
}


function expectRule(fn: () => unknown, rule: string, ...mentions: (string | RegExp)[]): RegistrationError {
  const e = registrationError(fn);
  expect(e.rule).toBe(rule);
  expect(e.code).toBe('registration.invalid');
  for (const m of mentions) {
    if (typeof m === 'string') expect(e.message).toContain(m);
    else expect(e.message).toMatch(m);
  }
  return e;
}

describe('ToolRegistry: scope x routing (spec 002 "Scope and routing")', () => {
  it('tools:generalist:routed — a generalist tool registers and routes by default', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const t = r.register(generalist());
    expect(t).toMatchObject({ name: 'search_flights', scope: 'generalist', routing: 'routed', peerExposed: false, bypassReason: undefined });
    expect(r.get('search_flights')).toBe(t);
    expect(r.has('search_flights')).toBe(true);
    expect(r.list()).toEqual([t]);
  });

  it('tools:specialist:routed — a specialist tool with a justification routes by default', () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(specialist());
    expect(t).toMatchObject({ scope: 'specialist', routing: 'routed' });
    expect(t.justification).toMatch(/date extractor/);
  });

  it('tools:specialist:bypass — a specialist bypass tool with reason and justification registers and keeps its reason', () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(bypass());
    expect(t).toMatchObject({ scope: 'specialist', routing: 'bypass' });
    expect(t.bypassReason).toMatch(/IMAP client/);
  });

  it('tools:generalist-bypass:rejected — generalist + bypass is rejected with the fix', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const e = expectRule(
      () => r.register(generalist({ routing: 'bypass', bypassRouting: { reason: 'Latency matters a great deal here.' } })),
      'tools:generalist-bypass:rejected',
      "'search_flights'",
      /scope: 'specialist'/,
    );
    expect(e.details).toMatchObject({ tool: 'search_flights' });
    expect(r.has('search_flights')).toBe(false);
  });

  it('tools:bypass:requires-reason — bypass without bypassRouting.reason is rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(bypass({ bypassRouting: undefined })), 'tools:bypass:requires-reason', "'imap_fetch'", /bypassRouting/);
    expectRule(() => r.register(bypass({ bypassRouting: {} })), 'tools:bypass:requires-reason');
  });

  it('tools:bypass:reason-placeholder-rejected — a placeholder bypass reason is rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    for (const reason of ['', '   ', 'TODO', 'n/a', 'fast']) {
      expectRule(() => r.register(bypass({ bypassRouting: { reason } })), 'tools:bypass:reason-placeholder-rejected', /bypassRouting\.reason/);
    }
  });

  it('tools:specialist:requires-justification — a specialist (routed or bypass) without justification is rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(specialist({ justification: undefined })), 'tools:specialist:requires-justification', "'extract_dates'");
    expectRule(() => r.register(bypass({ justification: undefined })), 'tools:specialist:requires-justification', "'imap_fetch'");
  });

  it('tools:justification:placeholder-rejected — empty, whitespace, TODO, tbd, fixme, xxx, n/a, ..., placeholder and short texts are rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    for (const justification of ['', '  \t', 'TODO', 'todo', 'tbd', 'TBD', 'FIXME', 'xxx', 'N/A', '...', 'Placeholder', 'TODO: explain this later', 'private', '!!!!!!!!!!!!']) {
      expectRule(() => r.register(specialist({ justification })), 'tools:justification:placeholder-rejected', /justification/);
    }
    expect(r.has('extract_dates')).toBe(false);
  });

  it('tools:justification:placeholder-rejected — a real explanation passes the placeholder check', () => {
    expect(placeholderProblem('Private IMAP session of the email researcher.')).toBeUndefined();
    expect(placeholderProblem('TODO')).toMatch(/placeholder/);
    expect(placeholderProblem('short')).toMatch(/shorter than/);
  });

  it('tools:bypassRouting:only-with-bypass — bypassRouting on a routed tool is rejected', () => {
    expectRule(
      () => new ToolRegistry(compileApprovalPolicy).register(specialist({ bypassRouting: { reason: 'A reason long enough to count.' } })),
      'tools:bypassRouting:only-with-bypass',
    );
  });

  it('tools:peerExposed:generalist-only — peerExposed on a specialist is rejected; on a generalist it is kept', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(specialist({ peerExposed: true })), 'tools:peerExposed:generalist-only', "'extract_dates'", /A2A peers/);
    expect(r.register(generalist({ peerExposed: true })).peerExposed).toBe(true);
  });

  it('tools:scope:invalid and tools:routing:invalid — unknown scope or routing values are rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ scope: 'shared' })), 'tools:scope:invalid', /'generalist'/);
    expectRule(() => r.register(generalist({ scope: undefined })), 'tools:scope:invalid');
    expectRule(() => r.register(generalist({ routing: 'direct' })), 'tools:routing:invalid');
  });
});

describe('ToolRegistry: names, fields, tags', () => {
  it('tools:name:invalid — names outside ^[a-zA-Z0-9_-]{1,64}$ are rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    for (const name of ['', 'search flights', 'search.flights', 'a'.repeat(65), 'résumé', 7]) {
      expectRule(() => r.register(generalist({ name })), 'tools:name:invalid');
    }
    expect(r.register(generalist({ name: 'A'.repeat(64) })).name).toHaveLength(64);
  });

  it('tools:name:reserved — respond, respond_to_user and mark_work_complete cannot be registered', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    for (const name of ['respond', 'respond_to_user', 'mark_work_complete']) {
      expectRule(() => r.register(generalist({ name })), 'tools:name:reserved', `'${name}'`, /provided by the runtime/);
    }
  });

  it('tools:duplicate:rejected — a second tool with the same name is rejected; the first stays', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const first = r.register(generalist());
    expectRule(() => r.register(generalist({ description: 'Another one.' })), 'tools:duplicate:rejected', "'search_flights'");
    expect(r.get('search_flights')).toBe(first);
  });

  it('tools:description:required — a missing or blank description is rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ description: undefined })), 'tools:description:required');
    expectRule(() => r.register(generalist({ description: '  ' })), 'tools:description:required');
  });

  it('tools:handler:required — a missing handler is rejected', () => {
    expectRule(() => new ToolRegistry(compileApprovalPolicy).register(generalist({ handler: 'fn' })), 'tools:handler:required');
  });

  it('tools:tags:strings — tags must be an array of strings; they are kept, frozen', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ tags: 'read' })), 'tools:tags:strings');
    expectRule(() => r.register(generalist({ tags: ['read', 3] })), 'tools:tags:strings');
    const t = r.register(generalist({ tags: ['read', 'flights'] }));
    expect(t.tags).toEqual(['read', 'flights']);
    expect(Object.isFrozen(t.tags)).toBe(true);
  });

  it('tools:field:unknown — a misspelt field is rejected instead of ignored', () => {
    expectRule(() => new ToolRegistry(compileApprovalPolicy).register(generalist({ requireApproval: true })), 'tools:field:unknown', /'requireApproval'/);
  });

  it('tools:definition:object — a non-object definition is rejected', () => {
    expectRule(() => new ToolRegistry(compileApprovalPolicy).register(null as never), 'tools:definition:object');
  });
});

describe('ToolRegistry: schemas compiled once with ajv', () => {
  it('tools:schema:invalid-fails-registration — an invalid inputSchema fails naming the tool and ajv\'s message', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const e = expectRule(
      () => r.register(generalist({ inputSchema: { type: 'object', properties: { a: { type: 'strin' } } } })),
      'tools:schema:invalid-fails-registration',
      "'search_flights'",
      /inputSchema is not a valid JSON Schema: .*type/,
    );
    expect(e.message.length).toBeGreaterThan(40);
  });

  it('tools:output-schema:invalid-fails-registration — an invalid outputSchema fails naming the tool', () => {
    expectRule(
      () => new ToolRegistry(compileApprovalPolicy).register(generalist({ outputSchema: { type: 'object', required: 'x' } })),
      'tools:output-schema:invalid-fails-registration',
      /outputSchema/,
    );
  });

  it('tools:schema:required and tools:schema:object-type — inputSchema must be an object schema with type object', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ inputSchema: undefined })), 'tools:schema:required');
    expectRule(() => r.register(generalist({ inputSchema: { type: 'string' } })), 'tools:schema:object-type');
  });

  it('tools:validateInput:violations — every violation with its JSON path and a schema:<keyword> rule', () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(generalist());
    expect(t.validateInput({ destination: 'CFU' })).toEqual([]);
    const v = t.validateInput({ passengers: 0, email: 'not-an-email', extra: 1 });
    expect(v).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/destination', rule: 'schema:required' }),
        expect.objectContaining({ path: '/passengers', rule: 'schema:minimum' }),
        expect.objectContaining({ path: '/email', rule: 'schema:format' }),
        expect.objectContaining({ path: '/extra', rule: 'schema:additionalProperties' }),
      ]),
    );
    expect(v).toHaveLength(4);
    expect(v.find((x) => x.rule === 'schema:required')!.message).toMatch(/required property 'destination'/);
    expect(t.validateInput('not an object')).toEqual([expect.objectContaining({ path: '', rule: 'schema:type' })]);
  });

  it('tools:validateInput:no-allocation — a valid input returns the same empty array every time', () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(generalist());
    const a = t.validateInput({ destination: 'CFU' });
    const b = t.validateInput({ destination: 'LGW' });
    expect(a).toHaveLength(0);
    expect(a).toBe(b);
  });

  it('tools:validateOutput — checks the outputSchema when given, and accepts anything without one', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const withOut = r.register(
      generalist({ outputSchema: { type: 'object', required: ['flights'], properties: { flights: { type: 'array' } } } }),
    );
    expect(withOut.validateOutput({ flights: [] })).toEqual([]);
    expect(withOut.validateOutput({ flights: 'none' })).toEqual([expect.objectContaining({ path: '/flights', rule: 'schema:type' })]);
    const without = r.register(specialist());
    expect(without.validateOutput(42)).toEqual([]);
  });

  it('tools:schema:per-registry — two registries compile the same $id independently', () => {
    const s = { $id: 'https://example.test/flight.json', type: 'object', properties: {} };
    expect(new ToolRegistry(compileApprovalPolicy).register(generalist({ inputSchema: s })).validateInput({})).toEqual([]);
    expect(new ToolRegistry(compileApprovalPolicy).register(generalist({ inputSchema: s })).validateInput({})).toEqual([]);
  });

  it('tools:schema:duplicate-id — a second schema with an $id already used in this registry fails naming the tool', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const s = { $id: 'https://example.test/flight.json', type: 'object', properties: {} };
    r.register(generalist({ inputSchema: s }));
    expectRule(() => r.register(generalist({ name: 'other', inputSchema: { ...s } })), 'tools:schema:invalid-fails-registration', "'other'", /already exists/);
  });
});

describe('ToolRegistry: approval policies (spec 002 "HITL approval integration")', () => {
  it('tools:approval:none — false or absent compiles to kind none, which approves', async () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const a = r.register(generalist());
    const b = r.register(specialist({ requiresApproval: false }));
    for (const t of [a, b]) {
      expect(t.approval.kind).toBe('none');
      expect(await t.approval.evaluate({}, ctx)).toMatchObject({ decision: 'approve', source: 'none' });
    }
  });

  it('tools:approval:always — true compiles to kind always, which asks with source always', async () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(generalist({ requiresApproval: true }));
    expect(t.approval.kind).toBe('always');
    expect(await t.approval.evaluate({ destination: 'CFU' }, ctx)).toEqual({ decision: 'ask', source: 'always' });
  });

  it('tools:approval:cel — autoApproveIf compiles once and approves only when true (spec example)', async () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(
      generalist({ name: 'book_flight', requiresApproval: { autoApproveIf: "args.totalCost < 50 && ctx.user.tier == 'trusted'" }, inputSchema: { type: 'object' } }),
    );
    expect(t.approval.kind).toBe('cel');
    expect(t.approval.expression).toBe("args.totalCost < 50 && ctx.user.tier == 'trusted'");
    expect(await t.approval.evaluate({ totalCost: 30 }, ctx)).toEqual({ decision: 'approve', source: 'cel' });
    expect(await t.approval.evaluate({ totalCost: 80 }, ctx)).toEqual({ decision: 'ask', source: 'cel' });
    expect(await t.approval.evaluate({ totalCost: 30 }, { ...ctx, user: { tier: 'new' } })).toEqual({ decision: 'ask', source: 'cel' });
  });

  it('tools:cel:syntax-error-fails-registration — a CEL syntax error fails naming the tool and the CEL error', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(
      () => r.register(generalist({ requiresApproval: { autoApproveIf: 'args.totalCost < ' } })),
      'tools:cel:syntax-error-fails-registration',
      "'search_flights'",
      /autoApproveIf does not parse as CEL: Unexpected token/,
    );
    expect(r.has('search_flights')).toBe(false);
  });

  it('tools:cel:type-error-fails-registration — unknown variables or functions fail at registration', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ requiresApproval: { autoApproveIf: 'process.env.HOME == "x"' } })), 'tools:cel:type-error-fails-registration', /process/);
    expectRule(() => r.register(generalist({ requiresApproval: { autoApproveIf: 'exec("rm -rf /")' } })), 'tools:cel:type-error-fails-registration', /exec/);
  });

  it('tools:cel:must-return-bool — an expression of a known non-bool type fails at registration', () => {
    expectRule(() => new ToolRegistry(compileApprovalPolicy).register(generalist({ requiresApproval: { autoApproveIf: 'size(args.items)' } })), 'tools:cel:must-return-bool', /int/);
  });

  it('tools:approval:handler — a handler function compiles to kind handler', async () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(generalist({ requiresApproval: (args: { destination?: string }) => ({ decision: args.destination === 'CFU' ? 'approve' : 'deny', reason: 'route policy' }) }));
    expect(t.approval.kind).toBe('handler');
    expect(await t.approval.evaluate({ destination: 'CFU' }, ctx)).toEqual({ decision: 'approve', source: 'handler', reason: 'route policy' });
    expect(await t.approval.evaluate({ destination: 'JFK' }, ctx)).toEqual({ decision: 'deny', source: 'handler', reason: 'route policy' });
  });

  it('tools:approval:invalid — any other requiresApproval value is rejected', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ requiresApproval: 'yes' })), 'tools:approval:invalid');
    expectRule(() => r.register(generalist({ requiresApproval: { autoApprove: 'true' } })), 'tools:approval:invalid', /autoApprove/);
  });

  it('tools:approval:standing — allowStandingApproval defaults to true and can be turned off at either level', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expect(r.register(generalist({ name: 'a', requiresApproval: true })).approval.allowStandingApproval).toBe(true);
    expect(r.register(generalist({ name: 'b', requiresApproval: true, allowStandingApproval: false })).approval.allowStandingApproval).toBe(false);
    expect(
      r.register(generalist({ name: 'c', requiresApproval: { autoApproveIf: 'false', allowStandingApproval: false } })).approval.allowStandingApproval,
    ).toBe(false);
    expectRule(() => r.register(generalist({ name: 'd', allowStandingApproval: 'no' })), 'tools:approval:allowStandingApproval-boolean');
  });
});

describe('ToolRegistry: resolve (spec 002 "Per-actor filtering")', () => {
  it('tools:resolve:in-order — names resolve to the registered tools in the order given', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const a = r.register(generalist());
    const b = r.register(specialist());
    expect(r.resolve(['extract_dates', 'search_flights'], 'triage')).toEqual([b, a]);
    expect(r.resolve([])).toEqual([]);
  });

  it('tools:resolve:lists-every-unknown — one TurnstateError lists every unknown name and the actor', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    r.register(generalist());
    let err: unknown;
    try {
      r.resolve(['task_get', 'search_flights', 'missive_list', 'respond'], 'triage');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TurnstateError);
    const e = err as TurnstateError;
    expect(e).not.toBeInstanceOf(RegistrationError);
    expect(e.code).toBe('tool.unknown');
    expect(e.message).toContain("actor 'triage'");
    expect(e.message).toContain('task_get, missive_list, respond');
    expect(e.message).toMatch(/respond is provided by the runtime/);
    expect(e.message).toContain('Registered tools: search_flights');
    expect(e.details).toEqual({ actor: 'triage', unknown: ['task_get', 'missive_list', 'respond'] });
  });

  it('registries:per-instance — a tool registered in one registry is unknown to another', () => {
    const a = new ToolRegistry(compileApprovalPolicy);
    a.register(generalist());
    const b = new ToolRegistry(compileApprovalPolicy);
    expect(b.has('search_flights')).toBe(false);
    expect(() => b.resolve(['search_flights'])).toThrowError(/search_flights/);
    expect(b.register(generalist()).name).toBe('search_flights');
  });

  it('tools:registered:frozen — a registered tool cannot be altered', () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(generalist());
    expect(() => {
      (t as { scope: string }).scope = 'specialist';
    }).toThrow(TypeError);
  });
});

describe('ToolRegistry: timeouts and retries (spec 002 "Cancellation, retry, and audit instrumentation still apply")', () => {
  it('tools:execution:defaults — a tool without the fields is not idempotent, has no timeout and no retry policy', () => {
    const t = new ToolRegistry(compileApprovalPolicy).register(generalist());
    expect(t).toMatchObject({ idempotent: false, timeoutMs: undefined, retry: undefined });
  });

  it('tools:retry:normalised — an idempotent routed tool keeps its timeout and its retry policy, defaults filled in and frozen', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const t = r.register(generalist({ idempotent: true, timeoutMs: 2500, retry: { attempts: 3 } }));
    expect(t).toMatchObject({ idempotent: true, timeoutMs: 2500, retry: { attempts: 3, backoffMs: 0, backoffFactor: 2 } });
    expect(Object.isFrozen(t.retry)).toBe(true);
    const s = r.register(specialist({ idempotent: true, retry: { attempts: 2, backoffMs: 50, backoffFactor: 1 } }));
    expect(s.retry).toEqual({ attempts: 2, backoffMs: 50, backoffFactor: 1 });
  });

  it('tools:retry:requires-idempotent — retry on a tool not declared idempotent is rejected, naming the tool and the fix', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(generalist({ retry: { attempts: 3 } })), 'tools:retry:requires-idempotent', "'search_flights'", /idempotent: true/);
    expectRule(() => r.register(generalist({ idempotent: false, retry: { attempts: 3 } })), 'tools:retry:requires-idempotent');
    expect(r.has('search_flights')).toBe(false);
  });

  it('tools:retry:requires-idempotent — the definition type already refuses retry without idempotent: true, and timeoutMs/retry on bypass', () => {
    const base = { name: 'typed_rates', description: 'Rates.', inputSchema: { type: 'object' }, handler: () => ({}) } as const;
    const ok: ToolDefinition = { ...base, scope: 'generalist', idempotent: true, timeoutMs: 100, retry: { attempts: 2 } };
    // @ts-expect-error retry needs idempotent: true
    const noIdem: ToolDefinition = { ...base, scope: 'generalist', retry: { attempts: 2 } };
    const bypassBase = { ...base, scope: 'specialist', routing: 'bypass', bypassRouting: { reason: 'inline in the actor loop' }, justification: 'private to one actor, its own state' } as const;
    // @ts-expect-error a bypass tool takes no timeoutMs
    const bypassTimeout: ToolDefinition = { ...bypassBase, timeoutMs: 100 };
    const r = new ToolRegistry(compileApprovalPolicy);
    expect(r.register(ok).retry?.attempts).toBe(2);
    expect(() => r.register(noIdem)).toThrow(RegistrationError);
    expect(() => r.register(bypassTimeout)).toThrow(RegistrationError);
  });

  it('tools:retry:routed-only / tools:timeoutMs:routed-only — a bypass tool (run inline, outside the router) takes neither', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    expectRule(() => r.register(bypass({ idempotent: true, retry: { attempts: 2 } })), 'tools:retry:routed-only', "'imap_fetch'", /bypass/);
    expectRule(() => r.register(bypass({ timeoutMs: 100 })), 'tools:timeoutMs:routed-only', /bypass/);
    expect(r.register(bypass({ idempotent: true })).idempotent).toBe(true);
  });

  it('tools:retry:attempts / backoffMs / backoffFactor / field-unknown / object — a malformed policy is rejected, naming the field and the value', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const idem = (retry: unknown) => () => r.register(generalist({ idempotent: true, retry }));
    expectRule(idem(null), 'tools:retry:object');
    expectRule(idem(3), 'tools:retry:object');
    for (const attempts of [undefined, 1, 0, 2.5, 11, '3']) expectRule(idem({ attempts }), 'tools:retry:attempts', /retry\.attempts/);
    for (const backoffMs of [-1, Number.NaN, Infinity, '10', 2 ** 31]) expectRule(idem({ attempts: 2, backoffMs }), 'tools:retry:backoffMs', /retry\.backoffMs/);
    for (const backoffFactor of [0.5, 11, Number.NaN]) expectRule(idem({ attempts: 2, backoffFactor }), 'tools:retry:backoffFactor', /retry\.backoffFactor/);
    expectRule(idem({ attempts: 2, maxAttempts: 3 }), 'tools:retry:field-unknown', /'retry\.maxAttempts'/);
  });

  it('tools:timeoutMs:positive / tools:idempotent:boolean — a timeout is milliseconds above 0, refused showing the value given (NaN, not null); idempotent is a boolean', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    for (const timeoutMs of [0, -5, Number.NaN, Infinity, '100', 2 ** 31]) {
      expectRule(() => r.register(generalist({ timeoutMs })), 'tools:timeoutMs:positive', /timeoutMs/);
    }
    // The value as it was given (JSON would show NaN and Infinity as null, and a string as a number's twin).
    expectRule(() => r.register(generalist({ timeoutMs: Number.NaN })), 'tools:timeoutMs:positive', /got NaN$/);
    expectRule(() => r.register(generalist({ timeoutMs: '100' })), 'tools:timeoutMs:positive', /got "100"$/);
    expectRule(() => r.register(generalist({ idempotent: true, retry: { attempts: 2, backoffMs: Infinity } })), 'tools:retry:backoffMs', /got Infinity$/);
    expectRule(() => r.register(generalist({ idempotent: 'yes' })), 'tools:idempotent:boolean');
    expect(r.register(generalist({ timeoutMs: 0.5 })).timeoutMs).toBe(0.5);
  });
});
