/**
 * The first key that appears twice in one object of a JSON text, as a JSON Pointer.
 *
 * `JSON.parse` keeps the last of two equal keys without a word, while a stream of the same text
 * (respond()'s part.delta) shows both values: a tool input with a repeated key is ambiguous and
 * must be refused, not silently resolved.
 *
 * Contract: `json` has already parsed (it is valid JSON); the scan is one linear pass that skips
 * string contents with indexOf, so a call costs about as much as parsing it. Keys are compared
 * decoded (`"te\u0078t"` repeats `"text"`).
 */

interface Frame {
  /** Object or array. */
  object: boolean;
  /** Keys seen so far (objects; created at the first key). */
  keys: Set<string> | null;
  /** The key (object) or index (array) of the value being read. */
  at: string | number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Undefined when every object names each key once. */
export function firstDuplicateKey(json: string): string | undefined {
  const stack: Frame[] = [];
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    switch (json.charCodeAt(i)) {
      case 0x7b: // {
        stack.push({ object: true, keys: null, at: '' });
        expectKey = true;
        break;
      case 0x5b: // [
        stack.push({ object: false, keys: null, at: 0 });
        expectKey = false;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        stack.pop();
        expectKey = false;
        break;
      case 0x2c: {
        // ,
        const top = stack[stack.length - 1];
        if (top === undefined) break;
        if (top.object) expectKey = true;
        else top.at = (top.at as number) + 1;
        break;
      }
      case QUOTE: {
        const end = stringEnd(json, i);
        if (expectKey) {
          const top = stack[stack.length - 1]!;
          const raw = json.slice(i + 1, end);
          const key = raw.indexOf('\\') === -1 ? raw : (JSON.parse(json.slice(i, end + 1)) as string);
          const keys = (top.keys ??= new Set());
          top.at = key;
          if (keys.has(key)) return pointer(stack);
          keys.add(key);
          expectKey = false;
        }
        i = end;
        break;
      }
      default:
        break;
    }
  }
  return undefined;
}

/** Index of the quote closing the string that opens at `start`. */
function stringEnd(json: string, start: number): number {
  let j = json.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    for (let k = j - 1; json.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return j;
    j = json.indexOf('"', j + 1);
  }
}

function pointer(stack: Frame[]): string {
  let out = '';
  for (const f of stack) out += `/${typeof f.at === 'number' ? f.at : f.at.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return out;
}
