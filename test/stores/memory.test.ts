import { describe, it, expect } from 'vitest';
import { createMemoryStore } from '../../src/stores/index.js';
import { runStoreSuite, session, events, mail, snapshot } from './store.case.js';

runStoreSuite('memory', () => createMemoryStore());

describe('memory store specifics', () => {
  it('store:memory:sync — every method returns synchronously (no promise on the hot path)', () => {
    const store = createMemoryStore();
    expect(store.createSession(session('s1'))).toBeUndefined();
    expect(store.commit('s1', { events: events('s1', 1, 2) })).toBeUndefined();
    expect(Array.isArray(store.readEvents('s1', 0))).toBe(true);
    expect(store.lastSeq('s1')).toBe(2);
    expect(store.close()).toBeUndefined();
  });

  it('store:memory:by-reference — committed objects are retained as given, not copied per step', () => {
    const store = createMemoryStore();
    store.createSession(session('s1'));
    const evs = events('s1', 1, 3);
    const entry = mail('hi');
    const snap = snapshot(1);
    store.commit('s1', { events: evs, mailbox: [entry], snapshot: snap });
    const read = store.readEvents('s1', 0);
    for (let i = 0; i < evs.length; i++) expect(read[i]).toBe(evs[i]);
    expect(store.readMailbox('s1')[0]).toBe(entry);
    expect(store.loadSnapshot('s1')).toBe(snap);
    // Reads hand out a fresh array: appending to it does not touch the log.
    read.push(events('s1', 4, 1)[0]!);
    expect(store.lastSeq('s1')).toBe(3);
  });
});
