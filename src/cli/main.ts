#!/usr/bin/env node
/**
 * The `turnstate` command. `turnstate serve` runs until SIGINT, SIGTERM or SIGHUP (a closed
 * terminal, or a supervisor's stop), then shuts down gracefully (in-flight requests finish, the
 * store is closed); a second signal a second or more later exits at once, with 128 + the
 * signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP), as a shell reports a process the
 * signal ended.
 */
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { parseArgs, UsageError, USAGE } from './args.js';
import { PACKAGE_ROOT, serve } from './serve.js';

async function main(argv: string[]): Promise<number> {
  // `turnstate replay <db> <session> [...]`: re-run a recorded session and diff its path.
  if (argv[0] === 'replay') {
    const { runReplayCommand } = await import('./replay.js');
    return runReplayCommand(argv.slice(1));
  }
  let command;
  try {
    command = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`turnstate: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  if (command.kind === 'help') {
    process.stdout.write(`${command.text}\n`);
    return 0;
  }
  if (command.kind === 'version') {
    const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
    process.stdout.write(`turnstate ${pkg.version}\n`);
    return 0;
  }
  const handle = await serve(command.args);
  await new Promise<void>((resolve) => {
    let stoppingSince = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stoppingSince > 0) {
        // Under `npm start` one Ctrl-C arrives twice (from the terminal and relayed by tsx).
        if (Date.now() - stoppingSince < 1000) return;
        process.stderr.write(`turnstate: ${signal} again, exiting now\n`);
        process.exit(128 + (constants.signals[signal as keyof typeof constants.signals] ?? 2));
      }
      stoppingSince = Date.now();
      process.stdout.write(`turnstate: ${signal} received, shutting down (finishing in-flight requests)\n`);
      handle.close().then(
        () => {
          process.stdout.write('turnstate: stopped; everything accepted is stored\n');
          resolve();
        },
        (err: unknown) => {
          process.stderr.write(`turnstate: error while shutting down: ${(err as Error).message}\n`);
          process.exitCode = 1;
          resolve();
        },
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onSignal);
  });
  return process.exitCode === undefined ? 0 : Number(process.exitCode);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`turnstate: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
  },
);
