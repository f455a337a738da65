import { describe, expect, it } from 'vitest';
import { evaluatorEnv } from '../../src/approvals/cel-sandbox.js';
import { compileApprovalPolicy } from '../../src/approvals/policy.js';

describe('policy evaluators: what they inherit', () => {
  it('approvals:budget:env — "an evaluator inherits only PATH and TZ of the server\'s environment": no API key, database URL or NODE_OPTIONS', () => {
    const env = { PATH: '/usr/bin', TZ: 'UTC', ANTHROPIC_API_KEY: 'sk-ant-secret', TURNSTATE_API_KEYS: '{"k":{"userId":"u"}}', DATABASE_URL: 'postgres://x', NODE_OPTIONS: '--require ./apm.js' };
    expect(evaluatorEnv(env)).toEqual({ PATH: '/usr/bin', TZ: 'UTC' });
    expect(evaluatorEnv({})).toEqual({});
  });

  it('approvals:budget:env — a CEL policy still evaluates in an evaluator started with that environment', async () => {
    const policy = compileApprovalPolicy('t', { autoApproveIf: 'args.n < 5 && timestamp("2026-01-01T00:00:00Z").getFullYear() == 2026' });
    const ctx = { actor: 'a', session: { id: 's' }, turn: { id: 't' }, user: { id: 'u' }, tenant: {} };
    expect(await policy.evaluate({ n: 1 }, ctx as never)).toEqual({ decision: 'approve', source: 'cel' });
  });
});
