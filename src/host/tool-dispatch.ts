/**
 * Tool dispatch: the tool uses of one model response, each validated, put through its approval
 * policy, and run through the router, or held (an approval, a client-side tool).
 *
 * Contract:
 * - An unknown tool, arguments that are not JSON or that fail the input schema, and a policy's
 *   denial each become an `is_error` tool result naming what was wrong; nothing runs.
 * - `tool.called` (and the approval that allows the call) is durable before a handler runs, so a
 *   restart never runs it again (at most once); its result, mailbox records and execution record
 *   commit together.
 * - A call that waits (approval or client tool) is added to the turn's pending calls; its
 *   `tool.called`, `approval.requested` and `approval-request` part commit after the runs.
 */
import type { ApprovalRecord, MailboxEntry, Part, PolicyResult, SessionEvent, ToolUseBlock } from '../types.js';
import { toolArtifacts } from '../envelope/artifacts.js';
import { buildSurfaces } from '../envelope/surfaces.js';
import { approvalKind } from '../registries/surface-templates.js';
import type { RegisteredTool } from '../registries/types.js';
import type { DispatchContext } from '../router/dispatch-context.js';
import { principalOf, type HostCore } from './core.js';
import { toolNotEnabledMessage, type ActorTools } from './tool-catalog.js';
import { denialText, forModel, OutcomeBatch } from './tool-results.js';
import { countSignalCalls, type ActiveTurn } from './turn.js';

export async function dispatchTools(core: HostCore, t: ActiveTurn, actorName: string, uses: readonly ToolUseBlock[], tools: ActorTools): Promise<void> {
  const { journal } = core;
  const runs: Promise<void>[] = [];
  const held: SessionEvent[] = [];
  const approvals: ApprovalRecord[] = [];
  const at = core.deps.clock.iso();
  const immediate = new OutcomeBatch(journal, at);
  const interrupt = core.toolSignal(t);
  countSignalCalls(t, interrupt, uses.length);
  const errorResult = (u: ToolUseBlock, content: string, denial?: { reason?: string }) =>
    immediate.add({ turnId: t.turnId, actor: actorName, callId: u.id, tool: u.name, content, isError: true, ...(denial ? { denial } : {}) });
  for (const u of uses) {
    if (tools.client.has(u.name)) {
      t.pending.set(u.id, { callId: u.id, tool: u.name, args: u.input, kind: 'client' });
      held.push(journal.toolCalled(t.turnId, u.id, u.name, u.input, actorName, 'client'));
      continue;
    }
    const tool = tools.byName.get(u.name);
    if (!tool && tools.disabled.has(u.name)) {
      errorResult(u, toolNotEnabledMessage(u.name, t.opts.howToEnableTools));
      continue;
    }
    if (!tool) {
      // What the model was given (its own tools, respond() or the compatibility tools, client tools).
      const known = tools.modelTools.map((m) => m.name);
      errorResult(u, `Unknown tool "${u.name}". Tools available to you: ${known.join(', ')}.`);
      continue;
    }
    if (u.inputError) {
      errorResult(u, `The arguments for ${u.name} were not valid JSON (${u.inputError}). Call it again with a complete JSON object.`);
      continue;
    }
    const violations = tool.validateInput(u.input);
    if (violations.length > 0) {
      errorResult(u, `Invalid arguments for ${u.name}:\n${violations.map((v) => `- ${v.path || '/'}: ${v.message}`).join('\n')}\nFix them and call ${u.name} again.`);
      continue;
    }
    const policy = await evaluatePolicy(core, t, actorName, tool, u);
    if (policy.decision === 'ask' && interrupt.aborted) {
      // A message joined while an asynchronous policy was evaluated: a call not yet started does
      // not run, so nobody is asked to approve it.
      errorResult(u, `tool "${u.name}" was cancelled before it ran`);
      continue;
    }
    if (policy.decision === 'deny') {
      errorResult(u, denialText(policy.reason), policy.reason ? { reason: policy.reason } : {});
      continue;
    }
    if (policy.decision === 'ask') {
      const record = approvalRecord(core, t, actorName, u, policy, at);
      const approvalId = record.approvalId;
      approvals.push(record);
      t.pending.set(u.id, { callId: u.id, tool: u.name, args: u.input, kind: 'approval', approvalId });
      const part: Part = {
        data: { approvalId, tool: u.name, args: u.input as Record<string, unknown>, actor: actorName, turnId: t.turnId, reason: policy.reason ?? null },
        metadata: { partType: 'approval-request' },
      };
      t.parts.push(part);
      held.push(
        journal.toolCalled(t.turnId, u.id, u.name, u.input, actorName, 'server', tool.scope, tool.routing),
        journal.event(t.turnId, { type: 'approval.requested', approvalId, callId: u.id, tool: u.name, args: u.input, actor: actorName, policyResult: policy }),
        journal.partReceived(t.turnId, `${t.turnId}:${approvalId}`, 0, part, 'suspended', actorName),
        ...surfaceEvents(core, t, actorName, { kind: approvalKind(u.name), data: part.data, callId: u.id }, 'suspended'),
      );
      continue;
    }
    const standing = policy.source === 'standing' ? standingRecord(core, t, actorName, u, policy) : undefined;
    runs.push(runTool(core, t, actorName, tool, u, standing, true));
  }
  if (immediate.size) await journal.commit(immediate.step());
  if (runs.length) await Promise.all(runs);
  if (held.length || approvals.length) await journal.commit({ events: held, approvals });
}

/** A pending approval record for a call its policy sent to a human. */
function approvalRecord(core: HostCore, t: ActiveTurn, actorName: string, u: ToolUseBlock, policy: PolicyResult, at: string): ApprovalRecord {
  return {
    approvalId: core.deps.newId('appr'),
    sessionId: core.id,
    turnId: t.turnId,
    callId: u.id,
    tool: u.name,
    args: u.input,
    actor: actorName,
    policyResult: policy,
    requestedAt: at,
    status: 'pending',
    ...(core.record.tenantId !== undefined ? { tenantId: core.record.tenantId } : {}),
  };
}

/** The `via` of an approval a standing approval gave: its record commits with the call's `tool.called`, right before the call runs. */
export const STANDING_APPROVAL = 'standing-approval';

/** An approval a client's standing approval (AAP `trust: true`) gave, recorded as that client's decision. */
function standingRecord(core: HostCore, t: ActiveTurn, actorName: string, u: ToolUseBlock, policy: PolicyResult): ApprovalRecord {
  const at = core.deps.clock.iso();
  return {
    ...approvalRecord(core, t, actorName, u, policy, at),
    status: 'approved',
    resolution: { decision: 'approved', by: t.opts.principal ?? {}, via: STANDING_APPROVAL, at, reason: 'standing approval (trust) given by the client' },
  };
}

async function evaluatePolicy(core: HostCore, t: ActiveTurn, actorName: string, tool: RegisteredTool, u: ToolUseBlock): Promise<PolicyResult> {
  if (tool.approval.kind === 'none') return { decision: 'approve', source: 'none' };
  const standing = t.opts.standingApprovals?.includes(tool.name) === true && tool.approval.allowStandingApproval;
  // A standing approval answers what would be asked; a handler policy's deny still stands.
  if (standing && tool.approval.kind !== 'handler') return { decision: 'approve', source: 'standing' };
  const principal = principalOf(t) ?? {};
  const tenantId = core.record.tenantId;
  const ctx = {
    actor: actorName,
    session: { id: core.id, ...(tenantId !== undefined ? { tenantId } : {}) },
    turn: { id: t.turnId },
    user: { ...(principal.attributes ?? {}), ...(principal.userId ? { id: principal.userId } : {}) },
    tenant: principal.tenantId !== undefined ? { id: principal.tenantId } : tenantId !== undefined ? { id: tenantId } : {},
  };
  let result: PolicyResult;
  try {
    result = await tool.approval.evaluate(u.input, ctx);
  } catch (err) {
    result = { decision: 'ask', source: 'policy-error', reason: err instanceof Error ? err.message : String(err) };
  }
  return standing && result.decision !== 'deny' ? { decision: 'approve', source: 'standing' } : result;
}

/**
 * Run one tool call. `announce`: publish `tool.called` first (an approved call announced it when
 * its approval was requested).
 */
export async function runTool(
  core: HostCore,
  t: ActiveTurn,
  actorName: string,
  tool: RegisteredTool,
  u: ToolUseBlock,
  approval: ApprovalRecord | undefined,
  announce: boolean,
): Promise<void> {
  const { journal } = core;
  if (announce) {
    await journal.commit({
      events: [journal.toolCalled(t.turnId, u.id, u.name, u.input, actorName, 'server', tool.scope, tool.routing)],
      ...(approval ? { approvals: [approval] } : {}),
    });
  }
  const principal = principalOf(t);
  const tenantId = principal?.tenantId ?? core.record.tenantId;
  const ctx: DispatchContext = {
    actorName,
    sessionId: core.id,
    turnId: t.turnId,
    callId: u.id,
    // An interrupt, not a cancel: a handler that ignores it finishes and its result counts.
    interrupt: core.toolSignal(t),
    ...(core.deps.artifacts ? { artifacts: toolArtifacts(core.deps.artifacts, core.id, core.record.tenantId, () => core.closed) } : {}),
    ...(principal?.userId !== undefined ? { userId: principal.userId } : {}),
    ...(principal?.personId !== undefined ? { personId: principal.personId } : {}),
    ...(tenantId !== undefined ? { tenantId } : {}),
    ...(approval?.resolution
      ? {
          approvalDecision: {
            approvalId: approval.approvalId,
            decision: approval.resolution.decision,
            by: approval.resolution.by,
            via: approval.resolution.via,
            ...(approval.resolution.reason ? { reason: approval.resolution.reason } : {}),
          },
        }
      : {}),
  };
  // tool.called (or the approval that allows the call) is durable before the side effect.
  journal.barrier();
  const d = await core.deps.router.dispatchTool(tool, u.input, ctx);
  // Cancelled because the host stopped: nothing is recorded, so recover() resumes the turn.
  if (core.closed) return;
  if (approval) for (const x of d.executions) x.approvalId = approval.approvalId;
  const at = core.deps.clock.iso();
  const content = forModel(d.llmContent, core.deps.limits.toolResultMaxChars);
  const batch = new OutcomeBatch(journal, at).add({ turnId: t.turnId, actor: actorName, callId: u.id, tool: u.name, content, isError: d.isError, view: d.uiView });
  const mailbox: MailboxEntry[] = batch.mailbox;
  if (d.data !== undefined && !d.isError) mailbox.push({ kind: 'data', turnId: t.turnId, at, actor: actorName, callId: u.id, tool: u.name, data: d.data });
  if (d.dataKind !== undefined) for (const e of surfaceEvents(core, t, actorName, { kind: d.dataKind, data: d.data, callId: u.id }, core.machine.state())) batch.events.push(e);
  await journal.commit({ events: batch.events, mailbox, executions: d.executions });
}

/** The a2ui-surface parts the surface templates build for a data record (docs/concepts/surfaces.md), as part.received events. */
function surfaceEvents(core: HostCore, t: ActiveTurn, actorName: string, s: { kind: string; data: unknown; callId: string }, turnState: string): SessionEvent[] {
  const templates = core.deps.registries.surfaceTemplates;
  if (!templates.has(s.kind)) return [];
  const { parts, errors } = buildSurfaces(templates, [{ ...s, sessionId: core.id, turnId: t.turnId }]);
  for (const e of errors) process.emitWarning(e);
  return parts.map((part, index) => {
    t.parts.push(part);
    return core.journal.partReceived(t.turnId, `${t.turnId}:surface:${s.callId}`, index, part, turnState, actorName);
  });
}
