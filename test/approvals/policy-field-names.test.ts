/**
 * Field names in what a policy is evaluated over are data (docs/concepts/approvals.md, "Policies":
 * "Any field name is data … no field stops a policy from being evaluated"). cel-js reads a value's
 * type from `value.constructor`; an own field of that name (a JSON key like any other) hid it, and
 * every policy over such arguments asked with cel-error ("Unsupported type: object"), or failed
 * with a raw TypeError for `"constructor": null`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closePolicyEvaluators, compileApprovalPolicy } from '../../src/approvals/policy.js';
import type { PolicyContext } from '../../src/registries/types.js';

const ctx: PolicyContext = { actor: 'desk', session: { id: 's' }, turn: { id: 't' }, user: { id: 'u', tier: 'trusted' }, tenant: {} };
const run = (expr: string, args: unknown, c: PolicyContext = ctx) => compileApprovalPolicy('order', { autoApproveIf: expr }).evaluate(args, c);

afterAll(() => closePolicyEvaluators());

describe('approval policy: field names are data', () => {
  it('approvals:cel:any-field-name — a field named constructor, __proto__ or prototype in args or ctx.user, at the top or nested, changes nothing else; it reads as its value', async () => {
    const cases = [
      '{"q":"x","constructor":"ACME Builders"}',
      '{"q":"x","constructor":null}',
      '{"q":"x","constructor":{}}',
      '{"q":"x","constructor":{"name":"Object"}}',
      '{"q":"x","prototype":1,"__proto__":{"a":1}}',
      '{"q":"x","meta":{"constructor":"y","items":[{"constructor":null}]}}',
    ];
    for (const json of cases) {
      // JSON.parse keeps "__proto__" as an own field, as a body parsed from the wire does.
      expect(await run('args.q == "x"', JSON.parse(json)), json).toEqual({ decision: 'approve', source: 'cel' });
      expect(await run('args.q == "y"', JSON.parse(json)), json).toEqual({ decision: 'ask', source: 'cel' });
    }
    const args = JSON.parse('{"q":"x","constructor":"ACME Builders","__proto__":{"a":1},"meta":{"constructor":null,"items":[{"constructor":{}}]}}');
    for (const expr of [
      'args.constructor == "ACME Builders"',
      '"constructor" in args && has(args.constructor)',
      'args.__proto__.a == 1',
      'args.meta.constructor == null && size(args.meta.items) == 1',
      'size(args) == 4 && args.exists(k, k == "constructor")',
      'args.meta.items.all(i, "constructor" in i)',
    ]) {
      expect(await run(expr, args), expr).toEqual({ decision: 'approve', source: 'cel' });
    }
    // ctx.user carries the principal's attributes: a `constructor` attribute is data too.
    const user = { id: 'u', tier: 'trusted', constructor: 'x' } as unknown as PolicyContext['user'];
    expect(await run('ctx.user.tier == "trusted" && ctx.user.constructor == "x"', { q: 'x' }, { ...ctx, user })).toEqual({ decision: 'approve', source: 'cel' });
    // What was not found is still an error, and the bounds still apply.
    expect(await run('args.missing == 1', args)).toEqual({ decision: 'ask', source: 'cel-error', reason: 'autoApproveIf failed: "No such key: missing"' });
    expect(await run('args.q == "x"', { q: 'x', constructor: 'y', big: 'z'.repeat(70_000) })).toMatchObject({ decision: 'ask', source: 'cel-error' });
  });
});
