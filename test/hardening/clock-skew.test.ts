import { ConsoleLogger } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { captureOutput } from '../support/capture-output.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

describe.each([
  ['ahead of', 10 * 60_000],
  ['behind', -10 * 60_000],
])('platform clock 10 minutes %s the local clock', (direction, offsetMs) => {
  it('fails with a clear skew error carrying the measured offset', async () => {
    const f = await start({ emulator: { clockOffsetMs: offsetMs } });
    const error = (await f.tokens.getAccessToken().catch((e: unknown) => e)) as TokenExchangeError;
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(error).toMatchObject({ reason: 'http_error', oauthError: 'invalid_grant', retried: false });
    expect(Math.abs(error.clockOffsetMs! - offsetMs)).toBeLessThanOrEqual(1_000);
    expect(error.hint).toMatch(new RegExp(`The platform's clock is 60\\d s ${direction} the local clock`));
    expect(error.hint).toMatch(/correctClockSkew/);
    expect(f.tokens.clockOffsetMs).toBeDefined();
    expectNoSecrets(error, []);
  });

  it('recovers with correctClockSkew: one corrected retry, then tokens work', async () => {
    const f = await start({ emulator: { clockOffsetMs: offsetMs }, module: { correctClockSkew: true } });
    const token = await f.tokens.getAccessToken();
    const journal = f.platform.journal;
    expect(journal.map((entry) => entry.verdict)).toEqual(['rejected', 'accepted']);
    const corrected = journal[1].claims as { iat: number };
    // iat is back-dated by the 60 s clock margin on top of the correction.
    expect(Math.abs((corrected.iat + 60) * 1000 - (f.clock.now() + offsetMs))).toBeLessThan(2_000);
    const response = await fetch(`${f.platform.url}/api/billing`, { headers: { Authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
  });
});

describe('skew within what the platform accepts', () => {
  it('is logged with the offset beyond the 60 s clock margin, and the exchange succeeds', async () => {
    const f = await start({
      emulator: { clockOffsetMs: 90_000 },
      logger: new ConsoleLogger({ logLevels: ['warn', 'error'] }),
    });
    const output = await captureOutput(() => f.tokens.getAccessToken());
    expect(output).toMatch(/The platform's clock is (89|90|91) s ahead of the local clock/);
  });

  it('is not reported within the clock margin', async () => {
    const f = await start({
      emulator: { clockOffsetMs: 10_000 },
      logger: new ConsoleLogger({ logLevels: ['warn', 'error'] }),
    });
    const output = await captureOutput(() => f.tokens.getAccessToken());
    expect(output).not.toMatch(/clock/);
    expect(Math.abs(f.tokens.clockOffsetMs! - 10_000)).toBeLessThanOrEqual(1_000);
  });

  it("goes to the module's logger option instead of Nest's console", async () => {
    const logger = new CapturingLogger();
    const f = await start({
      emulator: { clockOffsetMs: 90_000 },
      module: { logger },
      logger: new ConsoleLogger({ logLevels: ['warn', 'error'] }),
    });
    const output = await captureOutput(() => f.tokens.getAccessToken());
    expect(output).toBe('');
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/The platform's clock is (89|90|91) s ahead/)]);
  });
});
