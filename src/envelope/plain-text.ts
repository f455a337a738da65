/**
 * Markdown as plain text, for the body of a human channel (SMS, email, WhatsApp: spec 001 "response
 * rendered to plain text"). Parsed by `marked` (CommonMark and GFM), written back by a renderer
 * that keeps the words and drops the markup.
 *
 * Contract: total (never throws: text marked cannot parse is returned as it is) and deterministic.
 * - Headings and paragraphs are their text, one blank line between blocks; emphasis, strikethrough
 *   and code markers are removed, backslash escapes resolved.
 * - A link is `text (url)`; a bare or autolinked URL (link text equal to the URL, also a GFM `www.`
 *   link, whose URL gains `http://`) stays the URL as written; an image is `alt (url)`, its alt as
 *   plain text. Character references in a URL are resolved (`&amp;` is `&`).
 * - A link reference definition (`[label]: url`) that a link uses is that link's URL; one no link
 *   uses stays as `label: url` on its own line, so a line of the body is never lost.
 * - List items keep their bullet (`* `, or `n. ` in an ordered list) and nested items are indented
 *   by two spaces; a task item keeps `[ ]` / `[x]`.
 * - Code blocks keep their content (without the fences or the language); a quote is its text; a
 *   table is one line per row, cells separated by ` | `; raw HTML is kept as written.
 * - Nothing is shortened or split (a channel's length limits are its sender's).
 */
import { Marked, type Token, type Tokens, type TokensList } from 'marked';

const plain = new Marked({
  gfm: true,
  async: false,
  renderer: {
    space: () => '',
    heading({ tokens }) {
      return `${this.parser.parseInline(tokens)}\n\n`;
    },
    paragraph({ tokens }) {
      return `${this.parser.parseInline(tokens)}\n\n`;
    },
    blockquote({ tokens }) {
      return this.parser.parse(tokens);
    },
    code: ({ text }) => `${text}\n\n`,
    hr: () => '\n',
    html: ({ text }) => text,
    list(token) {
      const start = typeof token.start === 'number' ? token.start : 1;
      const items = token.items.map((item, i) => {
        const bullet = token.ordered ? `${start + i}. ` : '* ';
        const task = item.task ? (item.checked ? '[x] ' : '[ ] ') : '';
        // Block by block: in a tight item the text and a nested list have no break between them.
        const body = item.tokens.map((t) => this.parser.parse([t]).trim()).filter((b) => b !== '').join('\n');
        return bullet + task + body.replace(/\n+/g, '\n  ');
      });
      return `${items.join('\n')}\n\n`;
    },
    checkbox: () => '',
    table(token: Tokens.Table) {
      const row = (cells: Tokens.TableCell[]): string => cells.map((c) => this.parser.parseInline(c.tokens)).join(' | ');
      return `${[row(token.header), ...token.rows.map(row)].join('\n')}\n\n`;
    },
    strong({ tokens }) {
      return this.parser.parseInline(tokens);
    },
    em({ tokens }) {
      return this.parser.parseInline(tokens);
    },
    del({ tokens }) {
      return this.parser.parseInline(tokens);
    },
    codespan: ({ text }) => text,
    br: () => '\n',
    link({ href, tokens }) {
      const text = this.parser.parseInline(tokens);
      const url = decodeEntities(href);
      return text === '' || text === url || `mailto:${text}` === url || (text.startsWith('www.') && `http://${text}` === url) ? text || url : `${text} (${url})`;
    },
    image({ href, text, tokens }) {
      const alt = tokens === undefined ? decodeEntities(text) : this.parser.parseInline(tokens);
      const url = decodeEntities(href);
      return alt === '' ? url : `${alt} (${url})`;
    },
    def(token) {
      // A run of definitions no link uses, as `markdownToPlainText` marked it: one line each.
      const lines = unusedLines.get(token);
      return lines === undefined || lines.length === 0 ? '' : `${lines.join('\n')}\n\n`;
    },
    text(token) {
      return 'tokens' in token && token.tokens !== undefined ? this.parser.parseInline(token.tokens) : decodeEntities(token.text);
    },
  },
});

/** The lines of a run of definitions no link uses, on the run's first (set by `markdownToPlainText` before it renders). */
const unusedLines = new WeakMap<Tokens.Def, string[]>();

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** The character references a writer of markdown uses most (`&amp;`, `&#39;`, `&#x2014;`); others stay as written. */
function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-z]+));/g, (whole, dec?: string, hex?: string, name?: string) => {
    // Own names only: `&constructor;` is not a reference to Object.prototype's member.
    if (name !== undefined) return Object.hasOwn(ENTITIES, name) ? ENTITIES[name]! : whole;
    const code = dec !== undefined ? Number(dec) : Number.parseInt(hex!, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** `markdown` as plain text (see the contract above); text without markup comes back unchanged but for trimmed ends. */
export function markdownToPlainText(markdown: string): string {
  if (markdown === '') return '';
  try {
    const tokens = plain.lexer(markdown);
    markUnusedDefinitions(tokens);
    return plain.parser(tokens).trim();
  } catch {
    return markdown;
  }
}

/**
 * The link reference definitions (`[label]: url`) no link uses: marked keeps each as a `def`
 * token that renders as nothing. A run of them (in the document, a quote or a list item) keeps
 * its lines, `label: url` each, on its first token; a definition a link uses is that link's URL.
 */
function markUnusedDefinitions(tokens: TokensList): void {
  // A reference link (`[text][label]`, `[label][]`, `[label]`) ends in `]`; an inline one in `)`.
  const used = new Set<string>();
  plain.walkTokens(tokens, (t) => {
    if ((t.type === 'link' || t.type === 'image') && t.raw.endsWith(']')) used.add(t.href);
  });
  const blocks: Token[][] = [tokens];
  while (blocks.length > 0) {
    const list = blocks.pop()!;
    let run: string[] | undefined;
    for (const t of list) {
      if (t.type === 'list') for (const item of (t as Tokens.List).items) blocks.push(item.tokens);
      else if (t.type === 'blockquote') blocks.push((t as Tokens.Blockquote).tokens);
      if (t.type !== 'def') {
        if (t.type !== 'space' || /\n\s*\n/.test(t.raw)) run = undefined;
        continue;
      }
      const def = t as Tokens.Def;
      if (used.has(def.href)) continue;
      const line = `${definitionLabel(def)}: ${decodeEntities(def.href)}`;
      if (run === undefined) unusedLines.set(def, (run = [line]));
      else run.push(line);
    }
  }
}

/** The label of a definition as written (marked keeps it lower-cased), or its tag. */
function definitionLabel(def: Tokens.Def): string {
  const m = /^ {0,3}\[((?:\\.|[^\\\]])+)\]:/.exec(def.raw);
  return m === null ? def.tag : decodeEntities(m[1]!).replace(/\\([!-/:-@[-`{-~])/g, '$1');
}
