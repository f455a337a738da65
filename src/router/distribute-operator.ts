/**
 * filterAndDistribute: FilterAndDistribute as an RxJS operator over the router's `results$`.
 * Each result carrying an AnnotatedRecord (generalist calls only) is split into one view per
 * listed destination; the output has one stream per destination (an RxJS GroupedObservable
 * keyed by its id), opened at that destination's first visible view. A destination that may
 * see nothing of a record gets nothing for it.
 *
 *   router.results$.pipe(filterAndDistribute(['cache', 'formatter:email'])).subscribe((dest$) =>
 *     dest$.pipe(deliverBounded((v) => sinks[dest$.key].write(v.view), { bufferSize: 100 })).subscribe());
 */
import { EMPTY, groupBy, map, mergeMap, type GroupedObservable, type OperatorFunction } from 'rxjs';
import { TurnstateError } from '../errors.js';
import type { DestinationId } from './annotated.js';
import { ContainedObservable } from './contained.js';
import { filterView, type DistributedView, type DistributionMeta } from './filter-distribute.js';
import type { RoutedResult } from './router.js';

export function filterAndDistribute(destinations: Iterable<DestinationId>): OperatorFunction<RoutedResult, GroupedObservable<DestinationId, DistributedView>> {
  const ids = [...destinations];
  for (const id of ids) {
    if (typeof id !== 'string' || id === '' || id.includes('*')) {
      throw new TurnstateError('router.destination_invalid', `filterAndDistribute(): destination id ${JSON.stringify(id)} is invalid: use a non-empty id without '*', e.g. 'audit' or 'formatter:email'`);
    }
  }
  return (source) => {
    const grouped = source.pipe(
      mergeMap((r) => {
        const record = r.record;
        if (record === undefined) return EMPTY;
        const c = r.call;
        const meta: DistributionMeta = { sessionId: c.sessionId, turnId: c.turnId, actor: c.actor, tool: c.tool, callId: c.callId, scope: c.scope };
        if (record.dataKind !== undefined) meta.dataKind = record.dataKind;
        const out: DistributedView[] = [];
        for (const destination of ids) {
          const view = filterView(record, destination);
          if (view !== undefined) out.push({ destination, view, meta });
        }
        return out;
      }),
      groupBy((v) => v.destination),
    );
    // groupBy builds each group as an observable of its own: over the router's (contained)
    // results$, a group's subscriber is contained like the stream's (one wrapper per group).
    if (!(source instanceof ContainedObservable)) return grouped;
    const contain = source.contain;
    return grouped.pipe(map((g) => Object.assign(new ContainedObservable(contain, g), { key: g.key })));
  };
}
