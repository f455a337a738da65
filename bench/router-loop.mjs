// The timed loop of bench/suites/router-pair.mjs. Each build imports its own instance of this module
// (`router-loop.mjs?v=<build>`), so the loop's call site of dispatchTool sees one router class and
// stays monomorphic for each build, as it is in a process that loads only one.
import { cpuMicros } from './lib.mjs';

/**
 * Runs `n` routed calls of `tool` through `router` and returns the process's CPU time (user +
 * system) they took, in nanoseconds: unlike wall time it leaves out time the core spent elsewhere
 * (this VM's neighbours). Awaited one after another, as a session host dispatches a turn's tools.
 */
export async function loop(router, tool, args, ctx, n) {
  const c0 = cpuMicros();
  for (let i = 0; i < n; i++) await router.dispatchTool(tool, args, ctx);
  return (cpuMicros() - c0) * 1000;
}
