/**
 * Part types, turn states and surface templates refuse what they would otherwise ignore, and
 * name it: "Bad input gets a clear error that names what was wrong, and nothing already accepted
 * is lost" (part-types.md, turn-states.md, surfaces.md).
 */
import { describe, expect, it } from 'vitest';
import { createRegistries } from '../../src/create-registries.js';
import { PartTypeRegistry } from '../../src/registries/part-types.js';
import { SurfaceTemplateRegistry } from '../../src/registries/surface-templates.js';
import { TurnStateRegistry } from '../../src/registries/turn-states.js';
import type { PartTypeMeta, SurfaceTemplate, TurnStateMeta } from '../../src/registries/types.js';
import { audioMeta, registrationError } from './helpers.js';

const placed = (over: Record<string, unknown> = {}): TurnStateMeta =>
  ({ description: 'The order is placed.', isTerminal: true, emitsEnvelope: true, holdsActor: false, ...over }) as TurnStateMeta;

describe('fields put one level too high', () => {
  it('part-types:field-unknown — "a registration is { id, meta }: any other top-level field is rejected naming it, and a meta field put one level too high (channels beside meta) is told it belongs under meta"', () => {
    const r = new PartTypeRegistry();
    const e = registrationError(() => r.register({ id: 'audio', meta: audioMeta(), channels: { whatsapp: 'attach' } } as never));
    expect(e.rule).toBe('part-types:field-unknown');
    expect(e.message).toContain("part type 'audio': channels belongs under meta (meta.channels)");
    expect(registrationError(() => r.register({ id: 'audio', meta: audioMeta(), isCanonical: false } as never)).message).toMatch(/isCanonical is set by the registry/);
    expect(registrationError(() => r.register({ id: 'audio', meta: audioMeta(), colour: 'blue' } as never)).message).toMatch(/colour is not a registration field/);
    expect(r.has('audio')).toBe(false);
    r.register({ id: 'audio', meta: audioMeta({ channels: { whatsapp: 'attach' } }) });
    expect(r.deliveryFor('audio', 'whatsapp')).toBe('attach');
  });

  it('turn-states:field-unknown — "a registration is { id, meta }: any other top-level field is rejected naming it, and a meta field put one level too high (requires beside meta) is told it belongs under meta"', () => {
    const r = createRegistries().turnStates;
    const e = registrationError(() => r.register({ id: 'order-placed', meta: placed(), requires: { partTypes: ['response'] } } as never));
    expect(e.rule).toBe('turn-states:field-unknown');
    expect(e.message).toContain("turn state 'order-placed': requires belongs under meta (meta.requires)");
    expect(r.has('order-placed')).toBe(false);
    expect(r.register({ id: 'order-placed', meta: placed({ requires: { partTypes: ['response'] } }) }).meta.requires).toEqual({ partTypes: ['response'] });
  });

  it('surfaces:template:field-unknown — "any other field (a typo such as descripton) is refused naming it and the fields, not ignored"', () => {
    const r = new SurfaceTemplateRegistry();
    const e = registrationError(() => r.register({ kind: 'flights', build: () => [], descripton: 'Flights list' } as SurfaceTemplate));
    expect(e.rule).toBe('surfaces:template:field-unknown');
    expect(e.message).toContain("surface template 'flights': descripton is not a template field (did you mean description?); the fields are kind, description, build");
    expect(r.has('flights')).toBe(false);
    expect(r.register({ kind: 'flights', build: () => [], description: 'Flights list' }).description).toBe('Flights list');
  });
});

describe('part-type meta: the typo is named, not the field it was meant to be', () => {
  it('part-types:meta:field-unknown — "is rejected naming it": a typo of a required field (inEnvelop, modelEmitable) is reported as that typo, before the required field is found missing', () => {
    const r = new PartTypeRegistry();
    for (const [typo, meant] of [['inEnvelop', 'inEnvelope'], ['modelEmitable', 'modelEmittable'], ['caries', 'carries']] as const) {
      const meta = audioMeta({ [typo]: (audioMeta() as unknown as Record<string, unknown>)[meant] }) as unknown as Record<string, unknown>;
      delete meta[meant];
      const e = registrationError(() => r.register({ id: 'audio', meta: meta as unknown as PartTypeMeta }));
      expect(e.rule).toBe('part-types:meta:field-unknown');
      expect(e.message).toContain(`meta.${typo} is not a part-type field (did you mean ${meant}?)`);
    }
    expect(r.has('audio')).toBe(false);
  });

  it('part-types:meta:field-unknown — spec 000\'s sketch { streamingPreferred, buffered: "dropped", serialisation } is pointed to meta.delivery, whatever else is missing', () => {
    const r = new PartTypeRegistry();
    const e = registrationError(() => r.register({ id: 'audio', meta: { streamingPreferred: true, buffered: 'dropped', serialisation: 'base64' } as unknown as PartTypeMeta }));
    expect(e.rule).toBe('part-types:meta:field-unknown');
    expect(e.message).toContain('meta.buffered is not a part-type field: put the rules under meta.delivery: { streaming, buffered }');
  });
});

describe('turn states the model could never declare', () => {
  it('turn-states:requires:not-model-emittable — "a state cannot require a part type the model cannot emit … Forbidding one is allowed"', () => {
    const regs = createRegistries();
    regs.partTypes.register({ id: 'receipt', meta: audioMeta({ modelEmittable: false, description: 'A receipt the runtime emits.' }) });
    for (const pt of ['approval-request', 'approval-response', 'receipt']) {
      const e = registrationError(() => regs.turnStates.register({ id: 'needs-it', meta: placed({ requires: { partTypes: [pt] } }) }));
      expect(e.rule).toBe('turn-states:requires:not-model-emittable');
      expect(e.message).toContain(`meta.requires.partTypes names '${pt}', which a model cannot emit`);
    }
    expect(regs.turnStates.has('needs-it')).toBe(false);
    // Without a part-type registry the canonical flags still apply.
    expect(registrationError(() => new TurnStateRegistry().register({ id: 'needs-it', meta: placed({ requires: { partTypes: ['approval-request'] } }) })).rule).toBe(
      'turn-states:requires:not-model-emittable',
    );
    expect(regs.turnStates.register({ id: 'needs-it', meta: placed({ requires: { partTypes: ['response'], forbidsPartTypes: ['approval-request', 'receipt'] } }) }).id).toBe('needs-it');
  });
});
