import { describe, expect, it } from 'vitest';
import { clientToolNameProblem } from '../../src/registries/client-tools.js';
import { RESERVED_TOOL_NAMES } from '../../src/registries/tools.js';

const none = (): boolean => false;

describe('clientToolNameProblem', () => {
  it('tools:client:unique — a name declared twice is reported at its second index', () => {
    expect(clientToolNameProblem([{ name: 'a' }, { name: 'b' }, { name: 'a' }], none)).toEqual({ kind: 'duplicate', index: 2, name: 'a' });
  });

  it("tools:client:no-shadow — a server tool's name or a runtime tool's name is taken", () => {
    expect(clientToolNameProblem([{ name: 'ok' }, { name: 'lookup' }], (n) => n === 'lookup')).toEqual({ kind: 'taken', index: 1, name: 'lookup' });
    for (const name of RESERVED_TOOL_NAMES) expect(clientToolNameProblem([{ name }], none)).toEqual({ kind: 'taken', index: 0, name });
  });

  it('tools:client:named — a tool without a non-empty string name is reported', () => {
    expect(clientToolNameProblem([{ name: 'a' }, { name: '' }], none)).toEqual({ kind: 'unnamed', index: 1 });
    expect(clientToolNameProblem([{}], none)).toEqual({ kind: 'unnamed', index: 0 });
    expect(clientToolNameProblem([{ name: 7 }], none)).toEqual({ kind: 'unnamed', index: 0 });
  });

  it('tools:client:free — distinct names no server tool takes pass', () => {
    expect(clientToolNameProblem([{ name: 'pick_seat' }, { name: 'confirm' }], (n) => n === 'lookup')).toBeUndefined();
    expect(clientToolNameProblem([], none)).toBeUndefined();
  });
});
