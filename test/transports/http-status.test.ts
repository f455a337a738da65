/**
 * The HTTP status of the library's refusals (src/transports/http.ts toHttpError): a mistake of
 * the caller is a 4xx with the library's code, never the 500 that means the server failed.
 * Each refusal is produced by the real runtime, not written by hand.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { toHttpError } from '../../src/transports/http.js';

async function refusal(f: () => unknown): Promise<unknown> {
  try {
    await f();
  } catch (e) {
    return e;
  }
  throw new Error('accepted');
}

describe('HTTP status of library refusals', () => {
  it('http:error:caller-fault — "a mistake of the caller is a 4xx": every refusal of what the caller sent (unknown actor, bad session options, a taken id, bad consumes, client tools or caller card, a bad or future cursor, an unknown tool or part type, an injection the session is not waiting for) keeps its code and maps to a 4xx, not 500', async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [] }) });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a', id: 'taken' });
    const cases: [string, number, () => unknown][] = [
      ['actor.unknown', 400, () => rt.createSession({ actor: 'nope' })],
      ['actor.unknown', 400, () => rt.agentCard('nope')],
      ['session.invalid', 400, () => rt.createSession({ actor: 'a', id: '' })],
      ['session.invalid_policy', 400, () => rt.createSession({ actor: 'a', doubleTexting: 'later' as never })],
      ['session.exists', 409, () => rt.createSession({ actor: 'a', id: 'taken' })],
      ['session.invalid_filter', 400, () => rt.listSessions({ tenant: 'x' } as never)],
      ['message.invalid', 400, () => s.send('   ')],
      ['message.invalid_consumes', 400, () => s.send('x', { consumes: ['nope'] })],
      ['message.invalid_client_tool', 400, () => s.send('x', { clientTools: [{ name: 'respond', description: 'd', parameters: { type: 'object' } }] })],
      ['message.invalid_caller_card', 400, () => s.send('x', { callerCard: { capabilities: { extensions: 7 } } as never })],
      ['cursor.invalid', 400, () => s.events(-1)],
      ['cursor.ahead', 400, () => firstValueFrom(s.events(1_000))],
      ['tool.unknown', 400, () => rt.registries.tools.resolve(['nope'])],
      ['part_type.unknown', 400, () => rt.registries.partTypes.deliveryFor('nope', 'streaming')],
      ['part_type.unknown_target', 400, () => rt.registries.partTypes.deliveryFor('response', 'pigeon' as never)],
      ['injection.not_waiting', 409, () => s.inject({ kind: 'resume', resumeOn: 'x' })],
    ];
    for (const [code, status, f] of cases) {
      const e = await refusal(f);
      expect(e, code).toMatchObject({ code });
      const h = toHttpError(e);
      expect([h.code, h.status], code).toEqual([code, status]);
    }
    await rt.close();
  });
});
