import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileApprovalPolicy, DEFAULT_POLICY_LIMITS } from '../../src/approvals/policy.js';
import { RegistrationError } from '../../src/errors.js';
import type { ApprovalHandler, PolicyContext } from '../../src/registries/types.js';
import type { PolicyResult } from '../../src/types.js';
import { registrationError } from '../registries/helpers.js';

const ctx: PolicyContext = {
  actor: 'booker',
  session: { id: 'sess-1', tenantId: 'acme' },
  turn: { id: 'turn-1' },
  user: { id: 'u1', tier: 'trusted', roles: ['traveller'] },
  tenant: { id: 'acme' },
};

const cel = (expr: string) => compileApprovalPolicy('book_flight', { autoApproveIf: expr });
const run = (expr: string, args: unknown, c: PolicyContext = ctx) => cel(expr).evaluate(args, c) as Promise<PolicyResult>;


describe('approval policy: CEL over a pinned context', () => {
  it('approvals:cel:true-approves — a true expression approves with source cel', async () => {
    expect(await run("args.totalCost < 50 && ctx.user.tier == 'trusted'", { totalCost: 30 })).toEqual({ decision: 'approve', source: 'cel' });
  });

  it('approvals:cel:false-asks — a false expression asks with source cel', async () => {
    expect(await run("args.totalCost < 50 && ctx.user.tier == 'trusted'", { totalCost: 500 })).toEqual({ decision: 'ask', source: 'cel' });
  });

  it('approvals:cel:context-fields — actor, session, turn, user and tenant are visible under ctx', async () => {
    const expr =
      "ctx.actor == 'booker' && ctx.session.id == 'sess-1' && ctx.session.tenantId == 'acme' && ctx.turn.id == 'turn-1' && ctx.tenant.id == 'acme' && 'traveller' in ctx.user.roles";
    expect(await run(expr, {})).toEqual({ decision: 'approve', source: 'cel' });
  });

  it('approvals:cel:pinned — fields outside the pinned context are invisible even when the caller passes them', async () => {
    const leaky = { ...ctx, secrets: { apiKey: 'k' }, session: { ...ctx.session, token: 'x' } } as unknown as PolicyContext;
    const a = await run("ctx.secrets.apiKey == 'k'", {}, leaky);
    expect(a.decision).toBe('ask');
    expect(a.source).toBe('cel-error');
    expect((await run("ctx.session.token == 'x'", {}, leaky)).decision).toBe('ask');
    expect(await run('has(ctx.secrets)', {}, leaky)).toEqual({ decision: 'ask', source: 'cel' });
  });

  it('approvals:cel:non-boolean-asks — a non-bool result asks with source cel-error and says what it got', async () => {
    const r = await run('args.flag', { flag: 'yes' });
    expect(r).toMatchObject({ decision: 'ask', source: 'cel-error' });
    expect(r.reason).toMatch(/not a bool/);
    expect((await run('args.flag', { flag: 1 })).decision).toBe('ask');
    expect((await run('args.flag', { flag: null })).decision).toBe('ask');
  });

  it('approvals:cel:error-asks — an evaluation error asks with source cel-error and the CEL message as reason', async () => {
    const r = await run('args.totalCost < 50', {});
    expect(r).toEqual({ decision: 'ask', source: 'cel-error', reason: 'autoApproveIf failed: "No such key: totalCost"' });
  });

  it('approvals:cel:never-throws — evaluate never throws or rejects, whatever args are', async () => {
    const p = cel('args.a == 1');
    for (const args of [undefined, null, 1, 'x', [], [1, 2], { a: 1 }, { a: () => 1 }, new Map(), new Date(), Symbol('s')]) {
      const r = await p.evaluate(args, ctx);
      expect(r.decision).toBe(args !== null && typeof args === 'object' && (args as { a?: unknown }).a === 1 && !Array.isArray(args) ? 'approve' : 'ask');
    }
    expect((await p.evaluate({ a: 1 }, undefined as unknown as PolicyContext)).decision).toBe('approve');
  });
});

describe('approval policy: hostile expressions neither escape nor approve', () => {
  const hostile: [string, unknown][] = [
    ['args.__proto__ != null', {}],
    ["args['__proto__'] != null", {}],
    ['args.constructor != null', {}],
    ['has(args.constructor)', {}],
    ['ctx.constructor.constructor != null', {}],
    ["ctx['constructor']['constructor']('return process')() != null", {}],
    ['args.toString != null', {}],
    ['args.hasOwnProperty != null', { a: 1 }],
    ['ctx.user.__proto__.polluted == true', {}],
    ['args.items.all(i, i.constructor != null)', { items: [{}, {}] }],
  ];
  for (const [expr, args] of hostile) {
    it(`approvals:cel:hostile — ${expr} asks`, async () => {
      let policy;
      try {
        policy = cel(expr);
      } catch (e) {
        // Refusing the expression at registration is as good as never approving.
        expect(e).toBeInstanceOf(RegistrationError);
        return;
      }
      const r = await policy.evaluate(args, ctx);
      expect(r.decision).toBe('ask');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  }

  it('approvals:cel:unknown-function — a call to a function that does not exist fails at registration', () => {
    for (const expr of ['eval("1") == 1', 'require("fs") != null', 'args.name.exec() == ""', 'process.exit(1) == 0']) {
      expect(registrationError(() => cel(expr)).rule).toBe('tools:cel:type-error-fails-registration');
    }
  });

  it('approvals:cel:unknown-variable — variables other than args and ctx do not exist', () => {
    const e = registrationError(() => cel('globalThis != null'));
    expect(e.rule).toBe('tools:cel:type-error-fails-registration');
    expect(e.message).toContain('globalThis');
  });

  it('approvals:bounds:huge-string — size(args.x) > 0 over a huge string asks without evaluating', async () => {
    const r = await run('size(args.x) > 0', { x: 'a'.repeat(5_000_000) });
    expect(r.decision).toBe('ask');
    expect(r.source).toBe('cel-error');
    expect(r.reason).toMatch(/more than 65536 characters/);
    expect((await run('size(args.x) > 0', { x: 'a'.repeat(1000) })).decision).toBe('approve');
  });

  it('approvals:bounds:deep-nesting — deeply nested input asks', async () => {
    let deep: Record<string, unknown> = { v: 1 };
    for (let i = 0; i < 10_000; i++) deep = { n: deep };
    const r = await run('has(args.n)', deep);
    expect(r).toMatchObject({ decision: 'ask', source: 'cel-error' });
    expect(r.reason).toMatch(/nested deeper than 32/);
  });

  it('approvals:bounds:cyclic — a cyclic input asks instead of looping', async () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    expect(await run('args.x == 1', a)).toMatchObject({ decision: 'ask', source: 'cel-error' });
  });

  it('approvals:bounds:big-list — a 100k-element list asks, quickly: refused from its length before one element is read (its time: bench/suites/policies-ids.mjs)', async () => {
    const items = Array.from({ length: 100_000 }, (_, i) => i);
    let reads = 0;
    const watched = new Proxy(items, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });
    const r = await run('args.items.all(i, i >= 0)', { items: watched });
    expect(r).toMatchObject({ decision: 'ask', source: 'cel-error' });
    expect(r.reason).toMatch(/more than 2000 values/);
    expect(reads).toBe(0);
  });

  it('approvals:bounds:big-user — an oversized ctx.user also asks', async () => {
    const user = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    expect((await run('true', {}, { ...ctx, user })).decision).toBe('ask');
  });

  it('approvals:bounds:non-data — functions, class instances and symbols in args ask', async () => {
    expect((await run('true', { f: () => 1 })).reason).toMatch(/function/);
    expect((await run('true', { d: new Date() })).reason).toMatch(/non-plain object/);
    expect((await run('true', { s: Symbol('x') })).reason).toMatch(/symbol/);
  });

  it('tools:cel:expression-too-long — an expression over the length limit fails at registration', () => {
    const long = Array.from({ length: 600 }, (_, i) => `args.a${i} == 1`).join(' || ');
    expect(long.length).toBeGreaterThan(DEFAULT_POLICY_LIMITS.maxExpressionLength);
    expect(registrationError(() => cel(long)).rule).toBe('tools:cel:expression-too-long');
  });

  it('tools:cel:macro-nesting — macros nested three deep fail at registration; two deep is allowed', () => {
    expect(cel('args.a.all(x, args.b.all(y, y != x))').kind).toBe('cel');
    const e = registrationError(() => cel('args.a.all(x, args.a.all(y, args.a.all(z, x == y && y == z)))'));
    expect(e.rule).toBe('tools:cel:macro-nesting');
  });

  it('tools:cel:regex-unsupported — a pattern RE2 cannot compile fails at registration naming the pattern; patterns from input are refused', async () => {
    for (const pattern of ['(x)\\\\1', '(?<=a)b', '[a-']) {
      const e = registrationError(() => cel(`args.s.matches("${pattern}")`));
      expect(e.rule).toBe('tools:cel:regex-unsupported');
      expect(e.message).toContain(JSON.stringify(pattern.replace(/\\\\/g, '\\')));
    }
    expect(registrationError(() => cel('args.s.matches(args.pattern)')).rule).toBe('tools:cel:regex-must-be-literal');
    expect(['tools:cel:regex-must-be-literal', 'tools:cel:type-error-fails-registration']).toContain(
      registrationError(() => cel('matches(args.s, ctx.user.pattern)')).rule,
    );
    expect((await run('args.s.matches("^[a-z]+@example\\\\.com$")', { s: 'bob@example.com' })).decision).toBe('approve');
    expect((await run('args.s.matches("^[a-z]+@example\\\\.com$")', { s: 'bob@exampleXcom' })).decision).toBe('ask');
  });

  it('approvals:regex:re2 — matches() runs on RE2: nested repetition is allowed and linear, partial matches count (CEL semantics)', async () => {
    expect((await run('args.s.matches("(a+)+b")', { s: `${'a'.repeat(30_000)}c` })).decision).toBe('ask');
    expect((await run('args.s.matches("(a+)+b")', { s: 'xxaab' })).decision).toBe('approve');
    expect((await run('args.s.matches("b.d") && !args.s.matches("^b")', { s: 'abcde' })).decision).toBe('approve');
    // Two calls in one expression, spaced oddly: both are rewritten to RE2.
    expect((await run('args.a . matches( "^x" ) && args.b.matches("y$")', { a: 'xa', b: 'by' })).decision).toBe('approve');
  });
});

describe('approval policy: kinds none, always, handler', () => {
  it('approvals:none — false and undefined approve with source none', () => {
    for (const p of [compileApprovalPolicy('t', false), compileApprovalPolicy('t', undefined)]) {
      expect(p.kind).toBe('none');
      expect(p.evaluate({}, ctx)).toEqual({ decision: 'approve', source: 'none' });
    }
  });

  it('approvals:always — true asks with source always', async () => {
    const p = compileApprovalPolicy('t', true);
    expect(p.kind).toBe('always');
    expect(p.evaluate({}, ctx)).toEqual({ decision: 'ask', source: 'always' });
  });

  it('approvals:handler:verdicts — approve, deny and ask are passed through with the reason', async () => {
    for (const decision of ['approve', 'deny', 'ask'] as const) {
      const p = compileApprovalPolicy('t', () => ({ decision, reason: `because ${decision}` }));
      expect(await p.evaluate({}, ctx)).toEqual({ decision, source: 'handler', reason: `because ${decision}` });
    }
  });

  it('approvals:handler:async — an async handler resolves to its verdict', async () => {
    const p = compileApprovalPolicy('t', async (args) => ({ decision: (args as { n: number }).n < 3 ? 'approve' : 'ask' }));
    expect(await p.evaluate({ n: 1 }, ctx)).toEqual({ decision: 'approve', source: 'handler' });
    expect(await p.evaluate({ n: 9 }, ctx)).toEqual({ decision: 'ask', source: 'handler' });
  });

  it('approvals:handler:pinned — the handler sees the pinned context only', async () => {
    let seen: unknown;
    const p = compileApprovalPolicy('t', (_a, c) => {
      seen = c;
      return { decision: 'ask' };
    });
    await p.evaluate({}, { ...ctx, secret: 1 } as unknown as PolicyContext);
    expect(seen).toEqual({ actor: 'booker', session: { id: 'sess-1', tenantId: 'acme' }, turn: { id: 'turn-1' }, user: ctx.user, tenant: { id: 'acme' } });
  });

  it('approvals:handler:error — a throwing handler asks with source handler-error', async () => {
    const p = compileApprovalPolicy('t', () => {
      throw new Error('policy service down');
    });
    expect(await p.evaluate({}, ctx)).toEqual({ decision: 'ask', source: 'handler-error', reason: 'approval handler threw: policy service down' });
  });

  it('approvals:handler:rejection — a rejecting handler asks with source handler-error', async () => {
    const p = compileApprovalPolicy('t', () => Promise.reject(new Error('nope')));
    expect(await p.evaluate({}, ctx)).toEqual({ decision: 'ask', source: 'handler-error', reason: 'approval handler rejected: nope' });
  });

  it('approvals:handler:invalid-verdict — a malformed verdict asks with source handler-error', async () => {
    const bad: unknown[] = [undefined, null, true, 'approve', { decision: 'yes' }, { decision: 'approve', reason: 7 }, {}];
    for (const v of bad) {
      const p = compileApprovalPolicy('t', (() => v) as unknown as ApprovalHandler);
      const r = await p.evaluate({}, ctx);
      expect(r.decision).toBe('ask');
      expect(r.source).toBe('handler-error');
    }
  });

  it('approvals:handler:timeout — a handler that never answers asks after the timeout', async () => {
    const p = compileApprovalPolicy('t', () => new Promise(() => {}), undefined, { ...DEFAULT_POLICY_LIMITS, handlerTimeoutMs: 20 });
    const r = await p.evaluate({}, ctx);
    expect(r).toMatchObject({ decision: 'ask', source: 'handler-error' });
    expect(r.reason).toMatch(/within 20 ms/);
  });

  it('tools:cel:expression-required — an empty autoApproveIf is rejected', () => {
    expect(registrationError(() => compileApprovalPolicy('t', { autoApproveIf: '  ' })).rule).toBe('tools:cel:expression-required');
    expect(registrationError(() => compileApprovalPolicy('t', { autoApproveIf: 3 } as never)).rule).toBe('tools:cel:expression-required');
  });
});

describe('approval policy: properties', () => {
  const json = fc.jsonValue({ maxDepth: 4 });
  const argsArb = fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 8 });

  it('approvals:cel:property — for arbitrary args a policy never throws and approves only when the expression is truly true', async () => {
    // Each expression is paired with an independent JS oracle of when it is true.
    const cases: [string, (a: Record<string, unknown>) => boolean][] = [
      ['args.n == 1', (a) => a.n === 1],
      ['has(args.n) && args.n == true', (a) => a.n === true],
      ["has(args.s) && args.s == 'ok'", (a) => a.s === 'ok'],
      ['size(args) == 0', (a) => Object.keys(a).length === 0],
      ["has(args.__proto__)", () => false],
      ["has(args.constructor)", (a) => Object.hasOwn(a, 'constructor')],
    ];
    const policies = cases.map(([expr, oracle]) => [cel(expr), oracle, expr] as const);
    await fc.assert(
      fc.asyncProperty(argsArb, async (args) => {
        for (const [policy, oracle, expr] of policies) {
          // A throw here fails the property (fast-check reports the shrunk args).
          const r = await policy.evaluate(args, ctx);
          if (r.decision !== 'approve' && r.decision !== 'ask') throw new Error(`${expr}: unexpected decision ${String(r.decision)}`);
          if (r.decision === 'approve' && !oracle(args)) throw new Error(`${expr} approved ${JSON.stringify(args)}`);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('approvals:cel:property-any-value — for any value at all (not just objects), evaluate returns a well-formed result', async () => {
    const p = cel('args.a.b == 1');
    await fc.assert(
      fc.asyncProperty(fc.anything({ maxDepth: 4 }), async (args) => {
        const r = await p.evaluate(args, ctx);
        expect(['approve', 'ask']).toContain(r.decision);
        if (r.decision === 'approve') {
          const a = args as { a?: { b?: unknown } };
          expect(a.a?.b === 1 || (a.a?.b as unknown) === 1n).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
