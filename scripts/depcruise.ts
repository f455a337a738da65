/**
 * Checks src/ against the dependency rules of `.dependency-cruiser.cjs` (the layers of
 * docs/architecture.md) with dependency-cruiser's API: its CLI refuses Node 20, its API does not.
 *
 *   tsx scripts/depcruise.ts          print every violation; exit 1 if there is any
 *
 * `checkDependencies({ baseDir })` cruises another tree with the same rules (the test uses it to
 * show that an injected violation is caught).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cruise, format, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface DependencyCheck {
  violations: IViolation[];
  /** Modules cruised (src/ plus the packages it imports). */
  cruised: number;
  /** The violations as dependency-cruiser's `err` reporter prints them ('' when there are none). */
  report: string;
}

/** Cruises `<baseDir>/src` (default: this repository) with the repository's rules. */
export async function checkDependencies(opts: { baseDir?: string } = {}): Promise<DependencyCheck> {
  const options = await extractDepcruiseOptions(`${ROOT}.dependency-cruiser.cjs`);
  const tsConfigFile = `${ROOT}tsconfig.json`;
  const result = await cruise(
    ['src'],
    { ...options, validate: true, baseDir: opts.baseDir ?? ROOT, tsConfig: { fileName: tsConfigFile } },
    {},
    { tsConfig: extractTSConfig(tsConfigFile) },
  );
  const output = result.output as ICruiseResult;
  const violations = output.summary.violations;
  const report = violations.length === 0 ? '' : String((await format(output, { outputType: 'err' })).output);
  return { violations, cruised: output.summary.totalCruised, report };
}

async function main(): Promise<number> {
  const { violations, cruised, report } = await checkDependencies();
  if (violations.length > 0) {
    console.error(report);
    return 1;
  }
  console.log(`dependency rules: no violation in ${cruised} modules cruised`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    },
  );
}
