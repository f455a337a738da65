/**
 * Artifact parts as docs/concepts/artifacts.md says them: a part names only its own session's
 * artifacts ("artifacts:part:session"), carries exactly the stored record's fields
 * ("artifacts:part:exact"), and channels render it from the record, never from a url or name the
 * model wrote ("artifacts:channel:sms", "artifacts:channel:email"). A real runtime, its real
 * respond() check and the real channel renderer.
 */
import { describe, expect, it } from 'vitest';
import { createDelivery } from '../../src/envelope/delivery.js';
import { renderForChannel } from '../../src/envelope/channels.js';
import type { ArtifactRef } from '../../src/registries/types.js';
import type { TurnstateRuntime } from '../../src/runtime.js';
import { answer, dataPart, harness, part, respond, toolUse } from '../runtime/helpers.js';
import { registerExportFares } from './turn.fixture.js';

const CSV = 'flight,price\nTS205,42\n';
const CSV_BYTES = Buffer.byteLength(CSV);

/**
 * A desk whose `export_fares` tool stores a CSV; on "export …" the actor refers to it with the
 * part `artifactPart` builds, on "other <id>" it refers to that id. A refused respond() gets a
 * text-only answer, so the turn still completes.
 */
function desk(artifactPart: (id: string) => Record<string, unknown>) {
  const script = {
    rules: [
      { when: { on: 'user' as const, text: '^export' }, respond: answer(toolUse('export_fares', {})) },
      {
        when: { on: 'tool_result' as const, tool: 'export_fares', text: '"artifactId":"(art_[A-Za-z0-9_-]+)"' },
        respond: answer(respond([part('response', 'Here are the fares.'), dataPart('artifact', artifactPart('$1'))], 'complete')),
      },
      {
        when: { on: 'user' as const, text: '^other (art_[A-Za-z0-9_-]+)' },
        respond: answer(respond([part('response', 'Here you go.'), dataPart('artifact', { artifactId: '$1', mimeType: 'text/csv', sizeBytes: CSV_BYTES })], 'complete')),
      },
      { when: { on: 'rejection' as const }, respond: answer(respond([part('response', 'I could not attach the file.')], 'complete')) },
    ],
  };
  const { rt } = harness(script);
  const refs: ArtifactRef[] = [];
  registerExportFares(rt.registries, CSV, refs);
  return { rt, refs };
}

/** The respond() refusal the model was sent in this session, if any. */
async function refusal(rt: TurnstateRuntime, sessionId: string): Promise<string | undefined> {
  const s = await rt.session(sessionId);
  const m = (await s!.mailbox()).find((e) => e.kind === 'tool_result' && e.tool === 'respond' && e.isError);
  return m?.kind === 'tool_result' ? m.content : undefined;
}

describe('artifact parts: their own session\'s, exactly the record', () => {
  it('artifacts:part:session — "an artifact of another session, of the same tenant or not, or of a deleted session MUST be reported exactly like a missing one"', async () => {
    const { rt, refs } = desk((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES }));
    const s1 = await rt.createSession({ actor: 'desk', tenantId: 'A' });
    await (await s1.send('export the fares')).settled;
    const id = refs[0]!.artifactId;

    const s2 = await rt.createSession({ actor: 'desk', tenantId: 'A' });
    const other = await (await s2.send(`other ${id}`)).settled;
    expect(other.parts.some((p) => p.metadata.partType === 'artifact')).toBe(false);
    expect(await refusal(rt, s2.id)).toContain(`/parts/1/data/artifactId: no artifact "${id}" exists in this conversation: name only an artifactId a tool returned in this conversation`);

    // The session that put it may still name it, until it is deleted.
    const own = await (await s1.send(`other ${id}`)).settled;
    expect(own.parts.find((p) => p.metadata.partType === 'artifact')?.data).toEqual({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' });
    await rt.deleteSession(s1.id);
    expect(rt.artifacts.head(id)).toBeUndefined();
    const s3 = await rt.createSession({ actor: 'desk', tenantId: 'A' });
    const afterDelete = await (await s3.send(`other ${id}`)).settled;
    expect(afterDelete.parts.some((p) => p.metadata.partType === 'artifact')).toBe(false);
    expect(await refusal(rt, s3.id)).toContain(`no artifact "${id}" exists in this conversation`);
    await rt.close();
  });

  const refused: [string, (id: string) => Record<string, unknown>, string, string][] = [
    ['a url of its own', (id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv', url: 'https://evil.example/login' }), '/parts/1/data/url', '"url" is not a field of an artifact part: give only { artifactId, mimeType, sizeBytes, name }'],
    ['a filename', (id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, filename: 'x.csv' }), '/parts/1/data/filename', '"filename" is not a field of an artifact part'],
    ['a name the tool did not give', (id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'Refund form (sign in)' }), '/parts/1/data/name', 'is named "fares.csv", not "Refund form (sign in)"'],
  ];
  for (const [what, make, path, message] of refused) {
    it(`artifacts:part:exact — "any other field (url, filename, …) is refused at /parts/<i>/data/<field>, a name other than the recorded one at …/name": ${what} is refused at ${path}`, async () => {
      const { rt } = desk(make);
      const s = await rt.createSession({ actor: 'desk' });
      const out = await (await s.send('export the fares')).settled;
      expect(out.parts.some((p) => p.metadata.partType === 'artifact')).toBe(false);
      const text = await refusal(rt, s.id);
      expect(text).toContain(`${path}: `);
      expect(text).toContain(message);
      expect(text).toContain('[respond:artifact:known]');
      await rt.close();
    });
  }

  it('artifacts:part:exact — "the delivered part carries the record\'s fields (a name the model left out is filled in)"', async () => {
    const { rt, refs } = desk((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES }));
    const s = await rt.createSession({ actor: 'desk' });
    const out = await (await s.send('export the fares')).settled;
    expect(out.parts.find((p) => p.metadata.partType === 'artifact')?.data).toEqual({ artifactId: refs[0]!.artifactId, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' });
    await rt.close();
  });
});

describe('artifact parts on channels', () => {
  it('artifacts:channel:sms — "rendering never uses a URL found in the part": a model that adds a url and a name of its own gets no link into the SMS; "without link configuration it carries name: artifact:<id>"', async () => {
    const phish = desk((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'Refund form (sign in)', url: 'https://evil.example/login' }));
    const s = await phish.rt.createSession({ actor: 'desk' });
    const out = await (await s.send('export the fares')).settled;
    const delivery = createDelivery(phish.rt.registries.partTypes);
    const sms = renderForChannel(delivery, 'sms', delivery.buffered(out));
    expect(sms.text).not.toContain('evil.example');
    expect(sms.text).not.toContain('Refund form');
    expect(sms.text).toBe('I could not attach the file.');
    await phish.rt.close();

    const plain = desk((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES, name: 'fares.csv' }));
    const s2 = await plain.rt.createSession({ actor: 'desk' });
    const out2 = await (await s2.send('export the fares')).settled;
    const sms2 = renderForChannel(delivery, 'sms', createDelivery(plain.rt.registries.partTypes).buffered(out2));
    expect(sms2.text).toBe(`Here are the fares.\n\nfares.csv: artifact:${plain.refs[0]!.artifactId}`);
    await plain.rt.close();
  });

  it('artifacts:channel:email — "an email attachment of an artifact part carries artifact: { artifactId, name?, mimeType, sizeBytes }"; the sender reads the file\'s bytes from the artifact store', async () => {
    const { rt, refs } = desk((id) => ({ artifactId: id, mimeType: 'text/csv', sizeBytes: CSV_BYTES }));
    const s = await rt.createSession({ actor: 'desk' });
    const out = await (await s.send('export the fares')).settled;
    const delivery = createDelivery(rt.registries.partTypes);
    const email = renderForChannel(delivery, 'email', delivery.buffered(out));
    const attached = email.attachments.find((a) => a.partType === 'artifact');
    const id = refs[0]!.artifactId;
    expect(attached?.artifact).toEqual({ artifactId: id, name: 'fares.csv', mimeType: 'text/csv', sizeBytes: CSV_BYTES });
    // What a sender does with it: the file's bytes, not the part's JSON.
    expect(Buffer.from((await rt.artifacts.read(attached!.artifact!.artifactId))!).toString()).toBe(CSV);
    await rt.close();
  });
});
