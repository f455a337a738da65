/**
 * Incremental part.delta parser for a respond() call that is still being written: feed it the
 * tool input's JSON chunks (`input_json_delta`) and it reports each part's text growth.
 *
 * Contract:
 * - For every part i, the concatenation of the `text` of all deltas with `index: i` equals the
 *   final `parts[i].text` exactly (escapes, surrogate pairs and multi-byte characters split across
 *   chunks included). A delta never ends in the first half of a surrogate pair that continues in
 *   the next one. At most one text delta per part per pushed chunk.
 * - `partType` is carried on a delta once `parts[i].metadata.partType` has been read completely.
 *   Keys may come in any order: when partType arrives after some of the part's text was already
 *   delivered, one delta with `text: ''` and the partType is emitted at that moment; every later
 *   delta of the part carries it too. A part whose text has not started yet gets no such delta:
 *   its first text delta carries the partType.
 * - Never throws on malformed JSON: the first error is reported to `onError` (if given), the
 *   parser stops, and later input is ignored. Validation of the whole call happens when the
 *   block stops, elsewhere. An exception thrown by `onDelta` itself propagates out of `push`
 *   (after the chunk has been scanned).
 * - Duplicate keys are not merged: a part with two `text` keys streams both.
 *
 * A single-pass scanner over UTF-16 code units that tracks only the paths it reports
 * (`parts[i].text`, `parts[i].metadata.partType`) and validates the JSON grammar as it goes;
 * it costs well under a microsecond per typical chunk (a general streaming JSON parser such as
 * @streamparser/json, used as the test oracle, costs several times more).
 */
import type { PartDelta } from './types.js';

export interface RespondStreamParser {
  /** Feed the next chunk of the respond() input JSON (a string, or UTF-8 bytes). */
  push(chunk: string | Uint8Array): void;
  /** The input is complete; an unfinished document is reported as an error. Later pushes are ignored. */
  end(): void;
  /** True once the input was found malformed. */
  readonly failed: boolean;
}

export interface RespondStreamParserOptions {
  /** Called once, with the first parse error. */
  onError?: ((err: Error) => void) | undefined;
}

// Scanner states.
const VALUE = 0; // a value is expected
const ARR_FIRST = 1; // after '[': a value or ']'
const OBJ_FIRST = 2; // after '{': a key or '}'
const OBJ_KEY = 3; // after ',' in an object: a key
const COLON = 4;
const AFTER = 5; // after a value inside a container: ',' or the closing bracket
const STR = 6;
const ESC = 7;
const UNI = 8;
const NUM = 9;
const LIT = 10;
const DONE = 11;
const FAILED = 12;
const ENDED = 13;

// What the current string is.
const SKIP = 0;
const KEY = 1;
const TEXT = 2;
const PTYPE = 3;

const OBJ = 0;
const ARR = 1;

const NUMBER_RE = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

export function createRespondStreamParser(
  onDelta: (d: PartDelta) => void,
  options: RespondStreamParserOptions = {},
): RespondStreamParser {
  return new Scanner(onDelta, options.onError);
}

class Scanner implements RespondStreamParser {
  private st = VALUE;
  private depth = 0;
  private readonly kinds: number[] = [];
  private readonly keys: (string | null)[] = [];
  private readonly idx: number[] = [];
  private strKind = SKIP;
  /** Key or partType being read. */
  private buf = '';
  private uniCount = 0;
  private uniVal = 0;
  private num = '';
  private lit = '';
  private litPos = 0;
  /** Part whose text is being read, and its text not yet delivered. */
  private part = -1;
  private out = '';
  private readonly partTypes: (string | undefined)[] = [];
  private readonly started: boolean[] = [];
  private decoder: TextDecoder | undefined;
  private thrown: { err: unknown } | undefined;

  constructor(
    private readonly onDelta: (d: PartDelta) => void,
    private readonly onError: ((err: Error) => void) | undefined,
  ) {}

  get failed(): boolean {
    return this.st === FAILED;
  }

  push(chunk: string | Uint8Array): void {
    if (this.st === FAILED || this.st === ENDED) return;
    let s: string;
    if (typeof chunk === 'string') {
      s = chunk;
    } else {
      // ignoreBOM: a byte order mark is kept as U+FEFF, so bytes are refused where JSON.parse refuses their text.
      this.decoder ??= new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
      try {
        s = this.decoder.decode(chunk, { stream: true });
      } catch {
        this.fail('the respond() input is not valid UTF-8');
        return;
      }
    }
    this.scan(s);
    if (this.part >= 0 && this.out.length > 0 && this.st !== FAILED) this.flush(false);
    const t = this.thrown;
    if (t !== undefined) {
      this.thrown = undefined;
      throw t.err;
    }
  }

  end(): void {
    if (this.st === FAILED || this.st === ENDED) return;
    if (this.decoder !== undefined) {
      try {
        const rest = this.decoder.decode();
        if (rest.length > 0) this.scan(rest);
      } catch {
        this.fail('the respond() input ends inside a UTF-8 sequence');
        return;
      }
    }
    if (this.st === NUM && this.depth === 0) this.endNumber();
    if (this.st === FAILED) return;
    if (this.st !== DONE) {
      this.fail('the respond() input JSON ended before the document was complete');
      return;
    }
    this.st = ENDED;
  }

  private fail(message: string): void {
    if (this.st === FAILED) return;
    this.st = FAILED;
    this.out = '';
    if (this.onError !== undefined) {
      try {
        this.onError(new Error(message));
      } catch {
        // an error reporter must not break the stream
      }
    }
  }

  private deliver(index: number, text: string): void {
    this.started[index] = true;
    const partType = this.partTypes[index];
    const d: PartDelta = partType === undefined ? { index, text } : { index, partType, text };
    try {
      this.onDelta(d);
    } catch (err) {
      this.thrown ??= { err };
    }
  }

  /** Delivers the pending text of the current part; mid-string, a trailing high surrogate waits. */
  private flush(final: boolean): void {
    let text = this.out;
    let carry = '';
    if (!final) {
      const last = text.charCodeAt(text.length - 1);
      if (last >= 0xd800 && last <= 0xdbff) {
        carry = text.slice(-1);
        text = text.slice(0, -1);
      }
    }
    this.out = carry;
    if (text.length > 0) this.deliver(this.part, text);
  }

  private afterValue(): void {
    this.st = this.depth === 0 ? DONE : AFTER;
  }

  private beginString(): void {
    const d = this.depth;
    const keys = this.keys;
    const kinds = this.kinds;
    this.st = STR;
    this.strKind = SKIP;
    // parts[i].text: root object (1) -> 'parts' array (2) -> part object (3)
    if (d === 3) {
      if (keys[3] === 'text' && keys[1] === 'parts' && kinds[3] === OBJ && kinds[2] === ARR && kinds[1] === OBJ) {
        this.strKind = TEXT;
        this.part = this.idx[2]!;
        this.out = '';
      }
    } else if (d === 4) {
      if (
        keys[4] === 'partType' &&
        keys[3] === 'metadata' &&
        keys[1] === 'parts' &&
        kinds[4] === OBJ &&
        kinds[3] === OBJ &&
        kinds[2] === ARR &&
        kinds[1] === OBJ
      ) {
        this.strKind = PTYPE;
        this.buf = '';
      }
    }
  }

  private endString(): void {
    switch (this.strKind) {
      case KEY:
        this.keys[this.depth] = this.buf;
        this.st = COLON;
        return;
      case TEXT:
        this.flush(true);
        this.part = -1;
        break;
      case PTYPE: {
        const i = this.idx[2]!;
        const known = this.partTypes[i];
        this.partTypes[i] = this.buf;
        if (known === undefined && this.started[i] === true) this.deliver(i, '');
        break;
      }
    }
    this.afterValue();
  }

  private append(s: string): void {
    if (this.strKind === TEXT) this.out += s;
    else if (this.strKind !== SKIP) this.buf += s;
  }

  private open(kind: number): void {
    const d = ++this.depth;
    this.kinds[d] = kind;
    this.keys[d] = null;
    this.idx[d] = 0;
    this.st = kind === OBJ ? OBJ_FIRST : ARR_FIRST;
  }

  private close(kind: number): void {
    if (this.kinds[this.depth] !== kind) {
      this.fail(`unexpected '${kind === OBJ ? '}' : ']'}' in the respond() input JSON`);
      return;
    }
    this.depth--;
    this.afterValue();
  }

  private endNumber(): void {
    if (!NUMBER_RE.test(this.num)) {
      this.fail(`invalid number '${this.num}' in the respond() input JSON`);
      return;
    }
    this.afterValue();
  }

  /** Starts the value at character code c; false when c cannot start a value. */
  private beginValue(c: number): boolean {
    switch (c) {
      case 0x7b: // {
        this.open(OBJ);
        return true;
      case 0x5b: // [
        this.open(ARR);
        return true;
      case 0x22: // "
        this.beginString();
        return true;
      case 0x74: // t
        this.lit = 'true';
        break;
      case 0x66: // f
        this.lit = 'false';
        break;
      case 0x6e: // n
        this.lit = 'null';
        break;
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
          this.num = String.fromCharCode(c);
          this.st = NUM;
          return true;
        }
        return false;
    }
    this.litPos = 1;
    this.st = LIT;
    return true;
  }

  private scan(s: string): void {
    const n = s.length;
    let i = 0;
    while (i < n) {
      const st = this.st;
      if (st === STR) {
        let j = i;
        let c = 0;
        while (j < n) {
          c = s.charCodeAt(j);
          if (c === 0x22 || c === 0x5c) break;
          if (c < 0x20) {
            this.fail('unescaped control character in a string of the respond() input JSON');
            return;
          }
          j++;
        }
        if (j > i && this.strKind !== SKIP) this.append(s.slice(i, j));
        if (j === n) return;
        i = j + 1;
        if (c === 0x22) this.endString();
        else this.st = ESC;
        continue;
      }
      const c = s.charCodeAt(i++);
      switch (st) {
        case ESC: {
          let ch: string;
          switch (c) {
            case 0x22: ch = '"'; break;
            case 0x5c: ch = '\\'; break;
            case 0x2f: ch = '/'; break;
            case 0x62: ch = '\b'; break;
            case 0x66: ch = '\f'; break;
            case 0x6e: ch = '\n'; break;
            case 0x72: ch = '\r'; break;
            case 0x74: ch = '\t'; break;
            case 0x75:
              this.st = UNI;
              this.uniCount = 0;
              this.uniVal = 0;
              continue;
            default:
              this.fail(`invalid escape '\\${String.fromCharCode(c)}' in the respond() input JSON`);
              return;
          }
          if (this.strKind !== SKIP) this.append(ch);
          this.st = STR;
          continue;
        }
        case UNI: {
          const h = hexValue(c);
          if (h < 0) {
            this.fail('invalid \\u escape in the respond() input JSON');
            return;
          }
          this.uniVal = this.uniVal * 16 + h;
          if (++this.uniCount === 4) {
            if (this.strKind !== SKIP) this.append(String.fromCharCode(this.uniVal));
            this.st = STR;
          }
          continue;
        }
        case NUM:
          if ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d) {
            this.num += String.fromCharCode(c);
            continue;
          }
          this.endNumber();
          if (this.st === FAILED) return;
          i--; // the character that ended the number is read again
          continue;
        case LIT:
          if (c !== this.lit.charCodeAt(this.litPos)) {
            this.fail(`invalid literal in the respond() input JSON (expected '${this.lit}')`);
            return;
          }
          if (++this.litPos === this.lit.length) this.afterValue();
          continue;
      }
      // Structural states: skip whitespace.
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
      switch (st) {
        case VALUE:
          if (this.beginValue(c)) continue;
          break;
        case ARR_FIRST:
          if (c === 0x5d) {
            this.close(ARR);
            if (this.st === FAILED) return;
            continue;
          }
          if (this.beginValue(c)) continue;
          break;
        case OBJ_FIRST:
        case OBJ_KEY:
          if (c === 0x7d && st === OBJ_FIRST) {
            this.close(OBJ);
            if (this.st === FAILED) return;
            continue;
          }
          if (c === 0x22) {
            this.st = STR;
            this.strKind = KEY;
            this.buf = '';
            continue;
          }
          break;
        case COLON:
          if (c === 0x3a) {
            this.st = VALUE;
            continue;
          }
          break;
        case AFTER:
          if (c === 0x2c) {
            if (this.kinds[this.depth] === OBJ) this.st = OBJ_KEY;
            else {
              this.idx[this.depth] = this.idx[this.depth]! + 1;
              this.st = VALUE;
            }
            continue;
          }
          if (c === 0x7d || c === 0x5d) {
            this.close(c === 0x7d ? OBJ : ARR);
            if (this.st === FAILED) return;
            continue;
          }
          break;
        case DONE:
          break;
      }
      this.fail(
        st === DONE
          ? 'unexpected data after the end of the respond() input JSON'
          : `unexpected ${shown(s.codePointAt(i - 1) ?? c)} in the respond() input JSON`,
      );
      return;
    }
  }
}

/** A code point for an error message: printable ASCII as itself, anything else as U+XXXX (U+FEFF, U+1F600). */
function shown(c: number): string {
  return c > 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}
