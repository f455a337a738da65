import { afterEach, describe, expect, it } from 'vitest';
import type { LoopbackReply } from '../../../src/models/loopback-server.js';
import { bodies, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('the Claude path: a respond() input that repeats a key', () => {
  it('respond:json:duplicate-key — two "text" keys are rejected by name (the model retries); the deltas they streamed are retracted, so deltas still concatenate to the final text', async () => {
    const dup = '{"parts":[{"metadata":{"partType":"response"},"text":"First answer. ","text":"Second answer."}],"turnState":"complete"}';
    const retry: LoopbackReply = {
      content: [{ type: 'tool_use', name: 'respond', id: 'toolu_ok', input: { parts: [textPart('response', 'The one answer.')], turnState: 'complete' } }],
      split: 6,
    };
    r = await rig({ script: [{ content: [{ type: 'tool_use', name: 'respond', id: 'toolu_dup', rawInput: dup }], split: 9 }, retry] });
    r.rt.registries.actors.register({ name: 'desk', system: 'You are the help desk.' });
    const s = await r.rt.createSession({ actor: 'desk' });
    const rec = record(s);
    const out = await (await s.send('Help me.')).settled;

    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['The one answer.']);
    // Both texts did stream; the call that carried them is taken back.
    const dupDeltas = rec.of('part.delta').filter((e) => e.callId === 'toolu_dup').map((e) => e.text).join('');
    expect(dupDeltas).toContain('First answer.');
    expect(dupDeltas).toContain('Second answer.');
    expect(rec.of('part.retracted').map((e) => e.callId)).toContain('toolu_dup');
    expect(rec.of('part.received').some((e) => e.callId === 'toolu_dup')).toBe(false);
    // What a subscriber keeps (deltas of calls not retracted) equals the final text.
    const kept = rec.of('part.delta').filter((e) => e.callId === 'toolu_ok').map((e) => e.text).join('');
    expect(kept).toBe('The one answer.');

    // The model was told which rule it broke and where.
    const result = bodies(r.server)[1].messages[2].content[0];
    expect(result).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_dup', is_error: true });
    expect(result.content).toContain('/parts/0/text');
    expect(result.content).toMatch(/appears twice/);
  });
});
