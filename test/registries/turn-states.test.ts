import { describe, expect, it } from 'vitest';
import { PartTypeRegistry } from '../../src/registries/part-types.js';
import { RESERVED_TURN_STATE_NAMES, TurnStateRegistry } from '../../src/registries/turn-states.js';
import type { TurnStateMeta } from '../../src/registries/types.js';
import { audioMeta, registrationError } from './helpers.js';


const terminal = (over: Partial<TurnStateMeta> = {}): TurnStateMeta => ({
  description: 'The user cancelled; nothing more happens this turn.',
  isTerminal: true,
  emitsEnvelope: false,
  holdsActor: false,
  ...over,
});

describe('TurnStateRegistry: canonical states (spec 000 "Turn states")', () => {
  it('turn-states:canonical:set — the seven canonical states, in order, all canonical', () => {
    const r = new TurnStateRegistry();
    expect(r.ids()).toEqual(['awaiting', 'complete', 'clarifying', 'error', 'suspended', 'delegated', 'passed']);
    expect(r.list().every((d) => d.isCanonical)).toBe(true);
  });

  it('turn-states:canonical:metadata — terminal, envelope, hold, hand-off and requirements as the spec gives them', () => {
    const r = new TurnStateRegistry();
    const m = (id: string) => r.get(id)!.meta;
    expect(m('awaiting')).toMatchObject({ isTerminal: false, emitsEnvelope: false, holdsActor: false });
    expect(m('awaiting').handsOff).toBeUndefined();
    expect(m('complete')).toMatchObject({ isTerminal: true, emitsEnvelope: true, holdsActor: false });
    expect(m('clarifying')).toMatchObject({
      isTerminal: true,
      emitsEnvelope: false,
      requires: { partTypes: ['clarify'], forbidsPartTypes: ['response'] },
    });
    expect(m('error')).toMatchObject({ isTerminal: true, emitsEnvelope: false, holdsActor: false });
    expect(m('suspended')).toMatchObject({ isTerminal: false, holdsActor: true, resumeOn: 'approval-response' });
    expect(m('delegated')).toMatchObject({ isTerminal: false, holdsActor: true, resumeOn: 'peer-envelope' });
    expect(m('passed')).toMatchObject({ isTerminal: false, holdsActor: false, handsOff: true, requires: { passTo: true } });
  });

  it('turn-states:canonical:clarify-only-clarifying — spec 000 clarify "Replaces response when used ... Terminal for this turn; no envelope is built": every canonical state but clarifying forbids a clarify part', () => {
    const r = new TurnStateRegistry();
    for (const d of r.list()) {
      const forbids = d.meta.requires?.forbidsPartTypes ?? [];
      expect(forbids.includes('clarify'), d.id).toBe(d.id !== 'clarifying');
    }
    expect(r.get('clarifying')!.meta.requires?.partTypes).toEqual(['clarify']);
  });

  it('turn-states:canonical:only-complete-emits — complete is the only canonical state that emits an envelope', () => {
    const r = new TurnStateRegistry();
    expect(r.list().filter((d) => d.meta.emitsEnvelope).map((d) => d.id)).toEqual(['complete']);
  });

  it('turn-states:canonical:not-replaceable — a canonical id cannot be registered again', () => {
    const r = new TurnStateRegistry();
    const e = registrationError(() => r.register({ id: 'complete', meta: terminal() }));
    expect(e.rule).toBe('turn-states:canonical:not-replaceable');
    expect(e.message).toContain("'complete'");
    expect(r.get('complete')!.meta.emitsEnvelope).toBe(true);
  });

  it('turn-states:canonical:frozen — canonical metadata cannot be mutated', () => {
    const r = new TurnStateRegistry();
    expect(() => {
      (r.get('clarifying')!.meta.requires!.partTypes as string[]).push('response');
    }).toThrow(TypeError);
  });
});

describe('TurnStateRegistry: consumer registration', () => {
  it('turn-states:consumer:terminal — a terminal consumer state registers', () => {
    const r = new TurnStateRegistry();
    expect(r.register({ id: 'cancelled', meta: terminal() })).toMatchObject({ id: 'cancelled', isCanonical: false });
    expect(r.ids().at(-1)).toBe('cancelled');
  });

  it('turn-states:consumer:hold — a state holding the actor with a named resumeOn registers', () => {
    const r = new TurnStateRegistry();
    const def = r.register({
      id: 'awaiting-payment',
      meta: { description: 'Waiting for a payment webhook.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'payment-confirmed' },
    });
    expect(def.meta.resumeOn).toBe('payment-confirmed');
  });

  it('turn-states:consumer:handoff — a hand-off state with requires.passTo registers', () => {
    const r = new TurnStateRegistry();
    const def = r.register({
      id: 'escalated',
      meta: { description: 'Escalated to a supervisor actor.', isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true, requires: { passTo: true } },
    });
    expect(def.meta.handsOff).toBe(true);
  });

  it('turn-states:consumer:must-be-terminal-hold-or-handoff — a state that neither ends, holds nor hands off is rejected', () => {
    const r = new TurnStateRegistry();
    const e = registrationError(() =>
      r.register({ id: 'limbo', meta: { description: 'Neither here nor there.', isTerminal: false, emitsEnvelope: false, holdsActor: false } }),
    );
    expect(e.rule).toBe('turn-states:consumer:must-be-terminal-hold-or-handoff');
    expect(e.message).toContain("'limbo'");
    expect(r.has('limbo')).toBe(false);
  });

  it('turn-states:consumer:hold-requires-resumeOn — holdsActor without resumeOn is rejected', () => {
    const r = new TurnStateRegistry();
    const e = registrationError(() =>
      r.register({ id: 'parked', meta: { description: 'Parked.', isTerminal: false, emitsEnvelope: false, holdsActor: true } }),
    );
    expect(e.rule).toBe('turn-states:consumer:hold-requires-resumeOn');
  });

  it('turn-states:consumer:resumeOn-requires-hold — resumeOn on a state that does not hold the actor is rejected', () => {
    const r = new TurnStateRegistry();
    expect(registrationError(() => r.register({ id: 'done2', meta: terminal({ resumeOn: 'x' }) })).rule).toBe(
      'turn-states:consumer:resumeOn-requires-hold',
    );
  });

  it('turn-states:consumer:one-behaviour — terminal and holding (or handing off) at once is rejected', () => {
    const r = new TurnStateRegistry();
    expect(registrationError(() => r.register({ id: 'both', meta: terminal({ holdsActor: true, resumeOn: 'x' }) })).rule).toBe(
      'turn-states:consumer:one-behaviour',
    );
    expect(
      registrationError(() => r.register({ id: 'both2', meta: terminal({ handsOff: true, requires: { passTo: true } }) })).rule,
    ).toBe('turn-states:consumer:one-behaviour');
  });

  it('turn-states:consumer:envelope-requires-terminal — emitsEnvelope on a non-terminal state is rejected', () => {
    const r = new TurnStateRegistry();
    const e = registrationError(() =>
      r.register({
        id: 'half',
        meta: { description: 'Held with an envelope.', isTerminal: false, emitsEnvelope: true, holdsActor: true, resumeOn: 'x' },
      }),
    );
    expect(e.rule).toBe('turn-states:consumer:envelope-requires-terminal');
  });

  it('turn-states:consumer:terminal-envelope — a terminal consumer state may emit an envelope', () => {
    const r = new TurnStateRegistry();
    expect(r.register({ id: 'partial-complete', meta: terminal({ emitsEnvelope: true }) }).meta.emitsEnvelope).toBe(true);
  });

  it('turn-states:consumer:handoff-requires-passTo — handsOff without requires.passTo is rejected, and passTo without handsOff too', () => {
    const r = new TurnStateRegistry();
    expect(
      registrationError(() => r.register({ id: 'escalated', meta: { description: 'Escalated.', isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true } }))
        .rule,
    ).toBe('turn-states:consumer:handoff-requires-passTo');
    expect(registrationError(() => r.register({ id: 'odd', meta: terminal({ requires: { passTo: true } }) })).rule).toBe(
      'turn-states:consumer:passTo-requires-handoff',
    );
  });

  it('turn-states:id:reserved — machine node names are rejected', () => {
    const r = new TurnStateRegistry();
    for (const id of RESERVED_TURN_STATE_NAMES) {
      const e = registrationError(() => r.register({ id, meta: terminal() }));
      expect(e.rule).toBe('turn-states:id:reserved');
      expect(e.message).toContain(`'${id}'`);
    }
    expect(RESERVED_TURN_STATE_NAMES).toEqual(expect.arrayContaining(['idle', 'turn', 'acting', 'settling', 'settled', 'running', 'queued']));
  });

  it('turn-states:id:invalid — names must match /^[a-z][a-z0-9-]{0,62}$/', () => {
    const r = new TurnStateRegistry();
    for (const id of ['', 'Cancelled', '9lives', 'has space', 'dot.ted', 'a'.repeat(64)]) {
      expect(registrationError(() => r.register({ id, meta: terminal() })).rule).toBe('turn-states:id:invalid');
    }
    expect(r.register({ id: 'a'.repeat(63), meta: terminal() }).id).toHaveLength(63);
  });

  it('turn-states:duplicate:rejected — a second registration of a consumer id is rejected naming it', () => {
    const r = new TurnStateRegistry();
    r.register({ id: 'cancelled', meta: terminal() });
    const e = registrationError(() => r.register({ id: 'cancelled', meta: terminal({ emitsEnvelope: true }) }));
    expect(e.rule).toBe('turn-states:duplicate:rejected');
    expect(e.message).toContain("'cancelled'");
    expect(r.get('cancelled')!.meta.emitsEnvelope).toBe(false);
  });

  it('turn-states:meta:fields — missing booleans and description are rejected naming the field', () => {
    const r = new TurnStateRegistry();
    for (const field of ['description', 'isTerminal', 'emitsEnvelope', 'holdsActor']) {
      const meta = terminal() as unknown as Record<string, unknown>;
      delete meta[field];
      const e = registrationError(() => r.register({ id: 'cancelled', meta: meta as unknown as TurnStateMeta }));
      expect(e.rule).toBe(`turn-states:meta:${field}`);
      expect(e.message).toContain(field);
    }
  });

  it('turn-states:meta:requires — malformed requirements are rejected', () => {
    const r = new TurnStateRegistry();
    expect(registrationError(() => r.register({ id: 'x1', meta: terminal({ requires: { partTypes: 'clarify' as never } }) })).rule).toBe(
      'turn-states:meta:requires',
    );
    expect(registrationError(() => r.register({ id: 'x2', meta: terminal({ requires: { must: true } as never }) })).rule).toBe(
      'turn-states:meta:requires',
    );
    expect(
      registrationError(() => r.register({ id: 'x3', meta: terminal({ requires: { partTypes: ['error'], forbidsPartTypes: ['error'] } }) })).message,
    ).toMatch(/both required and forbidden/);
  });

  it('turn-states:requires:unknown-part-type — with a part-type registry, requires must name registered part types', () => {
    const parts = new PartTypeRegistry();
    const r = new TurnStateRegistry(parts);
    const e = registrationError(() => r.register({ id: 'voiced', meta: terminal({ requires: { partTypes: ['audio'] } }) }));
    expect(e.rule).toBe('turn-states:requires:unknown-part-type');
    expect(e.message).toContain("'audio'");
    parts.register({
      id: 'audio',
      meta: audioMeta({ description: 'Speech.' }),
    });
    expect(r.register({ id: 'voiced', meta: terminal({ requires: { partTypes: ['audio'] } }) }).meta.requires?.partTypes).toEqual(['audio']);
  });

  it('registries:per-instance — a state registered in one registry is not in another', () => {
    const a = new TurnStateRegistry();
    a.register({ id: 'cancelled', meta: terminal() });
    expect(new TurnStateRegistry().has('cancelled')).toBe(false);
  });
});

describe('TurnStateRegistry: misspelt fields', () => {
  it('turn-states:meta:field-unknown — a meta field the registry does not know (a typo such as requries) is rejected naming it and the fields, not ignored', () => {
    const r = new TurnStateRegistry();
    const e = registrationError(() => r.register({ id: 'cancelled', meta: { ...terminal(), requries: { partTypes: ['response'] } } as unknown as TurnStateMeta }));
    expect(e.rule).toBe('turn-states:meta:field-unknown');
    expect(e.message).toMatch(/meta\.requries is not a turn-state field; the fields are description, isTerminal/);
    expect(r.has('cancelled')).toBe(false);
    r.register({ id: 'cancelled', meta: terminal() });
    expect(r.has('cancelled')).toBe(true);
  });
});
