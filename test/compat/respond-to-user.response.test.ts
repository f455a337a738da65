/**
 * Spec 003 over whole model responses: mark_work_complete completes the turn only when its
 * response is accepted, at the response's end, with everything the response said known (its
 * text, a respond_to_user after it). A completion the runtime refuses, or a response cut by an
 * interrupt, completed nothing.
 */
import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../../src/machines/ports.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime } from '../../src/runtime.js';
import type { SessionEvent, SessionEventOf, ToolUseBlock } from '../../src/types.js';

const rtu = (text: string) => ({ type: 'tool_use' as const, name: 'respond_to_user', input: { text } });
const done = (summary?: string) => ({ type: 'tool_use' as const, name: 'mark_work_complete', input: summary === undefined ? {} : { summary } });
const text = (t: string) => ({ type: 'text' as const, text: t });
const saveNote = { type: 'tool_use' as const, name: 'save_note', input: {} };

async function run(script: ModelScript) {
  const model = createScriptedModel(script);
  const rt = createRuntime({ model });
  rt.registries.tools.register({ name: 'save_note', description: 'Save a note', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => ({ ok: true }) });
  rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user', tools: ['save_note'] });
  const s = await rt.createSession({ actor: 'voice' });
  const events: SessionEvent[] = [];
  s.events().subscribe((e) => events.push(e));
  const out = await (await s.send('save my note')).settled;
  await rt.close();
  return { out, events, model };
}

const delivered = (events: SessionEvent[]) =>
  events.filter((e): e is SessionEventOf<'part.received'> => e.type === 'part.received').map((e) => [e.part.text, e.turnState]);
/** The tool results the model read in request `n`, as [tool_use id, content, is_error]. */
const resultsIn = (req: ModelRequest) =>
  (req.messages.at(-1)!.content as { type: string; content?: unknown; is_error?: boolean }[])
    .filter((b) => b.type === 'tool_result')
    .map((b) => [b.content, b.is_error === true]);

describe('spec 003: mark_work_complete applies with its response', () => {
  it('compat:mark_work_complete:with-tool — "Agent does work → calls respond_to_user(...) → calls mark_work_complete(...)": a completion beside a tool call in one response is refused in spec 003\'s form, completes nothing, and the next mark_work_complete completes with the draft', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [rtu('Your note is saved.'), saveNote, done('Saved the note.')] } },
        { respond: { blocks: [done('Saved the note.')] } },
      ],
    });
    expect(out).toMatchObject({ finalizedBy: 'complete', userResponse: 'Your note is saved.', finalContent: 'Saved the note.' });
    expect(delivered(events)).toEqual([['Your note is saved.', 'complete']]);
    expect(model.requests).toHaveLength(2);
    const [draft, refused, tool] = resultsIn(model.requests[1]!);
    expect(draft).toEqual(['{"success":true,"message":"Response recorded for delivery to user."}', false]);
    expect(tool).toEqual(['{"ok":true}', false]);
    expect(refused![1]).toBe(true);
    const error = JSON.parse(refused![0] as string) as { success: boolean; error: string };
    expect(error.success).toBe(false);
    expect(error.error).toContain('mark_work_complete ends the turn');
    expect(error.error).toContain('save_note');
    expect(error.error).not.toContain('respond()');
  });

  it('compat:mark_work_complete:same-response-text — "If respond_to_user was NOT called: Fall back to existing behavior — finalContent is used": text written beside mark_work_complete({}) is what is delivered, not an earlier status line', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [text('Let me pull up the thread.'), saveNote] } },
        { respond: { blocks: [text('Tweet one. Tweet two. Tweet three.'), done()] } },
      ],
    });
    expect(out).toMatchObject({ finalizedBy: 'complete', userResponse: 'Tweet one. Tweet two. Tweet three.' });
    expect(delivered(events)).toEqual([['Tweet one. Tweet two. Tweet three.', 'complete']]);
    expect(model.requests).toHaveLength(2);
  });

  it('compat:respond_to_user:after-complete-same-response — "Only text passed through this tool is delivered to the user": a respond_to_user after mark_work_complete in the same response is the userResponse', async () => {
    const { out, events, model } = await run({
      rules: [{ respond: { blocks: [done('Work was already marked complete.'), rtu('Tweet one. Tweet two. Tweet three.')] } }],
    });
    expect(out).toMatchObject({ finalizedBy: 'complete', userResponse: 'Tweet one. Tweet two. Tweet three.', finalContent: 'Work was already marked complete.' });
    expect(delivered(events)).toEqual([['Tweet one. Tweet two. Tweet three.', 'complete']]);
    expect(model.requests).toHaveLength(1);
  });

  it('compat:mark_work_complete:second-counts — two mark_work_complete calls in one response, the first with nothing to deliver: the second, refused only for coming second, completes the turn in the same model call', async () => {
    const { out, events, model } = await run({ rules: [{ respond: { blocks: [done(), done('Saved it.')] } }] });
    expect(out).toMatchObject({ finalizedBy: 'complete', userResponse: 'Saved it.', finalContent: 'Saved it.' });
    expect(delivered(events)).toEqual([['Saved it.', 'complete']]);
    expect(model.requests).toHaveLength(1);
  });

  it('compat:mark_work_complete:cut-never-happened — an interrupt after a mark_work_complete block, before its response ended: nothing was completed, and the model\'s next completion delivers its new draft', async () => {
    const requests: ModelRequest[] = [];
    let reachedCut!: () => void;
    const cut = new Promise<void>((r) => (reachedCut = r));
    const tu = (id: string, name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: 'tool_use', id, name, input });
    const model: ModelPort = {
      name: 'cut-after-complete',
      async *stream(req, signal): AsyncIterable<ModelEvent> {
        requests.push(req);
        const n = requests.length - 1;
        const blocks =
          n === 0
            ? [tu('c0a', 'respond_to_user', { text: 'Tweet one. Tweet two.' }), tu('c0b', 'mark_work_complete', { summary: 'Read the thread.' })]
            : [tu(`c${n}a`, 'respond_to_user', { text: 'Tweet one. Tweet two. Tweet three.' }), tu(`c${n}b`, 'mark_work_complete', { summary: 'Read all three.' })];
        for (const [i, b] of blocks.entries()) {
          yield { type: 'block.start', index: i, block: { type: 'tool_use', id: b.id, name: b.name, input: {} } } as ModelEvent;
          yield { type: 'block.stop', index: i, block: b };
        }
        if (n === 0) {
          reachedCut();
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new ModelError('model.aborted', 'aborted')), { once: true }));
        }
        yield { type: 'message.stop', stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1 }, content: blocks };
      },
    };
    const rt = createRuntime({ model });
    rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user' });
    const s = await rt.createSession({ actor: 'voice', doubleTexting: 'interrupt' });
    const events: SessionEvent[] = [];
    s.events().subscribe((e) => events.push(e));
    await s.send('read me the thread');
    await cut;
    const out = await (await s.send('and the third tweet too')).settled;
    expect(out).toMatchObject({ finalizedBy: 'complete', userResponse: 'Tweet one. Tweet two. Tweet three.', finalContent: 'Read all three.' });
    expect(delivered(events)).toEqual([['Tweet one. Tweet two. Tweet three.', 'complete']]);
    // The cut response's completion is not in the model's history: only its applied draft is.
    const history = JSON.stringify(requests[1]!.messages);
    expect(history).toContain('c0a');
    expect(history).not.toContain('c0b');
    await rt.close();
  });
});
