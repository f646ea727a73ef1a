import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { eventually } from '../support/eventually.js';

const start = usePlatformFixtures();

/** The emulator's own verdict on a token: a 200 from a protected placeholder route. */
async function platformAccepts(f: PlatformFixture, token: string): Promise<boolean> {
  const response = await fetch(`${f.platform.url}/api/billing`, { headers: { Authorization: `Bearer ${token}` } });
  return response.status === 200;
}

describe('TokenProvider: caching and renewal', () => {
  it('exchanges once, then serves the cached token', async () => {
    const f = await start();
    const first = await f.tokens.getAccessToken();
    const again = await f.tokens.getAccessToken();
    expect(again).toBe(first);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
    const token = await f.tokens.getToken();
    expect(token).toMatchObject({ accessToken: first, tokenType: 'Bearer' });
    expect(token.expiresAt.getTime()).toBe(f.clock.now() + 600_000);
  });

  it('renews in the background inside the renewal window, serving the current token meanwhile', async () => {
    const f = await start({ autoAdvance: false });
    const first = await f.tokens.getAccessToken();
    f.clock.advance(530_000); // before the window (60 s, less up to 10 % jitter, before 600 s)
    expect(await f.tokens.getAccessToken()).toBe(first);
    expect(f.tokens.status().state).toBe('valid'); // no renewal started

    f.clock.advance(16_000); // 546 s: inside the window
    expect(await f.tokens.getAccessToken()).toBe(first);
    expect(f.tokens.status().state).toBe('renewing');
    await eventually(async () => expect(await f.tokens.getAccessToken()).not.toBe(first));
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });

  it('never hands out an expired token, whatever the time steps', async () => {
    const f = await start({ emulator: { tokenLifetimeSeconds: 120 } });
    for (let step = 0; step < 40; step += 1) {
      const token = await f.tokens.getToken();
      expect(token.expiresAt.getTime()).toBeGreaterThan(f.clock.now());
      expect(await platformAccepts(f, token.accessToken)).toBe(true);
      f.clock.advance(7_000 + (step % 5) * 3_000);
    }
  });

  it('caps the renewal lead at half the token lifetime', async () => {
    const f = await start({
      autoAdvance: false,
      emulator: { tokenLifetimeSeconds: 60 },
      module: { refreshBeforeExpirySeconds: 300 },
    });
    const first = await f.tokens.getAccessToken();
    f.clock.advance(26_000); // lead is at most 30 s, so 26 s is still before the window
    expect(await f.tokens.getAccessToken()).toBe(first);
    expect(f.tokens.status().state).toBe('valid'); // no renewal started
    f.clock.advance(8_000); // 34 s: inside any jittered window (lead 27–30 s)
    await f.tokens.getAccessToken();
    expect(f.tokens.status().state).toBe('renewing');
    await eventually(() => expect(f.platform.counters.exchanges.accepted).toBe(2));
  });

  it('makes 1,000 concurrent cold callers share one exchange', async () => {
    const f = await start();
    const tokens = await Promise.all(Array.from({ length: 1_000 }, () => f.tokens.getAccessToken()));
    expect(new Set(tokens).size).toBe(1);
    expect(f.platform.counters.exchanges.total).toBe(1);
  });

  it('invalidate drops only the token that is still cached', async () => {
    const f = await start();
    const first = await f.tokens.getAccessToken();
    expect(f.tokens.invalidate('some-other-token')).toBe(false);
    expect(f.tokens.invalidate(first)).toBe(true);
    const second = await f.tokens.getAccessToken();
    expect(second).not.toBe(first);
    expect(f.tokens.invalidate(first)).toBe(false);
    expect(await f.tokens.getAccessToken()).toBe(second);
  });
});

describe('TokenProvider: failures', () => {
  it('retries 5xx, network drops and 429 with bounded, growing back-off, honouring Retry-After', async () => {
    const f = await start();
    f.platform.injectFault({ kind: 'status', status: 503 });
    f.platform.injectFault({ kind: 'drop' });
    f.platform.injectFault({ kind: 'status', status: 429, headers: { 'Retry-After': '2' } });
    const token = await f.tokens.getAccessToken();
    expect(await platformAccepts(f, token)).toBe(true);
    expect(f.platform.counters.exchanges.total).toBe(4);
    expect(f.clock.sleeps).toHaveLength(3);
    const [first, second, third] = f.clock.sleeps as [number, number, number];
    expect(first).toBeGreaterThanOrEqual(50);
    expect(first).toBeLessThanOrEqual(100);
    expect(second).toBeGreaterThanOrEqual(100);
    expect(second).toBeLessThanOrEqual(200);
    expect(third).toBe(2_000);
  });

  it('gives up after maxAttempts and reports the attempts', async () => {
    const f = await start();
    for (let i = 0; i < 4; i += 1) f.platform.injectFault({ kind: 'status', status: 502 });
    const error = await f.tokens.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(error).toMatchObject({ reason: 'http_error', status: 502, attempts: 4, retried: true });
    expect(f.platform.counters.exchanges.total).toBe(4);
  });

  it('fails fast on 4xx with the OAuth error and a hint, and backs off before the next try', async () => {
    const f = await start();
    f.platform.setIntegrationStatus(f.integration.machineId, 'Suspended');
    const error = (await f.tokens.getAccessToken().catch((e: unknown) => e)) as TokenExchangeError;
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(error).toMatchObject({
      reason: 'http_error',
      status: 400,
      oauthError: 'unauthorized_client',
      attempts: 1,
      retried: false,
    });
    expect(error.hint).toMatch(/not Active/);
    expect(f.platform.counters.exchanges.total).toBe(1);

    // Within the back-off the failure is shared without touching the endpoint.
    const during = (await f.tokens.getAccessToken().catch((e: unknown) => e)) as TokenExchangeError;
    expect(during).toMatchObject({ reason: 'backoff', oauthError: 'unauthorized_client' });
    expect(f.platform.counters.exchanges.total).toBe(1);

    // After it, the next caller tries again and succeeds once the cause is fixed.
    f.platform.setIntegrationStatus(f.integration.machineId, 'Active');
    f.clock.advance(1_001);
    expect(await f.tokens.getAccessToken()).toEqual(expect.any(String));
    expect(f.platform.counters.exchanges.total).toBe(2);
  });

  it('shares one failure among concurrent callers', async () => {
    const f = await start();
    f.platform.setIntegrationStatus(f.integration.machineId, 'Disabled');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => f.tokens.getAccessToken()));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(f.platform.counters.exchanges.total).toBe(1);
  });

  it('reports clock skew over 30 s with the measured offset, and corrects it when asked', async () => {
    const skewed = await start({ emulator: { clockOffsetMs: 10 * 60_000 } });
    const error = (await skewed.tokens.getAccessToken().catch((e: unknown) => e)) as TokenExchangeError;
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(error.oauthError).toBe('invalid_grant');
    expect(error.clockOffsetMs).toBeGreaterThanOrEqual(599_000);
    expect(error.clockOffsetMs).toBeLessThanOrEqual(601_000);
    expect(error.hint).toMatch(/60\d s ahead of the local clock/);
    await skewed.close();

    const corrected = await start({ emulator: { clockOffsetMs: -10 * 60_000 }, module: { correctClockSkew: true } });
    expect(await corrected.tokens.getAccessToken()).toEqual(expect.any(String));
    expect(corrected.tokens.clockOffsetMs).toBeLessThan(-590_000);
    expect(corrected.platform.counters.exchanges.accepted).toBe(1);
  });

  it('cancels work on module destroy and refuses new exchanges afterwards', async () => {
    const f = await start({ autoAdvance: false });
    f.platform.injectFault({ kind: 'status', status: 503 });
    const pending = f.tokens.getAccessToken().catch((e: unknown) => e);
    await eventually(() => expect(f.clock.pendingSleeps).toBe(1));
    await f.moduleRef.close();
    const error = (await pending) as TokenExchangeError;
    expect(error).toMatchObject({ reason: 'aborted' });
    await expect(f.tokens.getAccessToken()).rejects.toMatchObject({ reason: 'aborted' });
    expect(f.clock.pendingSleeps).toBe(0);
  });
});
