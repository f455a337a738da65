/**
 * Registrations inferred from a recording, for replaying a session without the application's
 * bootstrap code (the `turnstate replay` command without `--setup`):
 * - actors: every actor the log names, with the tools they called and the hand-offs they made,
 *   and spec 003 compatibility (`compat`) for an actor whose model called respond_to_user or
 *   mark_work_complete where no tool of that name ran (`deliverDrafts` when a respond_to_user
 *   call published a part);
 * - tools: every server tool called (or refused as not enabled for its turn), with the scope and routing the log recorded, an open
 *   input schema, and an approval policy that repeats each recorded call's policy verdict
 *   (ask, deny with its reason, or approve);
 * - part types the log used that are not canonical, and its consumer turn states: terminal
 *   (a turn settled in it) or holding (an injection resumed the turn from it: the
 *   `turnState.changed` says which; a recording from before that field pairs each state left
 *   without a model call with the turn's next `[<resumeOn>] ...` injection).
 * Calls the recording rejected before dispatch (unknown tool, invalid arguments) replay
 * differently when the open schema accepts them; replaying with the real setup avoids that.
 */
import type { ActorDefinition, ApprovalVerdict, PartTypeMeta, Registries, ToolDefinition, TurnStateMeta } from '../registries/types.js';
import { MARK_WORK_COMPLETE_TOOL, RESPOND_TO_USER_TOOL } from '../respond/compat.js';
import { injectionEntries, type Recording } from './recording.js';
import { canonicalJson } from './results.js';
import { notEnabledHow } from './turn-points.js';

const argsKey = (turnId: string, tool: string, args: unknown) => `${turnId}\u0000${tool}\u0000${canonicalJson(args)}`;

export function inferSetup(rec: Recording): (registries: Registries) => void {
  const actors = new Map<string, { tools: Set<string>; handoffs: Set<string>; compat?: { deliverDrafts: boolean } }>();
  const actor = (name: string) => {
    let a = actors.get(name);
    if (!a) actors.set(name, (a = { tools: new Set(), handoffs: new Set() }));
    return a;
  };
  actor(rec.record.actor);
  const tools = new Map<string, { scope: 'generalist' | 'specialist'; routing: 'routed' | 'bypass' }>();
  const partTypes = new Map<string, boolean>();
  const terminal = new Map<string, boolean>();
  const enveloped = new Set<string>();
  /** Holding states with the injection kind that resumed them. */
  const resumed = new Map<string, string>();
  /** Older recordings (no `resumedBy`): states left without a model call since they were entered, with their turn. */
  const leftUnprompted: { state: string; turnId: string }[] = [];
  /** Per unsettled turn: whether a model call ended since the turn entered its current state. */
  const modelSince = new Map<string, boolean>();
  /** Each unsettled turn's state as the log goes (what is left at the end: held when it ended). */
  const current = new Map<string, string>();
  /** States in which the actor was passed on: hand-off states. */
  const handsOff = new Set<string>();
  const called = new Map<string, { turnId: string; tool: string; args: unknown }>();
  const resulted = new Map<string, { isError: boolean; view: unknown; denial?: { reason?: string } }>();
  /** Call ids that published parts (a delivered respond_to_user draft is one). */
  const published = new Set<string>();
  for (const e of rec.events) {
    switch (e.type) {
      case 'turn.started':
        actor(e.actor);
        break;
      case 'model.usage':
        actor(e.actor);
        modelSince.set(e.turnId, true);
        break;
      case 'actor.passed': {
        actor(e.from).handoffs.add(e.to);
        actor(e.to);
        const st = current.get(e.turnId);
        if (st !== undefined) handsOff.add(st);
        break;
      }
      case 'tool.called':
        if (e.side === 'server') {
          actor(e.actor).tools.add(e.tool);
          tools.set(e.tool, { scope: e.scope ?? 'generalist', routing: e.routing ?? 'routed' });
        }
        called.set(e.callId, { turnId: e.turnId, tool: e.tool, args: e.args });
        break;
      case 'tool.result':
        resulted.set(e.callId, e.denial ? { isError: e.isError, view: e.view, denial: e.denial } : { isError: e.isError, view: e.view });
        break;
      case 'part.received':
        partTypes.set(e.part.metadata.partType, e.part.data !== undefined);
        published.add(e.callId);
        break;
      case 'envelope.settled':
        enveloped.add(e.turnId);
        break;
      case 'turn.settled':
        terminal.set(e.finalizedBy, enveloped.has(e.turnId));
        current.delete(e.turnId);
        break;
      case 'turnState.changed':
        if (e.resumedBy !== undefined) resumed.set(e.from, e.resumedBy);
        else if (e.from !== e.to && modelSince.get(e.turnId) === false) leftUnprompted.push({ state: e.from, turnId: e.turnId });
        if (e.from !== e.to) modelSince.set(e.turnId, false);
        current.set(e.turnId, e.to);
        break;
      default:
        break;
    }
  }

  // The recorded policy verdict of each call, by (turn, tool, args), in call order.
  const verdicts = new Map<string, ApprovalVerdict[]>();
  const addVerdict = (k: string, v: ApprovalVerdict) => {
    let q = verdicts.get(k);
    if (!q) verdicts.set(k, (q = []));
    q.push(v);
  };
  const byCall = new Map(rec.approvals.map((a) => [a.callId, a]));
  const executed = new Set(rec.executions.map((x) => x.callId));
  for (const m of rec.mailbox) {
    if (m.kind !== 'assistant') continue;
    for (const b of m.content) {
      if (b.type !== 'tool_use') continue;
      if ((b.name === RESPOND_TO_USER_TOOL || b.name === MARK_WORK_COMPLETE_TOOL) && !tools.has(b.name) && !resulted.get(b.id)?.denial) {
        // Spec 003 compatibility: the runtime answered the call itself (no tool of that name
        // ran). Drafts were delivered when a respond_to_user call published its part.
        const a = actor(m.actor);
        const drafts = b.name === RESPOND_TO_USER_TOOL && published.has(b.id);
        a.compat = { deliverDrafts: (a.compat?.deliverDrafts ?? false) || drafts };
        continue;
      }
      const res = resulted.get(b.id);
      if (!tools.has(b.name)) {
        // A tool whose only call was denied by its policy, or refused as not enabled for the turn,
        // never ran (no tool.called): its denial, or the runtime's refusal, names it.
        if (!res?.denial && !(res?.isError && notEnabledHow(b.name, res.view))) continue;
        actor(m.actor).tools.add(b.name);
        tools.set(b.name, { scope: 'generalist', routing: 'routed' });
      }
      const k = argsKey(m.turnId, b.name, b.input);
      const appr = byCall.get(b.id);
      if (appr) addVerdict(k, appr.policyResult.decision === 'deny' ? { decision: 'deny' } : { decision: appr.policyResult.source === 'standing' ? 'approve' : appr.policyResult.decision });
      else if (res?.denial && !executed.has(b.id)) {
        // Denied by its policy: the result says so as data (never parsed back out of its text).
        const reason = res.denial.reason;
        addVerdict(k, reason ? { decision: 'deny', reason } : { decision: 'deny' });
      } else addVerdict(k, { decision: 'approve' });
    }
  }

  return (registries: Registries) => {
    for (const [id, dataBearing] of partTypes) {
      if (registries.partTypes.has(id)) continue;
      const meta: PartTypeMeta = {
        description: `${id} (inferred from a recording)`,
        streamingPreferred: false,
        dataBearing,
        delivery: { streaming: 'deliver', buffered: 'deliver' },
        inEnvelope: true,
        modelEmittable: true,
        carries: 'either',
      };
      registries.partTypes.register({ id, meta });
    }
    // Each inferred state once, unless the setup registered it (terminal ones come first, so a
    // terminal state is never registered again as another kind).
    const inferred = (id: string, meta: Omit<TurnStateMeta, 'description'>): void => {
      if (!registries.turnStates.has(id)) registries.turnStates.register({ id, meta: { description: `${id} (inferred from a recording)`, ...meta } });
    };
    for (const [id, emitsEnvelope] of terminal) inferred(id, { isTerminal: true, emitsEnvelope, holdsActor: false });
    // A state in which the actor was passed on: it hands the turn off (to passTo).
    for (const id of handsOff) inferred(id, { isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true, requires: { passTo: true } });
    // A state an injection resumed the turn from: it held the actor.
    for (const [id, resumeOn] of resumed) inferred(id, { isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn });
    // Older recordings: a state left with no model call in between, paired in order with the
    // turn's injections (registered holding states take theirs; approval answers write none).
    const next = new Map<string, number>();
    for (const l of leftUnprompted) {
      if (resumed.has(l.state) || handsOff.has(l.state)) continue;
      const known = registries.turnStates.get(l.state)?.meta;
      if (known !== undefined && (!known.holdsActor || known.resumeOn === 'approval-response')) continue;
      const i = next.get(l.turnId) ?? 0;
      next.set(l.turnId, i + 1);
      const resumeOn = injectionsOf(rec, l.turnId)[i];
      if (resumeOn !== undefined) inferred(l.state, { isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn });
    }
    // A state a turn still rested in when the recording ended held it (what resumes it the log
    // cannot say: nothing did; the state's own name stands in).
    for (const id of current.values()) inferred(id, { isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: id });
    for (const [name, t] of tools) {
      if (registries.tools.has(name)) continue;
      const common = {
        name,
        description: `${name} (replayed from a recording)`,
        inputSchema: { type: 'object' },
        handler: () => {
          throw new Error(`${name} is replayed from the recording and never runs`);
        },
        requiresApproval: (args: unknown, ctx: { turn: { id: string } }): ApprovalVerdict =>
          verdicts.get(argsKey(ctx.turn.id, name, args))?.shift() ?? { decision: 'approve' },
      };
      const def: ToolDefinition =
        t.scope === 'generalist'
          ? { ...common, scope: 'generalist' }
          : t.routing === 'bypass'
            ? { ...common, scope: 'specialist', routing: 'bypass', bypassRouting: { reason: 'replayed from a recording' }, justification: 'replayed from a recording' }
            : { ...common, scope: 'specialist', justification: 'replayed from a recording' };
      registries.tools.register(def);
    }
    for (const [name, a] of actors) {
      if (registries.actors.has(name)) continue;
      const def: ActorDefinition = { name, tools: [...a.tools], handoffs: [...a.handoffs] };
      if (a.compat) def.compat = a.compat.deliverDrafts ? { mode: 'respond_to_user', deliverDrafts: true } : 'respond_to_user';
      registries.actors.register(def);
    }
  };
}

/** The kinds of a turn's injections (`[<kind>] <json>` user entries after its input), in order. */
function injectionsOf(rec: Recording, turnId: string): string[] {
  return injectionEntries(rec, turnId).flatMap((m) => /^\[([a-z][a-z0-9-]*)\] /.exec(m.text)?.[1] ?? []);
}
