import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { createRespondParser, RespondRule } from '../../src/respond/parse.js';
import { respondJsonSchema } from '../../src/respond/schema.js';
import type { Registries } from '../../src/registries/types.js';
import type { Part } from '../../src/types.js';
import { clone, CTX, makeConsumerRegistries, validCallArb, type ValidCall } from './helpers.js';

const registries = makeConsumerRegistries();
const parser = createRespondParser(registries);
const RUNS = 400;

/* ------------------------------------------------------------------ near-valid: random edits anywhere */

type Container = Record<string, unknown> | unknown[];

function containers(v: unknown, out: Container[] = []): Container[] {
  if (v !== null && typeof v === 'object') {
    out.push(v as Container);
    for (const x of Object.values(v)) containers(x, out);
  }
  return out;
}

const edit = fc.record({ target: fc.nat(), key: fc.nat(), value: fc.anything({ maxDepth: 2 }), del: fc.boolean() });

function applyEdits(call: unknown, edits: { target: number; key: number; value: unknown; del: boolean }[]): unknown {
  for (const e of edits) {
    const cs = containers(call);
    const c = cs[e.target % cs.length]!;
    const keys = Object.keys(c);
    if (Array.isArray(c)) {
      const i = keys.length === 0 ? 0 : e.key % (keys.length + 1);
      if (e.del && i < c.length) c.splice(i, 1);
      else c[i] = e.value;
    } else {
      const names = [...keys, 'parts', 'turnState', 'passTo', 'text', 'data', 'metadata', 'partType', 'extra'];
      const k = names[e.key % names.length]!;
      if (e.del) delete c[k];
      else c[k] = e.value;
    }
  }
  return call;
}

describe('respond() parser: properties', () => {
  it('respond:parse:never-throws — fc.anything() and mutated near-valid calls never throw', () => {
    const check = (input: unknown) => {
      const r = parser.parse(input, CTX);
      if (r.ok) {
        expect(r.events).toHaveLength(r.call.parts.length + 1);
      } else {
        expect(r.violations.length).toBeGreaterThan(0);
        expect(r.message.endsWith('call respond() again with the whole corrected call.')).toBe(true);
        // One line per violation (capped at 50), a header and the instruction: no value breaks a line.
        expect(r.message.split('\n')).toHaveLength(2 + Math.min(r.violations.length, 50) + (r.violations.length > 50 ? 1 : 0));
      }
    };
    fc.assert(fc.property(fc.anything(), check), { numRuns: 1000 });
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withDate: true }), check),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(validCallArb(registries), fc.array(edit, { minLength: 1, maxLength: 4 }), (call, edits) => check(applyEdits(clone(call), edits))),
      { numRuns: 1000 },
    );
  });

  it('respond:parse:events-order — every valid call yields exactly its events in order', () => {
    const states = new Set<string>();
    const types = new Set<string>();
    fc.assert(
      fc.property(validCallArb(registries), (call) => {
        states.add(call.turnState);
        for (const p of call.parts) types.add(p.metadata.partType);
        const r = parser.parse(call, CTX);
        if (!r.ok) throw new Error(r.message);
        expect(r.call).toBe(call);
        expect(r.events).toHaveLength(call.parts.length + 1);
        call.parts.forEach((part, i) => {
          expect(r.events[i]).toEqual({ type: 'part.received', index: i, part, turnState: call.turnState });
          expect((r.events[i] as { part: Part }).part).toBe(part);
        });
        expect(r.events[call.parts.length]).toEqual({ type: 'turnState.changed', to: call.turnState });
      }),
      { numRuns: RUNS },
    );
    // Every registered state and every model-emittable type, consumer ones included, was generated.
    expect([...states].sort()).toEqual([...registries.turnStates.ids()].sort());
    expect(types.has('audio') && types.has('clarify') && types.has('domain-data')).toBe(true);
  });

  it('respond:schema:enums-from-registries — generated valid calls validate against the generated schema with a fresh ajv', () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    const wire = JSON.parse(JSON.stringify(respondJsonSchema(registries))) as Record<string, unknown>;
    const validate = ajv.compile(wire);
    fc.assert(
      fc.property(validCallArb(registries), (call) => {
        const roundTripped = JSON.parse(JSON.stringify(call)) as unknown;
        expect(validate(roundTripped), JSON.stringify(validate.errors)).toBe(true);
        expect(parser.parse(roundTripped, CTX).ok).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('respond:parse:all-violations — every injected violation is listed by rule id and path', () => {
    const seenRules = new Set<string>();
    let injected = 0;
    fc.assert(
      fc.property(validCallArb(registries), injections, (valid, inj) => {
        const { call, expected } = inject(registries, clone(valid) as ValidCall & Record<string, unknown>, inj);
        const r = parser.parse(call, CTX);
        if (expected.length === 0) return; // the draw injected nothing applicable
        injected++;
        for (const [rule] of expected) seenRules.add(rule);
        if (r.ok) throw new Error(`accepted ${JSON.stringify(call)}; expected ${JSON.stringify(expected)}`);
        for (const [rule, path] of expected) {
          const found = r.violations.some((v) => v.rule === rule && v.path === path);
          if (!found) throw new Error(`missing ${rule} at ${path} for ${JSON.stringify(call)}: got ${JSON.stringify(r.violations)}`);
          expect(r.message).toContain(`- ${path}: `);
          expect(r.message).toContain(`[${rule}]`);
        }
      }),
      { numRuns: 1000 },
    );
    // The generator really exercises every rule, most runs with at least one violation.
    expect(injected).toBeGreaterThan(500);
    expect([...seenRules].sort()).toEqual(
      [
        RespondRule.partsNonEmpty, RespondRule.partTypeRegistered, RespondRule.turnStateRegistered, RespondRule.approvalPartsNotFromModel,
        RespondRule.textXorData, RespondRule.carries, RespondRule.textNonEmpty, RespondRule.requiresPart, RespondRule.forbidsPart,
        RespondRule.passToRequiresPassed, RespondRule.passToDeclaredTarget, 'schema:required', 'schema:additional-property',
      ].sort(),
    );
  });
});

/* ------------------------------------------------------------------ injected violations */

type PartKind = 'unregistered' | 'both' | 'neither' | 'blank' | 'carries' | 'no-metadata' | 'extra-prop' | 'none';
type CallKind = 'none' | 'bad-state' | 'passTo-mismatch' | 'bad-target' | 'self-target' | 'clarifying' | 'extra-prop';

const injections = fc.record({
  partKinds: fc.array(fc.constantFrom<PartKind>('unregistered', 'both', 'neither', 'blank', 'carries', 'no-metadata', 'extra-prop', 'none'), { maxLength: 6 }),
  appendApproval: fc.boolean(),
  emptyParts: fc.boolean(),
  callKinds: fc.uniqueArray(fc.constantFrom<CallKind>('none', 'bad-state', 'passTo-mismatch', 'bad-target', 'self-target', 'clarifying', 'extra-prop'), { maxLength: 3 }),
});

function handsOff(registries: Registries, state: string): boolean {
  const m = registries.turnStates.get(state)?.meta;
  return m?.handsOff === true || m?.requires?.passTo === true;
}

function inject(
  registries: Registries,
  call: ValidCall & Record<string, unknown>,
  inj: { partKinds: PartKind[]; appendApproval: boolean; emptyParts: boolean; callKinds: CallKind[] },
): { call: unknown; expected: [string, string][] } {
  const expected: [string, string][] = [];
  const parts = call.parts as (Part & Record<string, unknown>)[];

  if (inj.emptyParts) {
    parts.length = 0;
    expected.push([RespondRule.partsNonEmpty, '/parts']);
  } else {
    // One violation per original part at most, so expectations do not interfere.
    inj.partKinds.slice(0, parts.length).forEach((kind, i) => {
      const p = parts[i]!;
      const carries = registries.partTypes.get(p.metadata.partType)!.meta.carries;
      switch (kind) {
        case 'unregistered':
          p.metadata.partType = `zz-unregistered-${i}`;
          expected.push([RespondRule.partTypeRegistered, `/parts/${i}/metadata/partType`]);
          break;
        case 'both':
          p.text = 'text';
          p.data = { d: 1 };
          expected.push([RespondRule.textXorData, `/parts/${i}`]);
          break;
        case 'neither':
          delete p.text;
          delete p.data;
          expected.push([RespondRule.textXorData, `/parts/${i}`]);
          break;
        case 'blank':
          if (p.text !== undefined) {
            p.text = ' \n\t ';
            expected.push([RespondRule.textNonEmpty, `/parts/${i}/text`]);
          }
          break;
        case 'carries':
          if (carries === 'text') {
            delete p.text;
            p.data = { wrong: true };
            expected.push([RespondRule.carries, `/parts/${i}/data`]);
          } else if (carries === 'data') {
            delete p.data;
            p.text = 'wrong';
            expected.push([RespondRule.carries, `/parts/${i}/text`]);
          }
          break;
        case 'no-metadata':
          delete (p as Partial<Part>).metadata;
          expected.push(['schema:required', `/parts/${i}/metadata`]);
          break;
        case 'extra-prop':
          p.kind = 'text';
          expected.push(['schema:additional-property', `/parts/${i}/kind`]);
          break;
        case 'none':
          break;
      }
    });
    if (inj.appendApproval) {
      parts.push({ data: { tool: 'book' }, metadata: { partType: 'approval-request' } });
      expected.push([RespondRule.approvalPartsNotFromModel, `/parts/${parts.length - 1}/metadata/partType`]);
    }
  }

  const order: CallKind[] = ['bad-state', 'clarifying', 'passTo-mismatch', 'bad-target', 'self-target', 'extra-prop', 'none'];
  for (const kind of [...inj.callKinds].sort((a, b) => order.indexOf(a) - order.indexOf(b))) {
    switch (kind) {
      case 'bad-state':
        if (inj.callKinds.includes('passTo-mismatch') || inj.callKinds.includes('clarifying')) break;
        call.turnState = 'zz-not-a-state';
        expected.push([RespondRule.turnStateRegistered, '/turnState']);
        break;
      case 'passTo-mismatch':
        if (inj.callKinds.includes('clarifying')) break;
        if (handsOff(registries, call.turnState)) {
          if (inj.callKinds.includes('bad-target') || inj.callKinds.includes('self-target')) break;
          delete call.passTo;
        } else {
          call.passTo = 'drafter';
        }
        expected.push([RespondRule.passToRequiresPassed, '/passTo']);
        break;
      case 'bad-target':
        call.passTo = 'nobody-here';
        expected.push([RespondRule.passToDeclaredTarget, '/passTo']);
        break;
      case 'self-target':
        if (inj.callKinds.includes('bad-target')) break;
        call.passTo = CTX.actor;
        expected.push([RespondRule.passToDeclaredTarget, '/passTo']);
        break;
      case 'clarifying': {
        if (inj.callKinds.includes('bad-state')) break;
        call.turnState = 'clarifying';
        if (call.passTo !== undefined && !inj.callKinds.includes('bad-target') && !inj.callKinds.includes('self-target')) delete call.passTo;
        if (!parts.some((p) => p.metadata?.partType === 'clarify')) expected.push([RespondRule.requiresPart, '/parts']);
        parts.forEach((p, i) => {
          if (p.metadata?.partType === 'response') expected.push([RespondRule.forbidsPart, `/parts/${i}/metadata/partType`]);
        });
        break;
      }
      case 'extra-prop':
        call.pass_to = 'drafter';
        expected.push(['schema:additional-property', '/pass_to']);
        break;
      case 'none':
        break;
    }
  }
  return { call, expected };
}
