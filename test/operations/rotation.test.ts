import { describe, expect, it } from 'vitest';
import { CredentialRotationError, PlatformAuthError } from 'nestjs-platform-auth';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

function lastIssuer(f: PlatformFixture): { iss?: string; sub?: string } {
  const claims = f.platform.journal.at(-1)?.claims as { iss?: string; sub?: string } | undefined;
  return { iss: claims?.iss, sub: claims?.sub };
}

describe('TokenProvider.rotateCredentials()', () => {
  it('on a one-certificate platform: register the new certificate, rotate; renewals then carry the new thumbprint', async () => {
    const f = await start();
    const before = await f.tokens.getAccessToken();
    const next = await createTestCredentials();
    f.platform.replaceCertificate(f.integration.machineId, next.certificatePem); // the portal step
    await f.tokens.rotateCredentials({ key: { privateKey: next.privateKeyPem, certificate: next.certificatePem } });
    expect(lastIssuer(f)).toEqual({ iss: next.thumbprint, sub: f.integration.machineId });
    expect(f.tokens.status().credentials.thumbprint).toBe(next.thumbprint);
    // The cached token is kept until it expires.
    expect(await f.tokens.getAccessToken()).toBe(before);
    f.tokens.invalidate(before);
    await f.tokens.getAccessToken();
    expect(lastIssuer(f).iss).toBe(next.thumbprint);
    expect(f.platform.counters.exchanges.rejected).toBe(0);
  });

  it("cuts over to a second integration with its own machineId, and never sends the first one's token again", async () => {
    const f = await start();
    const first = await f.tokens.getAccessToken();
    const next = await createTestCredentials();
    const second = f.platform.registerIntegration({ certificatePem: next.certificatePem, name: 'second' });
    await f.tokens.rotateCredentials({
      key: { privateKey: next.privateKeyPem, certificate: next.certificatePem },
      machineId: second.machineId,
    });
    expect(await f.tokens.getAccessToken()).not.toBe(first);
    expect(lastIssuer(f)).toEqual({ iss: next.thumbprint, sub: second.machineId });
  });

  it('changes nothing when the platform refuses the new pair (certificate not registered yet)', async () => {
    const f = await start();
    const token = await f.tokens.getAccessToken();
    const next = await createTestCredentials();
    const error = await f.tokens
      .rotateCredentials({ key: { privateKey: next.privateKeyPem, certificate: next.certificatePem } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(CredentialRotationError);
    expect(error).toMatchObject({ stage: 'exchange', exchange: { reason: 'http_error', status: 400 } });
    expectNoSecrets(error, [next.privateKeyPem, token]);
    expect(f.tokens.status().credentials.thumbprint).toBe(f.integration.thumbprint);
    expect(await f.tokens.getAccessToken()).toBe(token);
    f.tokens.invalidate(token);
    await f.tokens.getAccessToken();
    expect(lastIssuer(f).iss).toBe(f.integration.thumbprint);
  });

  it('refuses an invalid pair before any exchange, naming every problem and no PEM', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    const [a, b] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const exchanges = f.platform.counters.exchanges.total;
    const error = (await f.tokens
      .rotateCredentials({ key: { privateKey: a.privateKeyPem, certificate: b.certificatePem } })
      .catch((e: unknown) => e)) as CredentialRotationError;
    expect(error instanceof PlatformAuthError).toBe(true);
    expect(error.stage).toBe('validation');
    expect(error.problems.map((p) => p.message).join('\n')).toMatch(/does not match the private key/);
    expect(f.platform.counters.exchanges.total).toBe(exchanges);
    expectNoSecrets(error, [a.privateKeyPem, b.certificatePem]);

    const truncated = await f.tokens
      .rotateCredentials({ key: { privateKey: a.privateKeyPem.slice(0, 200), certificate: a.certificatePem } })
      .catch((e: unknown) => e);
    expect(truncated).toMatchObject({ stage: 'validation' });
    expect(f.tokens.status().credentials.thumbprint).toBe(f.integration.thumbprint);
  });
});
