/**
 * The model history (src/machines/mailbox.ts) after a refusal. Claude's guidance ("Handle
 * streaming refusals"): "you must reset the conversation context before continuing. You can
 * remove or rephrase the turn that triggered the refusal".
 */
import { describe, expect, it } from 'vitest';
import { createHistory, deriveHistory } from '../../src/machines/mailbox.js';
import type { MailboxEntry } from '../../src/types.js';

const at = '2026-01-01T00:00:00.000Z';
const user = (turnId: string, text: string): MailboxEntry => ({ kind: 'user', turnId, at, text });
const said = (turnId: string, actor: string, id: string, text: string): MailboxEntry[] => [
  { kind: 'assistant', turnId, at, actor, content: [{ type: 'tool_use', id, name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState: 'complete' } }] },
  { kind: 'tool_result', turnId, at, actor, callId: id, tool: 'respond', content: 'Recorded.', isError: false },
];

const T1 = [user('t1', 'Hi.'), ...said('t1', 'a', 'c1', 'Hello!')];
const T2 = [
  user('t2', 'UNSAFE'),
  { kind: 'assistant', turnId: 't2', at, actor: 'a', content: [{ type: 'text', text: 'Sure, step one' }, { type: 'tool_use', id: 'c2', name: 'lookup', input: {} }] },
  { kind: 'tool_result', turnId: 't2', at, actor: 'a', callId: 'c2', tool: 'lookup', content: 'Not run', isError: true },
  { kind: 'data', turnId: 't2', at, actor: 'a', callId: 'c2', tool: 'lookup', data: { x: 1 } },
] as MailboxEntry[];
const REFUSED: MailboxEntry = { kind: 'refused', turnId: 't2', at, actor: 'a' };
const T3 = [user('t3', 'Weather?')];

describe('model history after a refusal', () => {
  it('history:refusal:turn-left-out — "remove [...] the turn that triggered the refusal": a refused turn (its user message, the refused content, its results and data) is in no later history, for every actor; the turns around it stay', () => {
    const mailbox = [...T1, ...T2, REFUSED, ...T3];
    const fresh = deriveHistory(mailbox, 'a');
    expect(fresh).toEqual(deriveHistory([...T1, ...T3], 'a'));
    expect(JSON.stringify(fresh)).not.toMatch(/UNSAFE|Sure, step one|c2/);
    expect(deriveHistory(mailbox, 'b')).toEqual(deriveHistory([...T1, ...T3], 'b'));
    // A refused first turn: the history starts at the next user message.
    expect(deriveHistory([...T2, REFUSED, ...T3], 'a')).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Weather?' }] }]);
  });

  it('history:refusal:incremental — "remove [...] the turn that triggered the refusal": a view that already folded the refused turn takes it back when the marker arrives, and gives the same history as a fresh derivation', () => {
    const view = createHistory('a');
    const mailbox: MailboxEntry[] = [...T1, ...T2];
    expect(JSON.stringify(view.update(mailbox))).toContain('UNSAFE');
    mailbox.push(REFUSED);
    expect(view.update(mailbox)).toEqual(deriveHistory(T1, 'a'));
    mailbox.push(...T3, ...said('t3', 'a', 'c3', 'Sunny.'));
    expect(view.update(mailbox)).toEqual(deriveHistory([...T1, ...T3, ...said('t3', 'a', 'c3', 'Sunny.')], 'a'));
  });
});
