import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** CHROMIUM_PATH, else `chromium` on PATH (Debian: /usr/bin/chromium), else null. */
function findChromium(): string | null {
  if (process.env.CHROMIUM_PATH) return existsSync(process.env.CHROMIUM_PATH) ? process.env.CHROMIUM_PATH : null;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'chromium');
    if (dir !== '' && existsSync(candidate)) return candidate;
  }
  return null;
}

/** The Chromium the browser specs drive, or null (they skip locally, fail under CI=true). */
export const CHROMIUM = findChromium();

if (CHROMIUM === null) {
  const looked = process.env.CHROMIUM_PATH
    ? `CHROMIUM_PATH=${process.env.CHROMIUM_PATH} does not exist`
    : 'no `chromium` on PATH and CHROMIUM_PATH unset';
  const reason = `the demo browser tests need Chromium (${looked}); .ci/run installs Debian's: apt-get install -y chromium`;
  // CI installs it (.ci/run), so there its absence is a failure, not a reason to skip.
  if (process.env.CI === 'true') throw new Error(reason);
  console.warn(`SKIPPED: ${reason}`);
}

/** `describe`, or `describe.skip` without Chromium. */
export const describeInChromium: jest.Describe = CHROMIUM === null ? describe.skip : describe;

/** Headless Chromium with a fresh profile; `close()` ends the browser and removes the profile. */
export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  const profileDir = mkdtempSync(path.join(tmpdir(), 'chat-e2e-profile-'));
  try {
    const context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM!,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1100, height: 680 },
      timeout: 60_000,
    });
    return {
      context,
      async close() {
        await context.close();
        rmSync(profileDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profileDir, { recursive: true, force: true });
    throw err;
  }
}
