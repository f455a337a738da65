import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EventRouter, type RoutedEvent } from '../../src/router/router.js';
import { MemoryExecutionLog } from '../../src/router/execution-log.js';
import { ctx, makeTool } from './fixtures.js';

const tools = {
  generalist: makeTool({ name: 'prop_generalist', scope: 'generalist', handler: (a: { n: number }) => ({ n: a.n }) }),
  specialist: makeTool({ name: 'prop_specialist', scope: 'specialist', handler: async (a: { n: number }) => ({ n: a.n }) }),
  bypass: makeTool({ name: 'prop_bypass', scope: 'specialist', routing: 'bypass', handler: (a: { n: number }) => ({ n: a.n }) }),
  failing: makeTool({ name: 'prop_failing', scope: 'specialist', handler: () => { throw new Error('no'); } }),
};
type ToolKey = keyof typeof tools;
const sessions = ['s1', 's2', 's3'] as const;

type Step =
  | { op: 'call'; tool: ToolKey; session: (typeof sessions)[number] }
  | { op: 'observe'; session: (typeof sessions)[number] | undefined }
  | { op: 'unobserve'; index: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('call' as const), tool: fc.constantFrom<ToolKey>('generalist', 'specialist', 'bypass', 'failing'), session: fc.constantFrom(...sessions) }),
  fc.record({ op: fc.constant('observe' as const), session: fc.option(fc.constantFrom(...sessions), { nil: undefined }) }),
  fc.record({ op: fc.constant('unobserve' as const), index: fc.nat(10) }),
);

describe('EventRouter under random action sequences', () => {
  it('router:specialist:private-to-session + router:every-call:logged — property: visibility and logging hold after every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 40 }), async (steps) => {
        const log = new MemoryExecutionLog();
        const router = new EventRouter({ executionLog: log });
        const observers: { session: string | undefined; seen: RoutedEvent[]; expected: string[]; sub: { unsubscribe(): void }; active: boolean }[] = [];
        let calls = 0;
        let n = 0;
        for (const step of steps) {
          if (step.op === 'observe') {
            const o = { session: step.session, seen: [] as RoutedEvent[], expected: [] as string[], active: true, sub: { unsubscribe() {} } };
            o.sub = router.observe(step.session === undefined ? {} : { sessionId: step.session }, (e) => void o.seen.push(e));
            observers.push(o);
          } else if (step.op === 'unobserve') {
            const o = observers[step.index];
            if (o) {
              o.sub.unsubscribe();
              o.active = false;
            }
          } else {
            const tool = tools[step.tool];
            n += 1;
            const out = await router.dispatchTool(tool, { n }, ctx({ sessionId: step.session }));
            calls += 1;
            expect(out.isError).toBe(step.tool === 'failing');
            const routed = tool.routing === 'routed';
            for (const o of observers) {
              if (!o.active || !routed) continue;
              const sees = o.session === undefined ? tool.scope === 'generalist' : o.session === step.session;
              if (sees) o.expected.push(`tool_call:${tool.name}@${step.session}`, `tool_result:${tool.name}@${step.session}`);
            }
          }
          for (const o of observers) expect(o.seen.map((e) => `${e.type}@${e.sessionId}`)).toEqual(o.expected);
          expect(log.size).toBe(calls);
        }
      }),
      { numRuns: 150 },
    );
  });
});
