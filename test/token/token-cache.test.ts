import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { shutdownError } from '../../lib/platform-auth.errors.js';
import { FakeClock } from 'nestjs-platform-auth/testing';
import {
  TokenCache,
  type ExchangeOutcome,
  type ExchangeReport,
  type TokenCacheOptions,
} from '../../lib/token/token.cache.js';

/** An exchange the test answers by hand: each call waits until the test settles it. */
function manualExchange(clock: FakeClock) {
  const pending: Array<(outcome: ExchangeOutcome) => void> = [];
  let issued = 0;
  return {
    get calls(): number {
      return issued + pending.length;
    },
    exchange: (signal: AbortSignal): Promise<ExchangeOutcome> =>
      new Promise((resolve, reject) => {
        pending.push(resolve);
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      }),
    succeed(lifetimeMs = 600_000): void {
      issued += 1;
      const now = clock.now();
      pending.shift()!({
        ok: true,
        attempts: 1,
        token: { accessToken: `token-${issued}`, tokenType: 'Bearer', issuedAtMs: now, expiresAtMs: now + lifetimeMs },
      });
    },
    fail(retryAfterMs?: number): void {
      issued += 1;
      pending.shift()!({ ok: false, error: refusal(), retryAfterMs });
    },
  };
}

function refusal(): TokenExchangeError {
  return new TokenExchangeError('token endpoint answered HTTP 503', {
    reason: 'http_error',
    transient: true,
    status: 503,
    attempts: 1,
    retried: false,
    hint: 'The platform kept failing.',
  });
}

function setUp(overrides: Partial<TokenCacheOptions> = {}) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const platform = manualExchange(clock);
  const reports: ExchangeReport[] = [];
  const renewalFailures: Error[] = [];
  const shutdown = new AbortController();
  const cache = new TokenCache({
    clock,
    minExchangeIntervalMs: 0,
    refreshBeforeExpirySeconds: 60,
    failureBackoffMs: 1_000,
    source: { exchange: platform.exchange },
    shutdown: shutdown.signal,
    listener: { exchanged: (r) => reports.push(r), renewalFailed: (e) => renewalFailures.push(e) },
    ...overrides,
  });
  const settled = () => new Promise((resolve) => setImmediate(resolve));
  return { clock, platform, cache, reports, renewalFailures, settled, shutdown };
}

describe('TokenCache: renewal window', () => {
  it('renews no earlier than 60 s ahead and no later than 10 % after that, serving the current token meanwhile', async () => {
    const { clock, platform, cache, settled } = setUp();
    const first = cache.get();
    platform.succeed();
    const token = await first;

    clock.advance(539_999);
    expect(cache.peek()).toBe(token);
    expect(platform.calls).toBe(1);

    clock.advance(6_001); // 546 s: the lead is 54–60 s
    expect(cache.peek()).toBe(token);
    expect(platform.calls).toBe(2);
    expect(cache.state).toBe('renewing');
    expect(cache.peek()).toBe(token); // one renewal, not one per caller
    expect(platform.calls).toBe(2);

    platform.succeed();
    await settled();
    expect(cache.peek()?.accessToken).toBe('token-2');
    expect(cache.state).toBe('valid');
  });

  it('never leads by more than half the lifetime, and stops handing out a token in its last moments', async () => {
    const { clock, platform, cache } = setUp({ refreshBeforeExpirySeconds: 300 });
    const first = cache.get();
    platform.succeed(60_000);
    await first;
    clock.advance(29_999);
    cache.peek();
    expect(platform.calls).toBe(1);
    clock.advance(3_001); // lead 27–30 s
    cache.peek();
    expect(platform.calls).toBe(2);
    clock.set(Date.UTC(2026, 0, 1) + 60_000 - 5_000);
    expect(cache.peek()).toBeUndefined();
  });
});

describe('TokenCache: single flight', () => {
  it('gives concurrent callers the one exchange in flight', async () => {
    const { platform, cache } = setUp();
    const callers = Array.from({ length: 100 }, () => cache.get());
    expect(platform.calls).toBe(1);
    platform.succeed();
    const tokens = await Promise.all(callers);
    expect(new Set(tokens.map((t) => t.accessToken))).toEqual(new Set(['token-1']));
  });

  it('shares one failure among concurrent callers', async () => {
    const { platform, cache } = setUp();
    const callers = Array.from({ length: 10 }, () => cache.get().catch((e: unknown) => e));
    platform.fail();
    const errors = await Promise.all(callers);
    expect(platform.calls).toBe(1);
    expect(errors.every((e) => e instanceof TokenExchangeError && e.reason === 'http_error')).toBe(true);
  });
});

describe('TokenCache: failure back-off', () => {
  async function failOnce(s: ReturnType<typeof setUp>, retryAfterMs?: number): Promise<void> {
    const attempt = s.cache.get().catch(() => undefined);
    s.platform.fail(retryAfterMs);
    await attempt;
  }

  it('doubles from failureBackoffMs up to 30 s, failing fast meanwhile, and resets after a success', async () => {
    const s = setUp();
    const waits: number[] = [];
    for (let failure = 0; failure < 7; failure += 1) {
      await failOnce(s);
      const report = s.reports.at(-1)!;
      waits.push(report.retryAtMs! - report.finishedAtMs);
      await expect(s.cache.get()).rejects.toMatchObject({ reason: 'backoff', status: 503 });
      expect(s.cache.state).toBe('backoff');
      s.clock.set(report.retryAtMs!);
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(s.reports.at(-1)?.consecutiveFailures).toBe(7);
    expect(s.platform.calls).toBe(7);

    const next = s.cache.get();
    s.platform.succeed();
    await next;
    expect(s.reports.at(-1)).toMatchObject({ ok: true, consecutiveFailures: 0, attempts: 1 });
    s.cache.invalidate('token-8');
    await failOnce(s);
    expect(s.reports.at(-1)!.retryAtMs! - s.clock.now()).toBe(1_000);
  });

  it("honours the final failure's Retry-After up to 5 minutes", async () => {
    const s = setUp();
    await failOnce(s, 120_000);
    expect(s.reports.at(-1)!.retryAtMs! - s.clock.now()).toBe(120_000);
    s.clock.advance(120_000);
    await failOnce(s, 3_600_000);
    expect(s.reports.at(-1)!.retryAtMs! - s.clock.now()).toBe(300_000);
  });

  it('reports a failed background renewal and keeps serving the current token', async () => {
    const s = setUp();
    const first = s.cache.get();
    s.platform.succeed();
    const token = await first;
    s.clock.advance(550_000);
    s.cache.peek();
    s.platform.fail();
    await s.settled();
    expect(s.renewalFailures).toHaveLength(1);
    expect(s.cache.peek()).toBe(token);
    expect(s.platform.calls).toBe(2); // no new renewal during the back-off
  });
});

describe('TokenCache: invalidate and close', () => {
  it('invalidates only the current token', async () => {
    const { platform, cache } = setUp();
    const first = cache.get();
    platform.succeed();
    await first;
    expect(cache.invalidate('token-0')).toBe(false);
    expect(cache.invalidate('token-1')).toBe(true);
    expect(cache.peek()).toBeUndefined();
    expect(cache.state).toBe('none');
  });

  it('after a refusal hands out no token obtained before it: a renewal already in flight is waited out, not joined', async () => {
    const { clock, platform, cache, settled } = setUp();
    const first = cache.get();
    platform.succeed();
    await first;
    clock.advance(550_000);
    expect(cache.peek()?.accessToken).toBe('token-1');
    await settled();
    expect(platform.calls).toBe(2);

    // The renewal started before the 401: the platform may refuse its token too (its clock jumped ahead).
    expect(cache.invalidate('token-1')).toBe(true);
    const afterRefusal = [cache.get(), cache.get()];
    platform.succeed();
    await settled();
    expect(platform.calls).toBe(3);
    expect(cache.peek()).toBeUndefined();
    platform.succeed();
    expect((await Promise.all(afterRefusal)).map((token) => token.accessToken)).toEqual(['token-3', 'token-3']);

    // Another call refused with the same token shares that renewal.
    expect(cache.invalidate('token-1')).toBe(false);
    expect(cache.peek()?.accessToken).toBe('token-3');
    expect(platform.calls).toBe(3);
  });

  it('cancels the exchange in flight and refuses new ones after shutdown', async () => {
    const { platform, cache, shutdown } = setUp();
    const pending = cache.get().catch((e: unknown) => e);
    shutdown.abort(shutdownError());
    await expect(pending).resolves.toMatchObject({ reason: 'aborted' });
    await expect(cache.get()).rejects.toMatchObject({ reason: 'aborted' });
    expect(cache.state).toBe('shutdown');
    expect(platform.calls).toBe(1);
  });
});

describe('TokenCache: short lifetimes and the minimum interval between exchanges', () => {
  it('uses a 2 s token, renewing at the usual fraction of it', async () => {
    const { clock, platform, cache, settled } = setUp({ minExchangeIntervalMs: 500 });
    const first = cache.get();
    platform.succeed(2_000);
    expect((await first).accessToken).toBe('token-1');
    clock.advance(899);
    expect(cache.peek()?.accessToken).toBe('token-1');
    expect(platform.calls).toBe(1);
    // Half the lifetime ahead, at most 10 % later by jitter: renewing by 1.1 s.
    clock.advance(201);
    expect(cache.peek()?.accessToken).toBe('token-1');
    await settled();
    expect(platform.calls).toBe(2);
  });

  it('spaces exchanges: a storm of invalidations waits out the interval and shares one exchange', async () => {
    const { clock, platform, cache, settled } = setUp({ minExchangeIntervalMs: 500 });
    const first = cache.get();
    platform.succeed(1_000);
    cache.invalidate((await first).accessToken);

    const waiting = Array.from({ length: 20 }, () => cache.get());
    await settled();
    expect(platform.calls).toBe(1);
    expect(clock.pendingSleeps).toBe(1);
    clock.advance(500);
    await settled();
    expect(platform.calls).toBe(2);
    platform.succeed(1_000);
    expect(new Set((await Promise.all(waiting)).map((token) => token.accessToken))).toEqual(new Set(['token-2']));
  });
});
