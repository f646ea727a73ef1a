import { chromium, type BrowserContext } from 'playwright-core';

/** The flags of COMMON.md: Debian's Chromium, headless, nothing fetched from the network. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Playwright's own limits, as generous as Vitest's hang guards: a busy machine starts and drives Chromium slowly. */
const HANG_GUARD_MS = 120_000;

/** Debian's Chromium (never a downloaded browser) with a profile of its own in `userDataDir`, a fresh temp folder. */
export async function launchChromium(
  userDataDir: string,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: HANG_GUARD_MS,
    ...options,
  });
  context.setDefaultTimeout(HANG_GUARD_MS);
  return context;
}
