import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenExchangeError, type PlatformAuthOptions } from 'nestjs-platform-auth';
import {
  createTestCredentials,
  PlatformEmulator,
  type EmulatedIntegration,
  type TestCredentials,
} from 'nestjs-platform-auth/testing';
import { createProvider } from '../support/token-provider-harness.js';

/** Each cause of docs/platform-contract.md#failure-causes, provoked against the emulator (README troubleshooting rows). */
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let stranger: TestCredentials;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration();
  stranger = await createTestCredentials();
});
afterAll(() => platform.close());

async function failureWith(
  options: Partial<PlatformAuthOptions>,
  credentials: TestCredentials = integration,
): Promise<TokenExchangeError> {
  const harness = await createProvider(credentials, platform.url, { machineId: integration.machineId, ...options });
  try {
    const error = await harness.tokens.getAccessToken().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TokenExchangeError);
    return error as TokenExchangeError;
  } finally {
    harness.destroy();
  }
}

describe('troubleshooting: each documented cause gets its own hint', () => {
  it('invalid certificate: a key that is not the registered one, claiming the registered thumbprint', async () => {
    const error = await failureWith({ key: { certificate: undefined }, thumbprint: integration.thumbprint }, stranger);
    expect(error.oauthError).toBe('invalid_client');
    expect(error.hint).toMatch(/^Invalid certificate/);
  });

  it('unregistered certificate: named as such, not as a wrong thumbprint when none was configured', async () => {
    const error = await failureWith({}, stranger);
    expect(error.oauthError).toBe('invalid_client');
    expect(error.hint).toMatch(/^Unregistered certificate: .*register the configured certificate/);
  });

  it('wrong machineId', async () => {
    const error = await failureWith({ machineId: 'not-the-machine-id' });
    expect(error.oauthError).toBe('invalid_client');
    expect(error.hint).toMatch(/^Wrong machineId/);
  });

  it('invalid audience', async () => {
    const error = await failureWith({ audience: 'sts.elsewhere.example' });
    expect(error.oauthError).toBe('invalid_grant');
    expect(error.hint).toMatch(/^Wrong audience/);
  });

  it('integration not Active', async () => {
    platform.setIntegrationStatus(integration.machineId, 'Disabled');
    try {
      const error = await failureWith({});
      expect(error.oauthError).toBe('unauthorized_client');
      expect(error.hint).toMatch(/not Active/);
    } finally {
      platform.setIntegrationStatus(integration.machineId, 'Active');
    }
  });

  it('wrong token endpoint URL', async () => {
    const error = await failureWith({ exchange: { path: '/connect/token' } });
    expect(error.status).toBe(404);
    expect(error.hint).toMatch(/baseUrl and exchange.path/);
  });
});
