/**
 * Envelope assembly at settlement (spec 001 "Assembly and delivery", step 6). Pure.
 *
 * Contract:
 * - The envelope holds the turn's parts whose type is `inEnvelope`, in the order emitted, except
 *   that every `domain-data` part and every data-bearing mailbox record of the turn merge into
 *   ONE domain-data part (see `mergeDomainData`), placed where the actor's first domain-data part
 *   was, or after the actor's parts when it emitted none. No data-bearing records and no
 *   domain-data part: no domain-data part (a conversational turn carries its response only).
 * - A peer's envelope that resumed a delegated turn is a data-bearing record of the turn too: its
 *   domain-data (`peerData`) goes under `/peer`, by the same rule as a tool's under its name.
 * - Each citation is bound by a JSON Pointer (`data.path`, or `metadata.path` for a text
 *   citation) into that domain-data. A citation that resolves to nothing is left out of the
 *   envelope and recorded in `meta.warnings` (code `citation.unbound`, the part kept as emitted);
 *   the turn still settles.
 * - An approval-request part whose approval is resolved (`approvals`, the turn's records) carries
 *   its resolution: `data.resolution: { decision, reason? }` on a copy (the emitted part is not
 *   changed). The envelope keeps the request as the record of what was asked and decided; the
 *   channels render the decision instead of the question (render.ts). The surface a template
 *   built to ask it (kind `approval:<tool>`, its Approve and Deny buttons) is left out: it asks a
 *   question that has been answered (`isDecidedSurface`).
 * - The actor's own llm-context part is kept only when an originator of the turn consumes
 *   llm-context (`consumesLlmContext`; spec 001: "Local-UI-only turn — llm-context is skipped").
 *   A translated llm-context part (produced only for such a consumer) comes last. `meta` carries
 *   sessionId, turnId, producedAt, finalizedBy (and warnings when there are any).
 */
import { isDeepStrictEqual } from 'node:util';
import { approvalKind } from '../registries/surface-templates.js';
import type { PartTypeRegistryApi } from '../registries/types.js';
import { setOwn, type ApprovalDecision, type ApprovalRecord, type Envelope, type EnvelopeWarning, type MailboxEntry, type Part } from '../types.js';
import { escapeSegment, resolvePointer } from './pointer.js';

export interface AssembleInput {
  partTypes: PartTypeRegistryApi;
  parts: readonly Part[];
  mailbox: readonly MailboxEntry[];
  sessionId: string;
  turnId: string;
  producedAt: string;
  finalizedBy: string;
  llmContext?: Part | undefined;
  /**
   * Whether an originator of the turn consumes llm-context (SendOptions.consumes, a caller card):
   * the actor's own llm-context part is kept only then. Default false.
   */
  consumesLlmContext?: boolean | undefined;
  /** The approval records of the turn's approval-request parts (the store's), to carry their resolutions. */
  approvals?: readonly ApprovalRecord[] | undefined;
}

/** What was decided on an approval, as the envelope's approval-request part carries it (`data.resolution`). */
export interface ApprovalOutcome {
  decision: ApprovalDecision;
  reason?: string;
}

/** An answer to an approval as the session publishes it: an `approval.resolved` event has this shape. */
export interface ApprovalAnswer {
  approvalId: string;
  decision: ApprovalDecision;
  reason?: string | undefined;
}

export function assembleEnvelope(input: AssembleInput): Envelope {
  const kept: Part[] = [];
  const actorData: { part: Part; index: number }[] = [];
  let dataAt = -1;
  let decided: ReadonlySet<string> | undefined;
  for (let i = 0; i < input.parts.length; i++) {
    const p = input.parts[i]!;
    const type = p.metadata.partType;
    const def = input.partTypes.get(type);
    if (def && !def.meta.inEnvelope) continue;
    if (type === 'domain-data') {
      if (dataAt === -1) dataAt = kept.length;
      actorData.push({ part: p, index: i });
      continue;
    }
    if (type === 'llm-context' && input.consumesLlmContext !== true) continue;
    if (type === 'a2ui-surface' && isDecidedSurface(p, (decided ??= decidedKinds(input.parts, input.approvals)))) continue;
    kept.push(type === 'approval-request' ? withResolution(p, recordAnswer(p, input.approvals)) : p);
  }
  const records = collectData(input.mailbox, input.turnId);
  let domain: DomainData | undefined;
  if (records.length > 0 || actorData.length > 0) {
    domain = mergeDomainData(records, actorData);
    const metadata: Part['metadata'] = { partType: 'domain-data', sources: domain.sources };
    if (domain.conflicts.length > 0) metadata.conflicts = domain.conflicts;
    kept.splice(dataAt === -1 ? kept.length : dataAt, 0, { data: domain.data, metadata });
  }
  const warnings: EnvelopeWarning[] = [];
  const parts = kept.filter((p) => {
    if (p.metadata.partType !== 'citation') return true;
    const problem = citationProblem(p, domain?.data);
    if (problem === undefined) return true;
    warnings.push({ code: 'citation.unbound', message: problem, part: p });
    return false;
  });
  if (input.llmContext) parts.push(input.llmContext);
  const envelope: Envelope = {
    role: 'agent',
    parts,
    meta: { sessionId: input.sessionId, turnId: input.turnId, producedAt: input.producedAt, finalizedBy: input.finalizedBy },
  };
  if (warnings.length > 0) envelope.meta.warnings = warnings;
  return envelope;
}

/**
 * The approval-request part with what was decided (`data.resolution: { decision, reason? }`), on a
 * copy; the part itself when `answer` is undefined (the approval is open, or its answer unknown)
 * or the part already carries one. Only the decision and the reason: who answered and through
 * which channel stay in the approval record (the store, approval.resolved).
 */
export function withResolution(part: Part, answer: { decision: ApprovalDecision; reason?: string | undefined } | undefined): Part {
  if (answer === undefined || part.metadata.partType !== 'approval-request' || resolutionOf(part) !== undefined) return part;
  const outcome: ApprovalOutcome = { decision: answer.decision };
  if (answer.reason !== undefined) outcome.reason = answer.reason;
  return { ...part, data: { ...part.data, resolution: outcome } };
}

/** The resolution an approval-request part carries, or undefined while it asks. */
export function resolutionOf(part: Part): ApprovalOutcome | undefined {
  const r = part.data?.resolution;
  if (r === null || typeof r !== 'object') return undefined;
  const decision = (r as Record<string, unknown>).decision;
  return decision === 'approved' || decision === 'denied' ? (r as ApprovalOutcome) : undefined;
}

/** The answer the store's record of the part's approval holds, if it was answered. */
export function recordAnswer(part: Part, approvals: readonly ApprovalRecord[] | undefined): ApprovalRecord['resolution'] {
  const id = part.data?.approvalId;
  return approvals?.find((a) => a.approvalId === id)?.resolution;
}

/**
 * The surface kinds of the decided approvals among `parts` (`approval:<tool>`): those whose
 * request carries a resolution or has an answered record in `approvals`.
 */
export function decidedKinds(parts: readonly Part[], approvals?: readonly ApprovalRecord[]): ReadonlySet<string> {
  const kinds = new Set<string>();
  for (const p of parts) {
    if (p.metadata.partType !== 'approval-request' || typeof p.data?.tool !== 'string') continue;
    if (resolutionOf(p) !== undefined || recordAnswer(p, approvals) !== undefined) kinds.add(approvalKind(p.data.tool));
  }
  return kinds;
}

/**
 * Whether `part` is the surface a template built to ask a decided approval (source `template`, kind
 * in `kinds`): its Approve and Deny buttons ask what has been answered, so buffered consumers (the
 * settled envelope, a turn's buffered view) do not get it. Streaming consumers saw it when asked.
 */
export function isDecidedSurface(part: Part, kinds: ReadonlySet<string>): boolean {
  const m = part.metadata;
  return m.partType === 'a2ui-surface' && m.source === 'template' && typeof m.kind === 'string' && kinds.has(m.kind);
}

/** The pointer a citation is bound by: `data.path`, else `metadata.path`. */
export function citationPath(part: Part): unknown {
  return part.data !== undefined && 'path' in part.data ? part.data.path : part.metadata.path;
}

/** Why a citation is left out (its pointer resolves to nothing in `data`, or it names none), or undefined when it is bound. */
export function citationProblem(part: Part, data: Record<string, unknown> | undefined): string | undefined {
  const path = citationPath(part);
  if (typeof path !== 'string') {
    return `citation left out: it names no JSON Pointer into domain-data (set data.path, or metadata.path on a text citation, e.g. "/search_flights/flights/0")`;
  }
  if (data === undefined) return `citation left out: it is bound to "${path}" but the turn has no domain-data`;
  const r = resolvePointer(data, path);
  return r.found ? undefined : `citation left out: "${path}" resolves to nothing in domain-data (${r.reason})`;
}

/**
 * One data-bearing record of the turn: a tool's data as the envelope may carry it (under `tool`,
 * its name), or a peer envelope's domain-data (`from: 'peer'`, under `tool`: `peer`).
 */
export interface DataRecord {
  tool: string;
  callId: string;
  data: unknown;
  from?: 'peer' | undefined;
}

/** The data-bearing records of one turn, in order. */
export function collectData(mailbox: readonly MailboxEntry[], turnId: string): DataRecord[] {
  const out: DataRecord[] = [];
  for (let i = mailbox.length - 1; i >= 0; i--) {
    const e = mailbox[i]!;
    if (e.turnId !== turnId) break;
    if (e.kind === 'data') out.push(e.from === 'peer' ? { tool: e.tool, callId: e.callId, data: e.data, from: 'peer' } : { tool: e.tool, callId: e.callId, data: e.data });
  }
  return out.reverse();
}

/** The key a peer envelope's domain-data goes under in the merged domain-data (no tool may take it). */
export { PEER_DATA_KEY } from '../registries/tools.js';

/**
 * A peer's envelope as one data-bearing record: its domain-data parts merged in order (as an
 * actor's are), or undefined when it carries none.
 */
export function peerData(parts: readonly Part[]): Record<string, unknown> | undefined {
  const own: { part: Part; index: number }[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.metadata.partType === 'domain-data' && isPlainObject(p.data)) own.push({ part: p, index: i });
  }
  if (own.length === 0) return undefined;
  return own.length === 1 ? own[0]!.part.data : mergeDomainData([], own).data;
}

/** Where each piece of the merged domain-data came from. */
export type DomainDataSource =
  | { from: 'tool'; tool: string; callId: string; pointer: string }
  | { from: 'peer'; callId: string; pointer: string }
  | { from: 'actor'; part: number; pointer: '' };

/** A value the merge replaced: `pointer` now holds the later source's value. */
export interface DomainDataConflict {
  pointer: string;
  replaced: DomainDataSource;
  by: DomainDataSource;
}

export interface DomainData {
  data: Record<string, unknown>;
  sources: DomainDataSource[];
  conflicts: DomainDataConflict[];
}

/**
 * The merge rule (docs/concepts/envelope.md "One domain-data object"):
 * 1. Each tool's records go under its name: `/<tool>` holds its data when it ran once in the turn,
 *    or an array of its data in call order when it ran more than once (`/<tool>/0`, `/<tool>/1`).
 *    A peer's records (`from: 'peer'`) go the same way under their key (`/peer`).
 * 2. The actor's domain-data parts are then merged over that, in the order emitted: objects merge
 *    member by member, recursively; any other value (array, scalar) replaces what was there.
 * 3. Each replaced value is a conflict: the later source wins, and the conflict names the pointer,
 *    the source replaced (the one that wrote the replaced value; for a value several sources
 *    built, the latest of them, see ownerOf) and the source that replaced it. Equal values are no
 *    conflict. The replaced value stays in the mailbox record, so nothing accepted is lost.
 * Inputs are never mutated: objects on a merge path are copied.
 */
export function mergeDomainData(records: readonly DataRecord[], actorParts: readonly { part: Part; index: number }[]): DomainData {
  const data: Record<string, unknown> = {};
  const sources: DomainDataSource[] = [];
  const conflicts: DomainDataConflict[] = [];
  const byTool = new Map<string, DataRecord[]>();
  for (const r of records) {
    const list = byTool.get(r.tool);
    if (list) list.push(r);
    else byTool.set(r.tool, [r]);
  }
  for (const [tool, list] of byTool) {
    const base = `/${escapeSegment(tool)}`;
    if (list.length === 1) {
      setOwn(data, tool, list[0]!.data);
      sources.push(recordSource(list[0]!, base));
    } else {
      setOwn(data, tool, list.map((r) => r.data));
      list.forEach((r, i) => sources.push(recordSource(r, `${base}/${i}`)));
    }
  }
  let merged = data;
  // The actor parts merged so far, latest last, with the data each wrote (for ownerOf).
  const written: { source: DomainDataSource; data: unknown }[] = [];
  for (const { part, index } of actorParts) {
    const by: DomainDataSource = { from: 'actor', part: index, pointer: '' };
    const onReplace = (pointer: string): void => {
      conflicts.push({ pointer, replaced: ownerOf(pointer, written, sources) ?? by, by });
    };
    const d = part.data ?? {};
    merged = mergeValue(merged, d, '', onReplace) as Record<string, unknown>;
    written.push({ source: by, data: d });
    sources.push(by);
  }
  return { data: merged, sources, conflicts };
}

function recordSource(r: DataRecord, pointer: string): DomainDataSource {
  return r.from === 'peer' ? { from: 'peer', callId: r.callId, pointer } : { from: 'tool', tool: r.tool, callId: r.callId, pointer };
}

/**
 * The source that wrote the value at `pointer` before it was replaced: the latest earlier actor
 * part whose own data holds that pointer, else the record (tool or peer) source at, above or under it. An actor
 * source's pointer is '' (it may write anywhere), so matching it by prefix would name a part that
 * never touched the key. A value several sources built (an object merged from a tool's data and
 * actor parts, or a repeated tool's array at `/<tool>`, whose sources are at `/<tool>/<i>`) is
 * named by the latest of them. Called only on a conflict, so a merge without one pays nothing.
 */
function ownerOf(pointer: string, written: readonly { source: DomainDataSource; data: unknown }[], sources: readonly DomainDataSource[]): DomainDataSource | undefined {
  const path = pointer === '' ? [] : pointer.slice(1).split('/').map(unescapeSegment);
  for (let i = written.length - 1; i >= 0; i--) if (holds(written[i]!.data, path)) return written[i]!.source;
  for (let i = sources.length - 1; i >= 0; i--) {
    const s = sources[i]!;
    if (s.from !== 'actor' && (pointer === s.pointer || pointer.startsWith(`${s.pointer}/`) || s.pointer.startsWith(`${pointer}/`))) return s;
  }
  // Only the empty object the merge starts from has no source (replaced by a non-object actor
  // data, which the part type does not allow): the caller names the replacing part.
  return undefined;
}

/** Whether `data` has an own member at `path`, through plain objects only, as mergeValue walks. */
function holds(data: unknown, path: readonly string[]): boolean {
  let v = data;
  for (const k of path) {
    if (!isPlainObject(v) || !Object.prototype.hasOwnProperty.call(v, k)) return false;
    v = v[k];
  }
  return true;
}

function unescapeSegment(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function mergeValue(a: unknown, b: unknown, pointer: string, onReplace: (pointer: string) => void): unknown {
  if (isPlainObject(a) && isPlainObject(b)) {
    // Copied key by key: on V8 an object made by spread ({ ...a }) and then given new keys took
    // about 6 us for the bench turn's merge (its map is rebuilt every time), under 1 us this way.
    const out: Record<string, unknown> = {};
    const own = Object.keys(a);
    for (let i = 0; i < own.length; i++) setOwn(out, own[i]!, a[own[i]!]);
    const keys = Object.keys(b);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      // The pointer is built only where the two overlap (a new key merges nothing).
      setOwn(out, k, Object.prototype.hasOwnProperty.call(a, k) ? mergeValue(a[k], b[k], `${pointer}/${escapeSegment(k)}`, onReplace) : b[k]);
    }
    return out;
  }
  if (a !== undefined && !isDeepStrictEqual(a, b)) onReplace(pointer);
  return b;
}
