import { Test } from '@nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenExchangeError, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

/**
 * A strict emulator (no leeway, as the platform may be) whose clock is `offsetSeconds` off the module's. The clock
 * starts 0.2 s past a whole second: with `iat = nbf = now` truncated to the second, a platform only 0.5 s behind is
 * then before `nbf`, which is how the bug showed.
 */
async function exchangeWithPlatformClock(
  offsetSeconds: number,
  module: Partial<PlatformAuthOptions> = {},
): Promise<{ error?: TokenExchangeError; platform: PlatformEmulator }> {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000 + 200);
  const platform = await PlatformEmulator.start({ now: () => clock.now(), clockOffsetMs: offsetSeconds * 1000 });
  closing.push(() => platform.close());
  const integration = await platform.createIntegration();
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forRoot({
        ...integration.moduleOptions,
        clock,
        exchange: { retry: { maxAttempts: 1 } },
        ...module,
      }),
    ],
  }).compile();
  closing.push(() => moduleRef.close());
  const error = await moduleRef
    .get(TokenProvider)
    .getAccessToken()
    .then(
      () => undefined,
      (reason: unknown) => reason as TokenExchangeError,
    );
  return { error, platform };
}

describe('the assertion clock margin against a strict platform', () => {
  it.each([-0.5, -1.5, -3, -59, 59])('works by default with the platform clock %s s off', async (offset) => {
    const { error, platform } = await exchangeWithPlatformClock(offset);
    expect(error).toBeUndefined();
    const claims = platform.journal[0].claims as { iat: number; nbf: number; exp: number };
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(300);
    expect(claims.iat - claims.nbf).toBeLessThanOrEqual(300);
  });

  it('fails clearly with the platform clock 61 s behind, naming the clock', async () => {
    const { error } = await exchangeWithPlatformClock(-61);
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(error).toMatchObject({ oauthError: 'invalid_grant' });
    expect(error!.hint).toMatch(/clock/);
    expect(error!.oauthErrorDescription).toMatch(/not valid yet/);
  });

  it('is what makes the difference: without a margin, 0.5 s behind already fails', async () => {
    const { error } = await exchangeWithPlatformClock(-0.5, { clockMarginSeconds: 0 });
    expect(error?.oauthErrorDescription).toMatch(/not valid yet/);
  });
});
