import { describe, expect, it } from 'vitest';
import { TurnstateError } from '../../src/errors.js';
import { PartTypeRegistry } from '../../src/registries/part-types.js';
import type { PartTypeMeta } from '../../src/registries/types.js';
import { audioMeta as speechMeta, registrationError } from './helpers.js';

const CANONICAL = [
  'ack',
  'thinking',
  'response',
  'clarify',
  'error',
  'domain-data',
  'llm-context',
  'a2ui-surface',
  'artifact',
  'reasoning-trace',
  'citation',
  'approval-request',
  'approval-response',
  'progress',
];

/** The shared speech meta (helpers.ts), as base64 audio for voice channels. */
const audioMeta = (over: Partial<PartTypeMeta> = {}): PartTypeMeta =>
  speechMeta({ description: 'Synthesised speech for voice channels.', serialisation: 'base64', ...over });


describe('PartTypeRegistry: canonical set (spec 000 "Part types")', () => {
  it('part-types:canonical:set — exactly the fourteen canonical part types, in order, all marked canonical', () => {
    const r = new PartTypeRegistry();
    expect(r.ids()).toEqual(CANONICAL);
    for (const id of CANONICAL) {
      expect(r.has(id)).toBe(true);
      expect(r.get(id)?.isCanonical).toBe(true);
    }
    expect(r.list().map((d) => d.id)).toEqual(CANONICAL);
  });

  it('part-types:canonical:streaming-preferred — only ack, thinking and progress flush at once', () => {
    const r = new PartTypeRegistry();
    expect(r.list().filter((d) => d.meta.streamingPreferred).map((d) => d.id)).toEqual(['ack', 'thinking', 'progress']);
  });

  it('part-types:canonical:data-bearing — domain-data, a2ui-surface, artifact and citation are data-bearing', () => {
    const r = new PartTypeRegistry();
    expect(r.list().filter((d) => d.meta.dataBearing).map((d) => d.id)).toEqual(['domain-data', 'a2ui-surface', 'artifact', 'citation']);
  });

  it('part-types:canonical:not-model-emittable — approval-request and approval-response are never emitted by a model', () => {
    const r = new PartTypeRegistry();
    expect(r.list().filter((d) => !d.meta.modelEmittable).map((d) => d.id)).toEqual(['approval-request', 'approval-response']);
  });

  it('part-types:delivery:streaming-only — ack, thinking, progress: streaming delivers, buffered drops (spec 001 sequence steps 1, 3)', () => {
    const r = new PartTypeRegistry();
    for (const id of ['ack', 'thinking', 'progress']) {
      expect(r.deliveryFor(id, 'streaming')).toBe('deliver');
      expect(r.deliveryFor(id, 'buffered')).toBe('drop');
      expect(r.get(id)?.meta.inEnvelope).toBe(false);
    }
  });

  it('part-types:delivery:response — response is delivered on both classes and rendered to plain text on email, SMS and WhatsApp', () => {
    const r = new PartTypeRegistry();
    expect(r.deliveryFor('response', 'streaming')).toBe('deliver');
    expect(r.deliveryFor('response', 'buffered')).toBe('deliver');
    for (const ch of ['email', 'sms', 'whatsapp'] as const) expect(r.deliveryFor('response', ch)).toBe('render-as-text');
    expect(r.deliveryFor('response', 'webhook')).toBe('deliver');
  });

  it('part-types:delivery:channels — domain-data, a2ui-surface, reasoning-trace are dropped or attached on human channels; webhooks carry the envelope', () => {
    const r = new PartTypeRegistry();
    for (const id of ['domain-data', 'a2ui-surface', 'reasoning-trace']) {
      expect(r.deliveryFor(id, 'streaming')).toBe('deliver');
      expect(r.deliveryFor(id, 'buffered')).toBe('deliver');
      for (const ch of ['email', 'sms', 'whatsapp'] as const) expect(['drop', 'attach']).toContain(r.deliveryFor(id, ch));
      expect(r.deliveryFor(id, 'webhook')).toBe('deliver');
    }
    expect(r.deliveryFor('domain-data', 'email')).toBe('attach');
  });

  it('part-types:delivery:artifact — an artifact is an attachment on email and a URL reference (text) on SMS', () => {
    const r = new PartTypeRegistry();
    expect(r.deliveryFor('artifact', 'email')).toBe('attach');
    expect(r.deliveryFor('artifact', 'sms')).toBe('render-as-text');
  });

  it('part-types:delivery:channel-fallback — a channel without its own rule falls back to the buffered rule', () => {
    const r = new PartTypeRegistry();
    r.register({ id: 'audio', meta: audioMeta({ delivery: { streaming: 'deliver', buffered: 'attach' }, channels: { sms: 'drop' } }) });
    expect(r.deliveryFor('audio', 'email')).toBe('attach');
    expect(r.deliveryFor('audio', 'whatsapp')).toBe('attach');
    expect(r.deliveryFor('audio', 'sms')).toBe('drop');
  });

  it('part-types:delivery:channel-undefined — "a possibly-undefined value counts as left out" (README): a channel given as undefined falls back to the buffered rule, as an absent one does', () => {
    const r = new PartTypeRegistry();
    r.register({ id: 'audio', meta: audioMeta({ delivery: { streaming: 'deliver', buffered: 'attach' }, channels: { sms: 'drop', email: undefined } }) });
    expect(r.deliveryFor('audio', 'email')).toBe('attach');
    expect(r.deliveryFor('audio', 'sms')).toBe('drop');
  });

  it('part-types:deliveryFor:unknown-id — an unknown id throws a TurnstateError naming it', () => {
    const r = new PartTypeRegistry();
    expect(() => r.deliveryFor('audio', 'streaming')).toThrowError(/'audio'/);
    try {
      r.deliveryFor('audio', 'streaming');
    } catch (e) {
      expect(e).toBeInstanceOf(TurnstateError);
      expect((e as TurnstateError).code).toBe('part_type.unknown');
    }
  });

  it('part-types:deliveryFor:unknown-target — an unknown target throws, even one named like an Object.prototype member', () => {
    const r = new PartTypeRegistry();
    expect(() => r.deliveryFor('ack', 'toString' as 'email')).toThrowError(/toString/);
    expect(() => r.deliveryFor('ack', 'fax' as 'email')).toThrowError(/fax/);
  });

  it('part-types:canonical:frozen — canonical metadata cannot be mutated through get()', () => {
    const r = new PartTypeRegistry();
    const ack = r.get('ack');
    expect(() => {
      (ack!.meta.delivery as { buffered: string }).buffered = 'deliver';
    }).toThrow(TypeError);
    expect(r.deliveryFor('ack', 'buffered')).toBe('drop');
  });
});

describe('PartTypeRegistry: consumer registration', () => {
  it('part-types:consumer:registers — a complete meta registers, is listed after the canonical set, and drives deliveryFor', () => {
    const r = new PartTypeRegistry();
    const def = r.register({ id: 'audio', meta: audioMeta() });
    expect(def).toMatchObject({ id: 'audio', isCanonical: false });
    expect(r.has('audio')).toBe(true);
    expect(r.ids().at(-1)).toBe('audio');
    expect(r.deliveryFor('audio', 'streaming')).toBe('deliver');
    expect(r.deliveryFor('audio', 'buffered')).toBe('drop');
  });

  it('part-types:consumer:copied — later changes to the caller\'s meta object do not change the registry', () => {
    const r = new PartTypeRegistry();
    const meta = audioMeta();
    r.register({ id: 'audio', meta });
    meta.delivery.buffered = 'deliver';
    expect(r.deliveryFor('audio', 'buffered')).toBe('drop');
  });

  it('part-types:canonical:not-replaceable — registering a canonical id is rejected naming it', () => {
    const r = new PartTypeRegistry();
    const e = registrationError(() => r.register({ id: 'response', meta: audioMeta() }));
    expect(e.rule).toBe('part-types:canonical:not-replaceable');
    expect(e.message).toContain("'response'");
    expect(r.get('response')?.isCanonical).toBe(true);
    expect(r.deliveryFor('response', 'buffered')).toBe('deliver');
  });

  it('part-types:duplicate:rejected — a second registration of a consumer id is rejected naming it; the first stays', () => {
    const r = new PartTypeRegistry();
    r.register({ id: 'audio', meta: audioMeta() });
    const e = registrationError(() => r.register({ id: 'audio', meta: audioMeta({ delivery: { streaming: 'drop', buffered: 'deliver' } }) }));
    expect(e.rule).toBe('part-types:duplicate:rejected');
    expect(e.message).toContain("'audio'");
    expect(r.deliveryFor('audio', 'streaming')).toBe('deliver');
  });

  it('part-types:id:invalid — ids must be lower-case names', () => {
    const r = new PartTypeRegistry();
    for (const id of ['', 'Audio', '1audio', 'au dio', 'a'.repeat(65), 42 as unknown as string]) {
      expect(registrationError(() => r.register({ id, meta: audioMeta() })).rule).toBe('part-types:id:invalid');
    }
  });

  const missing: [string, string][] = [
    ['description', 'part-types:meta:description'],
    ['streamingPreferred', 'part-types:meta:streamingPreferred'],
    ['dataBearing', 'part-types:meta:dataBearing'],
    ['delivery', 'part-types:meta:delivery'],
    ['inEnvelope', 'part-types:meta:inEnvelope'],
    ['modelEmittable', 'part-types:meta:modelEmittable'],
    ['carries', 'part-types:meta:carries'],
  ];
  for (const [field, rule] of missing) {
    it(`${rule} — meta without ${field} is rejected naming the id and the field`, () => {
      const r = new PartTypeRegistry();
      const meta = audioMeta() as unknown as Record<string, unknown>;
      delete meta[field];
      const e = registrationError(() => r.register({ id: 'audio', meta: meta as unknown as PartTypeMeta }));
      expect(e.rule).toBe(rule);
      expect(e.message).toContain("'audio'");
      expect(e.message).toContain(field);
      expect(r.has('audio')).toBe(false);
    });
  }

  it('part-types:meta:streamingPreferred / dataBearing / inEnvelope / modelEmittable — "booleans are booleans": a string or a number where a boolean goes is rejected with that field\'s rule, naming the id and the field', () => {
    for (const field of ['streamingPreferred', 'dataBearing', 'inEnvelope', 'modelEmittable'] as const) {
      for (const value of ['true', 1, null]) {
        const r = new PartTypeRegistry();
        const meta = { ...(audioMeta() as unknown as Record<string, unknown>), [field]: value };
        const e = registrationError(() => r.register({ id: 'audio', meta: meta as unknown as PartTypeMeta }));
        expect(e.rule, `${field}: ${JSON.stringify(value)}`).toBe(`part-types:meta:${field}`);
        expect(e.message).toContain("'audio'");
        expect(e.message).toContain(field);
        expect(r.has('audio')).toBe(false);
      }
    }
  });

  it('part-types:meta:delivery — an unknown rule, a missing class or an extra class is rejected naming the field', () => {
    const r = new PartTypeRegistry();
    const bad = [
      { streaming: 'deliver', buffered: 'dropped' },
      { streaming: 'deliver' },
      { streaming: 'deliver', buffered: 'drop', email: 'drop' },
    ];
    for (const delivery of bad) {
      const e = registrationError(() => r.register({ id: 'audio', meta: audioMeta({ delivery: delivery as PartTypeMeta['delivery'] }) }));
      expect(e.rule).toBe('part-types:meta:delivery');
      expect(e.message).toMatch(/meta\.delivery/);
    }
  });

  it('part-types:meta:delivery — the spec\'s shorthand { buffered: "dropped" } gets a hint to use meta.delivery', () => {
    const r = new PartTypeRegistry();
    const meta = { ...audioMeta(), buffered: 'dropped' } as Record<string, unknown>;
    delete meta.delivery;
    const e = registrationError(() => r.register({ id: 'audio', meta: meta as unknown as PartTypeMeta }));
    expect(e.message).toMatch(/put the rules under meta\.delivery/);
  });

  it('part-types:meta:channels — unknown channel kinds and rules are rejected', () => {
    const r = new PartTypeRegistry();
    expect(registrationError(() => r.register({ id: 'audio', meta: audioMeta({ channels: { fax: 'drop' } as never }) })).message).toMatch(/channels\.fax/);
    expect(registrationError(() => r.register({ id: 'audio', meta: audioMeta({ channels: { sms: 'mail' } as never }) })).message).toMatch(/channels\.sms/);
  });

  it('part-types:meta:carries — carries must be text, data or either; serialisation json, text or base64', () => {
    const r = new PartTypeRegistry();
    expect(registrationError(() => r.register({ id: 'audio', meta: audioMeta({ carries: 'binary' as never }) })).rule).toBe('part-types:meta:carries');
    expect(registrationError(() => r.register({ id: 'audio', meta: audioMeta({ serialisation: 'xml' as never }) })).rule).toBe(
      'part-types:meta:serialisation',
    );
  });

  it('part-types:meta:transcript — transcript is text, thinking or absent; a wrong value names the field and the choices; a valid one is kept', () => {
    const r = new PartTypeRegistry();
    const err = registrationError(() => r.register({ id: 'audio', meta: audioMeta({ transcript: 'speech' as never }) }));
    expect(err.rule).toBe('part-types:meta:transcript');
    expect(err.message).toMatch(/meta\.transcript must be one of text, thinking.*"speech"/);
    expect(r.register({ id: 'caption', meta: audioMeta({ carries: 'text', transcript: 'text' }) }).meta.transcript).toBe('text');
    expect(['ack', 'response', 'clarify', 'error'].map((id) => r.get(id)!.meta.transcript)).toEqual(['text', 'text', 'text', 'text']);
    expect(['thinking', 'reasoning-trace'].map((id) => r.get(id)!.meta.transcript)).toEqual(['thinking', 'thinking']);
  });

  it('part-types:meta:required — a non-object meta is rejected', () => {
    const r = new PartTypeRegistry();
    expect(registrationError(() => r.register({ id: 'audio', meta: null as never })).rule).toBe('part-types:meta:required');
  });

  it('registries:per-instance — a part type registered in one registry is not in another', () => {
    const a = new PartTypeRegistry();
    const b = new PartTypeRegistry();
    a.register({ id: 'audio', meta: audioMeta() });
    expect(b.has('audio')).toBe(false);
    expect(() => b.deliveryFor('audio', 'streaming')).toThrow(TurnstateError);
  });
});

describe('PartTypeRegistry: misspelt fields', () => {
  it('part-types:meta:field-unknown — a meta field the registry does not know (inEnvelop, modelEmitable) is rejected naming it and the fields, not ignored', () => {
    const r = new PartTypeRegistry();
    for (const typo of ['inEnvelop', 'modelEmitable', 'serialization']) {
      const e = registrationError(() => r.register({ id: 'audio', meta: { ...audioMeta(), [typo]: true } as unknown as PartTypeMeta }));
      expect(e.rule).toBe('part-types:meta:field-unknown');
      expect(e.message).toContain(`meta.${typo} is not a part-type field`);
    }
    expect(r.has('audio')).toBe(false);
  });
});
