/**
 * The error catalogue (docs/concepts/errors.md) against the source: every error code src/ can
 * produce has a row there, and every row is a code src/ produces. Codes are read from the syntax
 * tree (TypeScript's parser), at the places a code is given:
 * - the code argument of `new TurnstateError(code, …)`, `new ModelError(code, …)`,
 *   `new ReplayError(code, …)`, `new HttpError(status, code, …)`, and of `super(code, …)` in a
 *   class extending TurnstateError;
 * - the code argument of the helpers that build one: `storeError(code, …)`,
 *   `rejectUpgrade(socket, status, code, …)`, `fail(code, …)` (WebSocket frames),
 *   `this.error(code, …)` (WebSocket replies), `invalid(code, …)` (input checks),
 *   `errorBody(code, …)`, `errorOf(err, code)` (a turn's failure) and `exhaust(code, …)` (a
 *   turn's exhausted budget);
 * - a `code` property or variable given a literal (`{ code: 'session.stopped' }`, result
 *   objects, the HTTP parser's table), and the literal members of a `*ErrorCode` type or a
 *   `*_ERROR_CODES` list (the ModelError and store codes).
 * A literal given through `?:`, `??` or `||` counts. Comparisons (`err.code === '…'`) do not:
 * they read a code, they do not produce one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const DOC = join(ROOT, 'docs/concepts/errors.md');

/** Anything shaped like a code (hyphens too, so a code breaking the pattern is still found). */
const CODE_LIKE = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
/** The pattern every code follows: `noun.snake_case` (one word for the catch-all `internal`). */
const CODE_PATTERN = /^([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*|internal)$/;

/** Constructors (`new X(...)`) and the index of their code argument. */
const CONSTRUCTORS: ReadonlyMap<string, number> = new Map([
  ['TurnstateError', 0],
  ['ModelError', 0],
  ['ReplayError', 0],
  ['HttpError', 1],
]);
/** Helpers that take a code, and the index of their code argument. */
const HELPERS: ReadonlyMap<string, number> = new Map([
  ['storeError', 0],
  ['rejectUpgrade', 2],
  ['fail', 0],
  ['invalid', 0],
  ['errorBody', 0],
  ['errorOf', 1],
  ['exhaust', 0],
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The string literals an expression can evaluate to (through `?:`, `??`, `||`, parentheses, `as`). */
function literals(e: ts.Expression | undefined): string[] {
  if (e === undefined) return [];
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) return literals(e.expression);
  if (ts.isConditionalExpression(e)) return [...literals(e.whenTrue), ...literals(e.whenFalse)];
  if (ts.isBinaryExpression(e) && (e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken || e.operatorToken.kind === ts.SyntaxKind.BarBarToken)) {
    return [...literals(e.left), ...literals(e.right)];
  }
  if (ts.isArrayLiteralExpression(e)) return e.elements.flatMap((x) => literals(x));
  if (ts.isCallExpression(e) && e.expression.getText() === 'Object.freeze') return literals(e.arguments[0]);
  return [];
}

/** The string literal members of a type (`'a' | 'b'`). */
function typeLiterals(t: ts.TypeNode | undefined): string[] {
  if (t === undefined) return [];
  if (ts.isUnionTypeNode(t)) return t.types.flatMap(typeLiterals);
  if (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal)) return [t.literal.text];
  return [];
}

const nameOf = (n: ts.Node | undefined): string | undefined =>
  n === undefined ? undefined : ts.isIdentifier(n) || ts.isStringLiteral(n) ? n.text : ts.isPropertyAccessExpression(n) ? n.name.text : undefined;

function extendsTurnstateError(n: ts.Node): boolean {
  for (let p: ts.Node | undefined = n; p !== undefined; p = p.parent) {
    if (ts.isClassDeclaration(p) || ts.isClassExpression(p)) {
      return (p.heritageClauses ?? []).some((h) => h.types.some((t) => ['TurnstateError', 'ModelError'].includes(t.expression.getText())));
    }
  }
  return false;
}

/** Every code src/ produces, with the places (file:line) it is given. */
function codesInSource(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (texts: string[], at: ts.Node) => {
      for (const t of texts) {
        if (!CODE_LIKE.test(t)) continue;
        const where = `${relative(SRC, file)}:${sf.getLineAndCharacterOfPosition(at.getStart(sf)).line + 1}`;
        out.set(t, [...(out.get(t) ?? []), where]);
      }
    };
    const visit = (n: ts.Node): void => {
      if (ts.isNewExpression(n)) {
        const i = CONSTRUCTORS.get(n.expression.getText(sf));
        if (i !== undefined) add(literals(n.arguments?.[i]), n);
      } else if (ts.isCallExpression(n)) {
        const callee = n.expression;
        if (callee.kind === ts.SyntaxKind.SuperKeyword) {
          if (extendsTurnstateError(n)) add(literals(n.arguments[0]), n);
        } else if (ts.isPropertyAccessExpression(callee) && callee.expression.kind === ts.SyntaxKind.ThisKeyword && callee.name.text === 'error') {
          add(literals(n.arguments[0]), n);
        } else if (ts.isIdentifier(callee)) {
          const i = HELPERS.get(callee.text);
          if (i !== undefined) add(literals(n.arguments[i]), n);
        }
      } else if ((ts.isPropertyAssignment(n) || ts.isVariableDeclaration(n)) && nameOf(n.name) === 'code') {
        add(literals(n.initializer), n);
      } else if (ts.isPropertySignature(n) && nameOf(n.name) === 'code') {
        add(typeLiterals(n.type), n);
      } else if (ts.isVariableDeclaration(n) && /_ERROR_CODES$/.test(nameOf(n.name) ?? '')) {
        add(literals(n.initializer), n);
      } else if (ts.isTypeAliasDeclaration(n) && /ErrorCode$/.test(n.name.text)) {
        add(typeLiterals(n.type), n);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

/** The codes the catalogue lists: the first cell of each table row, one code in backticks. */
function codesInDoc(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\| `([^`]+)` \|/.exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}

describe('error codes', () => {
  const source = codesInSource();
  const doc = readFileSync(DOC, 'utf8');
  const documented = codesInDoc(doc);

  it('errors:catalogue:complete — "every error code the runtime and its transports can produce" is in docs/concepts/errors.md', () => {
    expect(source.size).toBeGreaterThan(100);
    const missing = [...source].filter(([code]) => !documented.includes(code)).map(([code, at]) => `${code} (${at.slice(0, 3).join(', ')})`);
    expect(missing, 'codes src/ produces that docs/concepts/errors.md does not list').toEqual([]);
  });

  it('errors:catalogue:no-stale — every code docs/concepts/errors.md lists is one src/ produces, listed once', () => {
    expect(documented.filter((code) => !source.has(code)), 'codes docs/concepts/errors.md lists that src/ never produces').toEqual([]);
    expect(documented.filter((code, i) => documented.indexOf(code) !== i), 'codes listed twice').toEqual([]);
  });

  it('errors:codes:pattern — "noun.snake_case": every code src/ produces follows it (internal aside)', () => {
    expect([...source.keys()].filter((code) => !CODE_PATTERN.test(code))).toEqual([]);
  });
});
