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

/** Debian's Chromium (never a downloaded browser) with a profile of its own in `userDataDir`, a fresh temp folder. */
export function launchChromium(
  userDataDir: string,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    ...options,
  });
}
