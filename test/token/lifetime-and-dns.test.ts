import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import { createProvider } from '../support/token-provider-harness.js';

const start = usePlatformFixtures();

describe('a platform that issues short-lived tokens', () => {
  it.each([1, 3, 9])(
    'works with expires_in %i s, renewing at the usual fraction and never storming',
    async (lifetime) => {
      const f = await start({ emulator: { tokenLifetimeSeconds: lifetime }, autoAdvance: false });
      for (let second = 0; second < 20; second += 1) {
        const response = await fetch(`${f.platform.url}/api/billing`, {
          headers: { Authorization: `Bearer ${await f.tokens.getAccessToken()}` },
        });
        expect(response.status).toBe(200);
        f.clock.advance(1_000);
      }
      const { accepted, rejected } = f.platform.counters.exchanges;
      expect(rejected).toBe(0);
      // About one exchange per half lifetime (renewal at 50 %), bounded by the minimum interval between exchanges.
      expect(accepted).toBeGreaterThanOrEqual(Math.floor(20 / lifetime));
      expect(accepted).toBeLessThanOrEqual(21);
    },
  );
});

describe('a base URL whose host does not resolve', () => {
  it('is retried once at most, and the error names the host, never a secret', async () => {
    const credentials = await createTestCredentials();
    const h = await createProvider(credentials, 'https://platform-auth-test.invalid', {
      exchange: {
        timeoutMs: 10_000,
        retry: { maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 10, maxTotalMs: 20_000 },
      },
    });
    try {
      const error = (await h.tokens.getAccessToken().catch((e: unknown) => e)) as TokenExchangeError;
      expect(error).toBeInstanceOf(TokenExchangeError);
      expect(error.networkCode).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
      expect(error.attempts).toBe(2);
      expect(error.message).toContain('platform-auth-test.invalid');
      expect(error.hint).toMatch(/The host name platform-auth-test\.invalid does not resolve/);
      expect(JSON.stringify(error)).not.toContain('BEGIN');
    } finally {
      h.destroy();
    }
  });
});
