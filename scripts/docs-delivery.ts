/**
 * Fills the generated delivery table of docs/concepts/delivery.md from the canonical part-type
 * registry (src/envelope/delivery-table.ts).
 *
 *   tsx scripts/docs-delivery.ts           rewrite the table
 *   tsx scripts/docs-delivery.ts --check   exit 1 if the committed table is stale
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deliveryTable } from '../src/envelope/delivery-table.js';
import { createRegistries } from '../src/create-registries.js';

export const DELIVERY_DOC = fileURLToPath(new URL('../docs/concepts/delivery.md', import.meta.url));
const BEGIN = '<!-- BEGIN GENERATED: delivery-table (npm run docs:delivery) -->';
const END = '<!-- END GENERATED: delivery-table -->';

/** The document with its generated block replaced by a fresh table; throws when the markers are missing. */
export function withFreshTable(doc: string): string {
  const i = doc.indexOf(BEGIN);
  const j = doc.indexOf(END);
  if (i === -1 || j < i) throw new Error(`${DELIVERY_DOC} lacks the generated block (${BEGIN} ... ${END})`);
  return `${doc.slice(0, i + BEGIN.length)}\n${deliveryTable(createRegistries().partTypes)}${doc.slice(j)}`;
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check');
  const unknown = argv.filter((a) => a !== '--check');
  if (unknown.length > 0) {
    console.error(`unknown argument(s): ${unknown.join(' ')}; usage: tsx scripts/docs-delivery.ts [--check]`);
    return 2;
  }
  const doc = await readFile(DELIVERY_DOC, 'utf8');
  const fresh = withFreshTable(doc);
  if (check) {
    if (fresh === doc) return 0;
    console.error(`${DELIVERY_DOC}: the delivery table is stale; run npm run docs:delivery`);
    return 1;
  }
  if (fresh !== doc) await writeFile(DELIVERY_DOC, fresh);
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
