import { describe, expect, it } from 'vitest';
import { respondPromptSnippet } from '../../src/respond/prompt.js';
import { AUDIO_META, ESCALATED_META, makeRegistries } from './helpers.js';

const SPEC_PARAGRAPHS = [
  'You produce output only by calling the `respond()` tool. Never write free-form text. Every response you produce — acknowledgements, thinking updates, the substantive answer, clarifying questions, and errors — is passed as parts to `respond()`, each tagged with the appropriate partType.',
  'When you are still working and expect to produce more, call `respond()` with `turnState: "awaiting"`. When your turn is settled, call `respond()` with `turnState: "complete"`. If you need a clarification from the user before you can proceed, call `respond()` with `turnState: "clarifying"` and a `clarify` part containing a single clear question.',
  'Do not wait until the end of your turn to call `respond()`. Call it as soon as you have an acknowledgement, a thinking update, or a partial answer — the user sees these in real time.',
];

describe('respond() prompt snippet', () => {
  it('respond:prompt:snippet — spec 000 paragraphs verbatim, then each emittable part type and each turn state with its description', () => {
    const r = makeRegistries();
    const s = respondPromptSnippet(r);
    expect(s.startsWith(SPEC_PARAGRAPHS.join('\n\n'))).toBe(true);
    for (const d of r.partTypes.list()) {
      const line = `- ${d.id} [`;
      if (d.meta.modelEmittable) {
        expect(s).toContain(line);
        expect(s).toContain(d.meta.description);
      } else {
        expect(s).not.toContain(line);
      }
    }
    expect(s).toContain('- domain-data [data]: ');
    expect(s).toContain('- response [text]: ');
    expect(s).toContain('- citation [text or data]: ');
    for (const d of r.turnStates.list()) expect(s).toContain(`- ${d.id}: ${d.meta.description}`);
    expect(s).toMatch(/- clarifying: .*requires a clarify part; no response part/);
    expect(s).toMatch(/- passed: .*requires passTo/);
    expect(s).not.toMatch(/beach|cool-ai/i);
    expect(respondPromptSnippet(r)).toBe(s);
  });

  it('respond:prompt:consumer — consumer part types and turn states appear once registered', () => {
    const r = makeRegistries();
    const before = respondPromptSnippet(r);
    expect(before).not.toContain('- audio [');
    r.partTypes.register({ id: 'audio', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery } } });
    r.turnStates.register({ id: 'escalated', meta: { ...ESCALATED_META } });
    const after = respondPromptSnippet(r);
    expect(after).toContain(`- audio [data]: ${AUDIO_META.description}`);
    expect(after).toContain(`- escalated: ${ESCALATED_META.description} (ends the turn)`);
  });

  it('respond:prompt:handoffs — names the actors passTo may name, or forbids handing off', () => {
    const r = makeRegistries();
    const withTargets = respondPromptSnippet(r, { handoffs: ['drafter', 'checker'] });
    expect(withTargets.endsWith('`passTo` set to one of: drafter, checker.')).toBe(true);
    const none = respondPromptSnippet(r, { handoffs: [] });
    expect(none.endsWith('You have no handoff targets: never use `turnState: "passed"` or `passTo`.')).toBe(true);
  });
});
