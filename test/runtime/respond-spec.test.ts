/**
 * Spec 000 (the respond() tool) through a running session: what the model is told and what the
 * runtime refuses before anything is delivered, so the model can correct its call.
 */
import { describe, expect, it } from 'vitest';
import { Recorder, answer, checkStream, harness, part, respond, toolResultsIn } from './helpers.js';

const rejectionText = (req: { messages: { role: string; content: any[] }[] }): string =>
  toolResultsIn(req).find((b) => b.is_error === true)?.content ?? '';

describe('respond() in a session (spec 000)', () => {
  for (const turnState of ['complete', 'awaiting']) {
    it(`respond:clarify:terminal — "Replaces response when used ... Terminal for this turn; no envelope is built": a clarify part with turnState ${turnState} is refused, the model is told to use 'clarifying', and its clarifying call settles the turn without an envelope`, async () => {
      const { rt, model } = harness({
        rules: [
          { when: { on: 'user' }, respond: answer(respond([part('clarify', 'Gatwick or Heathrow?')], turnState)) },
          { when: { on: 'rejection' }, respond: answer(respond([part('clarify', 'Gatwick or Heathrow?')], 'clarifying')) },
        ],
      });
      rt.registries.actors.register({ name: 'a' });
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      const out = await (await s.send('fly me to Corfu')).settled;
      expect(model.requests).toHaveLength(2);
      expect(rejectionText(model.requests[1]!)).toContain(`turnState '${turnState}' does not allow a 'clarify' part`);
      expect(rejectionText(model.requests[1]!)).toContain("use turnState 'clarifying'");
      expect(out.finalizedBy).toBe('clarifying');
      expect(out.envelope).toBeUndefined();
      // The refused call delivered nothing: one clarify part, from the clarifying call.
      expect(rec.of('part.received').map((e) => [e.part.metadata.partType, e.turnState])).toEqual([['clarify', 'clarifying']]);
      checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
      await rt.close();
    });
  }

  it('respond:prompt:handoffs — "names the actor to which this turn is handed off": an actor\'s system prompt names the registered actors passTo may name; the cached prompt follows later registrations', async () => {
    const { rt, model } = harness({ rules: [{ respond: answer(respond([part('response', 'ok')], 'complete')) }] });
    rt.registries.actors.register({ name: 'a', system: 'You plan trips.', handoffs: ['drafter'] });
    rt.registries.actors.register({ name: 'drafter', system: 'You draft.' });
    rt.registries.actors.register({ name: 'b', system: 'You check.', handoffs: ['late'] });
    rt.registries.actors.register({ name: 'solo', system: 'You work alone.' });
    const turn = async (actor: string): Promise<string> => {
      const s = await rt.createSession({ actor });
      await (await s.send('hi')).settled;
      return model.requests.at(-1)!.system ?? '';
    };
    expect(await turn('a')).toMatch(/^You plan trips\.\n\n[\s\S]*`passTo` set to one of: drafter\.$/);
    expect(await turn('a')).toMatch(/`passTo` set to one of: drafter\.$/);
    // 'late' is declared but not registered yet: b is told it cannot hand off.
    expect(await turn('b')).toMatch(/You have no handoff targets: never use `turnState: "passed"` or `passTo`\.$/);
    rt.registries.actors.register({ name: 'late', system: 'You arrive late.' });
    expect(await turn('b')).toMatch(/`passTo` set to one of: late\.$/);
    // An actor that declares no handoffs gets the snippet as it is.
    const solo = await turn('solo');
    expect(solo).not.toContain('passTo` set to one of');
    expect(solo).not.toContain('You have no handoff targets');
    await rt.close();
  });

  it('respond:prompt:handoffs — with maxHandoffsPerTurn: 0 no turn may hand off, so an actor that declares targets is told it has none (a hand-off would fail the turn on its budget)', async () => {
    const { rt, model } = harness({ rules: [{ respond: answer(respond([part('response', 'ok')], 'complete')) }] }, { limits: { maxHandoffsPerTurn: 0 } });
    rt.registries.actors.register({ name: 'a', system: 'You plan trips.', handoffs: ['drafter'] });
    rt.registries.actors.register({ name: 'drafter', system: 'You draft.' });
    const s = await rt.createSession({ actor: 'a' });
    await (await s.send('hi')).settled;
    const system = model.requests.at(-1)!.system ?? '';
    expect(system).not.toContain('set to one of');
    expect(system).toMatch(/You have no handoff targets: never use `turnState: "passed"` or `passTo`\.$/);
    await rt.close();
  });

  it('respond:passTo:registered-target — "names the actor to which this turn is handed off": passTo naming a declared but unregistered actor is refused naming it, so the model can recover', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(respond([part('thinking', 'Passing to the drafter.')], 'passed', { passTo: 'drafter' })) },
        { when: { on: 'rejection' }, respond: answer(respond([part('response', 'I will draft it myself.')], 'complete')) },
      ],
    });
    rt.registries.actors.register({ name: 'a', handoffs: ['drafter'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('draft a letter')).settled;
    expect(model.requests.map((r) => r.actor)).toEqual(['a', 'a']);
    const rejection = rejectionText(model.requests[1]!);
    expect(rejection).toContain("/passTo: 'drafter' is not a registered actor");
    expect(rejection).toContain('[respond:passTo:registered-target]');
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['I will draft it myself.']);
    expect(rec.of('actor.passed')).toEqual([]);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
    await rt.close();
  });
});
