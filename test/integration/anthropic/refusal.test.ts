/**
 * A refusal (stop_reason "refusal") on the Claude path: what the session's later requests hold.
 * Claude's guidance (platform.claude.com, "Handle streaming refusals"): "When you receive
 * stop_reason: refusal, you must reset the conversation context before continuing. You can
 * remove or rephrase the turn that triggered the refusal [...]. Attempting to continue without
 * resetting will result in continued refusals."
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bodies, doneReply, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('the Claude path: a refusal', () => {
  it('anthropic:refusal:reset-context — "When you receive stop_reason: refusal, you must reset the conversation context before continuing": the next turn sends neither the refused partial response (text, a cut respond(), an undispatched tool_use, their results) nor the user message that triggered it, nor the refused turn\'s earlier calls; the turns before it stay; the mailbox keeps the refused turn', async () => {
    r = await rig({
      script: [
        doneReply('toolu_hi', 'Hello!'),
        // The refused turn: an ack and a tool call, then the response the classifier stops.
        {
          content: [
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Looking that up.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'lookup', id: 'toolu_look', input: { q: 'x' } },
          ],
        },
        {
          content: [
            { type: 'text', text: 'Sure, step one is to' },
            { type: 'tool_use', name: 'lookup', id: 'toolu_cut_tool', rawInput: '{"q":"how to bui' },
            { type: 'tool_use', name: 'respond', id: 'toolu_cut', rawInput: '{"parts":[{"text":"Here is how to bui' },
          ],
          stopReason: 'refusal',
        },
        doneReply('toolu_ok', 'Sunny.'),
      ],
    });
    r.rt.registries.tools.register({ name: 'lookup', description: 'Look up.', inputSchema: { type: 'object', properties: { q: { type: 'string' } } }, scope: 'generalist', handler: async () => ({ found: 'LOOKUP-RESULT' }) });
    r.rt.registries.actors.register({ name: 'desk', tools: ['lookup'] });
    const s = await r.rt.createSession({ actor: 'desk' });
    expect((await (await s.send('Hi there.')).settled).finalizedBy).toBe('complete');
    const refused = await (await s.send('UNSAFE REQUEST')).settled;
    expect(refused).toMatchObject({ finalizedBy: 'error', stop: 'refusal', error: { code: 'model.refusal' } });
    expect((await (await s.send('What is the weather?')).settled).finalizedBy).toBe('complete');

    const sent = bodies(r.server);
    expect(sent).toHaveLength(4);
    // The refused turn's own second call still saw its first (the refusal comes after it).
    expect(JSON.stringify(sent[2].messages)).toContain('UNSAFE REQUEST');
    const next = sent[3].messages;
    expect(next).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi there.' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_hi', name: 'respond', input: { parts: [textPart('response', 'Hello!')], turnState: 'complete' } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_hi', content: expect.any(String) },
          { type: 'text', text: 'What is the weather?' },
        ],
      },
    ]);
    for (const gone of ['UNSAFE REQUEST', 'Sure, step one', 'toolu_cut', 'toolu_ack', 'toolu_look', 'LOOKUP-RESULT', 'refusal']) expect(JSON.stringify(next)).not.toContain(gone);

    // The audit record keeps the refused turn: its user message, responses and the marker.
    const mailbox = await s.mailbox();
    const turn = mailbox.filter((m) => m.turnId === refused.turnId);
    expect(turn.map((m) => m.kind)).toEqual(['user', 'assistant', 'tool_result', 'tool_result', 'data', 'assistant', 'tool_result', 'tool_result', 'refused']);
  });
});
