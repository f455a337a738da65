/**
 * The wall-clock time of a `performance.now()` reading, without a second clock read. A routed call
 * reads the monotonic clock when it starts (for its `durationMs`) and needs the wall-clock time of
 * that moment too (its record's `at`): reading `Date.now()` as well cost a tenth of a routed call
 * (each clock read is 40-50 ns on a VM). The offset between the two clocks is taken from a real
 * `Date.now()` at most once per second of calls, so a record's `at` is within a millisecond of
 * `Date.now()` (clock slew over a second) and a step of the system clock shows within a second.
 * Only for the default clock: an injected `now` (tests, replay) is called as it is.
 */

/** How long an offset is trusted, in ms of the monotonic clock. */
const RESYNC_MS = 1000;

/** The last real read: Date.now() then, and the monotonic reading it was taken at. */
let syncedEpoch = 0;
let syncedAt = Number.NEGATIVE_INFINITY;
let syncedWith: () => number = Date.now;

/** Epoch ms (an integer, as `Date.now()` gives) at `t`, a `performance.now()` reading of this process. */
export function epochAt(t: number): number {
  // A replaced Date.now (fake timers installed later) is read again rather than trusted.
  if (t - syncedAt >= RESYNC_MS || t < syncedAt || syncedWith !== Date.now) {
    syncedWith = Date.now;
    syncedEpoch = Date.now();
    syncedAt = t;
  }
  // The integer read plus whole ms since: no rounding of a 13-digit sum (at the read, exactly Date.now()).
  return syncedEpoch + Math.floor(t - syncedAt);
}
