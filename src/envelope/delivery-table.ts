/**
 * The delivery rules of a part-type registry as a Markdown table: one row per registered part
 * type (canonical first, then consumer registrations), one column per delivery target.
 * docs/concepts/delivery.md embeds it for the canonical registry (`npm run docs:delivery`);
 * an application can print its own.
 *
 * Contract: a pure function of the registry's metadata, read through `Delivery` (the same
 * reading every transport uses), so the table cannot say one thing while transports do another.
 */
import type { PartTypeRegistryApi } from '../registries/types.js';
import { createDelivery } from './delivery.js';

const HEAD = [
  'partType',
  'streaming',
  'flush',
  'buffered',
  'email',
  'sms',
  'whatsapp',
  'webhook',
  'in envelope',
  'AAP / transcript',
  'serialisation',
] as const;

export function deliveryTable(partTypes: PartTypeRegistryApi): string {
  const delivery = createDelivery(partTypes);
  const rows = [`| ${HEAD.join(' | ')} |`, `|${HEAD.map(() => '---').join('|')}|`];
  for (const def of partTypes.list()) {
    const d = delivery.of(def.id)!;
    const cells = [
      def.isCanonical ? `\`${def.id}\`` : `\`${def.id}\` (consumer)`,
      d.streaming,
      d.flush,
      d.buffered,
      d.channels.email,
      d.channels.sms,
      d.channels.whatsapp,
      d.channels.webhook,
      d.inEnvelope ? 'yes' : 'no',
      d.transcript ?? '–',
      d.serialisation,
    ];
    rows.push(`| ${cells.join(' | ')} |`);
  }
  return `${rows.join('\n')}\n`;
}
