/**
 * The AAP transport's session configs (src/transports/aap/session-config.ts): read from the
 * session record and its history, and cached bounded ("Recently used configs are cached
 * (bounded: a server that has seen many sessions keeps only the last CACHED_CONFIGS)").
 */
import { describe, expect, it } from 'vitest';
import type { SessionRuntime } from '../../../src/api.js';
import { CACHED_CONFIGS, SessionConfigs } from '../../../src/transports/aap/session-config.js';
import type { SessionRecord } from '../../../src/types.js';

/** A runtime whose sessions have no history: only `history` is read. */
function runtimeWithHistory(reads: string[]): SessionRuntime {
  return {
    history: async (id: string) => {
      reads.push(id);
      return [];
    },
  } as unknown as SessionRuntime;
}

const record = (i: number): SessionRecord => ({ id: `s${i}`, actor: 'triage', createdAt: '2026-01-01T00:00:00Z', doubleTexting: 'queue', metadata: { aap: { tools: [{ name: `t${i}`, description: 'd', parameters: {} }] } } });

describe('aap: session configs', () => {
  it('aap:config:bounded — configs of many sessions stay within CACHED_CONFIGS (least recently used go first and are read again when needed); one holding an override no message recorded yet is never evicted', async () => {
    const reads: string[] = [];
    const configs = new SessionConfigs(runtimeWithHistory(reads));
    const pinned = { agent: { name: 'triage', options: { tone: 'brief' } }, tools: [] };
    configs.set('s0', pinned, { persisted: false });
    for (let i = 1; i <= CACHED_CONFIGS * 2; i++) expect((await configs.get(record(i))).tools[0]!.name).toBe(`t${i}`);
    expect(configs.size).toBe(CACHED_CONFIGS + 1);
    expect(await configs.get(record(0))).toBe(pinned);
    expect(configs.isPersisted('s0')).toBe(false);
    // A recent one is served from memory; an evicted one is read again, the same as before.
    reads.length = 0;
    await configs.get(record(CACHED_CONFIGS * 2));
    expect(reads).toEqual([]);
    expect((await configs.get(record(1))).tools[0]!.name).toBe('t1');
    expect(reads).toEqual(['s1']);
  });
});
