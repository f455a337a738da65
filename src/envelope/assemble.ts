/**
 * Envelope assembly at settlement (spec 001 "Assembly and delivery"): the turn's envelope parts
 * plus the mailbox's data-bearing records collected into one domain-data part when the actor
 * emitted none. Pure.
 */
import type { PartTypeRegistryApi } from '../registries/types.js';
import type { Envelope, MailboxEntry, Part } from '../types.js';

export function assembleEnvelope(input: {
  partTypes: PartTypeRegistryApi;
  parts: readonly Part[];
  mailbox: readonly MailboxEntry[];
  sessionId: string;
  turnId: string;
  producedAt: string;
  finalizedBy: string;
  llmContext?: Part;
}): Envelope {
  const parts: Part[] = [];
  let hasDomainData = false;
  for (const p of input.parts) {
    const def = input.partTypes.get(p.metadata.partType);
    if (def && !def.meta.inEnvelope) continue;
    if (p.metadata.partType === 'domain-data') hasDomainData = true;
    parts.push(p);
  }
  if (!hasDomainData) {
    const records = collectData(input.mailbox, input.turnId);
    if (records.length > 0) {
      parts.push({
        data: records.length === 1 ? { [records[0]!.tool]: records[0]!.data } : { results: records },
        metadata: { partType: 'domain-data', source: 'mailbox' },
      });
    }
  }
  if (input.llmContext) parts.push(input.llmContext);
  return {
    role: 'agent',
    parts,
    meta: { sessionId: input.sessionId, turnId: input.turnId, producedAt: input.producedAt, finalizedBy: input.finalizedBy },
  };
}

/** The data-bearing records of one turn, in order. */
export function collectData(mailbox: readonly MailboxEntry[], turnId: string): { tool: string; data: unknown }[] {
  const out: { tool: string; data: unknown }[] = [];
  for (let i = mailbox.length - 1; i >= 0; i--) {
    const e = mailbox[i]!;
    if (e.turnId !== turnId) break;
    if (e.kind === 'data') out.push({ tool: e.tool, data: e.data });
  }
  return out.reverse();
}
