import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();
const DAY = 86_400_000;

describe('TokenProvider.status()', () => {
  it('starts at none, with the certificate and credentials in use, and starts nothing itself', async () => {
    const f = await start();
    const status = f.tokens.status();
    expect(status).toMatchObject({ state: 'none', consecutiveFailures: 0 });
    expect(status.token).toBeUndefined();
    expect(status.lastExchange).toBeUndefined();
    expect(status.certificate?.daysLeft).toBe(364);
    expect(status.certificate?.expired).toBe(false);
    expect(status.credentials.thumbprint).toBe(f.integration.thumbprint);
    expect(status.credentials.reload).toEqual({ state: 'off' });
    expect(f.platform.counters.exchanges.total).toBe(0);
  });

  it('reports a valid token with its expiry and age, and the last exchange', async () => {
    const f = await start({ autoAdvance: false });
    const token = await f.tokens.getAccessToken();
    f.clock.advance(10_000);
    const status = f.tokens.status();
    expect(status.state).toBe('valid');
    expect(status.token).toEqual({
      expiresAt: new Date(f.clock.now() - 10_000 + 600_000),
      expiresInMs: 590_000,
      ageMs: 10_000,
      usable: true,
    });
    expect(status.lastExchange).toMatchObject({ ok: true, attempts: 1, durationMs: 0 });
    expectNoSecrets(status, [token, f.integration.privateKeyPem, f.integration.machineId]);
  });

  it('reports renewing while an exchange is in flight', async () => {
    const f = await start({ autoAdvance: false });
    f.platform.injectFault({ kind: 'delay', ms: 200 });
    const pending = f.tokens.getAccessToken();
    expect(f.tokens.status().state).toBe('renewing');
    await pending;
    expect(f.tokens.status().state).toBe('valid');
  });

  it('reports back-off after a refused exchange: reason, HTTP status, OAuth error, failures and next attempt', async () => {
    const f = await start({ autoAdvance: false });
    f.platform.setIntegrationStatus(f.integration.machineId, 'Suspended');
    await expect(f.tokens.getAccessToken()).rejects.toBeInstanceOf(TokenExchangeError);
    const status = f.tokens.status();
    expect(status).toMatchObject({
      state: 'backoff',
      consecutiveFailures: 1,
      nextAttemptAt: new Date(f.clock.now() + 1_000),
      lastExchange: { ok: false, reason: 'http_error', status: 400, attempts: 1 },
    });
    expect(status.lastExchange?.oauthError).toMatch(/^(invalid_client|unauthorized_client)$/);
    f.clock.advance(1_000);
    expect(f.tokens.status()).toMatchObject({ state: 'none', nextAttemptAt: undefined, consecutiveFailures: 1 });
  });

  it('reports an expired certificate, and shutdown after the module is closed', async () => {
    const f = await start({ autoAdvance: false });
    f.clock.advance(366 * DAY);
    expect(f.tokens.status().certificate).toMatchObject({ expired: true, daysLeft: -2 });
    await f.moduleRef.close();
    expect(f.tokens.status().state).toBe('shutdown');
  });
});
