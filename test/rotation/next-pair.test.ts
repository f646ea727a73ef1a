import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { healthProblem } from '../../lib/terminus/health.indicator.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { PLATFORM_AUTH_DIAGNOSTICS_CHANNEL } from '../../lib/telemetry/telemetry.events.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { RecordingLogger } from '../support/recording-logger.js';

const start = usePlatformFixtures();
const LIFETIME_MS = 600_000;

const events: { event: string; outcome?: string }[] = [];
const onEvent = (event: unknown) => events.push(event as { event: string; outcome?: string });
beforeEach(() => {
  events.length = 0;
  subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
});
afterEach(() => unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent));

async function startWithNext(module: Partial<PlatformAuthOptions> = {}) {
  const next = await createTestCredentials();
  const logger = new RecordingLogger();
  const f = await start({
    module: { logger, next: { privateKey: next.privateKeyPem, certificate: next.certificatePem }, ...module },
  });
  return { f, next, logger };
}

/** The `iss` and verdict of every token request since `from`. */
function requests(f: PlatformFixture, from = 0): { iss: unknown; verdict: string; rule?: string }[] {
  return f.platform.journal
    .slice(from)
    .map((record) => ({ iss: record.claims?.iss, verdict: record.verdict, rule: record.rule }));
}

describe('the next pair: switching inside the exchange', () => {
  it('signs with the current pair until the portal cut-over, then tries the next pair at once in the same exchange', async () => {
    const { f, next, logger } = await startWithNext();
    const current = f.integration.thumbprint;
    await f.tokens.getAccessToken();
    expect(f.tokens.status().credentials).toMatchObject({ thumbprint: current, next: { thumbprint: next.thumbprint } });
    f.clock.advance(LIFETIME_MS + 1_000);
    await f.tokens.getAccessToken();
    expect(requests(f).every((r) => r.iss === current && r.verdict === 'accepted')).toBe(true);

    const before = f.platform.journal.length;
    f.platform.replaceCertificate(f.integration.machineId, next.certificatePem); // the portal step
    f.clock.advance(LIFETIME_MS + 1_000);
    const token = await f.tokens.getAccessToken();
    expect(token).toBeTruthy();
    expect(requests(f, before)).toEqual([
      { iss: current, verdict: 'rejected', rule: 'iss' },
      { iss: next.thumbprint, verdict: 'accepted', rule: undefined },
    ]);

    const status = f.tokens.status();
    expect(status.lastExchange).toMatchObject({ ok: true, attempts: 2 });
    expect(status.consecutiveFailures).toBe(0);
    expect(status.credentials.thumbprint).toBe(next.thumbprint);
    expect(status.credentials.next).toBeUndefined();
    expect(status.credentials.switched).toEqual({ at: expect.any(Date), from: current, to: next.thumbprint });
    expect(healthProblem(status)).toBeUndefined();
    const warnings = logger.messages('warn').filter((m) => m.includes('as not registered'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`thumbprint ${current.slice(0, 8)}…`);
    expect(warnings[0]).toContain(`thumbprint ${next.thumbprint.slice(0, 8)}…`);
    expect(warnings[0]).toMatch(/Update the files/);
    expect(events.filter((e) => e.event === 'credentials')).toEqual([
      expect.objectContaining({ event: 'credentials', outcome: 'switched' }),
    ]);
    expectNoSecrets({ status, log: logger.entries }, [next.privateKeyPem, f.integration.privateKeyPem, token]);

    // From now on the next pair is the current pair: no refusal again.
    const after = f.platform.journal.length;
    for (let i = 0; i < 3; i += 1) {
      f.clock.advance(LIFETIME_MS + 1_000);
      await f.tokens.getAccessToken();
    }
    expect(requests(f, after).every((r) => r.iss === next.thumbprint && r.verdict === 'accepted')).toBe(true);
  });

  it('makes no application call fail across the cut-over: a 401 renewal switches too', async () => {
    const { f, next } = await startWithNext();
    expect((await f.http.axiosRef.get('/api/billing')).status).toBe(200);
    f.platform.replaceCertificate(f.integration.machineId, next.certificatePem);
    f.platform.revokeAllTokens(); // the platform drops the old tokens: the next call gets a 401 and renews
    expect((await f.http.axiosRef.get('/api/billing')).status).toBe(200);
    expect(f.tokens.status().credentials.thumbprint).toBe(next.thumbprint);
    expect(f.platform.counters.exchanges.rejected).toBe(1);
  });

  it.each([
    ['a wrong machineId', (f: PlatformFixture) => ({ machineId: `${f.integration.machineId}-other` }), 'sub'],
    [
      'an inactive integration',
      (f: PlatformFixture) => f.platform.setIntegrationStatus(f.integration.machineId, 'Inactive'),
      'status',
    ],
    ['a platform clock an hour ahead', (f: PlatformFixture) => f.platform.setClockOffset(3_600_000), 'expired'],
  ] as const)('does not try the next pair after a refusal for %s', async (_, arrange, rule) => {
    const next = await createTestCredentials();
    const f = await start({ module: { next: { privateKey: next.privateKeyPem, certificate: next.certificatePem } } });
    const overrides = arrange(f);
    if (overrides) {
      // A wrong machineId: a second fixture configured with it, on the same platform.
      await f.close();
      const g = await start({
        module: { next: { privateKey: next.privateKeyPem, certificate: next.certificatePem }, ...overrides },
      });
      await expect(g.tokens.getAccessToken()).rejects.toMatchObject({ oauthError: 'invalid_client' });
      expect(requests(g).map((r) => r.iss)).not.toContain(next.thumbprint);
      expect(g.tokens.status().credentials.next).toEqual({ thumbprint: next.thumbprint });
      return;
    }
    await expect(f.tokens.getAccessToken()).rejects.toBeTruthy();
    expect(requests(f).length).toBeGreaterThan(0);
    expect(requests(f).map((r) => r.iss)).not.toContain(next.thumbprint);
    expect(requests(f).map((r) => r.rule)).toContain(rule);
    expect(f.tokens.status().credentials.thumbprint).toBe(f.integration.thumbprint);
  });

  it('does not try the next pair on 503s, a 429 or a dropped connection', async () => {
    const { f, next } = await startWithNext();
    f.platform.injectFault({ kind: 'status', status: 503 });
    f.platform.injectFault({ kind: 'status', status: 429, headers: { 'retry-after': '1' } });
    f.platform.injectFault({ kind: 'drop' });
    await f.tokens.getAccessToken();
    expect(requests(f).map((r) => r.iss)).not.toContain(next.thumbprint);
    expect(f.tokens.status().credentials.thumbprint).toBe(f.integration.thumbprint);
  });

  it('keeps the current pair when the next one is refused as well, reporting the current refusal', async () => {
    const [unregistered, next] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const { f } = await startWithNext({ next: { privateKey: next.privateKeyPem, certificate: next.certificatePem } });
    const current = f.integration.thumbprint;
    f.platform.replaceCertificate(f.integration.machineId, unregistered.certificatePem);
    const error = await f.tokens.getAccessToken().catch((e: unknown) => e);
    expect(error).toMatchObject({ oauthError: 'invalid_client' });
    expect(String((error as Error).message)).toContain(current);
    expect(requests(f).map((r) => r.iss)).toEqual([current, next.thumbprint]);
    expect(f.tokens.status().credentials).toMatchObject({
      thumbprint: current,
      next: { thumbprint: next.thumbprint },
    });
    expect(f.tokens.status().credentials.switched).toBeUndefined();
  });
});

describe('the next pair at start-up', () => {
  let current: TestCredentials;
  let next: TestCredentials;
  beforeEach(async () => {
    [current, next] = await Promise.all([createTestCredentials(), createTestCredentials()]);
  });
  const base = () => ({
    baseUrl: 'https://platform.example',
    machineId: 'machine',
    key: { privateKey: current.privateKeyPem, certificate: current.certificatePem },
  });

  it('is checked like the current pair, with problems named by the next options and variables', async () => {
    const error = await loadPlatformAuthConfig(
      { ...base(), next: { privateKey: next.privateKeyPem, certificate: current.certificatePem } },
      Date.now(),
    ).catch((e: unknown) => e);
    expect(error instanceof PlatformAuthConfigError).toBe(true);
    const problems = (error as { problems: { setting: string; message: string }[] }).problems;
    expect(problems.map((p) => p.setting)).toContain('next.certificate (PLATFORM_NEXT_CERTIFICATE)');
    expect(problems.map((p) => p.message).join('\n')).toMatch(/does not match the private key/);
    expectNoSecrets(error, [next.privateKeyPem, current.privateKeyPem]);

    // Under the deprecated flat name, a problem of the next pair is named as the caller wrote it.
    const keyOnly = await loadPlatformAuthConfig(
      { ...base(), next: { privateKey: next.privateKeyPem, certificate: current.certificatePem } },
      Date.now(),
    ).catch((e: unknown) => e);
    expect((keyOnly as { problems: { setting: string }[] }).problems.map((p) => p.setting)).toContain(
      'next.certificate (PLATFORM_NEXT_CERTIFICATE)',
    );
    const certificateMissing = await loadPlatformAuthConfig(
      { ...base(), next: { privateKey: next.privateKeyPem } },
      Date.now(),
    ).catch((e: unknown) => e);
    expect((certificateMissing as { problems: { setting: string }[] }).problems.map((p) => p.setting)).toContain(
      'next.certificate (PLATFORM_NEXT_CERTIFICATE)',
    );
  });

  it('must differ from the current pair', async () => {
    const error = await loadPlatformAuthConfig(
      { ...base(), next: { privateKey: current.privateKeyPem, certificate: current.certificatePem } },
      Date.now(),
    ).catch((e: unknown) => e);
    expect((error as { problems: { setting: string; message: string }[] }).problems).toEqual([
      expect.objectContaining({
        setting: 'next.certificate (PLATFORM_NEXT_CERTIFICATE)',
        message: expect.stringMatching(/is the current pair/),
      }),
    ]);
  });

  it('is read from PLATFORM_NEXT_* and PLATFORM_<NAME>_NEXT_* variables', async () => {
    const env = {
      PLATFORM_BASE_URL: 'https://platform.example',
      PLATFORM_MACHINE_ID: 'machine',
      PLATFORM_PRIVATE_KEY: current.privateKeyPem,
      PLATFORM_CERTIFICATE: current.certificatePem,
      PLATFORM_NEXT_PRIVATE_KEY: next.privateKeyPem,
      PLATFORM_NEXT_CERTIFICATE: next.certificatePem,
      PLATFORM_NEXT_PRIVATE_KEY_PATH: '/run/secrets/next.key',
      PLATFORM_NEXT_PRIVATE_KEY_URI: 'pkcs11:token=t;object=next',
      PLATFORM_NEXT_CERTIFICATE_PATH: '/run/secrets/next.crt',
    };
    expect(readPlatformAuthEnv(env)).toMatchObject({
      next: {
        privateKey: next.privateKeyPem,
        certificate: next.certificatePem,
        privateKeyPath: '/run/secrets/next.key',
        privateKeyUri: 'pkcs11:token=t;object=next',
        certificatePath: '/run/secrets/next.crt',
      },
    });
    const named = Object.fromEntries(
      Object.entries(env).map(([name, value]) => [name.replace(/^PLATFORM_/, 'PLATFORM_BILLING_'), value]),
    );
    expect(readPlatformAuthEnv(named, 'billing')).toMatchObject({
      next: { privateKey: next.privateKeyPem, certificatePath: '/run/secrets/next.crt' },
    });
    const resolved = await loadPlatformAuthConfig(
      readPlatformAuthEnv({
        ...env,
        PLATFORM_NEXT_PRIVATE_KEY_PATH: undefined as unknown as string,
        PLATFORM_NEXT_PRIVATE_KEY_URI: undefined as unknown as string,
        PLATFORM_NEXT_CERTIFICATE_PATH: undefined as unknown as string,
      }),
      Date.now(),
    );
    expect(resolved.nextCredentials?.thumbprint).toBe(next.thumbprint);
    await resolved.credentials.key.close();
  });
});
