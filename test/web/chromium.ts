/**
 * Debian's Chromium for the browser tests (playwright-core never downloads a browser): where it
 * is, and a headless context on a fresh profile with the flags this machine needs.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Whether Chromium is installed; when not, CI fails and a local run skips loudly, naming it. */
export function haveChromium(what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  const msg = `Chromium is missing at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium) to run ${what}`;
  if (process.env.CI) throw new Error(msg);
  console.warn(`\n!!! SKIPPING ${what}: ${msg}\n`);
  return false;
}

/**
 * A headless persistent context on a new profile; `close()` closes it and removes the profile.
 * `bypassCSP`: ignore the page's Content-Security-Policy (for a test that injects a script).
 */
export async function launchChromium(
  viewport: { width: number; height: number },
  options: { bypassCSP?: boolean } = {},
): Promise<{ ctx: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'turnstate-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
    viewport,
    ...(options.bypassCSP ? { bypassCSP: true } : {}),
  });
  return {
    ctx,
    close: async () => {
      await ctx.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
