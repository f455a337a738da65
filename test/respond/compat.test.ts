import { describe, expect, it } from 'vitest';
import {
  compatTools,
  createCompatTracker,
  COMPAT_COMPLETION_NUDGE,
  COMPAT_PROMPT_SNIPPET,
  MARK_WORK_COMPLETE_SUCCESS,
  compatOptions,
  replayCompat,
} from '../../src/respond/compat.js';

const SUCCESS = '{"success":true,"message":"Response recorded for delivery to user."}';
const TEXT_REQUIRED = '{"success":false,"error":"text is required"}';

describe('respond_to_user compatibility (spec 003)', () => {
  it('compat:tools — respond_to_user carries spec 003 description and schema; mark_work_complete takes a summary', () => {
    const [respondToUser, markComplete] = compatTools();
    expect(respondToUser).toEqual({
      name: 'respond_to_user',
      description:
        'Send a response directly to the user. On voice interfaces this will be spoken aloud via TTS; on messaging channels (mobile, WhatsApp, etc.) it will be sent as a message. Regular assistant text is internal and not guaranteed to reach the user; use this tool to explicitly communicate with them.',
      input_schema: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'The response text for the user. Write naturally and conversationally, without markdown or code formatting.' },
        },
        required: ['text'],
      },
    });
    expect(markComplete!.name).toBe('mark_work_complete');
    expect(markComplete!.input_schema).toMatchObject({ type: 'object', required: ['summary'], properties: { summary: { type: 'string' } } });
    for (const t of compatTools()) expect(t.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(COMPAT_PROMPT_SNIPPET).toContain('You have a `respond_to_user` tool. This is how you communicate with the user —');
    expect(COMPAT_COMPLETION_NUDGE).toBe(
      'If all requested work is complete, use respond_to_user to tell the user the result, then call mark_work_complete with a concise summary. Otherwise continue working.',
    );
  });

  it('compat:respond_to_user:records — "only deliver at session completion": a draft is recorded with the spec success result and publishes nothing', () => {
    const t = createCompatTracker();
    const r = t.onCall('respond_to_user', { text: '  Here are all seven tweets: one...  ' });
    expect(r).toEqual({ ok: true, events: [], content: SUCCESS, completed: false });
    expect(t.responded).toBe(true);
    expect(t.userResponse).toBe('Here are all seven tweets: one...');
    expect(t.completed).toBe(false);
  });

  it('compat:deliverDrafts:mid-turn — with deliverDrafts each respond_to_user is a response part with turnState awaiting; completion adds no second copy', () => {
    const t = createCompatTracker(compatOptions({ compat: { mode: 'respond_to_user', deliverDrafts: true } }));
    const r = t.onCall('respond_to_user', { text: '  Downloading the database now.  ' });
    expect(r).toEqual({
      ok: true,
      events: [{ type: 'part.received', index: 0, part: { text: 'Downloading the database now.', metadata: { partType: 'response' } }, turnState: 'awaiting' }],
      content: SUCCESS,
      completed: false,
    });
    const done = t.onCall('mark_work_complete', { summary: 'Downloaded.' });
    expect(done.ok && done.events).toEqual([{ type: 'turnState.changed', to: 'complete' }]);
    expect(compatOptions({})).toBeUndefined();
    expect(compatOptions({ compat: 'respond_to_user' })).toEqual({ deliverDrafts: false });
  });

  it('compat:respond_to_user:text-required — missing, non-string, empty or blank text gets exactly the spec error', () => {
    const t = createCompatTracker();
    for (const input of [{}, { text: '' }, { text: '   \n ' }, { text: 42 }, { text: null }, null, 'hello', [], undefined]) {
      expect(t.onCall('respond_to_user', input)).toEqual({ ok: false, message: TEXT_REQUIRED });
    }
    expect(t.responded).toBe(false);
    expect(t.userResponse).toBeUndefined();
  });

  it('compat:userResponse:last-wins — the last respond_to_user text, trimmed; a later summary does not override it', () => {
    const t = createCompatTracker();
    t.onAssistantText('Let me read the thread.');
    t.onCall('respond_to_user', { text: 'First draft.' });
    t.onCall('respond_to_user', { text: ' Tweet one: ... Tweet seven: ... ' });
    t.onAssistantText('Work was already marked complete.');
    const r = t.onCall('mark_work_complete', { summary: 'Read the 7-tweet thread aloud.' });
    expect(t.userResponse).toBe('Tweet one: ... Tweet seven: ...');
    expect(t.finalContent).toBe('Read the 7-tweet thread aloud.');
    // Delivered at completion: only the last draft, once.
    expect(r.ok && r.events).toEqual([
      { type: 'part.received', index: 0, part: { text: 'Tweet one: ... Tweet seven: ...', metadata: { partType: 'response' } }, turnState: 'complete' },
      { type: 'turnState.changed', to: 'complete' },
    ]);
  });

  it('compat:mark_work_complete:completes — the respond_to_user text as one response part, then turnState.changed complete', () => {
    const t = createCompatTracker();
    t.onCall('respond_to_user', { text: 'Done: the report is in your inbox.' });
    const r = t.onCall('mark_work_complete', { summary: 'Sent the report.' });
    expect(r).toEqual({
      ok: true,
      events: [
        { type: 'part.received', index: 0, part: { text: 'Done: the report is in your inbox.', metadata: { partType: 'response' } }, turnState: 'complete' },
        { type: 'turnState.changed', to: 'complete' },
      ],
      content: MARK_WORK_COMPLETE_SUCCESS,
      completed: true,
    });
    expect(t.completed).toBe(true);
  });

  it('compat:mark_work_complete:fallback — without respond_to_user, a response part holds the summary, else the last assistant text', () => {
    const a = createCompatTracker();
    a.onAssistantText('Checked the calendar.');
    const withSummary = a.onCall('mark_work_complete', { summary: '  You have two meetings tomorrow. ' });
    expect(withSummary.ok && withSummary.events).toEqual([
      { type: 'part.received', index: 0, part: { text: 'You have two meetings tomorrow.', metadata: { partType: 'response' } }, turnState: 'complete' },
      { type: 'turnState.changed', to: 'complete' },
    ]);

    const b = createCompatTracker();
    b.onAssistantText('First note.');
    b.onAssistantText('  The backup finished at 02:00.  ');
    b.onAssistantText('   ');
    const withText = b.onCall('mark_work_complete', { summary: '' });
    expect(withText.ok && withText.events[0]).toEqual({
      type: 'part.received', index: 0, part: { text: 'The backup finished at 02:00.', metadata: { partType: 'response' } }, turnState: 'complete',
    });

    const c = createCompatTracker();
    const nothing = c.onCall('mark_work_complete', {});
    expect(nothing.ok).toBe(false);
    expect(!nothing.ok && JSON.parse(nothing.message)).toEqual({ success: false, error: expect.stringContaining('summary is required') });
    expect(c.completed).toBe(false);
    const badType = c.onCall('mark_work_complete', { summary: 5 });
    expect(badType).toEqual({ ok: false, message: '{"success":false,"error":"summary must be a string"}' });
  });

  it('compat:userResponse:fallback — without respond_to_user, userResponse is the summary, else the last assistant text', () => {
    const a = createCompatTracker();
    a.onAssistantText('Internal status.');
    expect(a.userResponse).toBe('Internal status.');
    a.onCall('mark_work_complete', { summary: 'The summary.' });
    expect(a.userResponse).toBe('The summary.');
    expect(a.responded).toBe(false);

    const b = createCompatTracker();
    b.onAssistantText('Final assistant text.');
    b.onCall('mark_work_complete', { summary: ' ' });
    expect(b.userResponse).toBe('Final assistant text.');
    expect(b.finalContent).toBe('Final assistant text.');
  });

  it('compat:after-complete:rejected — calls after completion change nothing; reset starts a new turn', () => {
    const t = createCompatTracker();
    t.onCall('respond_to_user', { text: 'Answer.' });
    t.onCall('mark_work_complete', { summary: 'S.' });
    const late = t.onCall('respond_to_user', { text: 'Work was already marked complete.' });
    expect(late.ok).toBe(false);
    expect(!late.ok && JSON.parse(late.message)).toEqual({ success: false, error: 'work is already marked complete for this turn' });
    expect(t.userResponse).toBe('Answer.');
    expect(t.onCall('mark_work_complete', { summary: 'again' }).ok).toBe(false);
    expect(t.finalContent).toBe('S.');

    const unknown = t.onCall('speak', {});
    expect(!unknown.ok && unknown.message).toContain("unknown tool 'speak'");

    t.reset();
    expect(t.completed).toBe(false);
    expect(t.userResponse).toBeUndefined();
    expect(t.onCall('respond_to_user', { text: 'Next turn.' }).ok).toBe(true);
    expect(t.userResponse).toBe('Next turn.');
  });

  it('compat:replay:drafts — a tracker rebuilt from the mailbox keeps the accepted drafts (not rejected ones) and the assistant text', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const t = replayCompat(createCompatTracker(), [
      { kind: 'assistant', turnId: 't1', at, actor: 'v', content: [{ type: 'tool_use', id: 'a', name: 'respond_to_user', input: { text: 'Old turn.' } }] },
      { kind: 'tool_result', turnId: 't1', at, actor: 'v', callId: 'a', tool: 'respond_to_user', content: SUCCESS, isError: false },
      { kind: 'assistant', turnId: 't2', at, actor: 'v', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: 'b', name: 'respond_to_user', input: { text: 'Draft one.' } }] },
      { kind: 'tool_result', turnId: 't2', at, actor: 'v', callId: 'b', tool: 'respond_to_user', content: SUCCESS, isError: false },
      { kind: 'assistant', turnId: 't2', at, actor: 'v', content: [{ type: 'tool_use', id: 'c', name: 'respond_to_user', input: { text: '' } }] },
      { kind: 'tool_result', turnId: 't2', at, actor: 'v', callId: 'c', tool: 'respond_to_user', content: TEXT_REQUIRED, isError: true },
    ], 't2');
    expect(t.userResponse).toBe('Draft one.');
    expect(t.finalContent).toBe('Looking.');
    expect(t.completed).toBe(false);
  });
});
