/**
 * What the policy evaluator pool (cel-sandbox.ts) and its child (cel-worker.ts) agree on besides
 * the messages' types. Its own module: the pool must not load the child's module, which starts
 * serving on its process's IPC channel when one exists.
 */

/** The argument naming, in the child, the descriptor of its receipt file. */
export const RECEIPT_FD_ARG = '--receipt-fd';

/** Bytes of a receipt: the id of the evaluation the child received last, a float64 at offset 0. */
export const RECEIPT_BYTES = 8;
