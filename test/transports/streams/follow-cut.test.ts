/**
 * A follower stopped while it replays (its subscriber overflowed, and the connection's end
 * stopped it from inside the push) leaves nothing behind: it never joins the session's live hub
 * afterwards, which would keep the session followed, and so never passivated, for good (found by
 * a review session of the SSE transport).
 */
import { EMPTY } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { SessionHandle } from '../../../src/api.js';
import type { StreamsContext } from '../../../src/transports/streams/context.js';
import { follow, type Follow } from '../../../src/transports/streams/follow.js';
import type { SessionHub } from '../../../src/transports/streams/hub.js';
import type { BoundedSubscriber } from '../../../src/transports/streams/subscriber.js';
import type { SessionEvent } from '../../../src/types.js';

describe('a follower stopped during its replay', () => {
  it('streams:follow:stopped-in-replay — a follower whose subscriber closed it while it replayed does not join the live hub', async () => {
    const events = [1, 2, 3].map((seq) => ({ seq, sessionId: 's1', turnId: 't', at: '', type: 'model.usage', actor: 'a', usage: {} }) as unknown as SessionEvent);
    let subscribed = 0;
    const session = { id: 's1', events: () => { subscribed++; return EMPTY; } } as unknown as SessionHandle;
    const hubs = new Map<string, SessionHub>();
    const ctx = {
      runtime: { history: async (_id: string, after: number) => events.filter((e) => e.seq > after) },
      hubs,
      codec: { visible: (e: SessionEvent) => e, dropsAny: () => false, drops: () => false },
    } as unknown as StreamsContext;
    let closed = false;
    let f: Follow | undefined;
    // The first event overflows the subscriber: the connection ends, which stops the follower at once.
    const sub = {
      push: () => {
        closed = true;
        f?.stop();
      },
      get isClosed() {
        return closed;
      },
      isBlocked: false,
    } as unknown as BoundedSubscriber;
    f = follow(ctx, session, 0, sub, { error: () => {}, complete: () => {} });
    await new Promise((r) => setTimeout(r, 20));
    expect(hubs.size).toBe(0);
    expect(subscribed).toBe(0);
  });
});
