/**
 * The system-prompt snippet every respond()-speaking actor gets (spec 000 "System-prompt
 * snippet"), followed by the part types a model may emit and every turn state, generated from
 * the registries so consumer registrations appear in it. Cached per registry state.
 */
import type { PartTypeDefinition, Registries, TurnStateDefinition } from '../registries/types.js';
import { memoByRegistryState, modelEmittablePartTypes } from './schema.js';

/** Spec 000's snippet, verbatim. */
export const RESPOND_PROMPT_CORE = [
  'You produce output only by calling the `respond()` tool. Never write free-form text. Every response you produce — acknowledgements, thinking updates, the substantive answer, clarifying questions, and errors — is passed as parts to `respond()`, each tagged with the appropriate partType.',
  'When you are still working and expect to produce more, call `respond()` with `turnState: "awaiting"`. When your turn is settled, call `respond()` with `turnState: "complete"`. If you need a clarification from the user before you can proceed, call `respond()` with `turnState: "clarifying"` and a `clarify` part containing a single clear question.',
  'Do not wait until the end of your turn to call `respond()`. Call it as soon as you have an acknowledgement, a thinking update, or a partial answer — the user sees these in real time.',
].join('\n\n');

export interface RespondPromptOptions {
  /** The calling actor's handoff targets; when given, the snippet says whom `passTo` may name. */
  handoffs?: readonly string[] | undefined;
}

function carriesLabel(def: PartTypeDefinition): string {
  switch (def.meta.carries) {
    case 'text':
      return 'text';
    case 'data':
      return 'data';
    default:
      return 'text or data';
  }
}

function stateNotes(def: TurnStateDefinition): string {
  const notes: string[] = [];
  if (def.meta.isTerminal) notes.push('ends the turn');
  if (def.meta.handsOff === true || def.meta.requires?.passTo === true) notes.push('requires passTo');
  const need = def.meta.requires?.partTypes;
  if (need !== undefined && need.length > 0) notes.push(`requires ${need.map((p) => `a ${p} part`).join(' and ')}`);
  const forbid = def.meta.requires?.forbidsPartTypes;
  if (forbid !== undefined && forbid.length > 0) notes.push(`no ${forbid.join(' or ')} part`);
  return notes.length > 0 ? ` (${notes.join('; ')})` : '';
}

function build(registries: Registries): string {
  const partLines = modelEmittablePartTypes(registries).map((d) => `- ${d.id} [${carriesLabel(d)}]: ${d.meta.description}`);
  const stateLines = registries.turnStates.list().map((d) => `- ${d.id}: ${d.meta.description}${stateNotes(d)}`);
  return [
    RESPOND_PROMPT_CORE,
    `Part types (metadata.partType). Each part carries text or data, never both; the brackets say which:\n${partLines.join('\n')}`,
    `Turn states (turnState):\n${stateLines.join('\n')}`,
  ].join('\n\n');
}

const cached = memoByRegistryState(build);

/**
 * The respond() snippet for an actor's system prompt. With `handoffs`, one more line names the
 * actors `passTo` may name (or says the actor cannot hand off).
 */
export function respondPromptSnippet(registries: Registries, options: RespondPromptOptions = {}): string {
  const base = cached(registries);
  const handoffs = options.handoffs;
  if (handoffs === undefined) return base;
  const handoffStates = registries.turnStates
    .list()
    .filter((d) => d.meta.handsOff === true || d.meta.requires?.passTo === true)
    .map((d) => `"${d.id}"`);
  if (handoffStates.length === 0) return base;
  const line =
    handoffs.length > 0
      ? `To hand the turn to another actor, call \`respond()\` with \`turnState: ${handoffStates[0]}\` and \`passTo\` set to one of: ${handoffs.join(', ')}.`
      : `You have no handoff targets: never use \`turnState: ${handoffStates.join(' or ')}\` or \`passTo\`.`;
  return `${base}\n\n${line}`;
}
