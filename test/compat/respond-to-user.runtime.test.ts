import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import type { SessionEvent } from '../../src/types.js';

async function run(script: ModelScript, text = 'read me it') {
  const model = createScriptedModel(script);
  const rt = createRuntime({ model });
  rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user' });
  const s = await rt.createSession({ actor: 'voice' });
  const events: SessionEvent[] = [];
  s.events().subscribe((e) => events.push(e));
  const out = await (await s.send(text)).settled;
  return { out, events, model, s };
}

describe('spec 003 compatibility (respond_to_user / mark_work_complete)', () => {
  it('compat:userResponse:last-respond_to_user — the last respond_to_user text is the userResponse, not the status summary', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [{ type: 'tool_use', name: 'respond_to_user', input: { text: 'Tweet one. Tweet two.' } }] } },
        { when: { call: 1 }, respond: { blocks: [{ type: 'tool_use', name: 'respond_to_user', input: { text: '  Tweet one. Tweet two. Tweet three.  ' } }] } },
        { when: { call: 2 }, respond: { blocks: [{ type: 'tool_use', name: 'mark_work_complete', input: { summary: 'Work was already marked complete.' } }] } },
      ],
    });
    expect(out.finalizedBy).toBe('complete');
    expect(out.userResponse).toBe('Tweet one. Tweet two. Tweet three.');
    const responses = events.filter((e) => e.type === 'part.received').map((e) => (e as any).part.text);
    expect(responses).toEqual(['Tweet one. Tweet two.', 'Tweet one. Tweet two. Tweet three.']);
    // The model saw the spec's success result for respond_to_user.
    const second = model.requests[1]!;
    const lastUser = second.messages[second.messages.length - 1]!;
    expect(JSON.stringify(lastUser.content)).toContain('Response recorded for delivery to user.');
    // The compat tools, not respond(), were offered.
    expect(second.tools.map((t) => t.name)).toEqual(['respond_to_user', 'mark_work_complete']);
  });

  it('compat:respond_to_user:empty-rejected — empty or whitespace text gets the spec error and nothing is delivered', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [{ type: 'tool_use', name: 'respond_to_user', input: { text: '   ' } }] } },
        { when: { call: 1 }, respond: { blocks: [{ type: 'tool_use', name: 'respond_to_user', input: { text: 'Here it is.' } }, { type: 'tool_use', name: 'mark_work_complete', input: {} }] } },
      ],
    });
    const rejected = model.requests[1]!.messages.at(-1)!.content[0] as any;
    expect(rejected.is_error).toBe(true);
    expect(rejected.content).toBe('{"success":false,"error":"text is required"}');
    expect(out.userResponse).toBe('Here it is.');
    expect(events.filter((e) => e.type === 'part.received').map((e) => (e as any).part.text)).toEqual(['Here it is.']);
  });

  it('compat:userResponse:fallback-final-text — without respond_to_user, the final text is delivered', async () => {
    const { out, events } = await run({
      rules: [{ when: { call: 0 }, respond: { blocks: [{ type: 'text', text: 'It is sunny in Paris.' }] } }],
    });
    expect(out.finalizedBy).toBe('complete');
    expect(out.userResponse).toBe('It is sunny in Paris.');
    const parts = events.filter((e) => e.type === 'part.received').map((e) => (e as any).part);
    expect(parts).toEqual([{ text: 'It is sunny in Paris.', metadata: { partType: 'response' } }]);
  });
});
