/** docs/concepts/delivery.md's rule table is generated from the registry and must not go stale. */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DELIVERY_DOC, withFreshTable } from '../../scripts/docs-delivery.js';
import { deliveryTable } from '../../src/envelope/delivery-table.js';
import { createRegistries } from '../../src/create-registries.js';
import { AUDIO } from './turn.fixture.js';

describe('docs: the delivery table', () => {
  it('delivery:docs:fresh — the committed table is what `npm run docs:delivery` generates from the canonical registry', async () => {
    const doc = await readFile(DELIVERY_DOC, 'utf8');
    expect(withFreshTable(doc)).toBe(doc);
  });

  it('delivery:docs:stale-detected — a hand edit to a rule in the table is caught', async () => {
    const doc = await readFile(DELIVERY_DOC, 'utf8');
    const edited = doc.replace('| `ack` | deliver |', '| `ack` | drop |');
    expect(edited).not.toBe(doc);
    expect(withFreshTable(edited)).not.toBe(edited);
  });

  it('delivery:docs:one-row-per-entry — every registry entry is a row, consumer types included and marked', () => {
    const r = createRegistries();
    r.partTypes.register(AUDIO);
    const rows = deliveryTable(r.partTypes).trim().split('\n').slice(2);
    expect(rows.map((row) => row.split(' | ')[0]!.replace(/^\| /, ''))).toEqual([...r.partTypes.ids().slice(0, -1).map((id) => `\`${id}\``), '`audio` (consumer)']);
    expect(rows.at(-1)).toBe('| `audio` (consumer) | deliver | at-once | drop | drop | drop | attach | drop | no | – | base64 |');
  });

  it('delivery:docs:markers — a document without the generated block is an error naming the markers', () => {
    expect(() => withFreshTable('# no table here\n')).toThrow(/lacks the generated block/);
  });
});
