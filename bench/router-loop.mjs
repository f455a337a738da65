// The timed loop of bench/suites/router-pair.mjs. Each build imports its own instance of this module
// (`router-loop.mjs?v=<build>`), so the loop's call site of dispatchTool sees one router class and
// stays monomorphic for each build, as it is in a process that loads only one.

/**
 * Runs `n` routed calls of `tool` through `router` and returns the wall time in nanoseconds.
 * Awaited one after another, as a session host dispatches a turn's tools.
 */
export async function loop(router, tool, args, ctx, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await router.dispatchTool(tool, args, ctx);
  return Number(process.hrtime.bigint() - t0);
}
