import { describe, expect, it } from 'vitest';
import { RegistrationError } from '../../src/errors.js';
import { createRegistries } from '../../src/create-registries.js';
import { ActorRegistry, PartTypeRegistry, ToolRegistry, TurnStateRegistry } from '../../src/registries/index.js';
import { audioMeta } from './helpers.js';

describe('createRegistries', () => {
  it('registries:per-instance — every call returns fresh registries; registrations never leak between runtimes', () => {
    const a = createRegistries();
    const b = createRegistries();
    expect(a.partTypes).not.toBe(b.partTypes);
    expect(a.turnStates).not.toBe(b.turnStates);
    expect(a.tools).not.toBe(b.tools);
    expect(a.actors).not.toBe(b.actors);

    a.partTypes.register({
      id: 'audio',
      meta: audioMeta({ description: 'Speech.' }),
    });
    a.turnStates.register({ id: 'cancelled', meta: { description: 'Cancelled.', isTerminal: true, emitsEnvelope: false, holdsActor: false } });
    a.tools.register({ name: 'lookup', description: 'Look something up.', inputSchema: { type: 'object' }, handler: () => 1, scope: 'generalist' });
    a.actors.register({ name: 'triage', tools: ['lookup'] });

    expect(b.partTypes.has('audio')).toBe(false);
    expect(b.turnStates.has('cancelled')).toBe(false);
    expect(b.tools.has('lookup')).toBe(false);
    expect(b.actors.has('triage')).toBe(false);
    expect(createRegistries().partTypes.ids()).toHaveLength(14);
  });

  it('registries:classes — the registries are instances of the exported classes', () => {
    const r = createRegistries();
    expect(r.partTypes).toBeInstanceOf(PartTypeRegistry);
    expect(r.turnStates).toBeInstanceOf(TurnStateRegistry);
    expect(r.tools).toBeInstanceOf(ToolRegistry);
    expect(r.actors).toBeInstanceOf(ActorRegistry);
  });

  it('registries:linked — turn-state requirements are checked against the same runtime\'s part types', () => {
    const r = createRegistries();
    const meta = { description: 'Voiced.', isTerminal: true, emitsEnvelope: false, holdsActor: false, requires: { partTypes: ['audio'] } };
    expect(() => r.turnStates.register({ id: 'voiced', meta })).toThrow(RegistrationError);
    r.partTypes.register({
      id: 'audio',
      meta: audioMeta({ description: 'Speech.' }),
    });
    expect(r.turnStates.register({ id: 'voiced', meta }).id).toBe('voiced');
    expect(() => createRegistries().turnStates.register({ id: 'voiced', meta })).toThrow(/'audio'/);
  });
});
