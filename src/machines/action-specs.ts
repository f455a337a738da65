/**
 * The machines' actions, written once as specs: what an action assigns to the context, emits to
 * the host, or sends to its own machine. `toXStateActions` turns them into XState
 * implementations (the machine Stately draws and an inspected session runs); the compiled
 * machine (compiled-machine.ts) runs the same specs, so both execute one definition.
 *
 * A spec is one of:
 * - `{ assign }`: a partial context (XState `assign`);
 * - `{ emit }`: one effect (XState `emit`);
 * - `{ ops }`: several steps in order through `ActionOps` (XState `enqueueActions`). Every step
 *   sees the context as it was when the action started.
 */
import { assign, emit, enqueueActions, type AnyActorRef } from 'xstate';

/** What an `ops` action may do, in order. */
export interface ActionOps {
  assign(patch: object): void;
  emit(effect: { type: string; [k: string]: unknown }): void;
  /** An event to the machine itself, delivered after the current one has been handled. */
  send(event: { type: string; [k: string]: unknown }): void;
}

export interface ActionArgs<C> {
  context: C;
  event: any;
}

export type ActionSpec<C = any> =
  | { assign: (args: ActionArgs<C>, params: any) => Partial<C> }
  | { emit: (args: ActionArgs<C>, params: any) => { type: string } }
  | { ops: (args: ActionArgs<C>, params: any, ops: ActionOps) => void };

export type ActionSpecs<C = any> = Record<string, ActionSpec<C>>;

/** The specs as XState action implementations (for `setup({ actions })`). */
export function toXStateActions<S extends ActionSpecs>(specs: S): { [K in keyof S]: any } {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    if ('assign' in spec) {
      const fn = spec.assign;
      out[name] = assign(({ context, event }: ActionArgs<any>, params: unknown) => fn({ context, event }, params));
    } else if ('emit' in spec) {
      const fn = spec.emit;
      out[name] = emit(({ context, event }: ActionArgs<any>, params: unknown) => fn({ context, event }, params) as any);
    } else {
      const fn = spec.ops;
      out[name] = enqueueActions(({ context, event, enqueue, self }: { context: unknown; event: unknown; enqueue: any; self: AnyActorRef }, params: unknown) =>
        fn({ context, event }, params, {
          assign: (patch) => enqueue.assign(patch),
          emit: (effect) => enqueue.emit(effect),
          send: (ev) => enqueue.sendTo(self, ev),
        }),
      );
    }
  }
  return out as { [K in keyof S]: any };
}
