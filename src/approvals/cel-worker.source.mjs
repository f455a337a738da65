// The evaluation worker's entry when turnstate runs from its TypeScript source (tests, `npm start`):
// loads cel-worker.ts through tsx. The built package starts dist/approvals/cel-worker.js directly.
import { tsImport } from 'tsx/esm/api';

await tsImport('./cel-worker.ts', import.meta.url);
