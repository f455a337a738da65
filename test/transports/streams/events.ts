/** Builders for session events in tests of the stream machinery. */
import type { SessionEvent, SessionEventBody } from '../../../src/types.js';

export function ev(seq: number, body: SessionEventBody, sessionId = 's1', turnId = 't1'): SessionEvent {
  return { seq, sessionId, turnId, at: new Date(1_700_000_000_000 + seq).toISOString(), ...body } as SessionEvent;
}

export const delta = (callId: string, index: number, text: string, partType = 'response'): SessionEventBody => ({
  type: 'part.delta',
  callId,
  index,
  partType,
  text,
});

export const received = (callId: string, index: number, partType: string, text: string, turnState = 'awaiting'): SessionEventBody => ({
  type: 'part.received',
  callId,
  index,
  part: partType === 'domain-data' ? { data: { text }, metadata: { partType } } : { text, metadata: { partType } },
  turnState,
  actor: 'triage',
});

export const stateChange = (from: string, to: string): SessionEventBody => ({ type: 'turnState.changed', from, to, actor: 'triage' });

export const approvalRequested = (approvalId: string): SessionEventBody => ({
  type: 'approval.requested',
  approvalId,
  callId: 'c-' + approvalId,
  tool: 'book_flight',
  args: { flight: 'XY1' },
  actor: 'flights',
  policyResult: { decision: 'ask', source: 'always' },
});

export const settled = (): SessionEventBody => ({ type: 'turn.settled', finalizedBy: 'complete', usage: { inputTokens: 1, outputTokens: 1 } });

/** Events that must never be dropped by a streaming transport. */
export function mustArrive(e: SessionEvent): boolean {
  switch (e.type) {
    case 'part.delta':
      return false;
    case 'part.received':
      return !['ack', 'thinking', 'progress'].includes(e.part.metadata.partType);
    default:
      return true;
  }
}
