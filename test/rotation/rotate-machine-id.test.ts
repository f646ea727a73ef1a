import { describe, expect, it } from 'vitest';
import { type CredentialRotationError } from 'nestjs-platform-auth';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

describe('rotateCredentials() checks the machineId as start-up does', () => {
  it.each([
    ['empty', '', /is required/],
    ['PEM text', 'PEM', /PEM/],
    ['two lines', 'machine\nother', /one line|line break|newline/i],
  ])('refuses a %s machineId before any exchange, without repeating it', async (_, given, message) => {
    const f = await start();
    await f.tokens.getAccessToken();
    const next = await createTestCredentials();
    const machineId = given === 'PEM' ? next.privateKeyPem : given;
    const exchanges = f.platform.counters.exchanges.total;
    const error = (await f.tokens
      .rotateCredentials({ key: { privateKey: next.privateKeyPem, certificate: next.certificatePem }, machineId })
      .catch((e: unknown) => e)) as CredentialRotationError;
    expect(error).toMatchObject({ stage: 'validation' });
    expect(error.problems.map((p) => `${p.setting}: ${p.message}`).join('\n')).toMatch(/^machineId/);
    expect(error.problems.map((p) => p.message).join('\n')).toMatch(message);
    expect(f.platform.counters.exchanges.total).toBe(exchanges);
    expect(f.tokens.status().credentials.thumbprint).toBe(f.integration.thumbprint);
    expectNoSecrets(error, [next.privateKeyPem]);
  });
});
